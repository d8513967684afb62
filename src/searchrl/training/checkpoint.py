"""Checkpoints that survive `kill -9` at any moment.

A checkpoint is a folder `checkpoints/step_XXXXXX/` holding

- `weights.safetensors`   the trainable parameters (all weights, or only the LoRA adapters)
- `optimizer.pt`          optimiser and learning-rate scheduler state
- `rng.pt`                python, numpy and torch RNG states plus any named `torch.Generator` (the rollout's)
- `state.json`            the trainer's own state: step, data cursor, best validation EM, counters, monitor

Checkpoints are device-agnostic: weights are saved from CPU copies, and loading maps every tensor to the device of
the model it is loaded into (RNG states to the CPU, where torch keeps them), so a run saved on a GPU resumes on a
CPU and the reverse. Only same-device resumes can be exact: another device rounds differently and draws other
random numbers (README.md, "One GPU").

It is written into `checkpoints/.tmp-step_XXXXXX/` and renamed into place only when complete, and a pruned
checkpoint is renamed to `checkpoints/.deleting-step_XXXXXX/` before it is deleted, so a folder named `step_*` is
always whole. `clean_partial` (run on resume) removes what a killed save or prune left behind. A failed write (a
full disk) removes its temporary folder and raises `CheckpointWriteError`; the earlier checkpoints stay as they were.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, save_file

from searchrl.errors import SearchRLError
from searchrl.fileio import atomic_write_json, give_umask_permissions
from searchrl.fileio import atomic_write_text  # noqa: F401 - re-exported: training/config.py imports it from here
from searchrl.models import (
    BEST_FILE,
    CHECKPOINT_PREFIX,
    CHECKPOINTS,
    STATE_FILE,
    WEIGHTS_FILE,
    checkpoint_dir,
    load_trainable_state,
    module_device,
    trainable_state,
)

# The folder layout, best.json and which weights a checkpoint holds are defined in searchrl.models (load_policy
# reads checkpoints too); this module writes, prunes and restores whole checkpoints.
FILES = (WEIGHTS_FILE, "optimizer.pt", "rng.pt", STATE_FILE)
_TRASH = ".deleting-"  # a pruned checkpoint on its way out


class CheckpointWriteError(SearchRLError):
    """A checkpoint could not be written (full disk, no permission); its temporary folder is gone."""


# ---------------------------------------------------------------------------------------------- RNG


def capture_rng(generators: dict[str, torch.Generator] | None = None) -> dict[str, Any]:
    """The state of every random number generator a run draws from (the GPUs' too, once CUDA is in use)."""
    return {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() and torch.cuda.is_initialized() else None,
        "generators": {name: g.get_state() for name, g in (generators or {}).items()},
    }


def restore_rng(state: dict[str, Any], generators: dict[str, torch.Generator] | None = None) -> None:
    """Restore what :func:`capture_rng` saved; GPU states only on a machine with as many GPUs (a resume on another
    device kind keeps its own, see the module docstring)."""
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    cuda = state.get("cuda")
    if cuda and torch.cuda.is_available() and len(cuda) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(cuda)
    for name, g in (generators or {}).items():
        if name in state.get("generators", {}):
            g.set_state(state["generators"][name])


# ---------------------------------------------------------------------------------------------- checkpoints


def is_complete(folder: Path) -> bool:
    """Whether a checkpoint folder holds every file of a checkpoint."""
    return all((Path(folder) / name).is_file() for name in FILES)


def list_checkpoints(run_dir: Path) -> list[tuple[int, Path]]:
    """Complete checkpoints of a run, oldest first."""
    root = Path(run_dir) / CHECKPOINTS
    if not root.is_dir():
        return []
    out = []
    for p in root.iterdir():
        if p.is_dir() and p.name.startswith(CHECKPOINT_PREFIX) and is_complete(p):
            try:
                out.append((int(p.name[len(CHECKPOINT_PREFIX) :]), p))
            except ValueError:
                continue
    return sorted(out)


def latest_checkpoint(run_dir: Path) -> Path | None:
    found = list_checkpoints(run_dir)
    return found[-1][1] if found else None


def best_checkpoint(run_dir: Path) -> Path | None:
    """The checkpoint with the best validation EM, if one was recorded and still exists."""
    path = Path(run_dir) / CHECKPOINTS / BEST_FILE
    if not path.is_file():
        return None
    step = json.loads(path.read_text())["step"]
    folder = checkpoint_dir(run_dir, step)
    return folder if is_complete(folder) else None


def clean_partial(run_dir: Path) -> None:
    """Undo what a killed save or prune left: temporary and half-deleted folders go; a checkpoint moved aside by a
    re-save killed before its replacement was renamed in comes back."""
    root = Path(run_dir) / CHECKPOINTS
    if not root.is_dir():
        return
    for p in sorted(root.iterdir()):
        if p.name.startswith(".old-") and not (root / p.name[5:]).exists() and is_complete(p):
            os.rename(p, root / p.name[5:])
        elif p.name.startswith((".tmp-", ".old-", _TRASH)) or (
            p.name.startswith(CHECKPOINT_PREFIX) and not is_complete(p)
        ):
            # an incomplete step_* is a prune killed before deletions were renamed out of sight first
            shutil.rmtree(p, ignore_errors=True)


def save_checkpoint(
    run_dir: Path,
    step: int,
    *,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer | None,
    scheduler: Any | None,
    trainer_state: dict[str, Any],
    generators: dict[str, torch.Generator] | None = None,
    keep_last: int = 2,
    protect: tuple[int, ...] = (),
) -> Path:
    """Write a complete checkpoint atomically, then prune all but the last `keep_last`, the best and `protect`.

    A failed write (full disk, no permission) removes the temporary folder and raises `CheckpointWriteError`."""
    final = checkpoint_dir(run_dir, step)
    tmp = final.parent / f".tmp-{final.name}"
    weights = trainable_state(model)
    optim = {
        "optimizer": optimizer.state_dict() if optimizer is not None else None,
        "scheduler": scheduler.state_dict() if scheduler is not None else None,
    }
    try:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        save_file(weights, str(tmp / WEIGHTS_FILE))
        give_umask_permissions(tmp / WEIGHTS_FILE)
        torch.save(optim, tmp / "optimizer.pt")
        torch.save(capture_rng(generators), tmp / "rng.pt")
        (tmp / STATE_FILE).write_text(json.dumps({**trainer_state, "step": step}, indent=2, sort_keys=True) + "\n")
        for f in tmp.iterdir():  # data on disk before the rename makes the folder visible
            with open(f, "rb") as fh:
                os.fsync(fh.fileno())
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, (OSError, RuntimeError)):  # torch.save reports a full disk as a RuntimeError
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else f"write failed: {str(exc)[:200]}"
            raise CheckpointWriteError(
                f"cannot write checkpoint {final} ({reason}); earlier checkpoints are untouched"
            ) from exc
        raise
    if final.exists():  # re-saving a step (after a rollback): move the old one aside first
        old = final.parent / f".old-{final.name}"
        shutil.rmtree(old, ignore_errors=True)
        os.rename(final, old)
        os.rename(tmp, final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(tmp, final)
    _prune(run_dir, keep_last, protect)
    return final


def mark_best(run_dir: Path, step: int, score: float) -> None:
    atomic_write_json(Path(run_dir) / CHECKPOINTS / BEST_FILE, {"step": step, "score": score})


def _prune(run_dir: Path, keep_last: int, protect: tuple[int, ...] = ()) -> None:
    found = list_checkpoints(run_dir)
    best = best_checkpoint(run_dir)
    for step, path in found[: max(0, len(found) - keep_last)]:
        if path != best and step not in protect:
            # Out of sight first: a kill mid-delete leaves a .deleting-* folder, never a partial step_*.
            trash = path.parent / f"{_TRASH}{path.name}"
            shutil.rmtree(trash, ignore_errors=True)
            os.rename(path, trash)
            shutil.rmtree(trash, ignore_errors=True)


def load_checkpoint(
    folder: Path,
    *,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer | None = None,
    scheduler: Any | None = None,
    generators: dict[str, torch.Generator] | None = None,
    restore_rng_state: bool = True,
) -> dict[str, Any]:
    """Restore a checkpoint into live objects; returns the trainer state (with `step`).

    Tensors go to the model's device whatever device saved them; RNG states to the CPU."""
    folder = Path(folder)
    if not is_complete(folder):
        missing = [name for name in FILES if not (folder / name).is_file()]
        raise SearchRLError(f"{folder} is not a complete checkpoint (no {', '.join(missing)})")
    # Weights are read on the CPU and copied into the parameters (no second copy of the model on a GPU);
    # the optimiser state is mapped straight to the parameters' device, where AdamW keeps it.
    load_trainable_state(model, load_file(str(folder / WEIGHTS_FILE)), folder / WEIGHTS_FILE)
    opt_state = torch.load(folder / "optimizer.pt", map_location=module_device(model), weights_only=False)
    if optimizer is not None and opt_state["optimizer"] is not None:
        optimizer.load_state_dict(opt_state["optimizer"])
    if scheduler is not None and opt_state["scheduler"] is not None:
        scheduler.load_state_dict(opt_state["scheduler"])
    if restore_rng_state:
        restore_rng(torch.load(folder / "rng.pt", map_location="cpu", weights_only=False), generators)
    return json.loads((folder / STATE_FILE).read_text())
