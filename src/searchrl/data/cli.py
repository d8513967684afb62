"""`searchrl data`: data utilities.

    searchrl data world --seed 0 --out DIR [--people N ...] [--train N --dev N --test N] [--mix 0.5,0.3,0.2]
    searchrl data show SPEC [--split S] [-n 3]
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from dataclasses import fields

from searchrl.data.loaders import load_source
from searchrl.data.world import WORLD_MANIFEST, WorldConfig, generate_world, write_world
from searchrl.errors import ConfigError
from searchrl.fileio import check_output_path

_SIZE_FIELDS = ("countries", "cities", "people", "organisations", "works")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    default = WorldConfig()
    sub = parser.add_subparsers(dest="data_command", metavar="ACTION", required=True)
    world = sub.add_parser("world", help="write the synthetic world (corpus, train/test questions, oracle trajectories)",
                           description="Write the built-in synthetic world into a folder.")
    world.add_argument("--seed", type=int, default=0, help="random seed; the same seed gives identical files")
    world.add_argument("--out", required=True, help="output folder (created if needed; an existing one must be empty "
                                                    "or hold a world written earlier)")
    world.add_argument("--overwrite", action="store_true", help="replace a world written earlier into --out")
    for name in _SIZE_FIELDS:
        world.add_argument(f"--{name}", type=int, default=getattr(default, name),
                           help=f"number of {name} (default {getattr(default, name)})")
    world.add_argument("--train", type=int, default=default.train_questions, help="number of train questions")
    world.add_argument("--dev", type=int, default=default.dev_questions,
                       help="number of dev (validation) questions")
    world.add_argument("--test", type=int, default=default.test_questions, help="number of test questions")
    world.add_argument("--mix", default=",".join(str(m) for m in default.mix),
                       help="shares of single-hop,bridge,comparison questions (default %(default)s)")
    world.add_argument("--no-think", action="store_true",
                       help="oracle trajectories without <think>…</think> (actions only)")

    show = sub.add_parser("show", help="load a data source and print a summary and a few questions",
                          description="Load a data source (folder, file, benchmark name, world[:SEED]) and summarise it.")
    show.add_argument("spec", help="folder, .jsonl/.parquet file, benchmark name, or world[:SEED]")
    show.add_argument("--split", default=None, help="split to load (default: questions/test/dev/train, first found)")
    show.add_argument("-n", type=int, default=3, help="questions to print (default 3)")


def _parse_mix(text: str) -> tuple[float, float, float]:
    try:
        parts = tuple(float(x) for x in text.split(","))
    except ValueError:
        parts = ()
    if len(parts) != 3:
        raise ConfigError(f"--mix must be three comma-separated numbers (single-hop,bridge,comparison), got {text!r}")
    return parts  # type: ignore[return-value]


def main(args: argparse.Namespace) -> int:
    if args.data_command == "show":
        return _show(args)
    names = {f.name for f in fields(WorldConfig)}
    cfg = WorldConfig(seed=args.seed, train_questions=args.train, dev_questions=args.dev, test_questions=args.test,
                      mix=_parse_mix(args.mix), oracle_think=not args.no_think,
                      **{n: getattr(args, n) for n in _SIZE_FIELDS if n in names})
    # Before generating, not after; a folder that is not a world written earlier (a dataset's corpus.jsonl and
    # train.jsonl, say) is never written into.
    check_output_path(args.out, "--out", overwrite=args.overwrite, ours=WORLD_MANIFEST, kind="synthetic world folder",
                      folder=True)
    start = time.perf_counter()
    world = generate_world(cfg)
    out = write_world(world, args.out)
    manifest = json.loads((out / "world.json").read_text())
    counts = manifest["counts"]
    print(f"wrote the synthetic world (seed {cfg.seed}) to {out} in {time.perf_counter() - start:.2f} s")
    print(f"  corpus.jsonl        {counts['passages']} passages")
    splits = ["train", "dev", "test"]
    for split in splits:
        mix = ", ".join(f"{counts[f'{split}/{t}']} {t}" for t in ("single-hop", "bridge", "comparison"))
        print(f"  {split + '.jsonl':<19} {counts[split]} questions ({mix})")
    print(f"  oracle_train.jsonl  {len(world.oracle_train)} oracle trajectories ("
          + ", ".join(f"oracle_{s}.jsonl: {len(world.oracles(s))}" for s in splits[1:]) + ")")
    return 0


def _show(args: argparse.Namespace) -> int:
    source = load_source(args.spec, split=args.split)
    print(f"{source.name}: {len(source.questions)} questions from {source.origin}")
    print(f"  corpus: {source.corpus_path or '(none; evaluation needs --retriever)'}")
    by_source = Counter(q.data_source for q in source.questions)
    if len(by_source) > 1:
        print("  data sources: " + ", ".join(f"{k} {v}" for k, v in by_source.items()))
    types = Counter(str(q.metadata.get("type")) for q in source.questions if "type" in q.metadata)
    if types:
        print("  types: " + ", ".join(f"{k} {v}" for k, v in types.most_common()))
    for q in source.questions[: max(0, args.n)]:
        print(f"  [{q.uid}] {q.question}  ->  {q.golden_answers}")
    return 0
