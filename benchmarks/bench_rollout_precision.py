"""The demo's rollout decoded in float32 (oneDNN-packed weights, the CPU default) against bf16 autocast, on this CPU.

`rollout.bf16: null` samples training rollouts in float32 on a CPU and under bf16 autocast on a GPU. Whether bf16
would decode faster on a CPU with native bf16 (AMX, avx512_bf16) decides that default. Same work on both sides:
the demo's prompts (world training questions, B questions × G samples), every completion runs to the demo's
token budget (`workload.fix_lengths`: no stop tag, no EOS), the same seeds; the two precisions alternate over the
rounds; median [min, max] of each side's rollout wall time, and the per-round ratio.

    .venv/bin/python benchmarks/bench_rollout_precision.py --rounds 3 --threads 2 --json OUT.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

from hostinfo import fmt, host, host_line  # benchmarks/, beside this file
from workload import fix_lengths


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=8)
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    from searchrl.data import load_source
    from searchrl.models import load_policy
    from searchrl.rollout import RolloutEngine
    from searchrl.rollout.hf import HFBackend
    from searchrl.training.config import load_config
    from searchrl.training.state import build_retriever

    torch.set_num_threads(args.threads)
    cfg = load_config("demo")
    source = load_source("world", split="train")
    model, tokenizer = load_policy("default")
    model = fix_lengths(model.eval(), tokenizer)
    retriever = build_retriever(cfg, source)
    questions = source.questions[: args.questions]
    times: dict[str, list[float]] = {"float32": [], "bf16": []}
    tokens: dict[str, list[int]] = {"float32": [], "bf16": []}
    for r in range(args.rounds):
        for name in (("float32", "bf16") if r % 2 == 0 else ("bf16", "float32")):
            backend = HFBackend(model, tokenizer, max_batch_size=args.questions * args.group, bf16=name == "bf16")
            engine = RolloutEngine(backend, tokenizer, retriever, cfg.protocol, cfg.rollout)
            began = time.perf_counter()
            trajectories = engine.run(questions, args.group, seed=r)
            times[name].append(time.perf_counter() - began)
            tokens[name].append(sum(sum(t.response_mask) for t in trajectories))
    info = host(args.threads)
    ratios = [b / f for f, b in zip(times["float32"], times["bf16"])]
    print(host_line(info))
    for name in times:
        print(f"{name:8s} rollout {fmt(times[name])} s, sampled tokens {tokens[name]}")
    print(f"bf16 / float32 per round: {fmt(ratios, '.2f', 'x')}")
    if args.json:
        Path(args.json).write_text(json.dumps({"host": info, "args": vars(args), "seconds": times, "tokens": tokens,
                                               "ratio_by_round": ratios}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
