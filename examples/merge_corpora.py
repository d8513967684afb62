"""Pool several corpora into one, so an agent's questions are searched among other datasets' passages.

    python examples/merge_corpora.py OUT.jsonl NQ/corpus.jsonl HOTPOTQA/corpus.jsonl MUSIQUE/corpus.jsonl

The first corpus keeps its passage ids (its questions' gold passage ids still point at them); the passages of
every later corpus get their ids prefixed with that corpus's folder name (`hotpotqa_distractor:0`), since the
datasets number their passages alike. Passages whose text is already in the pool are dropped. Every input is
read and checked before OUT is written, atomically; OUT is refused if it exists (pass --overwrite) or is an input.
Use it as `searchrl eval --retriever OUT.jsonl`, or `examples/real_data_evals.sh RUN NQ --pool OUT.jsonl` for a
finished `nq_cpu` run's start and final models on its test part over the pool, paired.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def merge(paths: list[Path]) -> tuple[list[dict], list[dict]]:
    """The pooled passages ({"id", "contents"}) and per-input counts. Each corpus is read by `read_corpus`, so a
    bad line raises DataError naming its file and line, as every corpus reader of searchrl does."""
    from searchrl.errors import DataError
    from searchrl.retrieval import read_corpus

    pooled: list[dict] = []
    seen_ids: set[str] = set()
    seen_texts: set[str] = set()
    counts = []
    for n, path in enumerate(paths):
        prefix = "" if n == 0 else f"{path.parent.name or path.stem}:"
        kept = dropped = 0
        for passage in read_corpus(path):
            pid = prefix + passage.doc_id
            if pid in seen_ids:
                raise DataError(f"{path}: passage id {pid!r} is already in the pool; give the corpora unique ids")
            if passage.contents in seen_texts:
                dropped += 1
                continue
            seen_ids.add(pid)
            seen_texts.add(passage.contents)
            pooled.append({"id": pid, "contents": passage.contents})
            kept += 1
        counts.append({"corpus": str(path), "id_prefix": prefix, "kept": kept, "duplicates_dropped": dropped})
    return pooled, counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the pooled corpus to write (.jsonl)")
    parser.add_argument("corpora", type=Path, nargs="+", help="corpus .jsonl files; the first keeps its ids")
    parser.add_argument("--overwrite", action="store_true", help="replace OUT if an earlier merge wrote it")
    args = parser.parse_args()

    from searchrl.errors import SearchRLError
    from searchrl.fileio import atomic_write_text, check_output_path

    try:
        check_output_path(args.out, "output corpus", inputs=args.corpora, overwrite=args.overwrite,
                          ours=lambda p: p.suffix == ".jsonl", kind="merged corpus (.jsonl)")
        pooled, counts = merge(args.corpora)
        atomic_write_text(args.out, "".join(json.dumps(p, ensure_ascii=False) + "\n" for p in pooled))
    except SearchRLError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for c in counts:
        print(f"{c['corpus']}: {c['kept']} passages (ids prefixed {c['id_prefix']!r}; "
              f"{c['duplicates_dropped']} duplicates dropped)")
    print(f"{args.out}: {len(pooled)} passages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
