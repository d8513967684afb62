"""Do the sampler's log-probs equal the trainer's? The evidence behind `π_old` being recomputed, not read from the
rollout (docs/benchmarks.md, "π_old from the sampler").

A rollout records each sampled token's log-prob (`Trajectory.sampling_logprobs`). Where those equal what the trainer
computes for the same tokens (same weights, same precision, no dropout), the trainer could skip its no-grad pass for
π_old, as verl lets its users choose. This script samples the demo's rollout (the default model, the world, float32
on both sides, the rollout's temperature) and compares, token by token, the sampler's log-prob with the trainer's
`token_logprobs` of the same trajectories, for the rollout's oneDNN-packed kernels (the CPU default) and for
unpacked ones. SAPO's gate r <= 1 at r = 1 decides a token's gradient on noise of that size.

    .venv/bin/python benchmarks/check_sampler_logprobs.py --questions 8 --group 8 --json OUT.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from hostinfo import host, host_line  # benchmarks/, beside this file


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=8)
    parser.add_argument("--group", type=int, default=8)
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
    from searchrl.training.forward import collate, pad_per_token, token_logprobs
    from searchrl.training.state import build_retriever

    torch.set_num_threads(args.threads)
    cfg = load_config("demo", ["train.bf16=false"])
    source = load_source("world", split="train")
    model, tokenizer = load_policy("default")
    model.eval()
    retriever = build_retriever(cfg, source)
    out = {"host": host(args.threads), "trajectories": args.questions * args.group, "precision": "float32", "kernels": {}}
    for packed in (True, False):
        backend = HFBackend(model, tokenizer, max_batch_size=args.questions * args.group, pack_weights=packed)
        engine = RolloutEngine(backend, tokenizer, retriever, cfg.protocol, cfg.rollout)
        trajectories = engine.run(source.questions[: args.questions], args.group, seed=1)
        batch = collate(trajectories, int(tokenizer.pad_token_id))
        with torch.no_grad():
            trainer, _ = token_logprobs(model, batch, temperature=cfg.rollout.temperature)
        sampler = pad_per_token([t.sampling_logprobs for t in trajectories], trainer.shape[1])
        gap = (trainer - sampler)[batch.response_mask > 0].abs().double()  # (n,)
        out["kernels"]["oneDNN-packed" if packed else "unpacked"] = {
            "tokens": int(gap.numel()), "max": float(gap.max()), "mean": float(gap.mean()),
            "p99": float(gap.quantile(0.99)), "share_over_1e-5": float((gap > 1e-5).double().mean()),
            "share_over_1e-6": float((gap > 1e-6).double().mean()),
        }
    print(host_line(out["host"]))
    for name, row in out["kernels"].items():
        print(f"{name}: {row['tokens']} sampled tokens, |sampler − trainer| max {row['max']:.2e}, mean "
              f"{row['mean']:.2e}, p99 {row['p99']:.2e}; share above 1e-5: {row['share_over_1e-5']:.1%}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
