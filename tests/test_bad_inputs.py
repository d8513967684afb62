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


# --- outputs that would lose data: refused before any work, and nothing is touched -------------------------


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _dataset(folder: Path) -> Path:
    """A small dataset folder: questions, a corpus and a file of the user's."""
    folder.mkdir(parents=True)
    (folder / "questions.jsonl").write_text('{"id": "1", "question": "who?", "golden_answers": ["a"]}\n')
    (folder / "corpus.jsonl").write_text('{"id": "0", "contents": "\\"T\\"\\nsome text"}\n')
    (folder / "notes.txt").write_text("my notes\n")
    return folder


@pytest.mark.parametrize("case", ["out_is_the_data", "foreign_json", "foreign_markdown_beside",
                                  "foreign_json_with_overwrite", "samples_is_paired_with", "samples_is_the_report"])
def test_eval_never_replaces_a_file_it_did_not_write_or_reads(case: str, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    no_work(monkeypatch)
    data = _dataset(tmp_path / "d")
    (tmp_path / "results.json").write_text('{"mine": true}\n')
    (tmp_path / "report.md").write_text("# my own notes\n")
    earlier = tmp_path / "earlier.jsonl"
    earlier.write_text('{"dataset": "d", "uid": "d:1", "finish_reason": "answer", "em": 1.0, "f1": 1.0}\n')
    argv, expected = {
        "out_is_the_data": (["--data", str(data / "questions.jsonl"), "--out", str(data / "questions.jsonl")],
                            f"--out {data / 'questions.jsonl'}: is {data / 'questions.jsonl'}, which this command "
                            "reads and would replace; choose another --out"),
        "foreign_json": (["--data", str(data), "--out", str(tmp_path / "results.json")],
                         f"--out {tmp_path / 'results.json'}: exists and is not a searchrl eval report, so it is not "
                         "replaced; choose another --out, or move it away first"),
        "foreign_markdown_beside": (["--data", str(data), "--out", str(tmp_path / "report.json")],
                                    f"--out {tmp_path / 'report.md'}: exists and is not a searchrl eval report"),
        "foreign_json_with_overwrite": (["--data", str(data), "--out", str(tmp_path / "results.json"), "--overwrite"],
                                        "(--overwrite replaces only a searchrl eval report)"),
        "samples_is_paired_with": (["--data", str(data), "--paired-with", str(earlier), "--samples", str(earlier),
                                    "--overwrite"], f"--samples {earlier}: is {earlier}, which this command reads"),
        "samples_is_the_report": (["--data", str(data), "--out", str(tmp_path / "r.json"), "--samples",
                                   str(tmp_path / "r.md")], "is also where --out writes the report"),
    }[case]
    before = _snapshot(tmp_path)
    code, err = run(["eval", *argv], capsys)
    assert code == 2 and expected in err and len(err.strip().splitlines()) == 1, err
    assert _snapshot(tmp_path) == before


def test_index_build_never_empties_the_folder_of_its_corpus(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _dataset(tmp_path / "d")
    before = _snapshot(data)
    for extra in ([], ["--overwrite"]):  # the case: --out is the folder that holds the corpus
        code, err = run(["index", "build", "--corpus", str(data / "corpus.jsonl"), "--kind", "bm25", "--out",
                         str(data), "--quiet", *extra], capsys)
        assert code == 2 and err == (f"searchrl index: error: --out {data}: holds {data / 'corpus.jsonl'}, which "
                                     "this command reads and would replace; choose another --out\n")
    assert _snapshot(data) == before
    # An index folder that holds its corpus is refused too; an index folder of its own is replaced with --overwrite.
    index = tmp_path / "index"
    assert run(["index", "build", "--corpus", str(data / "corpus.jsonl"), "--kind", "bm25", "--out", str(index),
                "--quiet"], capsys)[0] == 0
    code, err = run(["index", "build", "--corpus", str(data / "corpus.jsonl"), "--kind", "bm25", "--out", str(index),
                     "--quiet"], capsys)
    assert code == 2 and "already exists (a searchrl index folder); pass --overwrite to replace it" in err
    assert run(["index", "build", "--corpus", str(data / "corpus.jsonl"), "--kind", "bm25", "--out", str(index),
                "--quiet", "--overwrite"], capsys)[0] == 0
    (index / "corpus.jsonl").write_text((data / "corpus.jsonl").read_text())
    code, err = run(["index", "build", "--corpus", str(index / "corpus.jsonl"), "--kind", "bm25", "--out",
                     str(index), "--quiet", "--overwrite"], capsys)
    assert code == 2 and f"holds {index / 'corpus.jsonl'}, which this command reads" in err
    assert (index / "corpus.jsonl").is_file() and (index / "manifest.json").is_file()


def test_data_world_writes_only_into_a_new_folder_or_a_world(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _dataset(tmp_path / "d")
    before = _snapshot(data)
    for extra in ([], ["--overwrite"]):  # a dataset folder: its corpus.jsonl would be replaced by the world's
        code, err = run(["data", "world", "--out", str(data), "--people", "20", *extra], capsys)
        assert code == 2 and f"--out {data}: exists and is not a synthetic world folder, so it is not replaced" in err
    assert _snapshot(data) == before
    world = tmp_path / "world"
    small = ["--people", "30", "--train", "20", "--dev", "5", "--test", "5"]
    assert run(["data", "world", "--out", str(world), *small], capsys)[0] == 0
    code, err = run(["data", "world", "--out", str(world), *small, "--seed", "1"], capsys)
    assert code == 2 and "already exists (a synthetic world folder); pass --overwrite" in err
    assert run(["data", "world", "--out", str(world), *small, "--seed", "1", "--overwrite"], capsys)[0] == 0
    assert '"seed": 1' in (world / "world.json").read_text()


def test_check_output_path_rules(tmp_path: Path) -> None:
    from searchrl.fileio import check_output_path

    mine = tmp_path / "mine.txt"
    mine.write_text("made by me")
    ours = lambda p: p.read_text() == "made by me"  # noqa: E731
    assert check_output_path(tmp_path / "new.txt", "--out", ours=ours) == tmp_path / "new.txt"
    with pytest.raises(ConfigError, match="pass --force to replace it"):
        check_output_path(mine, "--out", ours=ours, flag="--force", kind="thing")
    assert check_output_path(mine, "--out", ours=ours, overwrite=True) == mine
    link = tmp_path / "link.txt"
    link.symlink_to(mine)
    with pytest.raises(ConfigError, match=f"--out {link}: is {mine}, which this command reads"):
        check_output_path(link, "--out", inputs=[mine], ours=ours, overwrite=True)
    folder = tmp_path / "f"
    (folder / "sub").mkdir(parents=True)
    (folder / "MARK").write_text("")
    (folder / "sub" / "in.jsonl").write_text("{}\n")
    assert check_output_path(folder, "--out", inputs=["no-such-model"], ours="MARK", overwrite=True,
                             folder=True) == folder  # an input that is a name, not a path, is no file to protect
    with pytest.raises(ConfigError, match=f"holds {folder / 'sub' / 'in.jsonl'}"):
        check_output_path(folder, "--out", inputs=[folder / "sub" / "in.jsonl"], ours="MARK", overwrite=True,
                          folder=True)
    (folder / "MARK").unlink()
    with pytest.raises(ConfigError, match="exists and is not a file this command wrote"):
        check_output_path(folder, "--out", overwrite=True, folder=True)
