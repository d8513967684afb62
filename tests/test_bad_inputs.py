"""Bad inputs on the command line give one clear message and exit 2, never a traceback, and fail before any work.

benchmarks/probe_bad_inputs.py runs many more through the installed `searchrl` in a subprocess.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import searchrl.data.loaders
import searchrl.models
from searchrl.cli import main as cli_main
from searchrl.errors import ConfigError
from searchrl.fileio import check_writable


def no_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make loading data or a model fail the test: the command must stop before either."""
    monkeypatch.setattr(searchrl.data.loaders, "load_sources", lambda *a, **k: pytest.fail("data was loaded"))
    monkeypatch.setattr(searchrl.models, "load_policy", lambda *a, **k: pytest.fail("the model was loaded"))


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = cli_main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


@pytest.mark.parametrize("case", ["folder", "under_a_file", "markdown_is_a_folder", "samples_under_a_file"])
def test_eval_checks_its_outputs_before_any_work(case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    no_work(monkeypatch)
    (tmp_path / "file.txt").write_text("x")
    (tmp_path / "res.md").mkdir()
    out, samples, expected = {
        "folder": (tmp_path, None, f"--out {tmp_path}: is a folder; give a file name such as"),
        "under_a_file": (tmp_path / "file.txt" / "res.json", None, f"{tmp_path / 'file.txt'} is a file, not a folder"),
        "markdown_is_a_folder": (tmp_path / "res.json", None, f"--out {tmp_path / 'res.md'}: is a folder"),
        "samples_under_a_file": (tmp_path / "ok.json", tmp_path / "file.txt" / "s.jsonl", "--samples"),
    }[case]
    argv = ["eval", "--data", "world", "--out", str(out)] + (["--samples", str(samples)] if samples else [])
    code, err = run(argv, capsys)
    assert code == 2 and expected in err and len(err.strip().splitlines()) == 1


def test_an_unwritable_folder_is_reported_before_any_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    no_work(monkeypatch)
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    if os.access(locked, os.W_OK):  # root ignores permissions: make the write test itself fail as it would
        def refuse(*a, **k):
            raise PermissionError(13, "Permission denied")

        monkeypatch.setattr("searchrl.fileio.tempfile.mkstemp", refuse)
    try:
        code, err = run(["eval", "--data", "world", "--out", str(locked / "res.json")], capsys)
    finally:
        locked.chmod(0o755)
    assert code == 2 and f"--out {locked / 'res.json'}: cannot write in {locked} (Permission denied)" in err


def test_check_writable_creates_missing_folders_and_leaves_nothing_behind(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "res.json"
    assert check_writable(target, "--out") == target
    assert target.parent.is_dir() and list(target.parent.iterdir()) == []
    assert check_writable(tmp_path / "run", "--out", folder=True).is_dir()
    (tmp_path / "f").write_text("x")
    with pytest.raises(ConfigError, match="a file stands where a folder is expected"):
        check_writable(tmp_path / "f", "run.dir", folder=True)


def test_data_world_checks_its_output_folder_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    import searchrl.data.cli

    monkeypatch.setattr(searchrl.data.cli, "generate_world", lambda *a, **k: pytest.fail("generated"))
    (tmp_path / "file.txt").write_text("x")
    code, err = run(["data", "world", "--out", str(tmp_path / "file.txt")], capsys)
    assert code == 2 and "--out" in err and "a file stands where a folder is expected" in err


def test_a_non_utf8_questions_file_is_named_with_its_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "questions.jsonl"
    bad.write_bytes(b'{"id": "1", "question": "q?", "golden_answers": ["a"]}\n{"id": "2", "question": "caf\xe9"}\n')
    for argv in (["data", "show", str(bad)], ["eval", "--data", str(bad)]):
        code, err = run(argv, capsys)
        assert code == 2 and f"{bad}:2: not valid UTF-8" in err, argv


def test_eval_with_an_unreachable_retriever_fails_fast_naming_the_url(monkeypatch: pytest.MonkeyPatch,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from searchrl.retrieval import client

    # Data may load (it comes before the retriever); the model may not.
    monkeypatch.setattr(searchrl.models, "load_policy", lambda *a, **k: pytest.fail("the model was loaded"))
    monkeypatch.setattr(client, "backoff_delay", lambda *a: 0.0)
    code, err = run(["eval", "--data", "world", "--limit", "2", "--retriever", "http://127.0.0.1:9"], capsys)
    assert code == 2
    line = err.strip().splitlines()[-1]
    assert "http://127.0.0.1:9" in line and "searchrl serve" in line
