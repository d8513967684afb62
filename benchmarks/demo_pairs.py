"""The demo's RL steps in its budget, two codes side by side: read the run folders of `searchrl train seed=S` made
with code A and code B (one run at a time, alternating), and print one row per run and the comparison.

    .venv/bin/python benchmarks/demo_pairs.py --a DIR_A0 DIR_A1 DIR_A2 --b DIR_B0 DIR_B1 DIR_B2 \
        --labels current,0484c94 [--json OUT.json]

Each folder needs summary.json, metrics.jsonl and evals.json (what results/demo/ keeps). The i-th folder of
`--a` and of `--b` are the same training seed. Per run: the RL steps, the step's median [min, max] and the
rollout's and update's medians (metrics.jsonl's `time/*`), the trainer's seconds and, where the run recorded it,
its split by phase (`time`), and the test gain with its paired interval (summary.json). Across runs: the RL steps
of A over B, the final EM of A minus B paired over questions per seed, and the mean gain of each code over seeds
with its seeds' t interval and the two-level bootstrap over seeds and questions (`searchrl.analysis.seeds`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from searchrl.analysis.seeds import paired_differences, summarise_seeds
from searchrl.evaluation.bootstrap import paired_gain
from searchrl.fileio import atomic_write_json

NEEDED = ("summary.json", "metrics.jsonl", "evals.json")


def read_run(folder: Path) -> dict:
    missing = [name for name in NEEDED if not (folder / name).is_file()]
    if missing:
        raise SystemExit(f"demo_pairs: {folder} lacks {', '.join(missing)}: pass the folder of a finished "
                         "`searchrl train` run (or its copy under results/demo/)")
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    steps = [json.loads(line) for line in (folder / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
             if line.strip()]
    evals = json.loads((folder / "evals.json").read_text(encoding="utf-8"))
    if not steps or "gain" not in summary:
        raise SystemExit(f"demo_pairs: {folder} has no RL step or no test gain in summary.json")

    def times(key: str) -> list[float]:
        return [float(s[key]) for s in steps if key in s]

    step_s = times("time/step_s")
    (name, gain), = summary["gain"].items()  # the demo evaluates one dataset
    final = {when: e.get("per_question_em", {}) for when, e in evals.items()}
    return {
        "folder": str(folder), "dataset": name, "rl_steps": int(summary["steps"]),
        "step_s": {"median": statistics.median(step_s), "min": min(step_s), "max": max(step_s)},
        "rollout_s_median": statistics.median(times("time/rollout_s")),
        "update_s_median": statistics.median(times("time/update_s")),
        "seconds": float(summary["seconds"]), "time": summary.get("time"),
        "test_start": summary["evals"]["start"][name]["em"], "test_final": summary["evals"]["final"][name]["em"],
        "gain": {k: gain[k] for k in ("em_gain", "ci_low", "ci_high", "n")},
        "by_type_start": summary["evals"]["start"][name].get("em_by_type"),
        "by_type_final": summary["evals"]["final"][name].get("em_by_type"),
        "dev_start": summary["val"]["start"][name]["em"], "dev_final": summary["val"]["final"][name]["em"],
        "d": paired_differences(final), "final_em": final.get("final", {}).get(name, {}),
    }


def compare(a: list[dict], b: list[dict], labels: tuple[str, str]) -> dict:
    pairs, differences = [], []
    for ra, rb in zip(a, b):
        name = ra["dataset"]  # final EM of A minus B, paired over the questions both scored (as a gain is)
        gain = paired_gain({"per_question_em": {name: rb["final_em"]}}, {"per_question_em": {name: ra["final_em"]}},
                           seed=0)[name]
        pairs.append({"steps": [ra["rl_steps"], rb["rl_steps"]], "steps_ratio": ra["rl_steps"] / rb["rl_steps"],
                      "final_em_difference": {"mean": gain["em_gain"], "ci_low": gain["ci_low"],
                                              "ci_high": gain["ci_high"], "n": gain["n"]}})
        differences.append({q: ra["final_em"][q] - rb["final_em"][q] for q in set(ra["final_em"]) & set(rb["final_em"])})
    steps_a, steps_b = sum(r["rl_steps"] for r in a), sum(r["rl_steps"] for r in b)
    return {
        "labels": list(labels), "pairs": pairs, "rl_steps": [steps_a, steps_b], "rl_steps_ratio": steps_a / steps_b,
        "gain_over_seeds": {lab: summarise_seeds([r["d"] for r in runs]) for lab, runs in zip(labels, (a, b))},
        "final_em_difference_over_seeds": summarise_seeds(differences),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", nargs="+", type=Path, required=True, help="code A's run folders, one per seed")
    ap.add_argument("--b", nargs="+", type=Path, required=True, help="code B's run folders, the same seeds in order")
    ap.add_argument("--labels", default="A,B", help="two names, comma-separated (default A,B)")
    ap.add_argument("--json", type=Path, help="write every figure here")
    args = ap.parse_args(argv)
    labels = tuple(x.strip() for x in args.labels.split(","))
    if len(labels) != 2 or not all(labels):
        ap.error(f"--labels: give two names separated by a comma, not {args.labels!r}")
    if len(args.a) != len(args.b):
        ap.error(f"--a has {len(args.a)} folders and --b {len(args.b)}: give one per seed on both sides")
    a, b = [read_run(f) for f in args.a], [read_run(f) for f in args.b]
    for label, runs in zip(labels, (a, b)):
        for r in runs:
            t = r["time"]
            split = (f" | RL steps {t['rl_steps_s']:.0f} s, evaluations {t['evaluations_s']:.0f} s "
                     f"({t['evaluations_s'] / t['total_s']:.0%})") if t else ""
            g, s = r["gain"], r["step_s"]
            print(f"{label} {r['folder']}: {r['rl_steps']} RL steps, step {s['median']:.1f} s [{s['min']:.1f}, "
                  f"{s['max']:.1f}] (rollout {r['rollout_s_median']:.1f}, update {r['update_s_median']:.1f}), "
                  f"{r['seconds']:.0f} s{split} | test {r['test_start']:.3f} -> {r['test_final']:.3f}, "
                  f"gain {g['em_gain']:+.3f} [{g['ci_low']:+.3f}, {g['ci_high']:+.3f}] | dev {r['dev_start']:.3f} "
                  f"-> {r['dev_final']:.3f}")
    out = compare(a, b, labels)
    for pair in out["pairs"]:
        d = pair["final_em_difference"]
        print(f"steps {pair['steps'][0]} / {pair['steps'][1]} ({pair['steps_ratio']:.2f}x); final EM "
              f"{labels[0]} - {labels[1]} {d['mean']:+.3f} [{d['ci_low']:+.3f}, {d['ci_high']:+.3f}]")
    print(f"RL steps over the seeds: {out['rl_steps'][0]} / {out['rl_steps'][1]} = {out['rl_steps_ratio']:.3f}x")
    for label, s in out["gain_over_seeds"].items():
        print(f"{label}: mean gain {s['mean']:+.3f}, seeds' t [{s['seeds_t'][0]:+.3f}, {s['seeds_t'][1]:+.3f}], "
              f"seeds and questions [{s['seeds_and_questions'][0]:+.3f}, {s['seeds_and_questions'][1]:+.3f}]")
    s = out["final_em_difference_over_seeds"]
    print(f"final EM {labels[0]} - {labels[1]} over seeds {s['mean']:+.3f}, seeds' t [{s['seeds_t'][0]:+.3f}, "
          f"{s['seeds_t'][1]:+.3f}]")
    if args.json:
        atomic_write_json(args.json, {"a": [{k: v for k, v in r.items() if k not in ("d", "final_em")} for r in a],
                                      "b": [{k: v for k, v in r.items() if k not in ("d", "final_em")} for r in b],
                                      **out})
    return 0


if __name__ == "__main__":
    sys.exit(main())
