"""`searchrl compare`: run several algorithms side by side with the same data, seeds and budget, then report.

    searchrl compare --algos grpo,sapo,llds,calibadv --seeds 0,1 --config FILE [key=value ...]

Each variant is one `searchrl train` subprocess (the trainer's CLI contract):

    searchrl train --config FILE algorithm.name=<algo> seed=<seed> run.dir=<OUT>/<algo>-s<seed> [key=value ...]

Only `algorithm.name` differs between variants of one seed, so they share the data order, the sampling
seed and the budget. Variants run sequentially or `--jobs N` at a time (default: one per two cores, so 1
on a 2-core machine); their output is streamed with a `[<algo>-s<seed>]` prefix and kept in
`<OUT>/logs/`. A failed variant is reported and the others still run. At the end `<OUT>/compare.json`
records every command and exit status and `searchrl report` writes `<OUT>/report.html`.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.text import Text

from searchrl.errors import ConfigError, SearchRLError
from searchrl.analysis.report import FIGURE_SLUGS, check_report_outputs, write_report
from searchrl.fileio import atomic_write_bytes, check_output_path, read_small_json

DEFAULT_ALGOS = "grpo,sapo,llds,calibadv"
# Keys compare sets itself for every variant; an override of one of them would break the comparison.
RESERVED_KEYS = ("algorithm.name", "seed", "run.dir")


@dataclass
class Variant:
    """One training run of the comparison."""

    name: str  # "<algo>-s<seed>", also the run folder's name
    algorithm: str
    seed: int
    run_dir: Path
    command: list[str] = field(default_factory=list)
    returncode: int | None = None
    seconds: float | None = None
    log: Path | None = None


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def default_jobs(n_variants: int, cores: int | None = None) -> int:
    """One training process per two cores (each uses two torch threads), at least 1, at most one per variant."""
    cores = available_cores() if cores is None else cores
    return max(1, min(n_variants, cores // 2))


def parse_list(text: str, what: str) -> list[str]:
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise ConfigError(f"--{what}: give a comma-separated list, got {text!r}")
    if len(set(items)) != len(items):
        raise ConfigError(f"--{what}: {text!r} lists an entry twice")
    return items


def parse_seeds(text: str) -> list[int]:
    seeds = []
    for item in parse_list(text, "seeds"):
        try:
            seeds.append(int(item))
        except ValueError:
            raise ConfigError(f"--seeds: {item!r} is not an integer; write e.g. --seeds 0,1") from None
    return seeds


def check_algorithms(algos: list[str]) -> None:
    """Fail fast on an unknown algorithm name, listing the registered ones (when the registry is importable)."""
    try:
        # local: searchrl.algorithms imports torch (~2.2 s); `searchrl compare --help` must not pay it
        from searchrl.algorithms import algorithm_names
    except ImportError:
        return  # the trainer validates it anyway; each failing variant would then be reported
    known = list(algorithm_names())
    unknown = [a for a in algos if a not in known]
    if unknown:
        raise ConfigError(f"--algos: unknown algorithm {unknown[0]!r}; registered algorithms: {', '.join(known)}")


def check_overrides(overrides: list[str]) -> None:
    for text in overrides:
        key, sep, _ = text.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"override {text!r} is not of the form dotted.key=value (e.g. train.steps=20)")
        if key.strip() in RESERVED_KEYS:
            raise ConfigError(
                f"override {text!r}: compare sets {key.strip()} for each variant; use --algos, --seeds or --out instead"
            )


def plan(algos: list[str], seeds: list[int], out: Path, config: str | None, overrides: list[str]) -> list[Variant]:
    """The variants, seed-major (every algorithm of seed 0 first) so a partial run is already comparable."""
    variants = []
    for seed in seeds:
        for algo in algos:
            name = f"{algo}-s{seed}"
            run_dir = out / name
            command = [sys.executable, "-m", "searchrl.cli", "train"]
            if config is not None:
                command += ["--config", config]
            command += [f"algorithm.name={algo}", f"seed={seed}", f"run.dir={run_dir}", *overrides]
            variants.append(Variant(name, algo, seed, run_dir, command, log=out / "logs" / f"{name}.log"))
    return variants


class _Runner:
    """Runs variants as subprocesses, streaming prefixed output; Ctrl-C terminates the ones it started."""

    def __init__(self, console: Console, threads_per_job: int) -> None:
        self.console = console
        self.threads_per_job = threads_per_job
        self._lock = threading.Lock()
        self._live: dict[str, subprocess.Popen[str]] = {}
        self._stopping = False

    def run(self, variant: Variant) -> Variant:
        env = dict(os.environ)
        env["OMP_NUM_THREADS"] = str(self.threads_per_job)
        env["PYTHONUNBUFFERED"] = "1"  # stream lines as they are printed
        # A wide virtual terminal: rich would otherwise wrap the trainer's summary lines at 80 columns in a pipe.
        env.setdefault("COLUMNS", str(max(240, self.console.width - len(variant.name) - 3)))
        env.setdefault("HF_HUB_OFFLINE", "1")  # nothing downloads at run time
        assert variant.log is not None
        variant.log.parent.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        with self._lock:
            if self._stopping:
                return variant
            # Own session: a terminal Ctrl-C reaches compare only, which forwards exactly one SIGINT to each
            # run (a second one could make a trainer skip its interrupt checkpoint).
            process = subprocess.Popen(
                variant.command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1, env=env,
                errors="replace", start_new_session=os.name == "posix",
            )
            self._live[variant.name] = process
        prefix = f"[{variant.name}] "
        with open(variant.log, "w", encoding="utf-8") as log:
            assert process.stdout is not None
            for line in process.stdout:
                log.write(line)
                log.flush()
                # Text(), not a markup string: trainer lines may contain [brackets].
                self.console.print(Text(prefix + line.rstrip("\n").split("\r")[-1]), soft_wrap=True)
        variant.returncode = process.wait()
        variant.seconds = time.monotonic() - started
        with self._lock:
            self._live.pop(variant.name, None)
        return variant

    def terminate_all(self, grace_s: float = 60.0) -> None:
        """Interrupt the runs this compare started (SIGINT, as a Ctrl-C), then terminate, then kill."""
        with self._lock:
            self._stopping = True
            live = [p for p in self._live.values() if p.poll() is None]
        if live:
            self.console.print(Text(f"compare: interrupting {len(live)} running variant(s); waiting up to "
                                    f"{grace_s:.0f} s for them to save and exit"))
        for process in live:
            process.send_signal(signal.SIGINT)
        deadline = time.monotonic() + grace_s
        for process in live:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.terminate()
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--algos", default=DEFAULT_ALGOS, help=f"comma-separated algorithms (default: {DEFAULT_ALGOS})")
    parser.add_argument("--seeds", default="0", help="comma-separated seeds; each seed runs every algorithm (default: 0)")
    parser.add_argument("--config", default=None, metavar="FILE",
                        help="training config for every variant (default: the trainer's default, the embedded demo)")
    parser.add_argument("--out", default="runs/compare", metavar="DIR",
                        help="parent folder; variant runs go to DIR/<algo>-s<seed> (default: runs/compare)")
    parser.add_argument("--jobs", type=int, default=None, metavar="N",
                        help="variants trained at once (default: one per two cores, so 1 on a 2-core machine)")
    parser.add_argument("--report", default=None, metavar="FILE", help="report path (default: DIR/report.html)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace existing variant folders (passes run.overwrite=true to each run)")
    parser.add_argument("--dry-run", action="store_true", help="print the training commands and exit")
    parser.add_argument("overrides", nargs="*", metavar="key=value",
                        help="dotted config overrides applied to every variant (e.g. train.steps=50)")


def _write_manifest(path: Path, variants: list[Variant], args: argparse.Namespace) -> None:
    payload = {
        "algos": args.algos, "seeds": args.seeds, "config": args.config, "overrides": args.overrides,
        "variants": [
            {**asdict(v), "run_dir": str(v.run_dir), "log": str(v.log) if v.log else None} for v in variants
        ],
    }
    atomic_write_bytes(path, (json.dumps(payload, indent=2) + "\n").encode("utf-8"))


def main(args: argparse.Namespace) -> int:
    algos = parse_list(args.algos, "algos")
    seeds = parse_seeds(args.seeds)
    overrides = list(args.overrides)
    check_overrides(overrides)
    check_algorithms(algos)
    if args.overwrite:
        overrides.append("run.overwrite=true")
    out = Path(args.out)
    variants = plan(algos, seeds, out, args.config, overrides)
    jobs = default_jobs(len(variants)) if args.jobs is None else args.jobs
    if jobs < 1:
        raise ConfigError(f"--jobs: must be >= 1, got {jobs}")
    jobs = min(jobs, len(variants))
    console = Console(highlight=False, soft_wrap=True)
    if args.dry_run:
        for v in variants:
            console.print(Text(shlex.join(v.command)), soft_wrap=True)
        return 0

    check_output_path(out / "compare.json", "--out", overwrite=True, kind="searchrl compare manifest",
                      ours=lambda p: isinstance(m := read_small_json(p), dict) and {"algos", "seeds", "variants"} <= set(m))
    report_path = Path(args.report) if args.report else out / "report.html"
    check_report_outputs(report_path, FIGURE_SLUGS)  # before hours of training, not after
    out.mkdir(parents=True, exist_ok=True)
    threads = max(1, available_cores() // jobs)
    console.print(Text(f"compare: {len(variants)} variants ({', '.join(v.name for v in variants)}), "
                       f"{jobs} at a time, {threads} torch thread(s) each; runs in {out}"))
    runner = _Runner(console, threads)
    progress = Progress(
        TextColumn("[bold]compare"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("eta"),
        TimeRemainingColumn(), console=console, transient=False,
    )
    with progress, ThreadPoolExecutor(max_workers=jobs) as pool:
        task = progress.add_task("variants", total=len(variants))
        futures = [pool.submit(runner.run, v) for v in variants]
        try:
            for future in futures:
                while not future.done():
                    time.sleep(0.2)  # short waits keep Ctrl-C responsive
                exc = future.exception()
                if exc is not None:  # the process could not even start
                    raise SearchRLError(f"compare: could not start `searchrl train`: {exc}") from exc
                v = future.result()
                ok = v.returncode == 0
                progress.console.print(Text(
                    f"compare: {v.name} {'finished' if ok else f'FAILED (exit {v.returncode})'} "
                    f"in {v.seconds or 0:.0f} s; log {v.log}", style="" if ok else "bold red"))
                progress.advance(task)
        except BaseException:
            # Ctrl-C or a failure to start: end the processes we started before the pool waits for them.
            runner.terminate_all()
            _write_manifest(out / "compare.json", variants, args)
            raise

    _write_manifest(out / "compare.json", variants, args)
    failed = [v for v in variants if v.returncode != 0]
    for v in failed:
        console.print(Text(f"compare: variant {v.name} failed with exit status {v.returncode}; see {v.log}",
                           style="bold red"))

    notes = [f"variant {v.name} failed (exit status {v.returncode}); its log: {v.log}" for v in failed]
    with_runs = [v.run_dir for v in variants if (v.run_dir / "metrics.jsonl").is_file()]
    if not with_runs:
        console.print(Text("compare: no variant produced metrics.jsonl; no report written", style="bold red"))
        return 1
    result = write_report(with_runs, report_path, title=f"searchrl compare: {', '.join(algos)}", extra_notes=notes,
                          reference=algos[0])  # the first of --algos is what the others are compared to
    console.print(Text(f"compare: report {result.html}"))
    return 1 if failed else 0
