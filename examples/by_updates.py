"""Runs that differ in optimiser updates per rollout batch, read on one axis: the optimiser updates that moved the
weights. The collapse study's on-policy control (one update per rollout batch of 8 trajectories) against its
off-policy arm (16 updates per rollout batch of 64) is the case it was written for (docs/experiments.md):

    python examples/by_updates.py runs/onpolicy/grpo-offpolicy-s* runs/onpolicy/grpo-onpolicy-s* \
        --out runs/onpolicy/by-updates.png --table runs/onpolicy/by-updates.md

Per run, from its metrics.jsonl, config.yaml and summary.json:

- **updates**: the cumulative count of optimiser steps taken, Σ (`actor/updates` − `actor/zero_grad_updates`): an
  update on an all-zero gradient (every group of its mini-batch all right or all wrong) is skipped and not counted;
- the answered and format-valid rates over the last `--window` sampled trajectories (default 64, one rollout batch
  of the off-policy arm), so that a step of 8 trajectories and a step of 64 read with the same noise;
- **collapse**: the first step where that windowed answered rate falls below a third of its best so far (the
  collapse monitor's `answer_collapse` rule, over the same number of trajectories), and the updates taken before
  that step's rollout (the rates of a step are those of the policy that sampled it, so they are drawn at the
  updates before the step; dev EM, measured after the step's update, at the updates after it);
- dev EM at each validation and the test EM at the start and the end of RL, with the run's paired gain.

A figure (answered rate, format-valid rate, entropy and dev EM against updates; one colour per arm, one line per
seed) and a markdown table with one row per run.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import yaml

from searchrl.analysis.monitor import default_rules
from searchrl.analysis.report import COLLAPSE_FORMAT_BELOW, RunData, _finite, arms, load_run, moving_average
from searchrl.errors import DataError
from searchrl.fileio import atomic_write_bytes, atomic_write_text


ANSWER_COLLAPSE = default_rules()["answer_collapse"].threshold  # the monitor's rule, read from it


def trajectories_per_step(run: RunData) -> int:
    """batch_size x group_size from the run's config.yaml (the trainer writes it at the start)."""
    path = run.path / "config.yaml"
    try:
        train = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("train", {})
        return int(train["batch_size"]) * int(train["group_size"])
    except (OSError, yaml.YAMLError, KeyError, TypeError, ValueError) as exc:
        raise DataError(f"{path}: cannot read train.batch_size and train.group_size ({exc}); "
                        "pass run folders written by `searchrl train`") from None


def windowed(values: list[float], per_step: int, window: int) -> list[float]:
    """Mean over the last `window` trajectories (the last ceil(window / per_step) steps, fewer at the start)."""
    return moving_average(values, max(1, math.ceil(window / per_step)))


def read(run: RunData, window: int) -> dict:
    per_step = trajectories_per_step(run)
    rows = [r for r in sorted(run.rows, key=lambda r: r["step"]) if r["step"] >= 1 and _finite(r.get("actor/updates"))]
    if not rows:
        raise DataError(f"{run.path}: no RL step in metrics.jsonl yet")
    before, after, total = [], [], 0.0  # updates before a step's rollout (its policy) and after its update
    for r in rows:
        skipped = r.get("actor/zero_grad_updates")
        before.append(total)
        total += float(r["actor/updates"]) - (float(skipped) if _finite(skipped) else 0.0)
        after.append(total)
    answered = windowed([float(r.get("env/answered", math.nan)) for r in rows], per_step, window)
    valid = windowed([float(r.get("diag/format_valid", math.nan)) for r in rows], per_step, window)
    entropy = windowed([float(r.get("diag/entropy", math.nan)) for r in rows], per_step, window)
    best = [max(answered[: i + 1]) for i in range(len(answered))]
    collapse = next((i for i, v in enumerate(answered) if v < ANSWER_COLLAPSE * best[i]), None)
    by_step = {int(r["step"]): u for r, u in zip(rows, after)}  # validation runs after the step's update
    dev = [(by_step.get(int(r["step"]), 0.0), float(r["val/world/em"])) for r in sorted(run.rows, key=lambda r: r["step"])
           if _finite(r.get("val/world/em"))]
    dead = sum(1 for r in rows if _finite(r.get("train/dead_step")) and float(r["train/dead_step"]) > 0)
    summary = run.summary if isinstance(run.summary, dict) else {}
    gain = next(iter(summary.get("gain", {}).values()), {})
    evals = summary.get("evals", {})
    test = [next(iter(evals.get(w, {}).values()), {}).get("em", math.nan) for w in ("start", "final")]
    return {"name": run.name, "arm": run.arm, "per_step": per_step, "steps": len(rows), "updates": before,
            "total_updates": total,
            "answered": answered, "valid": valid, "entropy": entropy, "dev": dev, "dead_steps": dead,
            "collapse_step": None if collapse is None else int(rows[collapse]["step"]),
            "collapse_updates": None if collapse is None else before[collapse],
            "min_answered": min(answered), "min_valid": min(valid), "test": test,
            "gain": (gain.get("em_gain", math.nan), gain.get("ci_low", math.nan), gain.get("ci_high", math.nan))}


def _em(x: float) -> str:
    return f"{x:.3f}" if _finite(x) else "–"


def table(found: list[dict], window: int) -> str:
    head = (f"| run | trajectories / step | steps | updates taken | dead steps | collapse: step (updates before it) | "
            f"answered, min ({window}-trajectory window) | format valid, min | dev EM per validation | "
            f"test EM start → end | paired gain [95% CI] |\n" + "| --- " * 11 + "|\n")
    lines = []
    for f in found:
        collapse = "–" if f["collapse_step"] is None else f"{f['collapse_step']} ({f['collapse_updates']:.0f})"
        dev = ", ".join(f"{em:.2f}" for _, em in f["dev"])
        g = f["gain"]
        lines.append(f"| {f['name']} | {f['per_step']} | {f['steps']} | {f['total_updates']:.0f} | {f['dead_steps']} | "
                     f"{collapse} | {f['min_answered']:.2f} | {f['min_valid']:.2f} | {dev} | "
                     f"{_em(f['test'][0])} → {_em(f['test'][1])} | {g[0]:+.3f} [{g[1]:+.3f}, {g[2]:+.3f}] |")
    return head + "\n".join(lines) + "\n"


def figure(found: list[dict], window: int) -> bytes:
    from searchrl.analysis.report import _colours, _new_figure, _png_bytes  # matplotlib: only when drawing

    panels = [("answered", f"answered rate ({window}-trajectory window)"),
              ("valid", f"format-valid rate ({window}-trajectory window)"),
              ("entropy", f"entropy, nats per token ({window}-trajectory window)"), ("dev", "dev EM (greedy)")]
    fig, axes = _new_figure(len(panels))
    by_arm: dict[str, list[dict]] = {}
    for f in found:
        by_arm.setdefault(f["arm"], []).append(f)
    colours = _colours(len(by_arm))
    for ax, (key, title) in zip(axes, panels):
        for colour, (arm, members) in zip(colours, by_arm.items()):
            for i, f in enumerate(members):
                xs, ys = (zip(*f["dev"]) if f["dev"] else ((), ())) if key == "dev" else (f["updates"], f[key])
                ax.plot(list(xs), list(ys), color=colour, linewidth=1.2, alpha=0.8,
                        marker="o" if key == "dev" else None, markersize=3,
                        label=f"{arm} ({len(members)} seed{'s' if len(members) > 1 else ''})" if i == 0 else None)
        if key == "valid":
            ax.axhline(COLLAPSE_FORMAT_BELOW, color="grey", linestyle=":", linewidth=1)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("optimiser updates taken")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return _png_bytes(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dirs", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True, help="the figure to write (.png)")
    parser.add_argument("--table", type=Path, help="also write the table here (.md); it is printed either way")
    parser.add_argument("--window", type=int, default=64, help="trajectories per rate window (default 64)")
    args = parser.parse_args(argv)
    if args.window < 1:
        parser.error(f"--window must be at least 1, got {args.window}")
    try:
        runs = [run for members in arms([load_run(d) for d in args.run_dirs]).values() for run in members]
        found = [read(run, args.window) for run in runs]
    except DataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    text = table(found, args.window)
    atomic_write_bytes(args.out, figure(found, args.window))
    if args.table:
        atomic_write_text(args.table, text)
    print(text + f"figure: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
