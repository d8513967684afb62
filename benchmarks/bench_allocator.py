"""glibc's default allocator against one that keeps freed memory for reuse (`keep_freed_memory`), on the demo's work.

glibc serves every allocation above its mmap threshold (128 KiB at first, raised up to 32 MiB as mapped blocks are
freed) with a mapping of its own and unmaps it on free, so the next tensor of that size faults its pages in again.
`keep_freed_memory` makes it serve them from its heap and keep what is freed (`mallopt`: `M_MMAP_MAX` 0,
`M_TRIM_THRESHOLD` 1 GiB). Measured and not taken (docs/benchmarks.md, "Where a demo step's time goes"): it halves
the system time, but the demo fits no more RL steps with it.

Each side runs in a process of its own (the setting is process-wide), one process at a time, alternating which
side goes first by round. A process builds the demo's trainer (`configs/demo.yaml`: its data, model and sizes),
runs the demo's warm start (SFT on 2 oracle trajectories), a greedy evaluation of the 200 dev questions (what
the demo runs at the start and end of RL, with the 500 test questions), then `--steps` RL steps. Both sides do
the same work: the same seed, questions and weights, so the same greedy answers and, bar float rounding, the same
sampled trajectories (the table checks the EM and the tokens).

Reported, with the CPU model, thread count and load: per side, the evaluation's and the RL steps' seconds and
the process's system time, minor page faults and peak memory (median [min, max] over rounds); and per round the
tuned side's time over the default's (median [min, max]).

    .venv/bin/python benchmarks/bench_allocator.py --rounds 3 --json results/benchmarks/epyc-avx512/allocator.json
    .venv/bin/python benchmarks/bench_allocator.py --rounds 0 --loop --json OUT.json   # the allocation loop only
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hostinfo import fmt, host, host_line  # noqa: E402

SIDES = ("default", "tuned")
_M_TRIM_THRESHOLD, _M_MMAP_MAX = -1, -4  # glibc's mallopt parameters (malloc.h)


def keep_freed_memory() -> bool:
    """glibc's malloc keeps freed memory for reuse (no mmap, no trimming below 1 GiB); True if it was applied."""
    if sys.platform != "linux" or platform.libc_ver()[0] != "glibc":
        return False
    mallopt = ctypes.CDLL(None).mallopt
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    no_mmap = mallopt(_M_MMAP_MAX, 0) == 1
    no_trim = mallopt(_M_TRIM_THRESHOLD, 1 << 30) == 1
    return no_mmap and no_trim


# `--loop`: one 64 MiB tensor allocated and freed 40 times, the peak memory it leaves (glibc's aligned allocations
# can leave freed blocks that the next request of the same size does not fit)
LOOP = """
import resource, sys
import torch
sys.path.insert(0, sys.argv[2])
from bench_allocator import keep_freed_memory
if sys.argv[1] == "tuned" and not keep_freed_memory():
    raise SystemExit("the allocator setting did not apply")
for _ in range(40):
    x = torch.ones(16 << 20)
    del x
usage = resource.getrusage(resource.RUSAGE_SELF)
print(usage.ru_maxrss / 2**10, usage.ru_minflt)
"""


def worker(side: str, steps: int, threads: int) -> dict:
    began = time.perf_counter()
    if side == "tuned" and not keep_freed_memory():
        raise SystemExit("the allocator setting did not apply (not glibc)")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    torch.set_num_threads(threads)
    from demo_trainer import demo_trainer
    from searchrl.training import loop
    from searchrl.training.state import validate

    with tempfile.TemporaryDirectory() as tmp:
        cfg, t = demo_trainer(tmp)
        mark = time.perf_counter()
        report = validate(t, "bench")
        eval_s = time.perf_counter() - mark
        step_s, tokens = [], []
        for step in range(steps):
            out = loop.rl_step(t, step)
            step_s.append(out.metrics["time/step_s"])
            tokens.append(sum(len(tr.response_ids) for tr in out.trajectories))
            t.state.step = step + 1
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {"side": side, "eval_s": eval_s, "dev_em": report["datasets"]["world"]["em"], "step_s": step_s,
            "response_tokens": tokens, "process_s": time.perf_counter() - began, "system_s": usage.ru_stime,
            "user_s": usage.ru_utime, "minor_faults": usage.ru_minflt, "max_rss_gb": usage.ru_maxrss / 2**20}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds; each runs both sides, order alternating")
    parser.add_argument("--steps", type=int, default=3, help="RL steps per process, after the evaluation")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", default=None, help="also write the results here")
    parser.add_argument("--loop", action="store_true", help="also run the allocation loop (peak memory, faults)")
    parser.add_argument("--worker", choices=SIDES, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.steps, args.threads)))
        return 0

    info = host(args.threads)
    runs: list[dict] = []
    for r in range(args.rounds):
        for side in (SIDES if r % 2 == 0 else SIDES[::-1]):
            out = subprocess.run([sys.executable, __file__, "--worker", side, "--steps", str(args.steps),
                                  "--threads", str(args.threads)], capture_output=True, text=True)
            if out.returncode != 0:
                print(out.stderr[-4000:], file=sys.stderr)
                return 1
            row = json.loads(out.stdout.strip().splitlines()[-1]) | {"round": r, "load_1min": os.getloadavg()[0]}
            runs.append(row)
            print(f"round {r} {side:<8} eval {row['eval_s']:.1f} s, steps {sum(row['step_s']):.1f} s, "
                  f"system {row['system_s']:.1f} s, minor faults {row['minor_faults'] / 1e6:.2f} M", flush=True)

    print(host_line(info))
    print(f"{args.rounds} rounds, order alternating; median [min, max]")
    by_side = {s: [x for x in runs if x["side"] == s] for s in SIDES}
    for side, rows in by_side.items():
        print(f"  {side:<8} dev eval (200 q) {fmt([x['eval_s'] for x in rows], '.1f', ' s')}, "
              f"{args.steps} RL steps {fmt([sum(x['step_s']) for x in rows], '.1f', ' s')}, "
              f"process {fmt([x['process_s'] for x in rows], '.1f', ' s')}, "
              f"system {fmt([x['system_s'] for x in rows], '.1f', ' s')}, "
              f"minor faults {fmt([x['minor_faults'] / 1e6 for x in rows], '.2f', ' M')}, "
              f"peak {fmt([x['max_rss_gb'] for x in rows], '.2f', ' GiB')}, dev EM {[x['dev_em'] for x in rows]}")
    loop = {}
    if args.loop:
        for side in SIDES:
            out = subprocess.run([sys.executable, "-c", LOOP, side, str(Path(__file__).resolve().parent)], capture_output=True,
                                 text=True, check=True)
            peak_mib, faults = out.stdout.split()
            loop[side] = {"peak_mib": float(peak_mib), "minor_faults": int(faults)}
            print(f"  loop of 40 x 64 MiB, {side:<8} peak {float(peak_mib):.0f} MiB, minor faults {int(faults)}")
    measures = {"eval": lambda x: x["eval_s"], "rl_steps": lambda x: sum(x["step_s"]),
                "process": lambda x: x["process_s"]}
    ratios: dict[str, list[float]] = {}
    for key, value in measures.items() if runs else ():
        per_round = [value(next(x for x in runs if x["round"] == r and x["side"] == "tuned"))
                     / value(next(x for x in runs if x["round"] == r and x["side"] == "default"))
                     for r in range(args.rounds)]
        ratios[key] = per_round
        print(f"  tuned / default, {key:<8} {fmt(per_round, '.3f')} (per round: "
              f"{', '.join(f'{v:.3f}' for v in per_round)}; median {statistics.median(per_round):.3f})")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"host": info, "rounds": args.rounds, "steps": args.steps,
                                               "runs": runs, "ratios": ratios, "loop": loop}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
