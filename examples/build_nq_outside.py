"""Build `tests/fixtures/qa/nq_outside/`: NQ-open questions and passages that `nq_oracle` never holds.

`nq_oracle` (the folder `configs/nq_cpu.yaml` trains on) is rows 0-499 of lost-in-the-middle's
`qa_data/nq-open-oracle.jsonl.gz` (commit 29b8a6d0), searched over the gold passages of rows 0-999. This folder is
built the same way one thousand rows further on: the questions of rows 1000-1499 over the gold passages of rows
1000-1999, leaving out every passage that `nq_oracle`'s corpus already holds and the questions whose gold passage is
one of them. So no question and no passage is shared with the folder a recipe trains and decides on: a test of
whether its gain travels. Every question goes to `test.jsonl` (the whole folder is a test set).

    python examples/build_nq_outside.py nq-open-oracle.jsonl.gz tests/fixtures/qa/nq_oracle/corpus.jsonl \\
        tests/fixtures/qa/nq_outside
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

from searchrl.fileio import atomic_write_text

QUESTION_ROWS = range(1000, 1500)
CORPUS_ROWS = range(1000, 2000)


def read_rows(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    if len(rows) < CORPUS_ROWS.stop:
        sys.exit(f"{path}: {len(rows)} rows; expected lost-in-the-middle's nq-open-oracle file (2655 rows)")
    return rows


def write_jsonl(path: Path, records: list[dict]) -> None:
    atomic_write_text(path, "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path, help="lost-in-the-middle's qa_data/nq-open-oracle.jsonl(.gz)")
    parser.add_argument("exclude_corpus", type=Path, help="corpus.jsonl whose passages must not appear (nq_oracle's)")
    parser.add_argument("out", type=Path, help="output folder (created; test.jsonl and corpus.jsonl)")
    args = parser.parse_args()

    rows = read_rows(args.source)
    with open(args.exclude_corpus, encoding="utf-8") as f:
        excluded = {(p["title"], p["text"]) for p in map(json.loads, f)}

    passage_ids: dict[tuple[str, str], str] = {}
    corpus = []
    for i in CORPUS_ROWS:
        gold = rows[i]["ctxs"][0]
        key = (gold["title"], gold["text"])
        if key in excluded or key in passage_ids:
            continue
        passage_ids[key] = f"nqo_{len(corpus)}"
        corpus.append({"id": passage_ids[key], "contents": f"\"{gold['title']}\"\n{gold['text']}",
                       "title": gold["title"], "text": gold["text"]})
    questions = []
    for i in QUESTION_ROWS:
        gold = rows[i]["ctxs"][0]
        key = (gold["title"], gold["text"])
        if key not in passage_ids:  # its gold passage is one of nq_oracle's
            continue
        questions.append({"id": f"nq_outside_{i}", "question": rows[i]["question"],
                          "golden_answers": rows[i]["answers"], "metadata": {"gold_doc_id": passage_ids[key]}})

    args.out.mkdir(parents=True, exist_ok=True)
    write_jsonl(args.out / "corpus.jsonl", corpus)
    write_jsonl(args.out / "test.jsonl", questions)
    print(f"{args.out}: {len(questions)} questions (rows {QUESTION_ROWS.start}-{QUESTION_ROWS.stop - 1}), "
          f"{len(corpus)} passages (rows {CORPUS_ROWS.start}-{CORPUS_ROWS.stop - 1}; shared with "
          f"{args.exclude_corpus} or repeated: left out)")


if __name__ == "__main__":
    main()
