"""The per-run table of docs/experiments.md's drift regime, read from the run folders' records.

    python examples/drift_table.py results/collapse/drift-h200-150/*-s*

One row per run: steps, optimiser updates that moved the weights, dead steps (every group all right or all wrong),
the lowest answered rate after step 20, entropy over the first 5 and the last 10 steps, ISDD's largest share, the
fixed probe set's log-likelihood (first 5 steps, peak, last 10), dev EM at every evaluation, and test EM at the
start of RL and at the end with the paired gain's 95% interval (from `summary.json`).
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path


def _finite(values):
    return [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]


def _mean(values):
    values = _finite(values)
    return sum(values) / len(values) if values else float("nan")


def run_row(run: Path) -> str:
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines() if line.strip()]
    summary = json.loads((run / "summary.json").read_text())
    updates = sum(r.get("actor/updates", 0) for r in rows)
    moved = updates - sum(r.get("actor/zero_grad_updates", 0) for r in rows)
    dead = int(sum(r.get("train/dead_step", 0) for r in rows))
    answered = min(_finite(r.get("env/answered") for r in rows[20:]), default=float("nan"))
    entropy = [r.get("diag/entropy") for r in rows]
    isdd = max(_finite(r.get("diag/isdd_share") for r in rows), default=float("nan"))
    probe = [r.get("diag/probe_ll") for r in rows]
    dev = _finite(r.get("val/world/em") for r in rows)  # the steps with a dev evaluation
    start = summary["evals"]["start"]["world"]["em"]
    final = summary["evals"]["final"]["world"]["em"]
    gain = summary["gain"]["world"]
    return (f"| {summary['algorithm']}, seed {run.name.rsplit('-s', 1)[-1]} | {len(rows)} | {moved:.0f} of {updates:.0f} "
            f"| {dead} | {answered:.2f} | {_mean(entropy[:5]):.2f} → {_mean(entropy[-10:]):.2f} | {isdd:.3f} "
            f"| {_mean(probe[:5]):.2f}, {max(_finite(probe), default=float('nan')):.2f}, {_mean(probe[-10:]):.2f} "
            f"| {', '.join(f'{em:.2f}' for em in dev)} | {start:.3f} → {final:.3f} "
            f"| {gain['em_gain']:+.3f} [{gain['ci_low']:+.3f}, {gain['ci_high']:+.3f}] |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run folders (each with metrics.jsonl and summary.json)")
    args = parser.parse_args()
    print("| run | steps | updates that moved the weights | dead steps | answered, min after step 20 "
          "| entropy, first 5 → last 10 steps | ISDD share, max | probe log-likelihood: first 5 steps, peak, last 10 "
          "| dev EM at each evaluation | test EM | paired gain [95% CI] |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for run in args.runs:
        if (run / "metrics.jsonl").is_file():
            print(run_row(run))


if __name__ == "__main__":
    main()
