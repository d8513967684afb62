"""The RL step of two or more searchrl trainers in one process, taking turns step by step: resolves a difference of
a few percent on a machine whose speed drifts between processes and over minutes.

bench_train.py runs each side in its own process. On the 2-core Xeon of docs/benchmarks.md the same process's
median step differed by up to 45% from one process to the next (the ten rounds of `--compare-src`: 0.82x to 1.30x),
ten times the 3% its targets ask to resolve. Here every side is built in the same process and runs its ordinary
`train()` (the run lifecycle, `fit` and `rl_step` of its own code) in a thread of its own; a baton lets one side at a
time run, from entering `rl_step` until its next `rl_step` (its logging and checkpoint included, untimed), so
no two sides ever compute at once. One round is one RL step of every side, back to back; the order rotates by
round. Round 0 builds each side (one at a time) and runs its first step, a warm-up that is dropped.

Every side does the same work at the same step: bench_train.py's settings (`searchrl_overrides`: the demo's
sizes, single turn, the same questions in the same order) and `workload.fix_lengths`, which makes every
completion exactly its token budget long whatever the weights; the table checks the token counts.

    # SAPO's and LLDS's whole RL step against GRPO's (the redesign's target: within 3%)
    .venv/bin/python benchmarks/bench_step_paired.py --algorithms grpo,sapo,llds --train-layers 10 --keep-groups
    # the A/A control: two identical sides, whose ratio says how finely this machine and method resolve
    .venv/bin/python benchmarks/bench_step_paired.py --algorithms grpo,grpo --train-layers 10 --keep-groups
    # this code against an older commit: a checkout's src/ (e.g. `git worktree add /tmp/old COMMIT`)
    .venv/bin/python benchmarks/bench_step_paired.py --compare-src /tmp/old/src --train-layers 10 --keep-groups
    # several older versions at once, named (the first is the base): NAME=DIR
    .venv/bin/python benchmarks/bench_step_paired.py --compare-src old=/tmp/old/src --compare-src variant=/tmp/v/src

`--compare-src` copies each other checkout's `searchrl` package to a temporary folder under a name of its own
(e.g. `searchrl_old_0`, its imports rewritten to that name), so the versions load in one process; each builds its
own model, optimiser and retriever.

Reported, with the CPU model, thread count and load: each side's step, rollout and update (median [min, max] over
the timed rounds), and each side's step over the base side's (the first of --algorithms; the first --compare-src)
per round: median [min, max] and the geometric mean with its 95% t interval over rounds (the ratios are paired by
round, so a drift of the machine that lasts longer than a round cancels). Run the A/A control beside a comparison:
its interval is how finely this machine and this method resolve. Pin the process to one core (`taskset -c 0 ...`):
unpinned on the 2-core Xeon, two identical sides differed by 9% (each thread keeps a core of its own, most
likely); pinned, by 0% with a ±7% interval over 10 rounds.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import math
import os
import re
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench_train import _demo_defaults, load_bench_config, searchrl_overrides  # benchmarks/, beside this file
from hostinfo import fmt, host, host_line, load
from workload import load_policy_with_fixed_lengths

_IMPORT = re.compile(r"\bsearchrl(?=[.\s]|$)", re.MULTILINE)


def copy_as(src: Path, name: str, into: Path) -> None:
    """Copy the `searchrl` package under `src` to `into/name`, every `searchrl` module reference renamed (imports
    and the module paths written in strings, e.g. the packaged configs' `searchrl.configs`)."""
    if not (src / "searchrl" / "__init__.py").is_file():
        raise SystemExit(f"--compare-src {src}: no searchrl package there (give a checkout's src/ folder)")
    target = into / name
    shutil.copytree(src / "searchrl", target, ignore=shutil.ignore_patterns("__pycache__"))
    for path in target.rglob("*.py"):
        path.write_text(_IMPORT.sub(name, path.read_text(encoding="utf-8")), encoding="utf-8")


class Baton:
    """Who may run: `schedule` lists side names in the order of their RL steps."""

    def __init__(self, schedule: list[str]) -> None:
        self.schedule, self.turn, self.failed = schedule, 0, False
        self.cond = threading.Condition()

    def wait_for(self, name: str) -> None:
        with self.cond:
            self.cond.wait_for(lambda: self.failed or self.schedule[self.turn:self.turn + 1] == [name])
            if self.failed:
                raise RuntimeError("another side failed")

    def pass_on(self) -> None:
        with self.cond:
            self.turn += 1
            self.cond.notify_all()

    def fail(self) -> None:
        with self.cond:
            self.failed = True
            self.cond.notify_all()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--algorithms", metavar="A,B,...",
                       help="one side per algorithm.name, this code; the first is the base")
    group.add_argument("--compare-src", metavar="[NAME=]DIR", action="append",
                       help="this code against the searchrl package in DIR (the base; repeat for more versions)")
    parser.add_argument("--rounds", type=int, default=12, help="timed rounds (one RL step of every side each)")
    parser.add_argument("--train-layers", type=int, default=None, help="train only the top N blocks (the demo: 10)")
    parser.add_argument("--keep-groups", action="store_true", help="train.keep_groups_together=true")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (shared by the sides in turn)")
    for flag in ("batch-size", "group-size", "mini-batch-size", "micro-batch-size", "max-tokens"):
        parser.add_argument(f"--{flag}", type=int, default=None, help="as bench_train.py (default: the demo's)")
    parser.add_argument("--json", default=None, help="write the results here")
    args = parser.parse_args()
    if args.rounds < 3:
        parser.error("--rounds must be at least 3")
    for key in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        os.environ[key] = "1"
    import torch

    torch.set_num_threads(args.threads)
    import searchrl
    from searchrl.training.policy import use_bf16

    # bench_train.py's settings (its defaults: the demo's sizes, every completion its budget long, bf16 as the demo)
    for key, value in _demo_defaults().items():
        if getattr(args, key, None) is None:
            setattr(args, key, value)
    args.steps = args.rounds + 1
    args.bf16, args.gradient_checkpointing = use_bf16(args.bf16), bool(args.gradient_checkpointing)
    args.instruction, args.searchrl_fp32_rollout = "short", False

    scratch = Path(tempfile.mkdtemp(prefix="bench_paired_"))
    sides: dict[str, tuple[Any, str]] = {}  # name -> (package, algorithm)
    if args.algorithms:
        for algorithm in (a.strip() for a in args.algorithms.split(",") if a.strip()):
            copies = sum(n.split("#")[0] == algorithm for n in sides)  # the same algorithm twice: the A/A control
            sides[f"{algorithm}#{copies + 1}" if copies else algorithm] = (searchrl, algorithm)
    else:
        sys.path.insert(0, str(scratch))
        for i, spec in enumerate(args.compare_src):
            name, _, folder = spec.rpartition("=") if "=" in spec else ("old" if i == 0 else f"old{i + 1}", "", spec)
            if not re.fullmatch(r"[A-Za-z][\w-]*", name) or name in (*sides, "current"):
                parser.error(f"--compare-src {spec}: NAME must be a new word (letters, digits, _ or -), not 'current'")
            package = f"searchrl_{re.sub(r'[^0-9A-Za-z]', '_', name)}_{i}"
            copy_as(Path(folder).resolve(), package, scratch)
            sides[name] = (importlib.import_module(package), "grpo")
        sides["current"] = (searchrl, "grpo")
    if len(sides) < 2:
        parser.error("give at least two sides")
    names = list(sides)
    schedule = list(names)  # round 0: warm-up
    for r in range(args.rounds):
        k = r % len(names)
        schedule += names[k:] + names[:k]
    baton = Baton(schedule)
    timings: dict[str, list[dict[str, float]]] = {n: [] for n in names}
    side_of_thread: dict[int, str] = {}
    rollout_s: dict[str, float] = {}

    # signal handlers can only be installed from the main thread; each side's train() runs in its own
    real_signal = signal.signal
    signal.signal = lambda sig, handler: (real_signal(sig, handler) if threading.current_thread() is
                                          threading.main_thread() else signal.getsignal(sig))
    patched: set[str] = set()
    for package, _ in sides.values():
        if package.__name__ in patched:
            continue
        patched.add(package.__name__)
        load_policy_with_fixed_lengths(importlib.import_module(f"{package.__name__}.models"))
        loop = importlib.import_module(f"{package.__name__}.training.loop")
        engine = importlib.import_module(f"{package.__name__}.rollout.engine").RolloutEngine

        def timed_run(self: Any, *a: Any, _run: Any = engine.run, **k: Any) -> Any:
            start = time.perf_counter()
            try:
                return _run(self, *a, **k)
            finally:
                rollout_s[side_of_thread[threading.get_ident()]] = time.perf_counter() - start

        def timed_step(t: Any, step: int, _rl_step: Any = loop.rl_step) -> Any:
            name = side_of_thread[threading.get_ident()]
            if step > 1:  # (at step 1 the side holds the baton since it started building)
                baton.pass_on()  # this side's previous step, its logging and checkpoint are done
                baton.wait_for(name)
            load_before, start = load(), time.perf_counter()
            out = _rl_step(t, step)
            timings[name].append({"step": step, "wall": time.perf_counter() - start, "rollout": rollout_s[name],
                                  "update_only": out.metrics["time/update_s"], "load": load_before,
                                  "tokens": out.metrics["response/sampled_length_mean"]})
            return out

        engine.run = functools.wraps(engine.run)(timed_run)
        loop.rl_step = functools.wraps(loop.rl_step)(timed_step)  # fit looks rl_step up in loop's namespace

    errors: dict[str, BaseException] = {}

    def run_side(name: str) -> None:
        package, algorithm = sides[name]
        side_of_thread[threading.get_ident()] = name
        try:
            baton.wait_for(name)  # one side builds at a time: loading a model is not thread-safe
            cfg = load_bench_config(package, searchrl_overrides(args, scratch / f"run_{name}", algorithm))
            try:
                train = importlib.import_module(f"{package.__name__}.training.run").train
            except ImportError:  # code from before training/run.py
                train = importlib.import_module(f"{package.__name__}.training.loop").train
            train(cfg, console=False)
            baton.pass_on()  # its last step is done
        except BaseException as exc:  # noqa: BLE001 -- reported below, after the other sides stop
            errors[name] = exc
            baton.fail()

    info = host(args.threads)
    print(f"{len(names)} sides in one process ({', '.join(names)}), {args.rounds} timed rounds after a warm-up round; "
          f"about {len(schedule) * 20 / 60:.0f} min at the demo's sizes on a 2-core CPU", file=sys.stderr)
    started = time.perf_counter()
    threads = [threading.Thread(target=run_side, args=(n,), name=f"side-{n}", daemon=True) for n in names]
    try:
        for th in threads:
            th.start()
        while any(th.is_alive() for th in threads):
            done = min(baton.turn, len(schedule))
            elapsed = time.perf_counter() - started
            eta = f", about {elapsed / done * (len(schedule) - done) / 60:.0f} min left" if done > len(names) else ""
            print(f"\r{done}/{len(schedule)} steps{eta}   ", end="", file=sys.stderr, flush=True)
            for th in threads:
                th.join(timeout=5)
        print(file=sys.stderr)
    finally:
        signal.signal = real_signal
        shutil.rmtree(scratch, ignore_errors=True)  # the sides' run folders (a final checkpoint is about 1 GB)
    if errors:
        first = next(n for n in names if n in errors)
        raise SystemExit(f"side {first} failed: {errors[first]!r}") from errors[first]

    timed = {n: [s for s in timings[n] if s["step"] > 1] for n in names}
    for n in names:
        timed_tokens = {s["tokens"] for s in timed[n]}
        if timed_tokens != {s["tokens"] for s in timed[names[0]]}:
            raise SystemExit(f"the sides did not do the same work: {n} sampled {sorted(timed_tokens)} tokens per row")
    from searchrl.evaluation.bootstrap import seed_t_interval

    print(host_line(info))
    print(f"B={args.batch_size} G={args.group_size} mini={args.mini_batch_size} micro={args.micro_batch_size} "
          f"budget={args.max_tokens} tokens (every completion exactly the budget), bf16={args.bf16}, "
          f"trained blocks: {args.train_layers or 'all'}, keep groups together: {args.keep_groups}, "
          f"{args.rounds} rounds, load {min(s['load'] for v in timed.values() for s in v):.2f}-"
          f"{max(s['load'] for v in timed.values() for s in v):.2f}")
    w = max(9, *(len(n) for n in names))
    print(f"{'side':<{w}} {'step s':>20} {'rollout s':>20} {'update s':>20}  (median [min, max] over rounds)")
    for n in names:
        v = timed[n]
        print(f"{n:<{w}} {fmt([s['wall'] for s in v]):>20} {fmt([s['rollout'] for s in v]):>20} "
              f"{fmt([s['wall'] - s['rollout'] for s in v]):>20}")
    ratios: dict[str, dict[str, Any]] = {}
    base = names[0]
    for n in names[1:]:
        ratios[n] = {}
        for key in ("wall", "rollout", "update"):
            value = (lambda s: s["wall"] - s["rollout"]) if key == "update" else (lambda s, key=key: s[key])
            per_round = [value(a) / value(b) for a, b in zip(timed[n], timed[base])]
            mean, low, high = seed_t_interval([math.log(r) for r in per_round])
            ratios[n][key] = {"per_round": per_round, "geomean": math.exp(mean), "t95": [math.exp(low), math.exp(high)]}
        step = ratios[n]["wall"]
        print(f"{n} / {base}: step {fmt(step['per_round'], '.3f', 'x')}, geometric mean {step['geomean']:.3f}x "
              f"[{step['t95'][0]:.3f}, {step['t95'][1]:.3f}] (95% t over rounds); rollout "
              f"{ratios[n]['rollout']['geomean']:.3f}x, update {ratios[n]['update']['geomean']:.3f}x")
    if args.json:
        path = Path(args.json)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(json.dumps({"host": info, "args": vars(args), "sides": names, "ratios": ratios,
                                   "timings": timings, "total_s": time.perf_counter() - started}, indent=2) + "\n")
        os.replace(tmp, path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
