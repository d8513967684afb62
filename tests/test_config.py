"""The training config: YAML + dotted overrides, validation errors that name the key, packaged configs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from searchrl.errors import ConfigError
from searchrl.training.config import (
    Config,
    config_from_dict,
    load_config,
    packaged_config_names,
    parse_override,
    resolve_config_path,
    save_config,
    show_config,
    to_dict,
)


def test_default_is_the_demo_and_derived_values_follow_the_sizes():
    cfg = load_config(None)
    assert Path(cfg.source).name == "demo.yaml"
    assert cfg.model.name == "default" and cfg.data.train == "world"
    assert cfg.algorithm["name"] == "sapo"
    cfg = load_config("demo", ["train.batch_size=4", "train.group_size=5", "train.mini_batch_size=10",
                               "train.micro_batch_size=5", "train.ppo_epochs=2", "train.steps=7"])
    d = cfg.derived
    assert d.trajectories_per_step == 20
    assert d.updates_per_epoch == 2 and d.updates_per_step == 4
    assert d.grad_accum_steps == 2 and d.total_updates == 28


def test_overrides_are_yaml_scalars_and_lists():
    cfg = load_config("demo", ["train.lr=1e-6", "seed=3", "data.val=[world, 'world:1']", "model.lora.enabled=true",
                               "rollout.topk=2", "run.dir=runs/x"])
    assert cfg.train.lr == pytest.approx(1e-6) and isinstance(cfg.train.lr, float)
    assert cfg.seed == 3 and cfg.data.val == ("world", "world:1")
    assert cfg.model.lora.enabled is True and cfg.rollout.topk == 2 and cfg.run.dir == "runs/x"
    assert parse_override("a.b=") == ("a.b", None)
    with pytest.raises(ConfigError, match="dotted.key=value"):
        parse_override("train.lr")


def test_the_three_keys_compare_uses_exist():
    cfg = load_config("demo", ["algorithm.name=grpo", "seed=5", "run.dir=/tmp/x"])
    assert cfg.algorithm["name"] == "grpo" and cfg.seed == 5 and cfg.run.dir == "/tmp/x"
    assert cfg.algorithm["penalties"] == []  # the resolved form, every default written out


def test_unknown_key_suggests_the_closest_known_key():
    with pytest.raises(ConfigError, match=r"^train.lr_rate: unknown key; did you mean 'train.lr'"):
        load_config("demo", ["train.lr_rate=1"])
    with pytest.raises(ConfigError, match=r"^lr: unknown key; did you mean 'train.lr'"):
        load_config("demo", ["lr=1"])
    with pytest.raises(ConfigError, match=r"^model.lora.rank: unknown key; did you mean 'model.lora.r'"):
        load_config("demo", ["model.lora.rank=8"])


def test_bad_values_name_the_key_and_the_allowed_values():
    with pytest.raises(ConfigError, match=r"train.lr_schedule: 'cosin' is not allowed; allowed values: constant, "
                                          r"cosine, linear \(did you mean 'cosine'\?\)"):
        load_config("demo", ["train.lr_schedule=cosin"])
    with pytest.raises(ConfigError, match=r"train.steps: expected an integer, got 'abc'"):
        load_config("demo", ["train.steps=abc"])
    with pytest.raises(ConfigError, match=r"train.bf16: expected bool \| auto, got 3"):
        load_config("demo", ["train.bf16=3"])
    with pytest.raises(ConfigError, match=r"train.batch_size: must be >= 1, got 0"):
        load_config("demo", ["train.batch_size=0"])
    with pytest.raises(ConfigError, match=r"train.mini_batch_size \(7\) must divide.*allowed values: 1, 2, 4, 8"):
        load_config("demo", ["train.batch_size=2", "train.group_size=4", "train.mini_batch_size=7"])
    with pytest.raises(ConfigError, match=r"train.adam_betas: expected a list of 2 values"):
        load_config("demo", ["train.adam_betas=[0.9]"])


@pytest.mark.parametrize("algorithm", ["grpo", "sapo", "llds", "calibadv", "dr_grpo", "dapo", "gspo"])
def test_one_rollout_per_question_is_refused_by_group_baseline_estimators(algorithm):
    sizes = ["train.batch_size=8", "train.mini_batch_size=8", "train.micro_batch_size=4"]
    with pytest.raises(ConfigError, match=r"^train.group_size: 1 rollout per question .* without a group baseline"):
        load_config("demo", [*sizes, "train.group_size=1", f"algorithm.name={algorithm}"])
    assert load_config("demo", [*sizes, "train.group_size=2", f"algorithm.name={algorithm}"]).train.group_size == 2


def test_algorithm_errors_come_from_the_registry_as_config_errors():
    with pytest.raises(ConfigError, match=r"algorithm.name: got 'ppo'; expected one of \[.*'sapo'"):
        load_config("demo", ["algorithm.name=ppo"])
    with pytest.raises(ConfigError, match=r"algorithm.sapo.gamma"):
        load_config("demo", ["algorithm.sapo.gamma=-1"])


def test_sections_of_other_modules_validate_with_the_key():
    with pytest.raises(ConfigError, match=r"rollout.topkk"):
        load_config("demo", ["rollout.topkk=3"])
    with pytest.raises(ConfigError, match=r"monitor.on_collapse"):
        load_config("demo", ["monitor.on_collapse=explode"])
    with pytest.raises(ConfigError, match=r"reward.metric"):
        load_config("demo", ["reward.metric=bleu"])


def test_bad_yaml_file_names_the_file_and_line(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("seed: 1\ntrain:\n  steps: [1, 2\n  lr: 3\n")
    with pytest.raises(ConfigError, match=rf"{path}:\d+:\d+: invalid YAML") as err:
        load_config(path)
    line = int(str(err.value).split(":")[1])
    assert 3 <= line <= 5
    path.write_text("- just\n- a list\n")
    with pytest.raises(ConfigError, match="top level must be a mapping"):
        load_config(path)


def test_config_names_resolve_to_packaged_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no ./configs here: the packaged copy is used
    assert resolve_config_path("configs/demo.yaml").name == "demo.yaml"
    assert resolve_config_path("demo.yaml") == resolve_config_path("demo")
    with pytest.raises(ConfigError, match="did you mean 'demo'"):
        resolve_config_path("dmeo")


@pytest.mark.parametrize("name", packaged_config_names())
def test_every_packaged_config_loads(name):
    from conftest import REQUIRED_OVERRIDES

    cfg = load_config(name, REQUIRED_OVERRIDES.get(name, []))
    assert cfg.derived.updates_per_step >= 1


def test_saved_config_reloads_equal(tmp_path):
    cfg = load_config("demo", ["algorithm.name=llds", "train.lr=3e-6", "monitor.rules.clip_spike.patience=5"])
    save_config(cfg, tmp_path / "config.yaml")
    again = load_config(tmp_path / "config.yaml")
    assert to_dict(again) == to_dict(cfg)
    assert again == cfg
    assert config_from_dict(to_dict(cfg)) == cfg


def test_defaults_build_and_every_field_has_help():
    cfg = config_from_dict({})
    assert isinstance(cfg, Config)
    text = show_config()
    for key in ("train.mini_batch_size", "train.micro_batch_size", "train.ppo_epochs", "model.lora.r", "rollout.topk"):
        assert key in text


def test_cli_prints_config_errors_without_traceback():
    exe = [sys.executable, "-m", "searchrl.cli"]
    ok = subprocess.run([*exe, "train", "--print-config", "train.steps=3"], capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr
    assert "steps: 3" in ok.stdout
    bad = subprocess.run([*exe, "train", "train.stepz=3"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2
    assert "did you mean 'train.steps'" in bad.stderr and "Traceback" not in bad.stderr


def test_algorithm_name_on_the_command_line_brings_that_algorithms_structure():
    # The demo runs SAPO with LLDS's penalty too; naming an algorithm on the command line means that algorithm.
    assert load_config("demo").algorithm["penalties"] == ["sapo", "llds"]
    assert load_config("demo", ["algorithm.name=sapo"]).algorithm["penalties"] == ["sapo"]
    assert load_config("demo", ["algorithm.name=grpo"]).algorithm["penalties"] == []
    both = load_config("demo", ["algorithm.name=grpo", "algorithm.penalties=[llds]"])
    assert both.algorithm["penalties"] == ["llds"]


def test_overrides_may_come_before_and_after_options(capsys):
    from searchrl.cli import main as cli_main

    assert cli_main(["train", "train.steps=3", "--print-config", "train.lr=2e-5", "train.steps=4"]) == 0
    out = capsys.readouterr().out
    assert "steps: 4" in out and "lr: 2.0e-05" in out  # command-line order: the later train.steps wins
    with pytest.raises(SystemExit):
        cli_main(["train", "--print-config", "--no-such-flag"])


def test_a_run_config_saved_before_a_key_was_retired_still_loads(tmp_path) -> None:
    """Run folders written before `train.debug_inject_nan_step` was removed carry it as null: they still load."""
    from searchrl.training.config import config_from_dict, load_config, to_dict

    raw = to_dict(load_config("demo"))
    raw["train"]["debug_inject_nan_step"] = None
    config_from_dict(raw)
    raw["train"]["debug_inject_nan_step"] = 2
    with pytest.raises(ConfigError, match="debug_inject_nan_step"):
        config_from_dict(raw)


def test_a_curriculum_length_without_its_types_is_refused_with_the_key():
    with pytest.raises(ConfigError, match=r"^data.train_types_steps: 20 steps of a curriculum needs .*data.train_types"):
        load_config("demo", ["data.train_types_steps=20"])
    cfg = load_config("world_multihop", ["data.train_types_steps=20"])  # the recipe: 30
    assert cfg.data.train_types == ("bridge",) and cfg.data.train_types_steps == 20
