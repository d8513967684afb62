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


@pytest.mark.parametrize("failure", [
    OSError(errno.ENOSPC, "No space left on device"),
    RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 704 vs 598"),  # torch.save's full disk
])
def test_a_full_disk_during_a_save_keeps_the_earlier_checkpoints(tmp_path, monkeypatch, failure):
    first = _save(tmp_path, 1)
    real_save = torch.save

    def full_disk(obj, f, *args, **kwargs):
        if Path(f).name == "rng.pt":
            raise failure
        return real_save(obj, f, *args, **kwargs)

    monkeypatch.setattr(checkpoint.torch, "save", full_disk)
    with pytest.raises(CheckpointWriteError, match=r"cannot write checkpoint .*step_000002 \(.+\); earlier"):
        _save(tmp_path, 2)
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
