"""Does the greedy evaluation answer the same with the decoder blocks' products in bf16? The evidence behind the
evaluation's precision on a CPU with native bf16 (docs/benchmarks.md, "Where a demo step's time goes").

One process builds the demo's trainer (`configs/demo.yaml`: its data, retriever, prompt and budgets) on a model
folder (a run's `final_model/`: an agent whose answers RL has shaped; or the demo's warm start when none is
given), then evaluates the same questions greedily, per side and round, as `searchrl train` does (`validate`):
`float32` (the oneDNN-packed float32 products, the evaluation's own) and `bf16` (bf16_blocks.py: the decoder
blocks' products on bf16-packed weights; norms, attention, KV cache and output head float32), alternating which
side goes first.

Reported, with the CPU model, thread count and load: per side EM and seconds (median [min, max] over rounds), the
per-round ratio of the times, the questions whose EM differs between the sides (right to wrong, wrong to right)
with the paired EM difference and its 95% interval over questions (normal approximation, mean ± 1.96 standard
errors), and whether each side answers the same in
every round (greedy decoding is deterministic on one machine).

    .venv/bin/python benchmarks/check_eval_precision.py --model RUN/final_model --json OUT.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hostinfo import fmt, host, host_line  # noqa: E402

SIDES = ("float32", "bf16")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="a model folder (default: the demo's warm start)")
    parser.add_argument("--split", default="dev", choices=("dev", "test"), help="decide on dev; test to report")
    parser.add_argument("--questions", type=int, default=None, help="at most this many (default: the whole split)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", default=None, help="also write the figures here")
    args = parser.parse_args()

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    torch.set_num_threads(args.threads)
    info = host(args.threads)
    from bf16_blocks import bf16_block_products
    from demo_trainer import demo_trainer
    from searchrl.training.state import validate

    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        _, t = demo_trainer(tmp, [f"val.max_questions={args.questions or 'null'}",
                                  f"val.test_max_questions={args.questions or 'null'}"], model=args.model)
        for r in range(args.rounds):
            for name in (SIDES if r % 2 == 0 else SIDES[::-1]):
                with bf16_block_products() if name == "bf16" else nullcontext():
                    start = time.perf_counter()
                    report = validate(t, "check", test=args.split == "test")
                    seconds = time.perf_counter() - start
                em = report["per_question_em"]["world"]
                rows.append({"round": r, "side": name, "seconds": seconds, "em": statistics.mean(em.values()),
                             "per_question_em": em})
                print(f"round {r} {name:<8} {seconds:6.1f} s  EM {rows[-1]['em']:.3f}", file=sys.stderr, flush=True)

    by_side = {name: [row for row in rows if row["side"] == name] for name in SIDES}
    stable = {name: all(row["per_question_em"] == by_side[name][0]["per_question_em"] for row in by_side[name])
              for name in SIDES}
    a, b = by_side["float32"][0]["per_question_em"], by_side["bf16"][0]["per_question_em"]
    uids = sorted(a)
    diffs = [b[u] - a[u] for u in uids]
    mean = statistics.mean(diffs)
    half = 1.96 * statistics.stdev(diffs) / len(diffs) ** 0.5 if len(diffs) > 1 else 0.0
    paired = {"mean": mean, "ci_low": mean - half, "ci_high": mean + half,
              "right_to_wrong": sum(d < 0 for d in diffs), "wrong_to_right": sum(d > 0 for d in diffs)}
    ratios = [x["seconds"] / f["seconds"] for f, x in zip(by_side["float32"], by_side["bf16"])]
    print(host_line(info))
    print(f"{len(uids)} {args.split} questions of the world, model {args.model or 'the demo warm start'}, "
          f"{args.rounds} rounds alternating")
    for name in SIDES:
        print(f"  {name:<8} EM {by_side[name][0]['em']:.3f}  seconds {fmt([row['seconds'] for row in by_side[name]])}"
              f"  the same answers in every round: {stable[name]}")
    print(f"  bf16 / float32 time per round: {fmt(ratios)}x")
    print(f"  bf16 - float32 EM {mean:+.4f} [{paired['ci_low']:+.4f}, {paired['ci_high']:+.4f}] (95%, paired over "
          f"questions); right to wrong {paired['right_to_wrong']}, wrong to right {paired['wrong_to_right']}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        slim = [{k: v for k, v in row.items() if k != "per_question_em"} for row in rows]
        Path(args.json).write_text(json.dumps({
            "host": info, "config": "demo", "model": args.model, "split": args.split, "questions": len(uids),
            "rounds": slim, "time_ratio_by_round": ratios, "same_answers_every_round": stable,
            "bf16_minus_float32_em": paired,
        }, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
