"""YAML that parses but must not be accepted: a key given twice (YAML keeps the last silently, so a second
`train:` section dropped the first) and alias bombs (1 KB that expands to 10^9 values spun for minutes)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from searchrl.errors import ConfigError
from searchrl.fileio import MAX_ALIAS_NODES, load_yaml, yaml_input_error
from searchrl.training.config import load_config, parse_override, read_yaml, yaml_load

SEARCHRL = Path(sys.executable).parent / "searchrl"


def bomb(levels: int = 9) -> str:
    """A "billion laughs" document: 9 levels of 9 aliases each, 9^9 strings once expanded; `run.name` holds it."""
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(lines) + f"\nrun:\n  name: *a{levels - 1}\n"


def test_an_alias_bomb_in_a_known_key_is_refused_at_once_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(bomb())
    assert len(path.read_bytes()) < 1024
    started = time.perf_counter()
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert time.perf_counter() - started < 5  # was 115 s at 100% CPU
    message = str(info.value)
    assert message.startswith(f"{path}:6: aliases expand to more than {MAX_ALIAS_NODES} values by alias *a4")
    assert "\n" not in message


def test_the_installed_command_refuses_the_bomb_quickly(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(bomb())
    started = time.perf_counter()
    done = subprocess.run([str(SEARCHRL), "train", "--config", str(path), f"run.dir={tmp_path / 'run'}"],
                          capture_output=True, text=True, timeout=120)
    assert time.perf_counter() - started < 30
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"searchrl train: error: {path}:6: aliases expand to more than")
    assert not (tmp_path / "run").exists()


def test_aliases_within_the_limit_and_merge_keys_still_load() -> None:
    text = "base: &b {lr: 1.0e-6, steps: 3}\ntrain:\n  <<: *b\n  steps: 5\nother: *b\nlist: [*b, *b]\n"
    assert yaml_load(text) == {"base": {"lr": 1e-6, "steps": 3}, "train": {"lr": 1e-6, "steps": 5},
                               "other": {"lr": 1e-6, "steps": 3}, "list": [{"lr": 1e-6, "steps": 3}] * 2}
    wide = "a: &a [" + ", ".join(["1"] * 1000) + "]\nb: [" + ", ".join(["*a"] * 99) + "]\n"  # 99,099 values added
    assert len(yaml_load(wide)["b"]) == 99
    with pytest.raises(yaml_input_error(), match="aliases expand to more than"):
        yaml_load(wide.replace("[*a", "[*a, *a"))  # one alias more: 100,100


def test_a_recursive_alias_is_refused() -> None:
    with pytest.raises(yaml_input_error(), match=r"alias \*r refers to a value that contains itself") as info:
        load_yaml("ok: 1\nr: &r [1, *r]\n")
    assert info.value.problem_mark.line == 1


def test_a_key_given_twice_names_both_lines(tmp_path: Path) -> None:
    path = tmp_path / "twice.yaml"
    path.write_text("train:\n  lr: 1.0e-6\n  steps: 10\nrun:\n  name: x\ntrain:\n  steps: 3\n")
    with pytest.raises(ConfigError) as info:
        read_yaml(path)
    assert str(info.value) == (f"{path}:6: key 'train' is given twice, on lines 1 and 6 (YAML would keep the last "
                               "silently); keep one")
    path.write_text("train:\n  lr: 1.0e-6\n  lr: 2.0e-6\n")  # nested
    with pytest.raises(ConfigError, match=f"{path}:3: key 'lr' is given twice, on lines 2 and 3"):
        read_yaml(path)
    with pytest.raises(ConfigError, match="override 'train.x={a: 1, a: 2}': key 'a' is given twice"):
        parse_override("train.x={a: 1, a: 2}")
    assert parse_override("train.x=[1, 2]") == ("train.x", [1, 2])


def test_every_packaged_config_still_loads() -> None:
    from searchrl.training.config import packaged_config_names, resolve_config_path

    for name in packaged_config_names():
        assert isinstance(read_yaml(resolve_config_path(name)), dict), name


def test_eval_template_yaml_is_read_with_the_same_checks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from searchrl.cli import main as cli_main

    template = tmp_path / "t.yaml"
    template.write_text("instruction: 'Q: {question}'\ninstruction: 'again {question}'\n")
    assert cli_main(["eval", "--template", str(template), "--data", "world"]) == 2
    assert f"--template {template}:2: key 'instruction' is given twice" in capsys.readouterr().err
