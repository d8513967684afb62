"""Nothing shipped points at a developer's machine: no tracked file under src/, configs/, docs/, examples/ or
README.md names `/work/` or `../shared` (a folder that exists on the machines this project is developed on, and
nowhere else). Cite the paper (arXiv id, section, table) or a docs/ file instead."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHIPPED = ("src", "configs", "docs", "examples", "README.md")
FORBIDDEN = ("/work/", "../shared")


def tracked_text_files() -> list[Path]:
    try:
        listed = subprocess.run(["git", "ls-files", "-z", "--", *SHIPPED], cwd=REPO, capture_output=True, check=True,
                                timeout=60).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the shipped files cannot be listed")
    files = []
    for name in filter(None, listed.decode().split("\0")):
        path = REPO / name
        if path.is_file() and not path.is_symlink():  # configs/ is a link to src/searchrl/configs, read there
            files.append(path)
    return files


def offenders(files: list[Path], root: Path = REPO) -> list[str]:
    """`file:line: text` for each line of a text file that names a machine path (binary files are skipped)."""
    out = []
    for path in files:
        data = path.read_bytes()
        if b"\0" in data:
            continue  # binary (a figure)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if any(word in line for word in FORBIDDEN):
                out.append(f"{path.relative_to(root)}:{number}: {line.strip()[:100]}")
    return out


def test_the_check_finds_a_machine_path(tmp_path: Path) -> None:
    bad = tmp_path / "notes.md"
    bad.write_text("see /work/shared/reference/peers.md\nfine: docs/algorithms.md\nand ../shared/data\n")
    binary = tmp_path / "figure.png"
    binary.write_bytes(b"\x89PNG\0/work/")
    found = offenders([bad, binary], root=tmp_path)
    assert [line.split(": ")[0] for line in found] == ["notes.md:1", "notes.md:3"]


def test_no_shipped_file_names_a_developer_machine_path() -> None:
    files = tracked_text_files()
    assert any(p.name == "protocol.py" for p in files)  # the listing works
    found = offenders(files)
    assert not found, "paths of a developer's machine in shipped files:\n" + "\n".join(found)
