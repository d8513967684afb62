"""Fault probe: kill or starve real `searchrl train` runs at chosen and at random moments, recover, and check that
the recovered run equals an uninterrupted one (issue #16).

Every run is a real `searchrl train` subprocess (`searchrl.cli.main`) on a tiny random model and the synthetic
world: 4 RL steps of 2 questions x 2 rollouts, 2 optimiser updates per step, a checkpoint every step, keep_last=1
(so every checkpoint prunes the one before; step 0 is protected). The faults:

- SIGKILL at a chosen point. The child process starts through a small bootstrap (in this file, not in the
  product) that wraps one library function (`RolloutEngine.run` and the HF session's forward, `AdamW.step`,
  `RunLogger.log`, the checkpoint's `save_file`, `torch.save`, `os.fsync`, `os.rename`, `_prune`, `shutil.rmtree`,
  the export's `give_umask_permissions`) and SIGKILLs its own process when that function is called for the chosen
  step: while writing checkpoint 0, mid-rollout, mid-update (after the first of a step's two updates), after a
  step's metrics row but before its checkpoint, at each stage of a checkpoint write (weights written; optimizer.pt
  written; rng.pt written but not state.json; every file written but not fsynced; fsynced but not renamed into
  place; renamed but not pruned), mid-prune (one file of the pruned folder deleted) and mid-export of final_model/.
- SIGKILL at random moments: runs killed a seeded uniform delay after their run folder appeared, within the
  uninterrupted run's time from that point to its end; where each landed (before checkpoint 0, after checkpoint k,
  after the last checkpoint, after the summary) is read off the run folder.
- A full disk: the same bootstrap makes a write raise OSError(ENOSPC) (or torch.save's RuntimeError, which is how
  torch reports a full disk) inside the train process: the checkpoint's weights, optimizer.pt, rng.pt, a
  metrics.jsonl fsync, summary.json, the final_model/ export. The run must exit 2 with a one-line message (no
  traceback) and leave no temporary folder.

- A corrupt newest checkpoint: a run killed after step 3's metrics row (its newest checkpoint is step 2, keep_last=1)
  has one file of that checkpoint damaged the way disks and copies damage files: the weights truncated,
  optimizer.pt cut to 100 bytes, state.json overwritten with text that is not JSON, one byte of rng.pt flipped, a
  checkpoint without its manifest (as saved by earlier versions) whose optimizer.pt is truncated, best.json
  overwritten. `--resume` must not end in a traceback: it resumes from the newest intact checkpoint (step 0 here)
  and must end equal to the uninterrupted run; that its output names the checkpoint it skipped is reported apart
  (it waits on the trainer printing `latest_checkpoint(run, skipped=[])`'s list).
- SIGTERM (what `kill`, systemd and batch schedulers send) after checkpoint 1: the run must stop with a message,
  exit without a traceback and resume to the uninterrupted run's end (waits on the trainer's SIGTERM handling).
- Two runs on one run folder: `--resume` started while the run is still training must be refused at once, with a
  message (waits on the trainer's run-folder lock); accepted, the two runs write the same files.

Recovery is what a user does: `searchrl train --resume RUN` (or, for a run killed before its first checkpoint, the
original command again). A fault is survived when no partial `checkpoints/step_*` folder is visible after it, one
recovery command exits 0, no partial or temporary folder is left, and the metrics rows (time fields aside), events,
checkpoint set, last checkpoint's weights, final_model/ weights, final_eval.json and summary.json equal the
uninterrupted run's. A full disk must also end the run with exit code 2, one message line and no traceback.

Every failure is also counted by class: traceback (in any run's or recovery's output), data loss (a partial
checkpoint visible, or a recovered run that differs from the uninterrupted one), hang (a run or recovery that did
not end within --timeout), silent accept (a second run on a busy run folder accepted) and signals (SIGTERM not
handled cleanly); cases that wait on the trainer's changes are marked so in the table.

    .venv/bin/python benchmarks/probe_train_faults.py                       # all faults, 6 random kills (~5 min)
    .venv/bin/python benchmarks/probe_train_faults.py --random-kills 20 --seed 1 --keep /tmp/probe
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STEPS = 4

# Runs in the child before `searchrl train`: wraps one function so that the PROBE_FAULT spec fires at its call.
BOOTSTRAP = r'''
import errno, json, os, shutil, signal, sys
from pathlib import Path

spec = json.loads(os.environ.get("PROBE_FAULT") or "{}")
calls = [0]


def fire():
    sys.stderr.write("probe: fault fired\n")
    sys.stderr.flush()
    if spec["action"] == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if spec["action"] == "torch_full":
        raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 704 vs 598")
    raise OSError(errno.ENOSPC, "No space left on device")


def wrap(owner, name, match, before):
    """Call `fire` before (or after) the `nth` call of owner.name whose arguments `match`."""
    real = getattr(owner, name)

    def wrapper(*args, **kwargs):
        hit = False
        if match(*args, **kwargs):
            calls[0] += 1
            hit = calls[0] == spec.get("nth", 1)
        if hit and before:
            fire()
        out = real(*args, **kwargs)
        if hit:
            fire()
        return out

    setattr(owner, name, wrapper)


def fd_path(fd):
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""


if spec:
    import torch
    import searchrl.training.checkpoint as ck
    import searchrl.training.logger as lg
    import searchrl.training.policy as pol
    from searchrl.rollout.engine import RolloutEngine
    from searchrl.rollout.hf import HFSession

    where, target, before = spec.get("where", ""), spec["target"], spec.get("before", False)
    if target == "rollout":  # a few decoding steps into the nth rollout
        decoding = [0]
        real_run, real_forward = RolloutEngine.run, HFSession._forward

        def run(self, *args, **kwargs):
            calls[0] += 1
            decoding[0] = 1 if calls[0] == spec["nth"] else 0
            return real_run(self, *args, **kwargs)

        def forward(self, *args, **kwargs):
            if decoding[0]:
                decoding[0] += 1
                if decoding[0] == 4:
                    fire()
            return real_forward(self, *args, **kwargs)

        RolloutEngine.run, HFSession._forward = run, forward
    elif target == "update":
        wrap(torch.optim.AdamW, "step", lambda *a, **k: True, before=True)
    elif target == "log":
        wrap(lg.RunLogger, "log", lambda self, step, row: step == spec["step"], before=False)
    elif target == "save_file":
        wrap(ck, "save_file", lambda tensors, f, *a, **k: where in str(f), before)
    elif target == "torch_save":
        wrap(ck.torch, "save", lambda obj, f, *a, **k: where in str(f), before)
    elif target == "fsync":
        wrap(os, "fsync", lambda fd: where in fd_path(fd), before=True)
    elif target == "rename":
        wrap(os, "rename", lambda src, dst, *a, **k: where in str(src), before=True)
    elif target == "prune":
        wrap(ck, "_prune", lambda *a, **k: True, before=True)
    elif target == "rmtree":  # mid-delete: one file of the folder gone, then the fault
        real_rmtree = shutil.rmtree

        def rmtree(path, *args, **kwargs):
            path = Path(path)
            if where in path.name and path.is_dir():
                next(p for p in path.iterdir() if p.is_file()).unlink()
                fire()
            return real_rmtree(path, *args, **kwargs)

        shutil.rmtree = rmtree
    elif target == "export":
        wrap(pol, "give_umask_permissions", lambda p: ".tmp-final_model" in str(p), before=True)
    else:
        raise SystemExit(f"probe: unknown target {target}")

from searchrl.cli import main

sys.exit(main(["train", "--quiet", *sys.argv[1:]]))
'''

CKPT2 = ".tmp-step_000002"
# (label, spec): the chosen-point faults. nth counts the calls that match (`where`, or every call).
KILLS = [
    ("SIGKILL writing checkpoint 0 (nothing to resume)",
     {"target": "save_file", "where": ".tmp-step_000000", "before": True}),
    ("SIGKILL mid-rollout (step 2)", {"target": "rollout", "nth": 2}),
    ("SIGKILL mid-update (step 3, after 1 of 2 updates)", {"target": "update", "nth": 6}),
    ("SIGKILL after step 3's metrics row, before its checkpoint", {"target": "log", "step": 3}),
    ("SIGKILL ckpt: weights written", {"target": "save_file", "where": CKPT2}),
    ("SIGKILL ckpt: optimizer.pt written", {"target": "torch_save", "where": f"{CKPT2}/optimizer.pt"}),
    ("SIGKILL ckpt: rng.pt written, no state.json", {"target": "torch_save", "where": f"{CKPT2}/rng.pt"}),
    ("SIGKILL ckpt: all written, not fsynced", {"target": "fsync", "where": CKPT2}),
    ("SIGKILL ckpt: fsynced, not renamed", {"target": "rename", "where": CKPT2}),
    ("SIGKILL ckpt: renamed, not pruned", {"target": "prune", "nth": 3}),
    ("SIGKILL mid-prune (1 file deleted)", {"target": "rmtree", "where": ".deleting-step_000001"}),
    ("SIGKILL mid-export of final_model/", {"target": "export"}),
]
DISK_FULL = [
    ("ENOSPC ckpt weights", {"target": "save_file", "where": CKPT2, "before": True}),
    ("ENOSPC ckpt optimizer.pt (torch RuntimeError)",
     {"target": "torch_save", "where": f"{CKPT2}/optimizer.pt", "before": True, "action": "torch_full"}),
    ("ENOSPC ckpt rng.pt", {"target": "torch_save", "where": f"{CKPT2}/rng.pt", "before": True}),
    ("ENOSPC metrics.jsonl (step 3)", {"target": "fsync", "where": "metrics.jsonl", "nth": 3}),
    ("ENOSPC summary.json", {"target": "fsync", "where": ".summary.json."}),
    ("ENOSPC final_model/ export", {"target": "export"}),
]


def overrides(model: Path, run: Path) -> list[str]:
    values = {
        "model.name": model, "run.dir": run, "train.steps": STEPS, "train.batch_size": 2, "train.group_size": 2,
        "train.mini_batch_size": 2, "train.micro_batch_size": 1, "train.warm_start": "null",
        "train.train_layers": "null", "rollout.max_turns": 1, "rollout.max_turn_tokens": 8,
        "rollout.max_obs_tokens": 48, "val.at_start": "false", "val.untrained": "false", "val.max_questions": 4,
        "val.batch_size": 4, "val.every": 0, "checkpoint.every": 1, "checkpoint.keep_last": 1,
        "log.samples_every": 0, "log.console": "false", "log.tensorboard": "false",
    }
    return [f"{k}={v}" for k, v in values.items()]


def launch(args: list[str], fault: dict | None = None, *, stdout: bool = False) -> subprocess.Popen:
    env = dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               PROBE_FAULT=json.dumps(fault or {}))
    return subprocess.Popen([sys.executable, "-c", BOOTSTRAP, *args], env=env,
                            stdout=subprocess.PIPE if stdout else subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


TIMEOUT = [600.0]  # seconds a run or a recovery may take (--timeout)
HUNG = -999  # the exit code `finish` reports for a process it had to kill


def finish(proc: subprocess.Popen, timeout: float | None = None) -> tuple[int, str]:
    """(exit code, stderr, with stdout after it when it was captured); a process past the timeout is killed and
    reported with the exit code HUNG."""
    try:
        out, err = proc.communicate(timeout=timeout or TIMEOUT[0])
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        return HUNG, (err or "") + (out or "")
    return proc.returncode, (err or "") + (out or "")


# ---------------------------------------------------------------------------------------------- checks


def leftovers(run: Path) -> list[str]:
    """Partial checkpoints and temporary folders in a run folder."""
    from searchrl.training.checkpoint import is_complete

    out = [p.name for p in run.iterdir() if p.name.startswith((".tmp-", ".old-"))] if run.is_dir() else []
    root = run / "checkpoints"
    if root.is_dir():
        out += [f"checkpoints/{p.name}" for p in root.iterdir()
                if p.name.startswith(".") or p.name.startswith("step_") and not is_complete(p)]
    return out


def partial_steps(run: Path) -> list[str]:
    """`step_*` folders that are not whole: what the checkpoint layout promises never to show."""
    from searchrl.training.checkpoint import is_complete

    root = run / "checkpoints"
    return [p.name for p in root.glob("step_*") if not is_complete(p)] if root.is_dir() else []


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def _rows(path: Path) -> list[dict]:
    from searchrl.training.logger import read_jsonl

    return [{k: v for k, v in row.items() if not k.startswith("time/")} for row in read_jsonl(path)]


def _tensors(path: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(path)) if path.is_file() else {}


def differences(run: Path, ref: Path) -> list[str]:
    """How a recovered run differs from the uninterrupted one (empty: it does not)."""
    import torch

    out = []
    for name in ("metrics.jsonl", "events.jsonl"):
        if not _same(_rows(run / name), _rows(ref / name)):
            out.append(name)
    names = [sorted(p.name for p in (r / "checkpoints").glob("*")) for r in (run, ref)]
    if names[0] != names[1]:
        out.append(f"checkpoints {names[0]} != {names[1]}")
    last = f"checkpoints/step_{STEPS:06d}/weights.safetensors"
    for name in (last, "final_model/model.safetensors"):
        a, b = _tensors(run / name), _tensors(ref / name)
        if not a or a.keys() != b.keys() or not all(torch.equal(a[k], b[k]) for k in a):
            out.append(name)
    for name in ("final_eval.json", "summary.json"):
        a, b = [json.loads(p.read_text()) if p.is_file() else None for p in (run / name, ref / name)]
        for doc in (a, b):
            if isinstance(doc, dict) and "run_dir" in doc:  # the folder's own path
                doc.pop("run_dir")
                doc["best_checkpoint"] = Path(doc["best_checkpoint"]).name
        if a is None or not _same(a, b):
            out.append(name)
    return out + leftovers(run)


def recover(model: Path, run: Path) -> tuple[list[str], str]:
    """What a user does after a fault: resume, or rerun the command if no checkpoint was written."""
    from searchrl.training.checkpoint import latest_checkpoint

    args = ["--resume", str(run)] if latest_checkpoint(run) is not None else overrides(model, run)
    code, err = finish(launch(args))
    if code == HUNG:
        return ["hang: recovery did not end"], args[0]
    if "Traceback" in err:
        return [f"traceback in recovery: {err.strip().splitlines()[-1:]}"], args[0]
    return ([] if code == 0 else [f"recovery exited {code}: {err.strip().splitlines()[-1:]}"]), args[0]


def classify(problems: list[str]) -> str:
    """The class of a failed case: traceback, hang, other (a wrong exit code or message), or data loss (a partial
    checkpoint visible, a file left behind, or a recovered run that differs from the uninterrupted one)."""
    text = " ".join(problems)
    if "traceback" in text.lower():
        return "traceback"
    if "hang" in text:
        return "hang"
    return "other" if text.startswith(("exit ", "recovery exited", "resume exited")) else "data loss"


def _truncate_to(size: int):
    def damage(path: Path) -> None:
        path.write_bytes(path.read_bytes()[:size])
    return damage


def _flip_middle_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def _legacy_and_truncated(path: Path) -> None:
    (path.parent / "manifest.json").unlink(missing_ok=True)  # a checkpoint saved before manifests existed
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


# (label, file of the newest checkpoint, damage); the run is killed after step 3's metrics row first
CORRUPT = [
    ("corrupt: weights.safetensors cut in half", "weights.safetensors", lambda p: _truncate_to(p.stat().st_size // 2)(p)),
    ("corrupt: optimizer.pt cut to 100 bytes", "optimizer.pt", _truncate_to(100)),
    ("corrupt: state.json is not JSON", "state.json", lambda p: p.write_text("step: two\n")),
    ("corrupt: one byte of rng.pt flipped", "rng.pt", _flip_middle_byte),
    ("corrupt: no manifest (old format), optimizer.pt truncated", "optimizer.pt", _legacy_and_truncated),
    ("corrupt: best.json is not JSON", "../best.json", lambda p: p.write_text("{")),
]


def landed(run: Path) -> str:
    """Where a random kill landed, read off the run folder."""
    from searchrl.training.checkpoint import latest_checkpoint

    if (run / "summary.json").is_file():
        return "after the summary"
    latest = latest_checkpoint(run)
    if latest is None:
        return "before checkpoint 0"
    step = int(latest.name.split("_")[1])
    return "after the last checkpoint" if step == STEPS else f"after checkpoint {step}"


# ---------------------------------------------------------------------------------------------- main


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--random-kills", type=int, default=6,
                        help="runs killed at a random moment after their run folder appears (default 6)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random kill times")
    parser.add_argument("--only", default="", help="run only the faults whose label contains this text")
    parser.add_argument("--keep", default=None, metavar="DIR", help="work in DIR and keep it (default: a temp dir)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds a run or recovery may take (default 600)")
    args = parser.parse_args()
    TIMEOUT[0] = args.timeout

    from searchrl.models import build_tiny_random_model

    work = Path(args.keep or tempfile.mkdtemp(prefix="probe_train_faults_"))
    work.mkdir(parents=True, exist_ok=True)
    model = build_tiny_random_model(work / "tiny_model")
    ref = work / "reference"
    shutil.rmtree(ref, ignore_errors=True)
    began = time.perf_counter()
    proc = launch(overrides(model, ref))
    while not (ref / ".searchrl-run").exists() and proc.poll() is None:  # when the run folder appears
        time.sleep(0.01)
    created = time.perf_counter() - began
    code, err = finish(proc)
    duration = time.perf_counter() - began
    if code != 0:
        print(f"the uninterrupted run failed ({code}):\n{err}", file=sys.stderr)
        return 1
    print(f"uninterrupted run: {duration:.1f}s (run folder after {created:.1f}s); work folder {work}", flush=True)

    results: list[tuple[str, int, int, str]] = []  # (fault, injected, survived, notes)
    classes = {name: 0 for name in ("traceback", "silent accept", "data loss", "hang", "signals", "other")}
    waiting: dict[str, int] = dict.fromkeys(classes, 0)  # failures that wait on the trainer's changes

    def probe(label: str, fault: dict | None, kill_after: float | None = None) -> tuple[bool, bool, str]:
        run = work / f"run{len(results):02d}"
        shutil.rmtree(run, ignore_errors=True)
        proc = launch(overrides(model, run), fault)
        deadline = None  # kill_after counts from the run folder's creation (start-up time varies with the load)
        while kill_after is not None and proc.poll() is None:
            if deadline is None and (run / ".searchrl-run").exists():
                deadline = time.perf_counter() + kill_after
            if deadline is not None and time.perf_counter() >= deadline:
                proc.send_signal(signal.SIGKILL)
                break
            time.sleep(0.005)
        code, err = finish(proc)
        if fault is None:
            injected = code == -signal.SIGKILL
        else:
            injected = "probe: fault fired" in err
        problems = [f"partial {name} visible" for name in partial_steps(run)]
        if code == HUNG:
            problems.append("hang: the faulted run did not end")
        if "Traceback" in err and fault is not None and fault.get("action") != "kill":
            problems.append("traceback in the faulted run")
        if fault is not None and fault.get("action") != "kill":  # a full disk: a message, exit 2, no temp folder
            message = [ln for ln in err.splitlines() if ln.startswith("searchrl train: error:")]
            if code != 2 or not message or "Traceback" in err:
                problems.append(f"exit {code}, message {message[-1:] or err.strip().splitlines()[-1:]}")
            problems += [f"left {name}" for name in leftovers(run)]
        elif injected and code != -signal.SIGKILL:
            problems.append(f"exit {code} instead of being killed")
        where = landed(run) if run.exists() else "nothing written"
        bad, how = recover(model, run)
        problems += bad or differences(run, ref)
        note = f"{where}; recovered by {'--resume' if how == '--resume' else 'rerunning'}"
        if problems:
            note += "; " + ", ".join(problems)
            classes[classify(problems)] += 1
        print(f"  {label}: {'ok' if not problems else 'FAILED'} ({note})", flush=True)
        return injected, injected and not problems, note

    def newest_checkpoint(run: Path) -> Path | None:
        found = sorted((run / "checkpoints").glob("step_*"))
        return found[-1] if found else None

    def probe_corrupt(label: str, name: str, damage) -> None:  # type: ignore[no-untyped-def]
        run = work / f"run{len(results):02d}"
        shutil.rmtree(run, ignore_errors=True)
        code, _ = finish(launch(overrides(model, run), {"target": "log", "step": 3, "action": "kill"}))
        newest = newest_checkpoint(run)
        if code != -signal.SIGKILL or newest is None:
            results.append((label, 0, 0, f"setup failed (exit {code})"))
            print(f"  {label}: not injected (exit {code})", flush=True)
            return
        damage(newest / name)
        code, err = finish(launch(["--resume", str(run)], stdout=True))
        problems = []
        if code == HUNG:
            problems.append("hang: the resume did not end")
        elif "Traceback" in err:
            problems.append(f"traceback: {err.strip().splitlines()[-1][:150]}")
        elif code != 0:
            problems.append(f"resume exited {code}: {err.strip().splitlines()[-1:]}")
        else:
            problems += differences(run, ref)
        if problems:
            classes[classify(problems)] += 1
        said = name == "../best.json" or newest.name in err
        note = f"resumed from {newest.name} damaged; " + (", ".join(problems) or "equal to the uninterrupted run")
        if not said:
            note += f"; the output does not name the skipped {newest.name} [awaits the trainer]"
        print(f"  {label}: {'ok' if not problems else 'FAILED'} ({note})", flush=True)
        results.append((label, 1, int(not problems), note))

    def wait_for(path: Path, proc: subprocess.Popen, seconds: float = 300) -> bool:
        end = time.perf_counter() + seconds
        while not path.exists() and proc.poll() is None and time.perf_counter() < end:
            time.sleep(0.01)
        return path.exists() and proc.poll() is None

    def probe_sigterm() -> None:
        label = "SIGTERM after checkpoint 1 [awaits the trainer's SIGTERM handling]"
        run = work / f"run{len(results):02d}"
        shutil.rmtree(run, ignore_errors=True)
        proc = launch(overrides(model, run))
        if not wait_for(run / "checkpoints" / "step_000001", proc):
            finish(proc)
            results.append((label, 0, 0, "the run ended before checkpoint 1"))
            return
        proc.send_signal(signal.SIGTERM)
        code, err = finish(proc, timeout=120)
        problems = []
        if code == HUNG:
            problems.append("hang: SIGTERM did not stop the run in 120 s")
            classes["hang"] += 1
        elif "Traceback" in err:
            problems.append("traceback on SIGTERM")
            classes["traceback"] += 1
        elif code == -signal.SIGTERM or not err.strip():
            problems.append(f"killed by the signal (exit {code}), no message")
        if problems:
            classes["signals"] += 1
            waiting["signals"] += 1
        bad, _ = recover(model, run)
        bad = bad or differences(run, ref)
        if bad:
            classes[classify(bad)] += 1
        note = ", ".join(problems + bad) or "stopped with a message, resumed to the same end"
        print(f"  {label}: {'ok' if not problems + bad else 'FAILED'} ({note})", flush=True)
        results.append((label, 1, int(not problems + bad), note))

    def probe_two_runs() -> None:
        label = "second --resume of a run still training [awaits the trainer's run-folder lock]"
        run = work / f"run{len(results):02d}"
        shutil.rmtree(run, ignore_errors=True)
        first = launch(overrides(model, run))
        if not wait_for(run / "checkpoints" / "step_000001", first):
            finish(first)
            results.append((label, 0, 0, "the run ended before checkpoint 1"))
            return
        second = launch(["--resume", str(run)])
        try:
            code, err = finish(second, timeout=20)
        finally:
            first.kill()
            finish(first)
        refused = code not in (0, HUNG) and "Traceback" not in err and bool(err.strip())
        if not refused:
            classes["silent accept"] += 1
            waiting["silent accept"] += 1
        note = ("refused: " + err.strip().splitlines()[-1][:150]) if refused else (
            f"accepted: it was still running after 20 s (exit {code}); two runs wrote one folder")
        print(f"  {label}: {'ok' if refused else 'FAILED'} ({note})", flush=True)
        results.append((label, 1, int(refused), note))

    chosen = [(label, dict(spec, action="kill")) for label, spec in KILLS]
    chosen += [(label, dict({"action": "enospc"}, **spec)) for label, spec in DISK_FULL]
    for label, spec in chosen:
        if args.only in label:
            injected, survived, note = probe(label, spec)
            results.append((label, int(injected), int(survived), note))
    for label, name, damage in CORRUPT:
        if args.only in label:
            probe_corrupt(label, name, damage)
    if args.only in "SIGTERM after checkpoint 1":
        probe_sigterm()
    if args.only in "second --resume of a run still training":
        probe_two_runs()
    if args.random_kills:
        rng = random.Random(args.seed)
        spots: dict[str, list[int]] = {}
        for _ in range(args.random_kills):
            at = rng.uniform(0, duration - created)
            injected, survived, note = probe(f"SIGKILL {at:.2f}s after the run folder appeared", None, kill_after=at)
            spot = note.split(";")[0] if injected else "not injected (the run had ended)"
            spots.setdefault(spot, []).append(survived)
        where = ", ".join(f"{k}: {sum(v)}/{len(v)}" for k, v in sorted(spots.items()))
        injected = sum(len(v) for k, v in spots.items() if not k.startswith("not injected"))
        survived = sum(map(sum, spots.values()))
        results.append((f"SIGKILL at random moments (seed {args.seed})", injected, survived, where))

    width = max(len(r[0]) for r in results)
    print(f"\n{'fault':<{width}}  injected  survived")
    for fault, injected, survived, _ in results:
        print(f"{fault:<{width}}  {injected:>8}  {survived:>8}")
    print(f"{'total':<{width}}  {sum(r[1] for r in results):>8}  {sum(r[2] for r in results):>8}")
    random_row = [r for r in results if r[0].startswith("SIGKILL at random")]
    if random_row:
        print(f"random kills landed (survived/drawn): {random_row[0][3]}")
    print("failures by class: " + ", ".join(f"{k} {v}" + (f" ({waiting[k]} awaiting the trainer)" if waiting[k] else "")
                                            for k, v in classes.items()))
    print(f"probe time {time.perf_counter() - began:.0f}s")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if all(r[1] == r[2] and r[1] > 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
