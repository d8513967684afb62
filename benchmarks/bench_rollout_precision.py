"""The demo's rollout decoded in float32 (oneDNN-packed weights, the CPU default) against bf16, on this CPU.

`rollout.bf16: null` samples training rollouts in float32 on a CPU and under bf16 autocast on a GPU. Whether bf16
would decode faster on a CPU with native bf16 (AMX, avx512_bf16) decides that default. Three sides: `float32`;
`bf16` (`rollout.bf16=true`: bf16 autocast over the float32 weights); and `bf16-copy`, a way searchrl does not
offer, measured as a lever: a bf16 copy of the whole policy (weights, norms and KV cache in bf16) whose Linear
weights are packed for oneDNN in bf16. Same work on every side: the demo's prompts (world training questions, B
questions × G samples), every completion runs to the demo's token budget (`workload.fix_lengths`: no stop tag, no
EOS), the same seeds; the order of the sides rotates over the rounds; median [min, max] of each side's rollout
wall time, and its ratio to float32's per round.

    .venv/bin/python benchmarks/bench_rollout_precision.py --rounds 3 --threads 2 --json OUT.json
"""

from __future__ import annotations

import argparse
import copy
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
    from searchrl.rollout import hf
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
    bf16_model = copy.deepcopy(model).to(torch.bfloat16).eval()  # fix_lengths's hook comes with the copy
    float32_pack = hf._PackedLinears._pack

    def bf16_pack(self: hf._PackedLinears) -> list:  # the library packs float32 weights only
        return [(m, torch.ops.mkldnn._reorder_linear_weight(m.weight.detach(), None)) for m in self.model.modules()
                if type(m) is torch.nn.Linear and m.bias is None and m.weight.dtype == torch.bfloat16]

    sides = ("float32", "bf16", "bf16-copy")
    times: dict[str, list[float]] = {name: [] for name in sides}
    tokens: dict[str, list[int]] = {name: [] for name in sides}
    for r in range(args.rounds):
        for name in sides[r % 3:] + sides[: r % 3]:
            if name == "bf16-copy":
                backend = HFBackend(bf16_model, tokenizer, max_batch_size=args.questions * args.group)
                backend.pack_weights = True
                hf._PackedLinears._pack = bf16_pack
            else:
                backend = HFBackend(model, tokenizer, max_batch_size=args.questions * args.group, bf16=name == "bf16")
                hf._PackedLinears._pack = float32_pack
            engine = RolloutEngine(backend, tokenizer, retriever, cfg.protocol, cfg.rollout)
            began = time.perf_counter()
            trajectories = engine.run(questions, args.group, seed=r)
            times[name].append(time.perf_counter() - began)
            tokens[name].append(sum(sum(t.response_mask) for t in trajectories))
    hf._PackedLinears._pack = float32_pack
    info = host(args.threads)
    ratios = {name: [x / f for f, x in zip(times["float32"], times[name])] for name in sides[1:]}
    print(host_line(info))
    for name in times:
        print(f"{name:9s} rollout {fmt(times[name])} s, sampled tokens {tokens[name]}")
    for name, values in ratios.items():
        print(f"{name} / float32 per round: {fmt(values, '.2f', 'x')}")
    if args.json:
        Path(args.json).write_text(json.dumps({"host": info, "args": vars(args), "seconds": times, "tokens": tokens,
                                               "ratio_by_round": ratios}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
