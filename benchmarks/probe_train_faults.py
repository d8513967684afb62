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

Recovery is what a user does: `searchrl train --resume RUN` (or, for a run killed before its first checkpoint, the
original command again). A fault is survived when no partial `checkpoints/step_*` folder is visible after it, one
recovery command exits 0, no partial or temporary folder is left, and the metrics rows (time fields aside), events,
checkpoint set, last checkpoint's weights, final_model/ weights, final_eval.json and summary.json equal the
uninterrupted run's. A full disk must also end the run with exit code 2, one message line and no traceback.

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


def launch(args: list[str], fault: dict | None = None) -> subprocess.Popen:
    env = dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               PROBE_FAULT=json.dumps(fault or {}))
    return subprocess.Popen([sys.executable, "-c", BOOTSTRAP, *args], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen, timeout: float = 600) -> tuple[int, str]:
    _, err = proc.communicate(timeout=timeout)
    return proc.returncode, err


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
    return ([] if code == 0 else [f"recovery exited {code}: {err.strip().splitlines()[-1:]}"]), args[0]


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
    args = parser.parse_args()

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
        print(f"  {label}: {'ok' if not problems else 'FAILED'} ({note})", flush=True)
        return injected, injected and not problems, note

    chosen = [(label, dict(spec, action="kill")) for label, spec in KILLS]
    chosen += [(label, dict({"action": "enospc"}, **spec)) for label, spec in DISK_FULL]
    for label, spec in chosen:
        if args.only in label:
            injected, survived, note = probe(label, spec)
            results.append((label, int(injected), int(survived), note))
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
    print(f"probe time {time.perf_counter() - began:.0f}s")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if all(r[1] == r[2] and r[1] > 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
