"""Write searchrl questions as the parquet files verl's RLHFDataset reads, for the searchrl_search_r1 agent loop.

    python examples/verl/prepare_data.py --train PATH_OR_SPEC --test PATH_OR_SPEC --out data/verl

A source is anything `searchrl.data.load_source` reads: Search-R1's parquet (PeterJinGo/nq_hotpotqa_train's
train.parquet / test.parquet), a FlashRAG JSONL file, a folder, or `world` (the built-in synthetic world).
Each row gets Search-R1's columns plus what the agent loop reads:

    data_source, prompt ([{"role": "user", "content": <Search-R1 instruction with the question>}]), ability,
    reward_model {"style": "rule", "ground_truth": {"target": [answers]}},
    extra_info {"split", "index" (row number), "id" (question id), "question"}, question, agent_name

The agent loop builds the prompt itself from `question` with searchrl.protocol; `prompt` is there for verl's
length filter (data.filter_overlong_prompts). Files are written to a temporary name, then renamed.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from searchrl.data.loaders import load_source
from searchrl.errors import SearchRLError
from searchrl.protocol import ProtocolConfig, format_question

AGENT_NAME = "searchrl_search_r1"


def rows(spec: str, split: str, protocol: ProtocolConfig) -> list[dict]:
    # A file is taken whole (it was named for this split); folders, benchmarks and the world pick `split`.
    source = load_source(spec, None if Path(spec).is_file() else split)
    out = []
    for index, q in enumerate(source.questions):
        # the same user message searchrl.protocol renders (the agent loop re-renders it from `question`)
        content = protocol.instruction.replace("{question}", format_question(q.question))
        out.append({
            "data_source": q.data_source,
            "prompt": [{"role": "user", "content": content}],
            "ability": "fact-reasoning",
            "reward_model": {"style": "rule", "ground_truth": {"target": list(q.golden_answers)}},
            "extra_info": {"split": split, "index": index, "id": q.id, "question": q.question},
            "question": q.question,
            "agent_name": AGENT_NAME,
        })
    return out


def write_parquet(records: list[dict], path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        pq.write_table(pa.Table.from_pylist(records), tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", required=True, help="training questions (a searchrl data spec)")
    parser.add_argument("--test", required=True, help="validation questions (a searchrl data spec)")
    parser.add_argument("--out", required=True, help="output folder for train.parquet and test.parquet")
    parser.add_argument("--protocol-preset", default="search_r1", help="searchrl protocol preset (default search_r1)")
    args = parser.parse_args(argv)
    try:
        protocol = ProtocolConfig.from_dict({"preset": args.protocol_preset})
        for split, spec in (("train", args.train), ("test", args.test)):
            records = rows(spec, split, protocol)
            write_parquet(records, Path(args.out) / f"{split}.parquet")
            print(f"{split}: {len(records)} questions -> {Path(args.out) / f'{split}.parquet'}")
    except SearchRLError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
