"""Benchmark: forward+backward time of the policy loss with and without the SAPO / LLDS penalties, and the
CalibAdv advantage transform, on CPU.

Run: .venv/bin/python benchmarks/bench_losses.py [--threads 1] [--repeats 60] [--quick]

What it measures, at B=256, T=1024 with 4 model turns per row (observation gaps between turns, right padding):

- ``Objective.loss(...)`` + ``backward()`` exactly as the trainer runs it, with the (B, T) advantages that
  ``Objective.advantages`` returns: ``grpo`` (PPO clip only) vs ``sapo`` vs ``llds`` (action gate, the default;
  also the response and token gates), first with the KL and entropy terms off so the ratio isolates the penalty,
  then with Search-R1's defaults on (KL 0.001 low_var_kl, entropy 0.001: what ``algorithm: {name: sapo}`` runs);
- ``calibadv_advantages`` at B=512, T=2048 (target < 50 ms) and at B=256, T=1024.

Every round runs every variant once, in a fresh random order (seeded), so position in the round and load from
other processes hit all variants alike. Reported per variant: median and range of the wall time (and of the
thread's CPU time with ``--threads 1``); per penalty, the paired ratio to its baseline in each round, as median
and 5–95 % range. The CPU model and the load average are printed with the table. Targets: each penalty adds at
most 10 % to the clipped loss's time; calibadv < 50 ms at 512×2048.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hostinfo import cpu_flags, cpu_model  # noqa: E402
from searchrl.algorithms import (
    AdvantageBatch,
    Objective,
    PolicyBatch,
    build_objective,
    calibadv_advantages,
)


def make_mask(rows: int, width: int, turns: int, gen: torch.Generator) -> torch.Tensor:
    """Rows of ``turns`` model turns separated by observation blocks, then right padding: (B, T) long."""
    mask = torch.zeros(rows, width, dtype=torch.long)
    for b in range(rows):
        used = int(width * (0.6 + 0.4 * float(torch.rand(1, generator=gen))))
        # `turns` model runs and `turns - 1` observation gaps share the used width
        cuts = sorted(torch.randperm(used - 2, generator=gen)[: 2 * turns - 1].add(1).tolist())
        edges = [0, *cuts, used]
        for k in range(0, 2 * turns, 2):
            mask[b, edges[k] : edges[k + 1]] = 1
    return mask


def make_policy_data(rows: int, width: int, turns: int, seed: int = 0) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    mask = make_mask(rows, width, turns, gen)
    old = -torch.rand(rows, width, generator=gen) * 4
    rewards = (torch.rand(rows, generator=gen) > 0.5).float()
    groups = [f"q{b // 5}" for b in range(rows)]  # G = 5, as Search-R1
    return {
        "old": old,
        "drift": 0.05 * torch.randn(rows, width, generator=gen),  # π_θ moved away from π_old
        "mask": mask,
        # (B, T) advantages, exactly what Objective.advantages hands the trainer
        "adv": build_objective({"name": "grpo"}).advantages(AdvantageBatch(rewards, groups, mask)),
        "ref": old + 0.02 * torch.randn(rows, width, generator=gen),
        "entropy": torch.rand(rows, width, generator=gen),
    }


def objective_step(objective: Objective, data: dict[str, torch.Tensor], with_ref: bool) -> Callable[[], None]:
    def step() -> None:
        log_probs = (data["old"] + data["drift"]).requires_grad_()
        entropy = data["entropy"].clone().requires_grad_() if with_ref else None
        batch = PolicyBatch(
            log_probs,
            data["old"],
            data["adv"],
            data["mask"],
            ref_log_probs=data["ref"] if with_ref else None,
            entropy=entropy,
        )
        loss, _ = objective.loss(batch)
        loss.backward()

    return step


def calibadv_step(rows: int, width: int, turns: int) -> Callable[[], None]:
    gen = torch.Generator().manual_seed(1)
    mask = make_mask(rows, width, turns, gen)
    rewards = (torch.randint(0, 4, (rows,), generator=gen) / 3.0).float()
    groups = [f"q{b // 5}" for b in range(rows)]
    scores = [[float(torch.randint(0, 4, (1,), generator=gen)) / 3 for _ in range(turns - 1)] for _ in range(rows)]

    def step() -> None:
        calibadv_advantages(rewards, groups, mask, scores)

    return step


BASELINES = {
    "Objective sapo": "Objective grpo (clip only)",
    "Objective llds (action gate)": "Objective grpo (clip only)",
    "Objective llds (response gate)": "Objective grpo (clip only)",
    "Objective llds (token gate)": "Objective grpo (clip only)",
    "Objective sapo, KL+entropy on": "Objective grpo, KL+entropy on",
    "Objective llds, KL+entropy on": "Objective grpo, KL+entropy on",
}


def ms_range(seconds: list[float]) -> str:
    """'median [min, max]' in milliseconds."""
    return f"{statistics.median(seconds) * 1e3:.2f} [{min(seconds) * 1e3:.2f}, {max(seconds) * 1e3:.2f}]"


def spread(values: list[float]) -> tuple[float, float, float]:
    """Median and the 5th and 95th percentiles (nearest rank) of ``values``."""
    ordered = sorted(values)
    at = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return statistics.median(ordered), at(0.05), at(0.95)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1)")
    parser.add_argument("--repeats", type=int, default=60, help="timed rounds (after 3 warm-up rounds)")
    parser.add_argument("--quick", action="store_true", help="8 rounds, for a smoke run")
    parser.add_argument("--json", default=None, help="also write the medians and paired ratios here")
    args = parser.parse_args()
    repeats = 8 if args.quick else args.repeats
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    data = make_policy_data(256, 1024, 4)
    bare = {"kl_coef": 0, "entropy_coef": 0}
    variants: dict[str, Callable[[], None]] = {
        "Objective grpo (clip only)": objective_step(build_objective({"name": "grpo", **bare}), data, False),
        "Objective sapo": objective_step(build_objective({"name": "sapo", **bare}), data, False),
        "Objective llds (action gate)": objective_step(build_objective({"name": "llds", **bare}), data, False),
        "Objective llds (response gate)": objective_step(
            build_objective({"name": "llds", "llds": {"gate": "response"}, **bare}), data, False
        ),
        "Objective llds (token gate)": objective_step(
            build_objective({"name": "llds", "llds": {"gate": "token"}, **bare}), data, False
        ),
        "Objective grpo, KL+entropy on": objective_step(build_objective({"name": "grpo"}), data, True),
        "Objective sapo, KL+entropy on": objective_step(build_objective({"name": "sapo"}), data, True),
        "Objective llds, KL+entropy on": objective_step(build_objective({"name": "llds"}), data, True),
        "calibadv_advantages 256×1024": calibadv_step(256, 1024, 4),
        "calibadv_advantages 512×2048": calibadv_step(512, 2048, 4),
    }
    wall: dict[str, list[float]] = {name: [] for name in variants}
    cpu: dict[str, list[float]] = {name: [] for name in variants}
    console = Console(width=140)
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    load_before = os.getloadavg()[0]
    order = random.Random(0)
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task("timing rounds", total=repeats + 3)
        for round_index in range(repeats + 3):
            names = list(variants)
            order.shuffle(names)  # a fresh order each round: no variant always runs first or after another
            for name in names:
                step = variants[name]
                start_cpu, start = time.thread_time(), time.perf_counter()
                step()
                if round_index >= 3:  # the first rounds warm up the allocator and kernels
                    wall[name].append(time.perf_counter() - start)
                    cpu[name].append(time.thread_time() - start_cpu)
            progress.advance(task)
    load_after = os.getloadavg()[0]

    table = Table(
        title=f"B=256, T=1024, 4 turns/row; {repeats} interleaved rounds; torch {torch.__version__}, "
        f"{args.threads} thread(s)"
    )
    # With one thread, the thread's CPU time excludes the time spent waiting for a core on a shared machine, so the
    # ratios use it; with more threads CPU time would count the workers' spin-waits, so they use wall time.
    basis = cpu if args.threads == 1 else wall
    basis_name = "CPU time" if args.threads == 1 else "wall time"
    table.add_column("variant")
    table.add_column("wall median ms [min, max]", justify="right")
    if args.threads == 1:
        table.add_column("CPU median ms [min, max]", justify="right")
    table.add_column(f"paired ratio, {basis_name}: median [5%, 95%]", justify="right")
    summary: dict[str, dict] = {}
    for name in variants:
        summary[name] = {"wall_ms_median": statistics.median(wall[name]) * 1e3,
                         "cpu_ms_median": statistics.median(cpu[name]) * 1e3}
        row = [name, ms_range(wall[name])]
        if args.threads == 1:
            row.append(ms_range(cpu[name]))
        if name in BASELINES:
            mid, low, high = spread([a / b for a, b in zip(basis[name], basis[BASELINES[name]])])
            summary[name]["paired_ratio"] = {"median": mid, "p5": low, "p95": high, "baseline": BASELINES[name]}
            row.append(f"{mid:.3f}× [{low:.3f}, {high:.3f}]")
        else:
            row.append("")
        table.add_row(*row)
    console.print(table)
    console.print(
        f"CPU: {cpu_model()} ({', '.join(cpu_flags())}); {os.cpu_count()} cores visible; load average {load_before:.1f} before, "
        f"{load_after:.1f} after"
    )
    if args.json:
        import json

        path = Path(args.json)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(json.dumps({"cpu": cpu_model(), "threads": args.threads, "rounds": repeats,
                                   "load": [load_before, load_after], "variants": summary}, indent=1))
        os.replace(tmp, path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
