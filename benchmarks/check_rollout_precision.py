"""Does the rollout's precision change what the agent does? The evidence behind `rollout.bf16` staying float32 on
the CPU (docs/benchmarks.md, "Where a demo step's time goes").

The trainer recomputes π_old in its own precision, so a faster, coarser sampler leaves the algorithm as it is only
if it samples the same policy. This script samples the demo's rollouts (8 questions x 8 samples a batch, T = 1) from
one model folder, batch by batch with the same questions and the same sampling seed, once in float32 (the CPU's
rollout) and once in bf16 (`--bf16 autocast`: `rollout.bf16=true`, the whole forward under bf16 autocast;
`--bf16 blocks`: the decoder blocks' products only, the output head float32, see bf16_blocks.py), and compares
what the trajectories do: the share that is well formed (`format_valid`) and the mean reward (EM), per batch and as paired differences over the batches with a 95% t
interval. A model trained by RL (a run's `final_model/`) shows it best: its behaviour is what RL has shaped.
The control is float32 again with other sampling seeds: the same policy, other samples, so its difference to the
first float32 side is what sampling alone moves these means.

    .venv/bin/python benchmarks/check_rollout_precision.py --model runs/demo/final_model --batches 16 --json OUT.json
    .venv/bin/python benchmarks/check_rollout_precision.py --model runs/demo/final_model --bf16 blocks --json OUT.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from contextlib import nullcontext
from pathlib import Path

from hostinfo import host, host_line  # benchmarks/, beside this file

T_95 = {4: 2.776, 8: 2.306, 12: 2.179, 16: 2.131, 24: 2.069, 32: 2.040}  # two-sided 95% t for n - 1 dof


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="a model folder (e.g. a demo run's final_model/)")
    parser.add_argument("--batches", type=int, default=16, choices=sorted(T_95))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--bf16", default="autocast", choices=("autocast", "blocks"),
                        help="the bf16 side: rollout.bf16=true (autocast), or bf16_blocks.py's products (blocks)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    from bf16_blocks import bf16_block_products  # after HF_HUB_OFFLINE: it imports transformers
    from searchrl.rewards import score_trajectories
    from searchrl.training import loop
    from searchrl.training.config import load_config

    torch.set_num_threads(args.threads)
    info = host(args.threads)
    sides: dict[str, dict[str, list[float]]] = {}
    bf16_setting = "true" if args.bf16 == "autocast" else "false"  # blocks: float32 packs, made bf16 below
    sides_run = (("float32", "false", 1000), ("bf16", bf16_setting, 1000), ("float32_other_seeds", "false", 5000))
    for name, value, seed_base in sides_run:
        variant = bf16_block_products() if name == "bf16" and args.bf16 == "blocks" else nullcontext()
        with tempfile.TemporaryDirectory() as tmp, variant:
            cfg = load_config("demo", [f"run.dir={tmp}/run", "log.console=false", f"model.name={args.model}",
                                       "train.warm_start=null", f"rollout.bf16={value}"])
            trainer = loop.build(cfg, Path(tmp) / "run", console=False)
            trainer.model.eval()
            side = sides[name] = {"format_valid": [], "reward": []}
            for batch in range(1, args.batches + 1):
                trajectories = trainer.engine.run(trainer.sampler.batch(batch), cfg.train.group_size,
                                                  seed=seed_base + batch)
                score_trajectories(trajectories, cfg.reward)
                n = len(trajectories)
                side["format_valid"].append(sum(bool(t.extras["format_valid"]) for t in trajectories) / n)
                side["reward"].append(sum(t.reward for t in trajectories) / n)
                print(f"{name} batch {batch}: format {side['format_valid'][-1]:.3f}, reward {side['reward'][-1]:.3f}",
                      file=sys.stderr, flush=True)
    t = T_95[args.batches]
    paired = {}
    for other in ("bf16", "float32_other_seeds"):
        for key in ("format_valid", "reward"):
            diffs = [b - a for a, b in zip(sides["float32"][key], sides[other][key])]
            mean, se = statistics.mean(diffs), statistics.stdev(diffs) / len(diffs) ** 0.5
            paired[f"{other}_minus_float32/{key}"] = {"mean": mean, "ci_low": mean - t * se, "ci_high": mean + t * se}
    print(host_line(info))
    print(f"{args.batches} batches of 64 trajectories from {args.model}, the same questions on every side")
    for name in sides:
        print(f"  {name:<20} " + ", ".join(f"{key} {statistics.mean(v):.3f}" for key, v in sides[name].items()))
    for key, d in paired.items():
        print(f"  {key:<34} {d['mean']:+.3f} [{d['ci_low']:+.3f}, {d['ci_high']:+.3f}] (95% t over batches)")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"host": info, "model": args.model, "batches": args.batches,
                                               "bf16_side": args.bf16,
                                               "per_batch": sides, "paired": paired}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
