"""Checkpoints: exact round trip, atomic folders, pruning that keeps the best, metrics truncation on resume."""

from __future__ import annotations

import errno
import json
import os
import random
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors import SafetensorError

from searchrl.errors import SearchRLError
from searchrl.fileio import atomic_write_json
from searchrl.models import checkpoint_dir
from searchrl.training import checkpoint
from searchrl.training.checkpoint import (
    CheckpointWriteError,
    best_checkpoint,
    clean_partial,
    latest_checkpoint,
    list_checkpoints,
    load_checkpoint,
    mark_best,
    save_checkpoint,
)
from searchrl.training.logger import read_jsonl, truncate_jsonl


def _model(seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    model[0].weight.requires_grad_(True)
    return model


def _train_a_bit(model: torch.nn.Module, optimizer: torch.optim.Optimizer, steps: int) -> None:
    for _ in range(steps):
        loss = model(torch.randn(5, 4)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def test_round_trip_restores_weights_optimizer_rng_and_state(tmp_path):
    model = _model(0)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    _train_a_bit(model, optimizer, 3)
    generator = torch.Generator().manual_seed(7)
    random.seed(1), np.random.seed(2), torch.manual_seed(3)
    folder = save_checkpoint(tmp_path, 3, model=model, optimizer=optimizer, scheduler=None,
                             trainer_state={"data_cursor": 24, "lr_scale": 0.5}, generators={"rollout": generator})
    assert folder == checkpoint_dir(tmp_path, 3) and (folder / "weights.safetensors").is_file()
    expected_draws = (random.random(), np.random.rand(), torch.rand(1).item(), torch.rand(1, generator=generator).item())
    torch.manual_seed(11)
    _train_a_bit(model, optimizer, 2)  # the live run goes on from the saved state

    other = _model(1)  # different initial weights and a fresh optimiser
    other_opt = torch.optim.AdamW(other.parameters(), lr=1e-2)
    other_gen = torch.Generator().manual_seed(99)
    state = load_checkpoint(folder, model=other, optimizer=other_opt, generators={"rollout": other_gen})
    assert state["step"] == 3 and state["data_cursor"] == 24 and state["lr_scale"] == 0.5
    draws = (random.random(), np.random.rand(), torch.rand(1).item(), torch.rand(1, generator=other_gen).item())
    assert draws == expected_draws
    torch.manual_seed(11)
    _train_a_bit(other, other_opt, 2)  # same data: the AdamW moments must have been restored too
    for name, value in model.state_dict().items():
        assert torch.equal(value, other.state_dict()[name]), name


def test_frozen_weights_are_saved_too_and_mismatches_are_refused(tmp_path):
    # Frozen blocks (train.train_layers) hold the warm start's weights, not the base model's: they must be saved.
    model = _model(0)
    model[2].weight.requires_grad_(False)
    save_checkpoint(tmp_path, 1, model=model, optimizer=None, scheduler=None, trainer_state={})
    from safetensors.torch import load_file

    names = set(load_file(str(checkpoint_dir(tmp_path, 1) / "weights.safetensors")))
    assert names == {"0.weight", "0.bias", "2.weight", "2.bias"}
    restored = _model(1)
    restored[2].weight.requires_grad_(False)
    load_checkpoint(checkpoint_dir(tmp_path, 1), model=restored)
    assert torch.equal(restored[2].weight, model[2].weight)
    different = torch.nn.Sequential(torch.nn.Linear(4, 3))
    with pytest.raises(SearchRLError, match="do not match the model"):
        load_checkpoint(checkpoint_dir(tmp_path, 1), model=different)


def test_pruning_keeps_the_last_k_and_the_best(tmp_path):
    model = _model(0)
    for step in (1, 2, 3):
        save_checkpoint(tmp_path, step, model=model, optimizer=None, scheduler=None, trainer_state={}, keep_last=2)
    mark_best(tmp_path, 2, 0.5)
    for step in (4, 5):
        save_checkpoint(tmp_path, step, model=model, optimizer=None, scheduler=None, trainer_state={}, keep_last=2)
    assert [s for s, _ in list_checkpoints(tmp_path)] == [2, 4, 5]
    assert best_checkpoint(tmp_path) == checkpoint_dir(tmp_path, 2)
    assert latest_checkpoint(tmp_path) == checkpoint_dir(tmp_path, 5)


def test_a_killed_save_leaves_no_visible_checkpoint(tmp_path):
    model = _model(0)
    save_checkpoint(tmp_path, 1, model=model, optimizer=None, scheduler=None, trainer_state={})
    partial = tmp_path / "checkpoints" / ".tmp-step_000002"  # what a save killed before its rename leaves
    partial.mkdir()
    (partial / "weights.safetensors").write_bytes(b"\0" * 10)
    incomplete = tmp_path / "checkpoints" / "step_000003"  # a folder without state.json is not a checkpoint
    incomplete.mkdir()
    assert latest_checkpoint(tmp_path) == checkpoint_dir(tmp_path, 1)
    clean_partial(tmp_path)
    assert not partial.exists()
    # Re-saving an existing step replaces it whole.
    save_checkpoint(tmp_path, 1, model=model, optimizer=None, scheduler=None, trainer_state={"x": 2})
    assert json.loads((checkpoint_dir(tmp_path, 1) / "state.json").read_text())["x"] == 2


class Killed(BaseException):
    """Stands for SIGKILL: nothing after it runs (no except clause of the code under test catches it)."""


def _save(run_dir, step, **kw):
    return save_checkpoint(run_dir, step, model=_model(step), optimizer=None, scheduler=None, trainer_state={}, **kw)


def test_a_prune_killed_mid_delete_leaves_no_partial_checkpoint(tmp_path, monkeypatch):
    _save(tmp_path, 1)
    _save(tmp_path, 2)
    real_rmtree = shutil.rmtree

    def killed_mid_delete(path, ignore_errors=False):
        path = Path(path)
        if (path / "state.json").is_file():  # the pruned checkpoint: killed after deleting two of its files
            (path / "state.json").unlink()
            (path / "optimizer.pt").unlink()
            raise Killed
        real_rmtree(path, ignore_errors=ignore_errors)

    monkeypatch.setattr(checkpoint.shutil, "rmtree", killed_mid_delete)
    with pytest.raises(Killed):
        _save(tmp_path, 3)  # keep_last=2: prunes step 1
    monkeypatch.undo()
    root = tmp_path / "checkpoints"
    steps = [p for p in root.iterdir() if p.name.startswith("step_")]
    assert all(checkpoint.is_complete(p) for p in steps), sorted(p.name for p in steps)  # every step_* is whole
    assert latest_checkpoint(tmp_path) == checkpoint_dir(tmp_path, 3)
    clean_partial(tmp_path)  # what the next start does
    assert sorted(p.name for p in root.iterdir()) == ["step_000002", "step_000003"]


def test_a_half_deleted_checkpoint_is_never_returned_and_is_removed_on_start(tmp_path):
    # What a prune by an earlier version left when killed mid-delete (files go in directory order).
    _save(tmp_path, 1)
    _save(tmp_path, 2)
    (checkpoint_dir(tmp_path, 2) / "weights.safetensors").unlink()
    assert latest_checkpoint(tmp_path) == checkpoint_dir(tmp_path, 1)
    assert [s for s, _ in list_checkpoints(tmp_path)] == [1]
    with pytest.raises(SearchRLError, match="not a complete checkpoint .*weights.safetensors"):
        load_checkpoint(checkpoint_dir(tmp_path, 2), model=_model(0))
    clean_partial(tmp_path)
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["step_000001"]


def test_a_resave_killed_between_its_renames_keeps_the_old_copy(tmp_path):
    _save(tmp_path, 1)
    root = tmp_path / "checkpoints"
    os.rename(root / "step_000001", root / ".old-step_000001")  # the old copy moved aside ...
    (root / ".tmp-step_000001").mkdir()  # ... and the new one not yet renamed in
    clean_partial(tmp_path)
    assert sorted(p.name for p in root.iterdir()) == ["step_000001"]
    assert latest_checkpoint(tmp_path) == checkpoint_dir(tmp_path, 1)


@pytest.mark.parametrize("writer, failure", [
    ("torch.save", OSError(errno.ENOSPC, "No space left on device")),
    ("torch.save", RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 704 vs 598")),
    # safetensors reports a full disk as its own exception type (seen on a full /tmp during a study's runs)
    ("save_file", SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)")),
])
def test_a_full_disk_during_a_save_keeps_the_earlier_checkpoints(tmp_path, monkeypatch, writer, failure):
    first = _save(tmp_path, 1)
    real_save = torch.save

    def full_disk_torch_save(obj, f, *args, **kwargs):
        if Path(f).name == "rng.pt":
            raise failure
        return real_save(obj, f, *args, **kwargs)

    def full_disk_save_file(*args, **kwargs):
        raise failure

    if writer == "torch.save":
        monkeypatch.setattr(checkpoint.torch, "save", full_disk_torch_save)
    else:
        monkeypatch.setattr(checkpoint, "save_file", full_disk_save_file)
    with pytest.raises(CheckpointWriteError, match=r"cannot write checkpoint .*step_000002 \(.+\); earlier") as err:
        _save(tmp_path, 2)
    if writer == "save_file":
        assert "os error 28" in str(err.value)  # the reason safetensors gave
    monkeypatch.undo()
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["step_000001"]  # no temporary folder
    assert latest_checkpoint(tmp_path) == first
    load_checkpoint(first, model=_model(0))


def test_truncate_jsonl_keeps_rows_up_to_the_step_and_drops_a_torn_line(tmp_path):
    path = tmp_path / "metrics.jsonl"
    rows = [{"step": s, "v": s * 1.5} for s in range(1, 6)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"step": 6, "v"')
    assert truncate_jsonl(path, 3) == 3
    assert read_jsonl(path) == rows[:3]
    atomic_write_json(tmp_path / "x.json", {"a": float("nan")})
    assert json.loads((tmp_path / "x.json").read_text())["a"] != 0


def test_checkpoint_files_get_the_umask_permissions_not_safetensors_0600(tmp_path):
    import os
    import stat

    previous = os.umask(0o022)
    try:
        folder = save_checkpoint(tmp_path, 1, model=_model(0), optimizer=None, scheduler=None, trainer_state={})
    finally:
        os.umask(previous)
    modes = {f.name: stat.S_IMODE(f.stat().st_mode) for f in folder.iterdir()}
    assert modes["weights.safetensors"] == 0o644, modes  # safetensors' save_file alone makes it 0600
    assert set(modes.values()) == {0o644}, modes


# --- integrity: a manifest of sizes and hashes, verified on load; resumes skip a corrupt newest checkpoint ------


def _truncate(path: Path, keep: int | None = None) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2 if keep is None else keep])


def _flip_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def test_a_checkpoint_records_the_size_and_sha256_of_every_file(tmp_path):
    import hashlib

    folder = _save(tmp_path, 1)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert set(manifest["files"]) == set(checkpoint.FILES)
    for name, entry in manifest["files"].items():
        data = (folder / name).read_bytes()
        assert entry == {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    assert checkpoint.verify_checkpoint(folder) is None


@pytest.mark.parametrize(("name", "damage", "reason"), [
    ("weights.safetensors", _truncate, "bytes where the checkpoint's manifest says"),
    ("optimizer.pt", _truncate, "bytes where the checkpoint's manifest says"),
    ("state.json", lambda p: p.write_text("{not json"), "bytes where the checkpoint's manifest says"),
    ("rng.pt", _flip_a_byte, "its contents differ from the sha256 in the checkpoint's manifest (corrupted)"),
    ("manifest.json", lambda p: p.write_text("[]"), "not a checkpoint manifest"),
])
def test_a_corrupt_newest_checkpoint_is_skipped_named_and_refused(tmp_path, name, damage, reason):
    _save(tmp_path, 1)
    newest = _save(tmp_path, 2)
    damage(newest / name)
    found = checkpoint.verify_checkpoint(newest)
    assert found is not None and found.startswith(f"{newest / name}: ") and reason in found and "\n" not in found
    skipped: list = []
    assert latest_checkpoint(tmp_path, skipped=skipped) == checkpoint_dir(tmp_path, 1)
    assert skipped == [(newest, found)]
    assert latest_checkpoint(tmp_path) == checkpoint_dir(tmp_path, 1)  # the trainer's call, unchanged
    assert [s for s, _ in list_checkpoints(tmp_path)] == [1]
    with pytest.raises(checkpoint.CorruptCheckpointError) as info:
        load_checkpoint(newest, model=_model(0))
    assert str(info.value).startswith(found) and "resume from an earlier checkpoint" in str(info.value)
    assert isinstance(info.value, SearchRLError)


def test_the_best_checkpoint_must_be_intact_and_best_json_readable(tmp_path):
    best = _save(tmp_path, 1)
    _save(tmp_path, 2)
    mark_best(tmp_path, 1, 0.5)
    assert best_checkpoint(tmp_path) == best
    _truncate(best / "weights.safetensors")
    assert best_checkpoint(tmp_path) is None
    (tmp_path / "checkpoints" / "best.json").write_text("{oops")
    assert best_checkpoint(tmp_path) is None  # was a JSONDecodeError traceback


def _legacy(run_dir, step):
    """A checkpoint as saved before manifests existed."""
    folder = _save(run_dir, step)
    (folder / "manifest.json").unlink()
    return folder


@pytest.mark.parametrize(("name", "damage", "reason"), [
    ("weights.safetensors", lambda p: _truncate(p, p.stat().st_size - 4), "where its header says"),
    ("weights.safetensors", _truncate, "not a readable safetensors file"),  # the cut is in the header
    ("optimizer.pt", _truncate, "not a readable torch file"),
    ("rng.pt", lambda p: _truncate(p, 100), "not a readable torch file"),
    ("state.json", lambda p: p.write_text('{"step": 2'), "not a JSON object"),
    ("state.json", lambda p: p.write_text("[]"), "not a JSON object"),
])
def test_a_checkpoint_without_a_manifest_is_judged_by_its_files_parsing(tmp_path, name, damage, reason):
    _legacy(tmp_path, 1)
    newest = _legacy(tmp_path, 2)
    assert checkpoint.verify_checkpoint(newest) is None
    state = load_checkpoint(newest, model=_model(0))
    assert state["step"] == 2
    damage(newest / name)
    found = checkpoint.verify_checkpoint(newest)
    assert found is not None and found.startswith(f"{newest / name}: ") and reason in found
    assert latest_checkpoint(tmp_path) == checkpoint_dir(tmp_path, 1)
    with pytest.raises(checkpoint.CorruptCheckpointError, match=f"{newest / name}: "):
        load_checkpoint(newest, model=_model(0))


def test_a_file_that_passes_the_checks_but_does_not_load_is_named(tmp_path, monkeypatch):
    folder = _save(tmp_path, 1)

    def broken(*args, **kwargs):
        raise RuntimeError("PytorchStreamReader failed reading zip archive: failed finding central directory")

    monkeypatch.setattr(checkpoint.torch, "load", broken)
    with pytest.raises(checkpoint.CorruptCheckpointError, match=f"{folder / 'optimizer.pt'}: cannot be loaded "
                                                                r"\(RuntimeError: PytorchStreamReader"):
        load_checkpoint(folder, model=_model(0))


def test_a_resume_of_a_run_whose_only_checkpoints_are_corrupt_finds_none(tmp_path):
    folder = _save(tmp_path, 0)
    _truncate(folder / "optimizer.pt")
    skipped: list = []
    assert latest_checkpoint(tmp_path, skipped=skipped) is None and [f for f, _ in skipped] == [folder]
    assert checkpoint.complete_checkpoints(tmp_path) == [(0, folder)]  # the run did start: not to be replaced
