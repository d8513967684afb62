"""The one-GPU configs measured: `searchrl train` with a config's own model settings and batch sizes, on seeded random
weights of its exact architecture, with every completion forced to a fixed length: peak GPU memory, step time and
rollout tokens/s per step.

    python3 benchmarks/gpu_configs.py --json OUT.json                    # both configs, 4 steps, 1,024 tokens
    python3 benchmarks/gpu_configs.py --configs sapo_qwen0.5b_1gpu --max-tokens 512 --json OUT.json

What is the config's and what is not: the model settings (architecture, `model.dtype`, LoRA, gradient
checkpointing), the algorithm (SAPO with its KL reference), `train.*` (batch, group, mini- and micro-batches, bf16)
and the rollout's sampling are the config's. Replaced, because this machine has neither: the weights (random, of
the published Qwen2.5 config.json sizes; `bench_gpu.ARCHITECTURES`), the tokenizer (the embedded default's; the
Qwen ids beyond it keep their LM-head cost but are never sampled), the data (the built-in world's questions) and
the retriever (BM25 over the world's corpus). Lengths: random weights stop at a random EOS, so
`workload.fix_lengths` bans EOS and every token holding '<': no tag forms, and each trajectory is one turn of
exactly `--max-tokens` sampled tokens (`rollout.max_turn_tokens`), the length the papers' responses reach
(500-1,000 tokens). Validation, checkpoints and the final export are off: the steps are what is measured.

Each config runs in its own process. Per step: wall time, rollout time, sampled tokens and rollout tokens/s, and
the peak GPU memory allocated and reserved within the step (`torch.cuda.max_memory_*`, reset at each step's start);
the first step is warm-up (CUDA graph capture, allocator growth) and is reported but left out of the medians.
`--json` is rewritten after every step, so a run cut short keeps what it measured. Results: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_gpu import build_random_model  # noqa: E402 - benchmarks/, beside this file
from workload import load_policy_with_fixed_lengths  # noqa: E402

CONFIG_ARCH = {"sapo_qwen0.5b_1gpu": "qwen2.5-0.5b", "sapo_qwen3b_lora_1gpu": "qwen2.5-3b"}


def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def worker(args: argparse.Namespace) -> None:
    """One config in this process: build the weights, train `--steps` steps, write the rows to `--json`."""
    import torch

    from searchrl.rollout.engine import RolloutEngine
    from searchrl.training import loop
    from searchrl.training.config import load_config
    from searchrl.training.run import train

    cuda = args.device.startswith("cuda")
    work = Path(tempfile.mkdtemp(prefix="gpu_configs_"))
    probe = load_config(args.config, [])
    arch = args.arch or CONFIG_ARCH[args.config]
    began = time.perf_counter()
    model_dir = build_random_model(arch, work / "model", args.seed, probe.model.dtype, args.device)
    build_s = time.perf_counter() - began
    load_policy_with_fixed_lengths()  # no EOS, no '<': every trajectory runs to --max-tokens
    overrides = [
        f"model.name={model_dir}", f"run.dir={work / 'run'}", "run.overwrite=true", f"seed={args.seed}",
        f"train.device={args.device}", f"train.steps={args.steps}", "train.time_budget_min=null",
        "data.train=world", "data.val=[]", "data.val_split=dev", "data.test_split=null", "retrieval.index=null",
        f"rollout.max_turn_tokens={args.max_tokens}", f"rollout.max_response_tokens={args.max_tokens}",
        "val.at_start=false", "val.untrained=false", "val.every=0", "val.max_questions=1",
        "checkpoint.every=0", "checkpoint.export_final=false", "log.tensorboard=false", "log.samples_every=0",
        "log.console=false", *args.overrides,
    ]
    cfg = load_config(args.config, overrides)
    report: dict[str, Any] = {
        "config": args.config, "architecture": arch, "max_tokens": args.max_tokens, "build_weights_s": build_s,
        "settings": {"model.dtype": cfg.model.dtype, "model.lora.enabled": cfg.model.lora.enabled,
                     "model.lora.r": cfg.model.lora.r, "model.gradient_checkpointing": cfg.model.gradient_checkpointing,
                     "algorithm": dict(cfg.algorithm),
                     "train.batch_size": cfg.train.batch_size, "train.group_size": cfg.train.group_size,
                     "train.mini_batch_size": cfg.train.mini_batch_size,
                     "train.micro_batch_size": cfg.train.micro_batch_size, "train.bf16": cfg.train.bf16},
        "steps": [],
    }
    rollouts: list[float] = []
    run_engine, rl_step = RolloutEngine.run, loop.rl_step

    @functools.wraps(run_engine)
    def timed_run(self: Any, *a: Any, **k: Any) -> Any:
        _sync(args.device)
        start = time.perf_counter()
        try:
            return run_engine(self, *a, **k)
        finally:
            _sync(args.device)
            rollouts.append(time.perf_counter() - start)

    @functools.wraps(rl_step)
    def timed_step(t: Any, step: int) -> Any:
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        _sync(args.device)
        start = time.perf_counter()
        out = rl_step(t, step)
        _sync(args.device)
        wall = time.perf_counter() - start
        n = cfg.train.batch_size * cfg.train.group_size
        tokens = out.metrics["response/sampled_length_mean"] * n
        row = {"step": step, "wall_s": wall, "rollout_s": rollouts[-1], "update_s": wall - rollouts[-1],
               "trajectories": n, "sampled_tokens_mean": tokens / n, "rollout_tok_s": tokens / rollouts[-1]}
        if cuda:
            row |= {"peak_allocated_gb": torch.cuda.max_memory_allocated() / 2**30,
                    "peak_reserved_gb": torch.cuda.max_memory_reserved() / 2**30}
        report["steps"].append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
        return out

    RolloutEngine.run, loop.rl_step = timed_run, timed_step  # fit looks rl_step up in loop's namespace
    began = time.perf_counter()
    train(cfg, console=False)
    report["train_wall_s"] = time.perf_counter() - began
    Path(args.json).write_text(json.dumps(report, indent=1) + "\n")


def _median_range(values: list[float]) -> list[float]:
    return [statistics.median(values), min(values), max(values)] if values else []


def host(device: str) -> dict[str, Any]:
    import torch

    info: dict[str, Any] = {"python": platform.python_version(), "torch": torch.__version__, "cuda": torch.version.cuda,
                            "cpu": platform.processor() or platform.machine()}
    try:
        import transformers

        info["transformers"] = transformers.__version__
    except ImportError:
        pass
    if device.startswith("cuda") and torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        info |= {"gpu": props.name, "gpu_memory_gib": round(props.total_memory / 2**30, 1)}
        smi = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True)
        info["driver"] = smi.stdout.strip() or None
    return info


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", default=",".join(CONFIG_ARCH), help="config names (default: %(default)s)")
    parser.add_argument("--steps", type=int, default=4, help="RL steps per config (the first is warm-up)")
    parser.add_argument("--max-tokens", type=int, default=1024, help="sampled tokens per trajectory")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--arch", default=None, help="another architecture (a CPU smoke run: smollm2-135m)")
    parser.add_argument("--json", required=True, help="write the results here")
    parser.add_argument("--timeout", type=float, default=None, help="seconds per config process")
    parser.add_argument("--config", default=None, help=argparse.SUPPRESS)  # worker mode
    parser.add_argument("overrides", nargs="*", help="extra dotted overrides for every config")
    args = parser.parse_args()
    if args.config:
        worker(args)
        return 0
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"host": host(args.device), "configs": {}}
    failed = False
    for name in args.configs.split(","):
        part = out.with_name(f"{out.stem}-{name}.json")
        cmd = [sys.executable, __file__, "--config", name, "--steps", str(args.steps), "--max-tokens",
               str(args.max_tokens), "--device", args.device, "--seed", str(args.seed), "--json", str(part)]
        if args.arch:
            cmd += ["--arch", args.arch]
        began = time.perf_counter()
        try:
            done = subprocess.run(cmd + args.overrides, timeout=args.timeout, env={**os.environ, "PYTHONUNBUFFERED": "1"})
            code: Any = done.returncode
        except subprocess.TimeoutExpired:
            code = "timeout"
        row = json.loads(part.read_text()) if part.is_file() else {"config": name, "steps": []}
        measured = row["steps"][1:]
        row |= {"exit": code, "process_wall_s": time.perf_counter() - began, "measured_steps": len(measured)}
        for key in ("wall_s", "rollout_s", "update_s", "rollout_tok_s", "peak_allocated_gb", "peak_reserved_gb"):
            values = [s[key] for s in measured if key in s]
            if values:
                row[f"{key}_median_min_max"] = _median_range(values)
        if row["steps"] and "peak_allocated_gb" in row["steps"][0]:
            row["peak_allocated_gb_all_steps"] = max(s["peak_allocated_gb"] for s in row["steps"])
            row["peak_reserved_gb_all_steps"] = max(s["peak_reserved_gb"] for s in row["steps"])
        failed |= code != 0
        result["configs"][name] = row
        out.write_text(json.dumps(result, indent=1) + "\n")
        print(f"{name}: exit {code}, {len(measured)} measured steps, " + ", ".join(
            f"{k.removesuffix('_median_min_max')} {v[0]:.2f} [{v[1]:.2f}, {v[2]:.2f}]"
            for k, v in row.items() if k.endswith("_median_min_max")), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
