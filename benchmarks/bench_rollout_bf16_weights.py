"""A lever not in the library, measured: the demo's rollout on a bf16 copy of the policy instead of float32 weights.

The CPU rollout decodes on oneDNN-packed float32 weights (`rollout.bf16: null`); `rollout.bf16=true` runs the same
float32 weights under bf16 autocast. This measures a third way, which searchrl does not offer: a bf16 copy of the
whole policy (weights, norms, KV cache in bf16), its Linear weights packed for oneDNN in bf16. One rollout batch of
the demo (8 questions × 8 samples, the demo's turn budgets) from the same start model and sampling seed on each
side, alternating which goes first, `--rounds` rounds. The two sides sample from different precisions, so their
trajectories (and token counts, reported) differ slightly: the figure is seconds per rollout and per generated
token.

    .venv/bin/python benchmarks/bench_rollout_bf16_weights.py --model runs/demo/start_model --rounds 3 --json OUT

Only CPUs with native bf16 products (`avx512_bf16`, AMX) can gain; an AVX2-only CPU computes bf16 slower.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hostinfo import fmt, host, host_line  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="the start model (e.g. a demo run's start_model/)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    torch.set_num_threads(args.threads)
    info = host(args.threads)
    from searchrl.rollout import hf
    from searchrl.rollout.engine import RolloutEngine
    from searchrl.training.config import load_config
    from searchrl.training.loop import build
    from searchrl.training.state import step_seed

    float32_pack = hf._PackedLinears._pack

    def bf16_pack(self: hf._PackedLinears) -> list:
        return [(m, torch.ops.mkldnn._reorder_linear_weight(m.weight.detach(), None)) for m in self.model.modules()
                if type(m) is torch.nn.Linear and m.bias is None and m.weight.dtype == torch.bfloat16]

    with tempfile.TemporaryDirectory() as tmp:
        cfg = load_config("demo", [f"run.dir={tmp}/run", "log.console=false", f"model.name={args.model}",
                                   "train.warm_start=null"])
        t = build(cfg, Path(tmp) / "run", console=False)
        t.model.eval()
        bf16_model = copy.deepcopy(t.model).to(torch.bfloat16).eval()
        backend = hf.HFBackend(bf16_model, t.tokenizer, max_batch_size=cfg.derived.trajectories_per_step, bf16=False)
        backend.pack_weights = True  # the library packs float32 weights only; this side packs bf16 ones
        sides = {"float32 (default)": (t.engine, float32_pack),
                 "bf16 copy": (RolloutEngine(backend, t.tokenizer, t.retriever, cfg.protocol, cfg.rollout), bf16_pack)}
        questions = t.sampler.batch(1)
        results: dict[str, dict[str, list[float]]] = {name: {"seconds": [], "tokens": []} for name in sides}
        for r in range(args.rounds):
            order = list(sides) if r % 2 == 0 else list(reversed(sides))
            for name in order:
                engine, pack = sides[name]
                hf._PackedLinears._pack = pack
                start = time.perf_counter()
                trajectories = engine.run(questions, cfg.train.group_size, seed=step_seed(cfg.seed, 1, "rollout"))
                results[name]["seconds"].append(time.perf_counter() - start)
                results[name]["tokens"].append(sum(sum(tr.response_mask) for tr in trajectories))
                print(f"round {r} {name}: {results[name]['seconds'][-1]:.2f} s", file=sys.stderr, flush=True)
        hf._PackedLinears._pack = float32_pack
    print(host_line(info))
    base = results["float32 (default)"]["seconds"]
    for name, res in results.items():
        per_token = [s / n * 1e3 for s, n in zip(res["seconds"], res["tokens"])]
        ratios = [s / b for s, b in zip(res["seconds"], base)]
        print(f"{name:<18} rollout s {fmt(res['seconds'])}, generated tokens {fmt(res['tokens'], '.0f')}, "
              f"ms per generated token {fmt(per_token)}, / float32 per round {fmt(ratios)}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"host": info, "model": args.model, "rounds": results}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
