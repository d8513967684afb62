"""The least time a demo run's evaluations can take on this CPU: their Linear products at its peak product rate.

Re-runs the evaluations a finished run made, as its trainer made them (`searchrl.training.state.validate`'s call
of `harness.evaluate`, with the run's `config.yaml`): the untrained model on `val.untrained_max_questions` test
questions, `start_model/` on the test and validation splits, `final_model/` on both. For each it counts

- the tokens the model encoded (prompts, observations, and one per decode step: `HFBackend.stats`, real tokens,
  no padding) and the tokens it generated (the records' `sampled_tokens`; each needs one row of the output head);
- their Linear FLOPs: 2 × (the Linear parameters of the blocks) per encoded token, plus 2 × (the output head's)
  per generated token: what any implementation computes to give the same greedy answers. Attention, the norms and
  the activations are left out, so the floor below is a lower bound;
- the seconds it took here,

and times this CPU's product rate on the model's own Linear shapes (oneDNN-packed float32, 4096 rows for the
blocks' products, 256 for the head's; the best of several timings, before and after the evaluations). The floor
of an evaluation is its FLOPs at that rate: in float32 on this CPU, no evaluation of the same questions by the same
models is faster. The total is compared with a third of `train.time_budget_min` (the demo's target for its
evaluations, issue #35) and with the seconds the run's own evaluations took (`summary.json`).

`--profile` then evaluates the final model on the validation split once more under torch's profiler and splits
that evaluation's CPU time into the Linear products (`mkldnn::_linear_pointwise`, `aten::linear`/`addmm`/`mm`),
attention (`scaled_dot_product_attention`'s kernels) and the rest (norms, activations, cache copies, sampling),
with the rate the products ran at there (their FLOPs as computed, padding and all, from the profiler's shapes).

    ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2 \\
        .venv/bin/python benchmarks/eval_floor.py runs/demo --threads 1 --json OUT.json

Run it on the CPU, kernels and thread count the run had (above: the slowest CPU's proxy), with nothing else
running: the measured seconds are compared with the run's.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hostinfo import host, host_line  # noqa: E402


def linear_shapes(model) -> tuple[dict[tuple[int, int], int], tuple[int, int]]:
    """The blocks' Linear shapes (in, out) with their counts, and the output head's shape."""
    import torch

    head = model.get_output_embeddings()
    shapes: dict[tuple[int, int], int] = {}
    for module in model.modules():
        if isinstance(module, torch.nn.Linear) and module is not head:
            key = (module.in_features, module.out_features)
            shapes[key] = shapes.get(key, 0) + 1
    return shapes, (head.in_features, head.out_features)


def product_rate(shapes: dict[tuple[int, int], int], rows: int, repeats: int = 7) -> float:
    """GFLOP/s of oneDNN-packed float32 products of `rows` rows over `shapes` (weighted by count): the best of
    `repeats` timings of the whole set, so the most favourable rate this CPU showed."""
    import torch

    operands = [(torch.randn(rows, i), torch.ops.mkldnn._reorder_linear_weight(torch.randn(o, i), None), n)
                for (i, o), n in shapes.items()]
    flops = sum(2.0 * rows * i * o * n for (i, o), n in shapes.items())
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for x, packed, n in operands:
            for _ in range(n):
                torch.ops.mkldnn._linear_pointwise(x, packed, None, "none", [], "")
        best = min(best, time.perf_counter() - start)
    return flops / best / 1e9


LINEAR_OPS = ("mkldnn::_linear_pointwise", "aten::addmm", "aten::mm", "aten::linear")
ATTENTION_OPS = ("aten::_scaled_dot_product_flash_attention_for_cpu", "aten::_scaled_dot_product_attention_math")


def profile_evaluation(harness, backend, tokenizer, sources, retrievers, limit, cfg) -> dict:
    """One evaluation under torch's profiler: its CPU time by kind of op (self time of the top-level kernels), and
    the Linear products' rate from the FLOPs of the shapes they ran on."""
    from torch.profiler import ProfilerActivity, profile

    start = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        report = harness.evaluate(backend, tokenizer, sources, retriever=retrievers, limit=limit,
                                  protocol_cfg=cfg.protocol, rollout_cfg=cfg.rollout, batch_size=cfg.val.batch_size,
                                  seed=cfg.val.sample_seed, progress=False)
    seconds = time.perf_counter() - start
    by_op: dict[str, float] = {}
    linear_flops = 0.0
    for event in prof.events():
        by_op[event.name] = by_op.get(event.name, 0.0) + event.self_cpu_time_total / 1e6
        if event.name == "mkldnn::_linear_pointwise" and event.input_shapes and len(event.input_shapes[0]) >= 2:
            x = event.input_shapes[0]
            rows = 1
            for size in x[:-1]:
                rows *= size
            out_features = event.input_shapes[1][0] if event.input_shapes[1] else 0
            linear_flops += 2.0 * rows * x[-1] * out_features
    total = sum(by_op.values())
    linear = sum(by_op.get(op, 0.0) for op in LINEAR_OPS)
    attention = sum(by_op.get(op, 0.0) for op in ATTENTION_OPS)
    return {"split": sources[0].split, "questions": sum(e["n"] for e in report.datasets.values()), "seconds": seconds,
            "cpu_s": total, "shares": {"linear": linear / total, "attention": attention / total,
                                       "rest": (total - linear - attention) / total},
            "linear_gflops": linear_flops / linear / 1e9 if linear else float("nan"),
            "top_ops": sorted(by_op.items(), key=lambda kv: -kv[1])[:12]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", help="a finished run folder (config.yaml, start_model/, final_model/, summary.json)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", default=None, help="also write the figures here")
    parser.add_argument("--profile", action="store_true",
                        help="also profile one more evaluation (the final model on the validation split)")
    parser.add_argument("--limit", type=int, default=None,
                        help="at most this many questions per evaluation: a quick look, not the run's evaluations")
    args = parser.parse_args(argv)
    run = Path(args.run)
    needed = ("config.yaml", "start_model", "final_model", "summary.json")
    missing = [name for name in needed if not (run / name).exists()]
    if missing:
        print(f"{run}: not a finished run folder with its exported models (missing: {', '.join(missing)}); pass the "
              "folder of a `searchrl train` run that ended with checkpoint.export_final=true", file=sys.stderr)
        return 2

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    torch.set_num_threads(args.threads)
    info = host(args.threads)
    from searchrl import models
    from searchrl.evaluation import harness
    from searchrl.rollout import hf
    from searchrl.data.loaders import load_source
    from searchrl.errors import SearchRLError
    from searchrl.training.config import load_config
    from searchrl.training.state import build_retriever, evaluation_retrievers, test_sources, validation_sources

    try:
        cfg = load_config(run / "config.yaml")
        summary = json.loads((run / "summary.json").read_text())
        tests, vals = test_sources(cfg), validation_sources(cfg)
        if tests is None:
            raise SearchRLError("its config has no test split (data.test_split is null); this script follows the "
                                "demo's evaluations, which have one")
        train_source = load_source(cfg.data.train, split=cfg.data.train_split)
        # The trainer's retrievers (`searchrl.training.loop.build`).
        retrievers = evaluation_retrievers(cfg, train_source, build_retriever(cfg, train_source), (*vals, *tests))
    except (SearchRLError, json.JSONDecodeError) as exc:
        print(f"{run}: {exc}", file=sys.stderr)
        return 2
    plan = []  # (label, model, sources, question limit): the evaluations of `searchrl.training.run`, in its order
    if cfg.val.untrained and cfg.train.warm_start is not None:
        plan.append(("untrained", cfg.model.name, tests, cfg.val.untrained_max_questions))
    for label, folder in (("start", "start_model"), ("final", "final_model")):
        plan.append((label, str(run / folder), tests, cfg.val.test_max_questions))
        plan.append((label, str(run / folder), vals, cfg.val.max_questions))

    loaded: dict[str, tuple] = {}
    shapes = head_shape = None
    rates: list[tuple[float, float]] = []  # (blocks, head), timed before and after the evaluations

    def time_rates() -> None:
        rates.append((product_rate(shapes, 4096), product_rate({head_shape: 1}, 256)))
    rows = []
    if args.limit is not None:
        plan = [(label, name, sources, min(limit or args.limit, args.limit)) for label, name, sources, limit in plan]
    for label, name, sources, limit in plan:
        if name not in loaded:
            loaded.clear()  # one model in memory at a time
            model, tokenizer = models.load_policy(name)
            model.eval()
            loaded[name] = (model, tokenizer)
            if shapes is None:
                shapes, head_shape = linear_shapes(model)
                time_rates()
        model, tokenizer = loaded[name]
        backend = hf.HFBackend(model, tokenizer, max_batch_size=cfg.val.batch_size)
        start = time.perf_counter()
        report = harness.evaluate(backend, tokenizer, sources, retriever=retrievers or None, limit=limit,
                                  protocol_cfg=cfg.protocol, rollout_cfg=cfg.rollout, batch_size=cfg.val.batch_size,
                                  seed=cfg.val.sample_seed, progress=True)
        seconds = time.perf_counter() - start
        rows.append({"evaluation": label, "model": Path(name).name, "split": sources[0].split,
                     "questions": sum(e["n"] for e in report.datasets.values()),
                     "em": report.macro.get("em", float("nan")) if len(report.datasets) > 1
                     else next(iter(report.datasets.values()))["em"], "seconds": seconds,
                     "encoded_tokens": backend.stats["prefill_tokens"] + backend.stats["decode_tokens"],
                     "generated_tokens": sum(record["sampled_tokens"] for record in report.records)})
    assert shapes is not None and head_shape is not None
    time_rates()
    body_rate, head_rate = max(r[0] for r in rates), max(r[1] for r in rates)
    body_params = sum(i * o * n for (i, o), n in shapes.items())
    head_params = head_shape[0] * head_shape[1]
    for row in rows:
        body, head = 2.0 * body_params * row["encoded_tokens"], 2.0 * head_params * row["generated_tokens"]
        row["linear_gflop"] = (body + head) / 1e9
        row["floor_s"] = body / body_rate / 1e9 + head / head_rate / 1e9
        row["achieved_gflops"] = row["linear_gflop"] / row["seconds"]

    profile = None
    if args.profile:
        label, name, sources, limit = plan[-1]
        model, tokenizer = loaded[name]  # the last evaluation's model: still loaded
        profile = profile_evaluation(harness, hf.HFBackend(model, tokenizer, max_batch_size=cfg.val.batch_size),
                                     tokenizer, sources, retrievers or None, limit, cfg)
        profile["linear_share_of_peak"] = profile["linear_gflops"] / body_rate

    budget_s = 60.0 * (cfg.train.time_budget_min or 0.0)
    total = {key: sum(r[key] for r in rows) for key in ("questions", "seconds", "floor_s", "linear_gflop")}
    on_test = [r for r in rows if r["split"] == cfg.data.test_split]
    print(host_line(info))
    print(f"Product rate here (float32, oneDNN-packed; best timing): the blocks' Linear shapes at 4096 rows "
          f"{body_rate:.1f} GFLOP/s, the output head at 256 rows {head_rate:.1f} GFLOP/s")
    print(f"{'evaluation':<10} {'split':<5} {'questions':>9} {'EM':>6} {'encoded':>8} {'generated':>9} "
          f"{'GFLOP':>7} {'seconds':>8} {'floor s':>8} {'GFLOP/s':>8}")
    for r in rows:
        print(f"{r['evaluation']:<10} {r['split']:<5} {r['questions']:>9} {r['em']:>6.3f} {r['encoded_tokens']:>8} "
              f"{r['generated_tokens']:>9} {r['linear_gflop']:>7.0f} {r['seconds']:>8.1f} {r['floor_s']:>8.1f} "
              f"{r['achieved_gflops']:>8.1f}")
    print(f"all {len(rows)}: {total['questions']} questions, {total['seconds']:.0f} s here (the run's own: "
          f"{summary.get('time', {}).get('evaluations_s', float('nan')):.0f} s), floor {total['floor_s']:.0f} s")
    if budget_s:
        print(f"a third of the {budget_s / 60:g}-minute budget: {budget_s / 3:.0f} s; the floor is "
              f"{total['floor_s'] / budget_s:.1%} of the budget, the test evaluations' alone "
              f"{sum(r['floor_s'] for r in on_test) / budget_s:.1%}; measured here {total['seconds'] / budget_s:.1%}")
    if profile:
        print(f"Profiled: the final model on {profile['questions']} {profile['split']} questions, "
              f"{profile['seconds']:.1f} s (under the profiler): Linear products {profile['shares']['linear']:.0%} "
              f"(at {profile['linear_gflops']:.1f} GFLOP/s as computed, {profile['linear_share_of_peak']:.0%} of the "
              f"rate above), attention {profile['shares']['attention']:.0%}, the rest {profile['shares']['rest']:.0%}")
        for op, seconds in profile["top_ops"]:
            print(f"  {op:<55} {seconds:>7.2f} s")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({
            "host": info, "run": run.name, "config": cfg.run.name,
            "product_gflops": {"blocks_4096_rows": body_rate, "head_256_rows": head_rate, "timings": rates},
            "linear_params": {"blocks": body_params, "head": head_params}, "budget_s": budget_s,
            "run_evaluations_s": summary.get("time", {}).get("evaluations_s"),
            "evaluations": rows, "total": total, "profile": profile}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
