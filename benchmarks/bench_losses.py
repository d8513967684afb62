"""Benchmark: forward+backward time of the policy loss with and without the SAPO / LLDS penalties, and the
CalibAdv advantage transform, on CPU.

Run: .venv/bin/python benchmarks/bench_losses.py [--repeats 40] [--quick]

What it measures (median over repeats, 2 torch threads, rounds interleaved so that load from other processes
on a shared machine hits every variant alike):

- ``Objective.loss`` as the trainer runs it, for ``grpo`` (PPO clip only) vs ``sapo`` vs ``llds`` (action gate),
  with the KL and entropy terms off so the ratio isolates the penalty, and again with Search-R1's defaults on;
- the standalone functions: ``ppo_clip_loss`` alone, and plus ``sapo_penalty`` / ``llds_penalty`` computed
  separately (no shared context);
- ``calibadv_advantages`` at B=512, T=2048 (target < 50 ms) and at the loss shape B=256, T=1024.

Targets: each penalty adds at most 10 % to the clipped loss's time; calibadv_advantages < 50 ms at 512×2048.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from collections.abc import Callable

import torch
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from searchrl.algorithms import (
    AdvantageBatch,
    PolicyBatch,
    build_objective,
    calibadv_advantages,
    llds_penalty,
    ppo_clip_loss,
    sapo_penalty,
)


def make_mask(rows: int, width: int, turns: int, gen: torch.Generator) -> torch.Tensor:
    """Rows of `turns` model turns separated by observation blocks, then right padding."""
    mask = torch.zeros(rows, width, dtype=torch.long)
    for b in range(rows):
        used = int(width * (0.6 + 0.4 * float(torch.rand(1, generator=gen))))
        # turns model runs and turns-1 observation gaps share the used width
        cuts = sorted(torch.randperm(used - 2, generator=gen)[: 2 * turns - 1].add(1).tolist())
        edges = [0, *cuts, used]
        for k in range(0, 2 * turns, 2):
            mask[b, edges[k] : edges[k + 1]] = 1
    return mask


def make_policy_batch(rows: int, width: int, turns: int, seed: int = 0) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    mask = make_mask(rows, width, turns, gen)
    old = -torch.rand(rows, width, generator=gen) * 4
    drift = 0.05 * torch.randn(rows, width, generator=gen)
    rewards = (torch.rand(rows, generator=gen) > 0.5).float()
    groups = [f"q{b // 5}" for b in range(rows)]  # G = 5, as Search-R1
    # (B, T) advantages, exactly what Objective.advantages hands the trainer
    adv = build_objective({"name": "grpo"}).advantages(AdvantageBatch(rewards, groups, mask))
    return {
        "old": old,
        "drift": drift,
        "mask": mask,
        "adv": adv,
        "ref": old + 0.02 * torch.randn(rows, width, generator=gen),
        "entropy": torch.rand(rows, width, generator=gen),
    }


def run_objective(objective, data: dict[str, torch.Tensor], with_ref: bool) -> Callable[[], None]:
    def step() -> None:
        lp = (data["old"] + data["drift"]).requires_grad_()
        ent = data["entropy"].clone().requires_grad_() if with_ref else None
        batch = PolicyBatch(
            lp,
            data["old"],
            data["adv"],
            data["mask"],
            ref_log_probs=data["ref"] if with_ref else None,
            entropy=ent,
        )
        loss, _ = objective.loss(batch)
        loss.backward()

    return step


def run_standalone(extra: str | None, data: dict[str, torch.Tensor]) -> Callable[[], None]:
    def step() -> None:
        lp = (data["old"] + data["drift"]).requires_grad_()
        loss, _ = ppo_clip_loss(lp, data["old"], data["adv"], data["mask"])
        if extra == "sapo":
            loss = loss + 0.1 * sapo_penalty(lp, data["old"], data["adv"], data["mask"])
        elif extra == "llds":
            loss = loss + 0.2 * llds_penalty(lp, data["old"], data["adv"], data["mask"], gate="action")
        loss.backward()

    return step


def run_calibadv(rows: int, width: int, turns: int) -> Callable[[], None]:
    gen = torch.Generator().manual_seed(1)
    mask = make_mask(rows, width, turns, gen)
    rewards = (torch.randint(0, 4, (rows,), generator=gen) / 3.0).float()
    groups = [f"q{b // 5}" for b in range(rows)]  # G = 5, as Search-R1
    scores = [[float(torch.randint(0, 4, (1,), generator=gen)) / 3 for _ in range(turns - 1)] for _ in range(rows)]

    def step() -> None:
        calibadv_advantages(rewards, groups, mask, scores)

    return step


def median_ms(times: list[float]) -> float:
    return statistics.median(times) * 1e3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=40, help="timed rounds per variant (after 3 warm-up rounds)")
    parser.add_argument("--quick", action="store_true", help="8 rounds, for a smoke run")
    args = parser.parse_args()
    repeats = 8 if args.quick else args.repeats
    torch.set_num_threads(2)
    torch.manual_seed(0)

    loss_data = make_policy_batch(256, 1024, 4)
    bare = {"kl_coef": 0, "entropy_coef": 0}
    variants: dict[str, Callable[[], None]] = {
        "Objective grpo (clip only)": run_objective(build_objective({"name": "grpo", **bare}), loss_data, False),
        "Objective sapo": run_objective(build_objective({"name": "sapo", **bare}), loss_data, False),
        "Objective llds (action)": run_objective(build_objective({"name": "llds", **bare}), loss_data, False),
        "Objective grpo +KL+entropy": run_objective(build_objective({"name": "grpo"}), loss_data, True),
        "Objective sapo +KL+entropy": run_objective(build_objective({"name": "sapo"}), loss_data, True),
        "Objective llds +KL+entropy": run_objective(build_objective({"name": "llds"}), loss_data, True),
        "ppo_clip_loss": run_standalone(None, loss_data),
        "ppo_clip_loss + sapo_penalty": run_standalone("sapo", loss_data),
        "ppo_clip_loss + llds_penalty": run_standalone("llds", loss_data),
        "calibadv_advantages 256×1024": run_calibadv(256, 1024, 4),
        "calibadv_advantages 512×2048": run_calibadv(512, 2048, 4),
    }
    times: dict[str, list[float]] = {name: [] for name in variants}
    console = Console()
    columns = (TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
               TimeElapsedColumn(), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task("timing rounds", total=repeats + 3)
        for round_index in range(repeats + 3):
            for name, step in variants.items():
                start = time.perf_counter()
                step()
                if round_index >= 3:  # the first rounds warm up allocator and kernels
                    times[name].append(time.perf_counter() - start)
            progress.advance(task)

    med = {name: median_ms(t) for name, t in times.items()}
    table = Table(title=f"B=256, T=1024, 4 turns/row; median of {repeats} rounds; torch {torch.__version__}, 2 threads")
    table.add_column("variant")
    table.add_column("median ms", justify="right")
    table.add_column("IQR ms", justify="right")
    table.add_column("vs baseline", justify="right")
    baselines = {
        "Objective sapo": "Objective grpo (clip only)",
        "Objective llds (action)": "Objective grpo (clip only)",
        "Objective sapo +KL+entropy": "Objective grpo +KL+entropy",
        "Objective llds +KL+entropy": "Objective grpo +KL+entropy",
        "ppo_clip_loss + sapo_penalty": "ppo_clip_loss",
        "ppo_clip_loss + llds_penalty": "ppo_clip_loss",
    }
    for name, t in times.items():
        q = statistics.quantiles(t, n=4) if len(t) >= 2 else [t[0], t[0], t[0]]
        ratio = f"{med[name] / med[baselines[name]]:.3f}×" if name in baselines else ""
        table.add_row(name, f"{med[name]:.2f}", f"{(q[2] - q[0]) * 1e3:.2f}", ratio)
    console.print(table)
    console.print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores visible, "
        f"load average {os.getloadavg()[0]:.2f} (shared)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
