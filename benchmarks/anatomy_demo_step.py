"""Where the time of one of the demo's RL steps goes, and how close each part runs to this CPU's product rate.

Builds the demo's trainer (`configs/demo.yaml`: its data, model, warm start and sizes), then times RL steps phase by
phase, with timers wrapped around the functions that do the work (no profiler, so no overhead inside them):

- rollout: prefill (prompts and the observations the environment inserts) and decode (one token per active row
  per forward, sampling, stop checks; the rollout's time less its prefills);
- π_old: the no-grad pass over the rows the step's first update does not forward itself (`BehaviourLogProbs`);
  with `train.train_layers` it also records the frozen lower blocks' outputs, which later forwards reuse;
- update: the optimiser updates' forwards, their backward passes, and the rest (clipping, AdamW);
- other: rewards, advantages, metrics (the step's time less the parts above).

The decode is also split by how many rows a forward carried (1, 2, 3-4, 5-8, ..., 33-64): a forward's cost grows
slowly with its rows (the weights are read once per forward however many rows it carries), so the forwards that
carry the last few rows of a turn cost nearly as much as full ones. `--eval` also times the greedy evaluation of
the dev split (the demo's 200 questions, as it runs at the start and the end of RL) split the same way.

It also counts the multiply-adds of every `nn.Linear` call in each phase (forward hooks; the LM head of the
training log-probs and attention are not counted, so the rates are lower bounds) and times this CPU's float32 and
bf16 oneDNN products at a prefill's shape (4096 × 576 × 1536), the rate the phases are compared with.

    .venv/bin/python benchmarks/anatomy_demo_step.py --steps 3 --json results/benchmarks/xeon-amx/anatomy-demo-step.json
    .venv/bin/python benchmarks/anatomy_demo_step.py --model runs/demo/start_model   # skip the warm start

The first step is a warm-up and is not reported. One process, one configuration: this is a breakdown, not a
comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hostinfo import fmt, host, host_line  # noqa: E402


class Phases:
    """Seconds and Linear FLOPs per phase; `inside(name)` wraps a function so its calls count to that phase."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.flops: dict[str, float] = defaultdict(float)
        self.current = "other"
        self.decode_bins: dict[int, list[float]] = defaultdict(lambda: [0, 0.0])  # rows bin -> [forwards, seconds]

    def inside(self, name: str, fn):
        phases = self

        def wrapped(*args, **kwargs):
            outer, phases.current = phases.current, name
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                phases.seconds[name] += time.perf_counter() - start
                phases.current = outer

        return wrapped

    def decode_forwards(self, forward):
        """Wraps `HFSession._forward`: the seconds and count of one-token forwards, by active rows (bins)."""
        phases = self

        def wrapped(session, buffer, input_ids, positions):
            start = time.perf_counter()
            try:
                return forward(session, buffer, input_ids, positions)
            finally:
                if input_ids.shape[1] == 1:
                    entry = phases.decode_bins[1 << (input_ids.shape[0] - 1).bit_length()]
                    entry[0] += 1
                    entry[1] += time.perf_counter() - start

        return wrapped

    def take_bins(self) -> dict[str, dict[str, float]]:
        out = {f"<={k}": {"forwards": v[0], "seconds": v[1], "ms_per_forward": 1e3 * v[1] / v[0]}
               for k, v in sorted(self.decode_bins.items())}
        self.decode_bins.clear()
        return out

    def count_linear(self, module, args, output) -> None:
        x = args[0]
        self.flops[self.current] += 2.0 * x.numel() / x.shape[-1] * module.in_features * module.out_features


def repeated_first_search_share(trajectories) -> float:
    """Of the trajectories that searched and went on to a second turn, the share whose history at that point (prompt
    and first action, hence the same observation) another trajectory of its group already had: an upper bound on
    the second turn's prefill that sharing identical histories would save."""
    seen, repeated, total = set(), 0, 0
    for tr in trajectories:
        if len(tr.turns) >= 2 and tr.turns[0].action == "search":
            key = (tr.group_id, tr.turns[0].text)
            total += 1
            repeated += key in seen
            seen.add(key)
    return repeated / total if total else float("nan")


def product_rates(torch) -> dict[str, float]:
    """GFLOP/s of oneDNN-packed products at a prefill's shape, float32 and bf16 (median of 10)."""
    x, w = torch.randn(4096, 576), torch.randn(1536, 576)
    rates = {}
    for name, dtype in (("float32", torch.float32), ("bf16", torch.bfloat16)):
        xd, packed = x.to(dtype), torch.ops.mkldnn._reorder_linear_weight(w.to(dtype), None)
        times = []
        for _ in range(12):
            start = time.perf_counter()
            torch.ops.mkldnn._linear_pointwise(xd, packed, None, "none", [], "")
            times.append(time.perf_counter() - start)
        rates[name] = 2 * 4096 * 576 * 1536 / statistics.median(times[2:]) / 1e9
    return rates


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3, help="RL steps reported (after one warm-up step)")
    parser.add_argument("--model", default=None, help="start from this model folder instead of the demo's warm start")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", default=None, help="also write the figures here")
    parser.add_argument("--eval", action="store_true", help="also time the greedy evaluation of the dev split")
    parser.add_argument("overrides", nargs="*", help="config overrides (KEY=VALUE), as for `searchrl train`")
    args = parser.parse_args()

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    torch.set_num_threads(args.threads)
    info = host(args.threads)
    from searchrl.rollout import engine as engine_module
    from searchrl.rollout import hf
    from searchrl.training import forward as forward_module
    from demo_trainer import demo_trainer
    from searchrl.training import loop

    phases = Phases()
    hf.HFSession._prefill_left_aligned = phases.inside("rollout prefill", hf.HFSession._prefill_left_aligned)
    hf.HFSession._forward = phases.decode_forwards(hf.HFSession._forward)
    engine_module.RolloutEngine.run = phases.inside("rollout", engine_module.RolloutEngine.run)
    forward_module.BehaviourLogProbs.__init__ = phases.inside("pi_old pass", forward_module.BehaviourLogProbs.__init__)
    torch.Tensor.backward = phases.inside("update backward", torch.Tensor.backward)
    rl_step = loop.rl_step

    with tempfile.TemporaryDirectory() as tmp:
        cfg, t = demo_trainer(tmp, args.overrides, model=args.model)
        for module in t.model.modules():
            if isinstance(module, torch.nn.Linear):
                module.register_forward_hook(phases.count_linear)
        steps = []
        for step in range(args.steps + 1):
            phases.seconds.clear()
            phases.flops.clear()
            out = rl_step(t, step)
            m = out.metrics
            s = dict(phases.seconds)
            rollout, prefill = s.get("rollout", 0.0), s.get("rollout prefill", 0.0)
            backward = s.get("update backward", 0.0)
            row = {
                "step": step,
                "step_s": m["time/step_s"],
                "rollout_prefill_s": prefill,
                "rollout_decode_s": rollout - prefill,
                "pi_old_pass_s": s.get("pi_old pass", 0.0),
                "update_forward_and_rest_s": m["time/update_s"] - backward,
                "update_backward_s": backward,
                "other_s": m["time/step_s"] - rollout - s.get("pi_old pass", 0.0) - m["time/update_s"],
                "linear_gflop": {k: v / 1e9 for k, v in phases.flops.items()},
                "response_tokens": sum(len(tr.response_ids) for tr in out.trajectories),
                "searches_per_trajectory": m.get("diag/searches_mean", float("nan")),
                "repeated_first_search_share": repeated_first_search_share(out.trajectories),
                "decode_by_rows": phases.take_bins(),
            }
            steps.append(row)
            print(f"step {step}: {row['step_s']:.1f} s", file=sys.stderr, flush=True)
            t.state.step = step + 1
        evaluation = None
        if args.eval:
            from searchrl.training.state import validate

            phases.seconds.clear()
            phases.take_bins()
            start = time.perf_counter()
            report = validate(t, "anatomy")
            total = time.perf_counter() - start
            prefill = phases.seconds.get("rollout prefill", 0.0)
            evaluation = {"split": report["split"], "questions": report["datasets"]["world"]["n"], "seconds": total,
                          "prefill_s": prefill, "decode_and_rest_s": total - prefill,
                          "decode_by_rows": phases.take_bins()}
    rates = product_rates(torch)
    reported = steps[1:]
    parts = ["rollout_prefill_s", "rollout_decode_s", "pi_old_pass_s", "update_forward_and_rest_s",
             "update_backward_s", "other_s"]
    print(host_line(info))
    print(f"oneDNN product rate at 4096 x 576 x 1536: float32 {rates['float32']:.0f} GFLOP/s, bf16 "
          f"{rates['bf16']:.0f} GFLOP/s")
    print(f"{len(reported)} steps after a warm-up; seconds, median [min, max]")
    step_median = statistics.median(r["step_s"] for r in reported)
    print(f"  step                        {fmt([r['step_s'] for r in reported])}")
    for part in parts:
        values = [r[part] for r in reported]
        print(f"  {part[:-2]:<27} {fmt(values)}  ({statistics.median(values) / step_median:.0%} of the step)")
    phase_of = {"rollout prefill": "rollout_prefill_s", "rollout": "rollout_decode_s", "pi_old pass": "pi_old_pass_s",
                "other": "update_forward_and_rest_s"}
    print(f"  repeated first searches     {fmt([r['repeated_first_search_share'] for r in reported])} of the "
          "trajectories reaching a second turn")
    print("Linear GFLOP/s by phase (median over steps; lower bounds, see the docstring):")
    for phase, part in phase_of.items():
        rates_seen = [r["linear_gflop"].get(phase, 0.0) / r[part] for r in reported if r[part] > 0]
        if rates_seen:
            print(f"  {phase:<27} {statistics.median(rates_seen):.0f}")
    print("Decode forwards by active rows (median over steps; a step without such forwards counts 0): forwards, "
          "seconds, ms a forward (over the steps that had them)")
    bins = sorted({key for r in reported for key in r["decode_by_rows"]}, key=lambda key: int(key[2:]))
    for key in bins:
        cells = [r["decode_by_rows"].get(key, {"forwards": 0, "seconds": 0.0}) for r in reported]
        per_forward = [c["ms_per_forward"] for c in cells if c["forwards"]]
        print(f"  {key:<6} {statistics.median(c['forwards'] for c in cells):>5.0f} "
              f"{statistics.median(c['seconds'] for c in cells):>7.2f} {statistics.median(per_forward):>7.1f}")
    if evaluation:
        print(f"Greedy evaluation, {evaluation['questions']} {evaluation['split']} questions: {evaluation['seconds']:.1f} s, "
              f"prefill {evaluation['prefill_s']:.1f} s, decode and the rest {evaluation['decode_and_rest_s']:.1f} s")
        for key, cell in evaluation["decode_by_rows"].items():
            print(f"  {key:<6} {cell['forwards']:>5} {cell['seconds']:>7.2f} {cell['ms_per_forward']:>7.1f}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"host": info, "product_gflops": rates, "config": "demo",
                                               "overrides": args.overrides, "model": args.model or "demo warm start",
                                               "steps": steps, "evaluation": evaluation}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
