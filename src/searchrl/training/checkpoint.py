"""Checkpoints that survive `kill -9` at any moment.

A checkpoint is a folder `checkpoints/step_XXXXXX/` holding

- `weights.safetensors`   the trainable parameters (all weights, or only the LoRA adapters)
- `optimizer.pt`          optimiser and learning-rate scheduler state
- `rng.pt`                python, numpy and torch RNG states plus any named `torch.Generator` (the rollout's)
- `state.json`            the trainer's own state: step, data cursor, best validation EM, counters, monitor
- `manifest.json`         the size and sha256 of each file above, written last

A checkpoint is intact when its manifest matches its files (`verify_checkpoint`); one saved before manifests
existed is judged by its files parsing (state.json as JSON, the safetensors header against the file's size, the
.pt files' zip directories). `latest_checkpoint` and `best_checkpoint` return intact checkpoints only (a resume
skips a corrupt newest one, and can say which: `latest_checkpoint(run_dir, skipped=[])`), and `load_checkpoint`
refuses a corrupt one with a `CorruptCheckpointError` naming the file and what is wrong. A checkpoint is verified
once per process for as long as its files are unchanged (size, mtime, inode), so the hashes are computed when a
checkpoint is written and when a new process first reads it.

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

import hashlib
import json
import os
import random
import shutil
import struct
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, save_file

from searchrl.errors import SearchRLError
from searchrl.fileio import atomic_write_json, give_umask_permissions, write_failure
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
MANIFEST_FILE = "manifest.json"
MANIFEST_FORMAT = "searchrl-checkpoint"
_TRASH = ".deleting-"  # a pruned checkpoint on its way out


class CheckpointWriteError(SearchRLError):
    """A checkpoint could not be written (full disk, no permission); its temporary folder is gone."""


class CorruptCheckpointError(SearchRLError):
    """A checkpoint's file does not match its manifest or does not parse; the message names the file."""


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
    """Whether a checkpoint folder holds every file of a checkpoint (present, not checked: `verify_checkpoint`)."""
    return all((Path(folder) / name).is_file() for name in FILES)


# ---------------------------------------------------------------------------------------------- integrity

_verified: dict[tuple, str | None] = {}  # (folder, its files' stats) -> verify_checkpoint's answer, this process


def _sha256(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _file_stats(folder: Path) -> tuple:
    stats = []
    for name in (*FILES, MANIFEST_FILE):
        try:
            st = (folder / name).stat()
            stats.append((name, st.st_size, st.st_mtime_ns, st.st_ino))
        except OSError:
            stats.append((name, None))
    return (str(folder.resolve()), tuple(stats))


def _manifest(folder: Path) -> dict:
    files = {name: {"size": (folder / name).stat().st_size, "sha256": _sha256(folder / name)} for name in FILES}
    return {"format": MANIFEST_FORMAT, "version": 1, "files": files}


def _check_manifest(folder: Path) -> str | None:
    path = folder / MANIFEST_FILE
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        files = manifest["files"]
        expected = {name: (int(files[name]["size"]), str(files[name]["sha256"])) for name in FILES}
    except (OSError, UnicodeDecodeError) as exc:
        return f"{path}: unreadable ({getattr(exc, 'strerror', None) or exc})"
    except (ValueError, KeyError, TypeError) as exc:
        return f"{path}: not a checkpoint manifest ({type(exc).__name__}: {exc})"
    for name, (size, _) in expected.items():
        actual = (folder / name).stat().st_size
        if actual != size:
            return f"{folder / name}: {actual} bytes where the checkpoint's manifest says {size} (truncated or replaced)"
    for name, (_, digest) in expected.items():
        if _sha256(folder / name) != digest:
            return f"{folder / name}: its contents differ from the sha256 in the checkpoint's manifest (corrupted)"
    return None


def _check_parses(folder: Path) -> str | None:
    """A checkpoint saved before manifests: every file must parse (cheaply: headers and directories only)."""
    state = folder / STATE_FILE
    try:
        if not isinstance(json.loads(state.read_text(encoding="utf-8")).get("step"), int):
            return f"{state}: has no integer 'step'"
    except (ValueError, AttributeError, UnicodeDecodeError) as exc:
        return f"{state}: not a JSON object ({exc})"
    weights = folder / WEIGHTS_FILE
    try:
        with open(weights, "rb") as fh:
            (length,) = struct.unpack("<Q", fh.read(8))
            header = json.loads(fh.read(length)) if length < 100_000_000 else None
        end = max((int(v["data_offsets"][1]) for k, v in header.items() if k != "__metadata__"), default=0)
        if weights.stat().st_size != 8 + length + end:
            return (f"{weights}: {weights.stat().st_size} bytes where its header says {8 + length + end} "
                    "(truncated or padded)")
    except (struct.error, ValueError, TypeError, AttributeError, KeyError, IndexError) as exc:
        return f"{weights}: not a readable safetensors file ({type(exc).__name__})"
    for name in ("optimizer.pt", "rng.pt"):
        try:
            with zipfile.ZipFile(folder / name) as archive:
                archive.namelist()
        except (zipfile.BadZipFile, ValueError) as exc:
            return f"{folder / name}: not a readable torch file ({exc}; truncated?)"
    return None


def verify_checkpoint(folder: Path) -> str | None:
    """None when `folder` is an intact checkpoint, else one line naming the file at fault and what is wrong.

    Intact: every file present and, with a manifest, of the size and sha256 it records; without one (saved before
    manifests), every file parses. Answers are remembered per process while the files are unchanged."""
    folder = Path(folder)
    missing = [name for name in FILES if not (folder / name).is_file()]
    if missing:
        return f"{folder}: not a complete checkpoint (no {', '.join(missing)})"
    key = _file_stats(folder)
    if key not in _verified:
        try:
            check = _check_manifest if (folder / MANIFEST_FILE).exists() else _check_parses
            _verified[key] = check(folder)
        except OSError as exc:
            return f"{exc.filename or folder}: unreadable ({exc.strerror or exc})"
    return _verified[key]


def complete_checkpoints(run_dir: Path) -> list[tuple[int, Path]]:
    """Checkpoint folders of a run that hold every file, intact or not, oldest first: whether a run ever wrote a
    checkpoint (one with only corrupt checkpoints has still started, and is not to be replaced as if it had not)."""
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


def list_checkpoints(run_dir: Path) -> list[tuple[int, Path]]:
    """Intact checkpoints of a run (`verify_checkpoint`), oldest first."""
    return [(step, p) for step, p in complete_checkpoints(run_dir) if verify_checkpoint(p) is None]


def latest_checkpoint(run_dir: Path, skipped: list[tuple[Path, str]] | None = None) -> Path | None:
    """The newest intact checkpoint of a run, or None. Newer ones that are corrupt are passed over; with
    `skipped`, each is appended to it as (folder, reason), newest first, so that a resume can say what it skipped."""
    for _, folder in reversed(complete_checkpoints(run_dir)):
        reason = verify_checkpoint(folder)
        if reason is None:
            return folder
        if skipped is not None:
            skipped.append((folder, reason))
    return None


def best_checkpoint(run_dir: Path) -> Path | None:
    """The checkpoint with the best validation EM, if one was recorded and is still there, intact."""
    path = Path(run_dir) / CHECKPOINTS / BEST_FILE
    if not path.is_file():
        return None
    try:
        step = int(json.loads(path.read_text())["step"])
    except (OSError, ValueError, KeyError, TypeError):  # a damaged best.json: as if no best was recorded
        return None
    folder = checkpoint_dir(run_dir, step)
    return folder if verify_checkpoint(folder) is None else None


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
        for f in tmp.iterdir():  # data on disk before the manifest vouches for it and the rename shows it
            with open(f, "rb") as fh:
                os.fsync(fh.fileno())
        atomic_write_json(tmp / MANIFEST_FILE, _manifest(tmp))  # last: sizes and hashes of the files as written
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        reason = write_failure(exc)
        if reason is not None:
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
    _verified[_file_stats(final)] = None  # hashed from disk a moment ago: no need to read the files again
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

    Tensors go to the model's device whatever device saved them; RNG states to the CPU. A checkpoint that is not
    intact (`verify_checkpoint`), or a file that fails to load, raises `CorruptCheckpointError` naming the file."""
    folder = Path(folder)
    reason = verify_checkpoint(folder)
    if reason is not None:
        raise CorruptCheckpointError(f"{reason}; resume from an earlier checkpoint (delete this one) or start afresh")
    # Weights are read on the CPU and copied into the parameters (no second copy of the model on a GPU);
    # the optimiser state is mapped straight to the parameters' device, where AdamW keeps it.
    load_trainable_state(model, _read(folder / WEIGHTS_FILE, lambda p: load_file(str(p))), folder / WEIGHTS_FILE)
    opt_state = _read(folder / "optimizer.pt",
                      lambda p: torch.load(p, map_location=module_device(model), weights_only=False))
    if optimizer is not None and opt_state["optimizer"] is not None:
        optimizer.load_state_dict(opt_state["optimizer"])
    if scheduler is not None and opt_state["scheduler"] is not None:
        scheduler.load_state_dict(opt_state["scheduler"])
    if restore_rng_state:
        restore_rng(_read(folder / "rng.pt", lambda p: torch.load(p, map_location="cpu", weights_only=False)),
                    generators)
    return _read(folder / STATE_FILE, lambda p: json.loads(p.read_text()))


def _read(path: Path, load: Any) -> Any:
    """`load(path)`, with a failure (a file that passed the checks but does not load) named in one line."""
    try:
        return load(path)
    except Exception as exc:  # safetensors, torch and json raise many types for a damaged file
        raise CorruptCheckpointError(f"{path}: cannot be loaded ({type(exc).__name__}: {str(exc)[:200]}); resume "
                                     "from an earlier checkpoint (delete this one) or start afresh") from None
