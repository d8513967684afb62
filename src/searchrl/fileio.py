"""Atomic file writes: a temporary file in the target's folder, then `os.replace`, so a crash never leaves a
half-written checkpoint, report or config behind."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from searchrl.errors import ConfigError


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write `data` to `path` through a temporary file in the same folder and `os.replace`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp creates 0600 files; give the result the permissions a plain open() would (0666 & ~umask).
        os.fchmod(fd, 0o666 & ~current_umask())
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def give_umask_permissions(path: str | Path) -> None:
    """Give a file, or every file below a folder, the permissions a plain open() would (0666 & ~umask).

    Why: safetensors' `save_file` (and so `save_pretrained`) creates its files 0600, readable by their owner only.
    """
    path = Path(path)
    mode = 0o666 & ~current_umask()
    for file in [path] if path.is_file() else [f for f in path.rglob("*") if f.is_file()]:
        os.chmod(file, mode)


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | Path, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True) + "\n")


def check_writable(path: str | Path, what: str, *, folder: bool = False) -> Path:
    """Fail now, not after hours of work, if `path` (a file, or a folder with `folder=True`) cannot be written.

    Raises `ConfigError` naming `what` (e.g. "--out") when a folder stands where the file goes (or a file where
    the folder goes), when a parent is a file, or when the folder is not writable (tried with a temporary file,
    so read-only mounts and permissions are caught, for root too). Missing folders are created, as the write
    would create them anyway. Returns the path.
    """
    path = Path(path).expanduser()
    if folder and path.exists() and not path.is_dir():
        raise ConfigError(f"{what} {path}: a file stands where a folder is expected; remove it or choose another path")
    if not folder and path.is_dir():
        raise ConfigError(f"{what} {path}: is a folder; give a file name such as {path / 'results.json'}")
    target = path if folder else path.parent
    existing = next(p for p in (target, *target.parents) if p.exists() or p == p.parent)
    if not existing.is_dir():
        raise ConfigError(f"{what} {path}: {existing} is a file, not a folder; choose another path")
    try:
        target.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".searchrl-write-test.", dir=target)
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        raise ConfigError(f"{what} {path}: cannot write in {target} ({exc.strerror or exc}); "
                          "choose a writable location") from None
    return path
