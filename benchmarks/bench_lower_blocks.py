"""RL steps of the demo configuration with and without the lower-block cache (`train.train_layers`).

With `train.train_layers: n`, the embeddings and the lower blocks are frozen, so `LowerBlockCache`
(`src/searchrl/training/batching.py`) runs them once per trajectory and step, and every later forward of the
step starts at the first trainable block. This benchmark runs the same RL steps twice from one saved warm start,
in one process each (the cache on, then off), and reports step and update times and whether the two runs
computed the same rewards and losses.

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
    parser.add_argument("--worker", choices=("on", "off"), default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return 0

    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for variant in ("on", "off"):
            out = Path(tmp) / variant
            cmd = [sys.executable, __file__, "--worker", variant, "--out", str(out), "--steps", str(args.steps)]
            if args.warm_start:
                cmd += ["--warm-start", str(Path(args.warm_start).resolve())]
            env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
            done = subprocess.run(cmd, env=env, capture_output=True, text=True)
            if done.returncode != 0:
                sys.stderr.write(done.stderr[-4000:])
                raise SystemExit(f"the '{variant}' run failed (exit {done.returncode}); its output is above")
            results[variant] = [json.loads(line) for line in (out / "metrics.jsonl").open()]

    def median(variant: str, key: str) -> float:
        return statistics.median(row[key] for row in results[variant])

    print(f"{args.steps} RL steps of configs/demo.yaml per variant, {args.threads} thread(s); medians")
    print(f"{'':<12}{'step s':>9}{'update s':>10}")
    for variant, label in (("on", "cache on"), ("off", "cache off")):
        print(f"{label:<12}{median(variant, 'time/step_s'):>9.1f}{median(variant, 'time/update_s'):>10.1f}")
    print(f"{'ratio':<12}{median('on', 'time/step_s') / median('off', 'time/step_s'):>8.2f}x"
          f"{median('on', 'time/update_s') / median('off', 'time/update_s'):>9.2f}x")
    same = all(
        a["reward/mean"] == b["reward/mean"] and abs(a["actor/pg_loss"] - b["actor/pg_loss"]) <= 1e-4
        for a, b in zip(results["on"], results["off"])
    )
    print("same rewards and losses (|d pg_loss| <= 1e-4):", "yes" if same else "NO")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
