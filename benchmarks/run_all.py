"""`make bench`: every benchmark at a size that finishes in about 15 minutes in all on a quiet 2-core machine, then
one summary table (each headline as median [min, max] over its rounds, the target, and whether it is met).

    .venv/bin/python benchmarks/run_all.py                 # all of them
    .venv/bin/python benchmarks/run_all.py --only rollout,train --json /tmp/bench.json
    .venv/bin/python benchmarks/run_all.py --keep results/benchmarks/NAME   # keep each benchmark's JSON

The sizes here are smaller than each benchmark's defaults; a benchmark that fails is reported as failed and the
others still run. bench_gpu.py runs only where torch sees a CUDA GPU. `algorithms` (SAPO's and LLDS's RL step
against GRPO's, target within 3%; about 12 minutes on its own) runs only when named in --only.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from hostinfo import cpu_flags, cpu_model, fmt, load  # noqa: E402

Row = tuple[str, str, str, str]  # (what, measured, target, met)


def _met(ok: bool | None) -> str:
    return "report" if ok is None else ("yes" if ok else "NO")


def retrieval_rows(d: dict) -> list[Row]:
    per_round = d["searchrl / best bm25s per round"]
    rows = [(f"BM25 vs bare bm25s ({d['best_bm25s']})", fmt(per_round, ".2f", "x"), ">= 0.9x",
             _met(statistics.median(per_round) >= 0.9)),
            ("BM25 vs rank_bm25", f"{d['ratios']['searchrl / rank_bm25']:.0f}x", ">= 50x",
             _met(d["ratios"]["searchrl / rank_bm25"] >= 50))]
    if "searchrl / pyserini per round" in d:
        rows.append(("BM25 vs pyserini (Lucene)", fmt(d["searchrl / pyserini per round"], ".2f", "x"), ">= 1x",
                     _met(statistics.median(d["searchrl / pyserini per round"]) >= 1.0)))
    return rows


def rollout_rows(d: dict) -> list[Row]:
    ratios = d["engine_speedup_by_round"]["Search-R1 loop"]
    return [("rollout engine vs Search-R1 loop, same work and kernels", fmt(ratios, ".2f", "x"), ">= 2x",
             _met(statistics.median(ratios) >= 2.0))]


def train_rows(d: dict) -> list[Row]:
    ratios = d["ratios_by_round"]["wall"]
    label = "RL step vs TRL GRPOTrainer, all blocks, same work and precision"
    if d.get("args", {}).get("keep_groups"):
        label += ", searchrl keeping groups together"
    return [(label, fmt(ratios, ".2f", "x"), "<= 0.5x",
             _met(statistics.median(ratios) <= 0.5))]


def eval_rows(d: dict) -> list[Row]:
    return [(f"searchrl eval, {d['questions']} NQ questions", f"{d['questions_per_min']:.1f} questions/min",
             "report", "report"),
            ("eval retrieval + bookkeeping share", f"{100 * d['retrieval_and_bookkeeping_share']:.2f}%", "< 10%",
             _met(d["retrieval_and_bookkeeping_share"] < 0.10))]


def algorithms_rows(d: dict) -> list[Row]:
    return [(f"RL step, {name.split(':')[1]} / grpo (same work)", fmt(ratios, ".3f", "x"), "<= 1.03x",
             _met(statistics.median(ratios) <= 1.03))
            for name, ratios in d["ratios_by_round"].items()]


def gpu_rows(d: dict) -> list[Row]:
    out = []
    for arch, pair in d["summary"].items():
        if "ratio_by_round" in pair:
            out.append((f"one GPU: RL step vs TRL, {arch}", fmt(pair["ratio_by_round"]["wall"], ".2f", "x"),
                        "<= 0.5x", _met(statistics.median(pair["ratio_by_round"]["wall"]) <= 0.5)))
    return out


# name -> (script, arguments at the make-bench size, the flag that takes the JSON path, summary rows)
BENCHMARKS: dict[str, tuple[str, list[str], str, Callable[[dict], list[Row]]]] = {
    "retrieval": ("bench_retrieval.py", ["--docs", "20000", "--queries", "500", "--repeats", "3",
                                         "--rank-bm25-queries", "20", "--dense-docs", "32"], "--out", retrieval_rows),
    "rollout": ("bench_rollout.py", ["--questions", "4", "--group", "2", "--turn-tokens", "64", "--rounds", "3"],
                "--json", rollout_rows),
    "train": ("bench_train.py", ["--batch-size", "4", "--group-size", "4", "--mini-batch-size", "8",
                                 "--micro-batch-size", "8", "--steps", "3", "--rounds", "3", "--keep-groups"],
              "--json", train_rows),
    "eval": ("bench_eval.py", ["--questions", "32", "--threads", "1"], "--json", eval_rows),
    "algorithms": ("bench_train.py", ["--batch-size", "4", "--group-size", "4", "--mini-batch-size", "8",
                                      "--micro-batch-size", "8", "--steps", "3", "--rounds", "3",
                                      "--algorithms", "grpo,sapo,llds"], "--json", algorithms_rows),
    "gpu": ("bench_gpu.py", ["--rounds", "3"], "--json", gpu_rows),
}
OPT_IN = {"algorithms"}  # too long for the 15-minute run; `--only algorithms` runs it


def has_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=None, help=f"comma-separated subset of: {', '.join(BENCHMARKS)} (default: all but "
                             f"{', '.join(sorted(OPT_IN))})")
    parser.add_argument("--json", default=None, help="also write the summary here")
    parser.add_argument("--keep", default=None, metavar="DIR",
                        help="keep every benchmark's own JSON in DIR (default: a temporary folder, removed)")
    args = parser.parse_args()
    names = ([n for n in BENCHMARKS if n not in OPT_IN] if args.only is None
             else [n.strip() for n in args.only.split(",") if n.strip()])
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        parser.error(f"--only: unknown {unknown}; known: {', '.join(BENCHMARKS)}")
    rows: list[Row] = []
    status: dict[str, str] = {}
    started, load_start = time.perf_counter(), load()
    with tempfile.TemporaryDirectory() as scratch:
        tmp = scratch if args.keep is None else args.keep
        Path(tmp).mkdir(parents=True, exist_ok=True)
        for name in names:
            script, extra, json_flag, summarise = BENCHMARKS[name]
            if name == "gpu" and not has_cuda():
                status[name] = "skipped: no CUDA GPU here"
                print(f"== {name}: {status[name]}", flush=True)
                continue
            out = Path(tmp) / f"{name}.json"
            command = [sys.executable, str(HERE / script), *extra, json_flag, str(out)]
            print(f"== {name}: {' '.join(command[1:])}", flush=True)
            start = time.perf_counter()
            done = subprocess.run(command, env={**os.environ, "PYTHONUNBUFFERED": "1"})
            seconds = time.perf_counter() - start
            if done.returncode != 0 or not out.is_file():
                status[name] = f"FAILED (exit {done.returncode}) after {seconds:.0f} s"
                rows.append((name, status[name], "", "NO"))
                continue
            status[name] = f"{seconds:.0f} s"
            rows += summarise(json.loads(out.read_text()))
    total = time.perf_counter() - started
    width = [max(len(r[i]) for r in [("benchmark", "measured", "target", "met?"), *rows]) for i in range(4)]
    print(f"\nSummary: {len(names)} benchmarks in {total / 60:.1f} min; CPU {cpu_model()} "
          f"({', '.join(cpu_flags())}), load {load_start:.2f} at the start, {load():.2f} at the end")
    print("  ".join(h.ljust(w) for h, w in zip(("benchmark", "measured", "target", "met?"), width)))
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, width)))
    print("times: " + ", ".join(f"{k} {v}" for k, v in status.items()))
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "status": status, "minutes": total / 60}, indent=1))
    return 1 if any("FAILED" in v for v in status.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
