"""RL steps of the demo configuration with and without the lower-block cache (`train.train_layers`).

With `train.train_layers: n`, the embeddings and the lower blocks are frozen, so `LowerBlockCache`
(`src/searchrl/training/batching.py`) runs them once per trajectory and step, and every later forward of the
step starts at the first trainable block. This benchmark runs the same RL steps from one saved warm start with
the cache on and off, one process each, over `--rounds` rounds with the order alternating, and reports step and
update times (median and range; the first step of each process is warm-up) with the per-round ratio, and whether
the runs computed the same rewards and losses.

    .venv/bin/python benchmarks/bench_lower_blocks.py --warm-start runs/demo-sapo-seed0/final_model

`--warm-start` takes any HF model folder (the demo's `final_model/`, or a `searchrl sft` output); without it the
policy starts from the untrained default model, which times the same work but learns nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hostinfo import fmt, host, host_line  # noqa: E402


def worker(args: argparse.Namespace) -> None:
    from searchrl.training import batching
    from searchrl.training.config import load_config
    from searchrl.training.loop import train

    if args.worker == "off":
        batching.frozen_block_count = lambda model: 0  # what the trainer did before the cache
    overrides = [
        f"train.warm_start={args.warm_start}" if args.warm_start else "train.warm_start=null",
        "val.untrained=false", "val.at_start=false", "val.every=0", "train.time_budget_min=null",
        f"train.steps={args.steps}", "checkpoint.every=0", "checkpoint.export_final=false",
        f"run.dir={args.out}", "run.overwrite=true",
    ]
    train(load_config("demo", overrides), console=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warm-start", default=None, help="HF model folder to start RL from (default: the untrained model)")
    parser.add_argument("--steps", type=int, default=4, help="RL steps per variant (the first is reported too)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (OMP_NUM_THREADS) of each run")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of one process per variant, order alternating")
    parser.add_argument("--json", default=None, help="also write the per-round ratios here")
    parser.add_argument("--worker", choices=("on", "off"), default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return 0

    results: dict[str, list[list[dict]]] = {"on": [], "off": []}
    with tempfile.TemporaryDirectory() as tmp:
        for round_index in range(args.rounds):
            for variant in ("on", "off") if round_index % 2 == 0 else ("off", "on"):  # alternate who goes first
                out = Path(tmp) / f"{variant}-{round_index}"
                cmd = [sys.executable, __file__, "--worker", variant, "--out", str(out), "--steps", str(args.steps)]
                if args.warm_start:
                    cmd += ["--warm-start", str(Path(args.warm_start).resolve())]
                env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
                done = subprocess.run(cmd, env=env, capture_output=True, text=True)
                if done.returncode != 0:
                    sys.stderr.write(done.stderr[-4000:])
                    raise SystemExit(f"the '{variant}' run failed (exit {done.returncode}); its output is above")
                results[variant].append([json.loads(line) for line in (out / "metrics.jsonl").open()])

    def values(variant: str, key: str) -> list[float]:  # every step after each process's first (warm-up)
        return [row[key] for run in results[variant] for row in run[1:]]

    def per_round(key: str) -> list[float]:
        med = lambda run: statistics.median(row[key] for row in run[1:])  # noqa: E731
        return [med(a) / med(b) for a, b in zip(results["on"], results["off"])]

    print(host_line(host(args.threads)))
    print(f"{args.steps} RL steps of configs/demo.yaml per process, {args.rounds} rounds alternating; median "
          "[min, max] over the steps after each process's first")
    print(f"{'':<12}{'step s':>22}{'update s':>22}")
    for variant, label in (("on", "cache on"), ("off", "cache off")):
        print(f"{label:<12}{fmt(values(variant, 'time/step_s'), '.1f'):>22}"
              f"{fmt(values(variant, 'time/update_s'), '.1f'):>22}")
    print(f"{'on / off':<12}{fmt(per_round('time/step_s'), '.2f', 'x'):>22}"
          f"{fmt(per_round('time/update_s'), '.2f', 'x'):>22}   (per round)")
    same = all(
        a["reward/mean"] == b["reward/mean"] and abs(a["actor/pg_loss"] - b["actor/pg_loss"]) <= 1e-4
        for run_a, run_b in zip(results["on"], results["off"]) for a, b in zip(run_a, run_b)
    )
    print("same rewards and losses (|d pg_loss| <= 1e-4):", "yes" if same else "NO")
    if args.json:
        path = Path(args.json)
        path.write_text(json.dumps({"step_ratio_by_round": per_round("time/step_s"),
                                    "update_ratio_by_round": per_round("time/update_s"), "same": same}, indent=1))
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
