"""What `searchrl train` may do to a run folder (issue #16): run.overwrite replaces only a searchrl run, and only
after everything was loaded; a refused or failed start leaves the disk as it was; an unwritable run.dir or a full
disk ends the run with a message, not a traceback; resuming a finished run changes nothing."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest
import torch
from test_train import tiny_model, tiny_overrides  # noqa: F401 - tiny_model is a fixture

from searchrl.cli import main as cli_main
from searchrl.training.checkpoint import is_complete
from searchrl.training.logger import read_jsonl

QUESTION = json.dumps({"id": "q1", "question": "Who wrote it?", "golden_answers": ["Ann"]}) + "\n"


pytestmark = pytest.mark.usefixtures("one_thread")  # conftest.py


def train_cli(capsys, args: list[str]) -> tuple[int, str]:
    """`searchrl train --quiet ARGS` in this process: (exit code, stderr)."""
    code = cli_main(["train", "--quiet", *args])
    return code, capsys.readouterr().err


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """(inode, mtime) of every file below `folder`: an atomic rewrite changes the inode, an append the mtime."""
    return {str(p.relative_to(folder)): (p.stat().st_ino, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_overwrite_never_replaces_a_folder_that_is_not_a_run(tiny_model, tmp_path, capsys):
    data = tmp_path / "w2"  # the probe's case: data.train=$PWD/w2 run.dir=$PWD/w2 run.overwrite=true
    data.mkdir()
    (data / "train.jsonl").write_text(QUESTION)
    (data / "notes.txt").write_text("mine")
    before = snapshot(data)
    code, err = train_cli(capsys, tiny_overrides(tiny_model, data, data__train=data, run__overwrite="true"))
    assert code == 2 and f"run.dir: {data} holds files but is not a searchrl run folder" in err, err
    assert "Traceback" not in err and snapshot(data) == before


def test_overwrite_replaces_a_run_only_after_validation_and_never_one_holding_its_data(tiny_model, tmp_path, capsys):
    run = tmp_path / "run"
    assert train_cli(capsys, tiny_overrides(tiny_model, run, train__steps=1))[0] == 0
    before = snapshot(run)
    # Bad data: refused when loading it, before the old run is touched.
    code, err = train_cli(capsys, tiny_overrides(tiny_model, run, train__steps=1, run__overwrite="true",
                                                 data__train=tmp_path / "missing.jsonl"))
    assert code == 2 and "missing.jsonl" in err and snapshot(run) == before
    # Data the run reads lies inside the folder it would replace.
    (run / "questions.jsonl").write_text(QUESTION)
    code, err = train_cli(capsys, tiny_overrides(tiny_model, run, run__overwrite="true",
                                                 data__train=run / "questions.jsonl"))
    assert code == 2 and f"holds data.train={run / 'questions.jsonl'}, which this run reads" in err, err
    assert (run / "questions.jsonl").is_file()
    (run / "questions.jsonl").unlink()
    # A run folder from before the marker file (config.yaml and checkpoints/) is still a run: replaced.
    (run / ".searchrl-run").unlink()
    code, err = train_cli(capsys, tiny_overrides(tiny_model, run, train__steps=2, run__overwrite="true"))
    assert code == 0, err
    assert [r["step"] for r in read_jsonl(run / "metrics.jsonl")] == [1, 2] and (run / ".searchrl-run").is_file()


def test_a_refused_resume_changes_nothing_and_a_finished_run_is_not_redone(tiny_model, tmp_path, capsys):
    run = tmp_path / "run"
    assert train_cli(capsys, tiny_overrides(tiny_model, run, train__steps=2))[0] == 0
    before = snapshot(run)
    code, err = train_cli(capsys, ["--resume", str(run), "train.batch_size=4", "train.steps=3"])
    assert code == 2 and "data cursor (4) does not match train.batch_size=4" in err, err
    assert snapshot(run) == before  # config.yaml still says batch_size 2: a plain --resume still works
    code, err = train_cli(capsys, ["--resume", str(run)])
    assert code == 0 and f"{run} is finished (2 of train.steps=2 steps); its summary is {run / 'summary.json'}" in err
    assert snapshot(run) == before  # final_model/ and summary.json not rewritten
    # A larger train.steps continues the run.
    code, err = train_cli(capsys, ["--resume", str(run), "train.steps=3"])
    assert code == 0, err
    assert [r["step"] for r in read_jsonl(run / "metrics.jsonl")] == [1, 2, 3]
    assert json.loads((run / "summary.json").read_text())["steps"] == 3
    assert "steps: 3" in (run / "config.yaml").read_text()


def test_a_failed_start_leaves_nothing_and_can_be_retried(tiny_model, tmp_path, capsys, monkeypatch):
    from searchrl.errors import SearchRLError
    from searchrl.training import loop, run as run_module
    from searchrl.training.config import load_config

    # A model that does not load: nothing is created, not even the parent folders.
    run = tmp_path / "new" / "run"
    code, err = train_cli(capsys, tiny_overrides(tiny_model, run, model__name=tmp_path))
    assert code == 2 and "config.json" in err and not (tmp_path / "new").exists()

    # A failure after the folder was made (here the starting-point evaluation) removes what the run wrote.
    def broken(t, label, **kwargs):
        raise SearchRLError("retrieval server down")

    with monkeypatch.context() as patch:
        for module in (loop, run_module):  # both call state.validate, by the name they imported
            patch.setattr(module, "validate", broken)
        code, err = train_cli(capsys, tiny_overrides(tiny_model, run, val__at_start="true"))
        assert code == 2 and "retrieval server down" in err and not (tmp_path / "new").exists()
        empty = tmp_path / "empty"
        empty.mkdir()  # a folder that existed before stays, as it was
        assert train_cli(capsys, tiny_overrides(tiny_model, empty, val__at_start="true"))[0] == 2
        assert empty.is_dir() and not any(empty.iterdir())

    # A run killed before its first checkpoint (its folder holds the marker and config.yaml) is started afresh.
    cfg = load_config("demo", tiny_overrides(tiny_model, run, train__steps=1))
    run_module._create_run_folder(cfg, run, replace=False)
    code, err = train_cli(capsys, ["--resume", str(run)])
    assert code == 2 and f"start it afresh with `searchrl train --config {run / 'config.yaml'}`" in err, err
    code, err = train_cli(capsys, ["--config", str(run / "config.yaml")])
    assert code == 0, err
    assert is_complete(run / "checkpoints" / "step_000001")


def test_an_unwritable_run_dir_is_refused_with_a_message(tiny_model, tmp_path, capsys, monkeypatch):
    from searchrl import fileio

    (tmp_path / "file").write_text("x")
    for target in (tmp_path / "file", tmp_path / "file" / "run"):
        code, err = train_cli(capsys, tiny_overrides(tiny_model, target))
        assert code == 2 and f"run.dir {tmp_path / 'file'}: a file stands where a folder is expected" in err, err
    read_only = tmp_path / "ro"
    read_only.mkdir()
    real_mkstemp = fileio.tempfile.mkstemp

    def read_only_mkstemp(*args, dir=None, **kwargs):  # what a read-only mount answers, to root too
        if Path(dir) == read_only:
            raise OSError(errno.EROFS, "Read-only file system")
        return real_mkstemp(*args, dir=dir, **kwargs)

    monkeypatch.setattr(fileio.tempfile, "mkstemp", read_only_mkstemp)
    code, err = train_cli(capsys, tiny_overrides(tiny_model, read_only / "run"))
    assert code == 2 and f"run.dir {read_only}: cannot write in {read_only} (Read-only file system)" in err, err
    assert "Traceback" not in err and not any(read_only.iterdir())


def test_a_full_disk_during_a_checkpoint_ends_the_run_with_a_message(tiny_model, tmp_path, capsys, monkeypatch):
    from searchrl.training import checkpoint

    run = tmp_path / "run"
    real_save = torch.save

    def full_disk(obj, f, *args, **kwargs):
        if Path(f).parent.name == ".tmp-step_000002":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_save(obj, f, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(checkpoint.torch, "save", full_disk)
        code, err = train_cli(capsys, tiny_overrides(tiny_model, run, train__steps=2))
    assert code == 2 and "Traceback" not in err
    assert f"cannot write checkpoint {run / 'checkpoints' / 'step_000002'} (No space left on device)" in err, err
    assert f"resume with `searchrl train --resume {run}`" in err
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["step_000000", "step_000001"]
    assert all(is_complete(p) for p in (run / "checkpoints").iterdir())
    code, err = train_cli(capsys, ["--resume", str(run)])  # space freed: the run goes on from step 1
    assert code == 0, err
    assert [r["step"] for r in read_jsonl(run / "metrics.jsonl")] == [1, 2]


def test_a_full_disk_during_the_final_export_ends_the_run_with_a_message(tiny_model, tmp_path, capsys, monkeypatch):
    import transformers.modeling_utils
    from safetensors import SafetensorError

    run = tmp_path / "run"
    real_save = transformers.modeling_utils.safe_save_file

    def full_disk(tensors, filename, *args, **kwargs):  # what safetensors raises on a full disk
        if Path(filename).parent.name == ".tmp-final_model":
            raise SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)")
        return real_save(tensors, filename, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(transformers.modeling_utils, "safe_save_file", full_disk)
        code, err = train_cli(capsys, tiny_overrides(tiny_model, run, train__steps=2))
    assert code == 2 and "Traceback" not in err, err
    assert f"cannot write {run / 'final_model'} (write failed: Error while serializing" in err, err
    assert f"resume with `searchrl train --resume {run}`" in err
    assert (run / "start_model").is_dir() and not (run / "final_model").exists()
    assert not list(run.glob(".tmp-*")) and is_complete(run / "checkpoints" / "step_000002")
    code, err = train_cli(capsys, ["--resume", str(run)])  # space freed: the run finishes without another step
    assert code == 0, err
    assert (run / "final_model" / "config.json").is_file() and (run / "summary.json").is_file()
    assert [r["step"] for r in read_jsonl(run / "metrics.jsonl")] == [1, 2]


def test_a_run_whose_weights_would_not_fit_is_refused_before_it_writes(tiny_model, tmp_path, capsys, monkeypatch):
    from searchrl.training import run as run_module

    run = tmp_path / "run"
    real_usage = run_module.shutil.disk_usage
    monkeypatch.setattr(run_module.shutil, "disk_usage", lambda path: real_usage(path)._replace(free=1000))
    code, err = train_cli(capsys, tiny_overrides(tiny_model, run))
    assert code == 2 and "Traceback" not in err, err
    assert f"run.dir {run}: this run's weights need about" in err and "its disk has 0.00 GB free" in err, err
    assert "checkpoint.keep_last=1" in err and not run.exists()


def test_the_disk_estimate_covers_what_a_run_writes(tiny_model, tmp_path, monkeypatch):
    """`disk_needed` is at least the run's weights on disk at their largest (after each checkpoint and at the end),
    and not wildly more."""
    from searchrl.training import run as run_module
    from searchrl.training import state
    from searchrl.training.config import load_config

    run = tmp_path / "run"
    estimates, sizes = [], []
    real_needed, real_save = run_module.disk_needed, state.save_checkpoint

    def weights_on_disk() -> int:
        return sum(f.stat().st_size for f in run.rglob("*") if f.is_file() and f.suffix in (".safetensors", ".pt"))

    def recording_save(*args, **kwargs):
        folder = real_save(*args, **kwargs)
        sizes.append(weights_on_disk())
        return folder

    monkeypatch.setattr(run_module, "disk_needed", lambda t: estimates.append(real_needed(t)) or estimates[-1])
    monkeypatch.setattr(state, "save_checkpoint", recording_save)
    run_module.train(load_config("demo", tiny_overrides(tiny_model, run, train__steps=4, val__at_start="true",
                                                       val__every=1)), console=False)
    sizes.append(weights_on_disk())
    need = sum(estimates[0].values())
    assert max(sizes) <= need <= 3 * max(sizes), (sizes, estimates)


def test_a_kill_between_a_checkpoint_and_its_best_mark_is_repaired_on_resume(tiny_model, tmp_path, monkeypatch):
    from searchrl.training import state
    from searchrl.training.config import load_config
    from searchrl.training.run import train

    class Killed(BaseException):
        """Stands for SIGKILL: no except clause of the trainer catches it."""

    def killed(run_dir, step, score):
        raise Killed

    run = tmp_path / "run"
    cfg = load_config("demo", tiny_overrides(tiny_model, run, train__steps=2))  # step 2 validates: the best so far
    with monkeypatch.context() as patch:
        patch.setattr(state, "mark_best", killed)
        with pytest.raises(Killed):
            train(cfg, console=False)
    assert is_complete(run / "checkpoints" / "step_000002") and not (run / "checkpoints" / "best.json").exists()
    summary = train(load_config(run / "config.yaml"), resume=True, console=False)
    assert json.loads((run / "checkpoints" / "best.json").read_text())["step"] == 2
    assert Path(summary["best_checkpoint"]).name == "step_000002"
