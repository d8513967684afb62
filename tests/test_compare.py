"""`searchrl compare`: command construction, failure isolation with real subprocesses, and an end-to-end run
of the real trainer on a tiny random model."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

from searchrl.cli import main as cli_main
from searchrl.analysis import cli_compare
from searchrl.analysis.cli_compare import default_jobs, plan

REPO = Path(__file__).resolve().parents[1]


def test_plan_builds_the_trainer_contract(tmp_path: Path) -> None:
    variants = plan(["grpo", "sapo"], [0, 1], tmp_path, "cfg.yaml", ["train.steps=3", "train.lr=1e-5"])
    assert [v.name for v in variants] == ["grpo-s0", "sapo-s0", "grpo-s1", "sapo-s1"]
    first = variants[0]
    assert first.command[:4] == [sys.executable, "-m", "searchrl.cli", "train"]
    assert first.command[4:] == ["--config", "cfg.yaml", "algorithm.name=grpo", "seed=0",
                                 f"run.dir={tmp_path / 'grpo-s0'}", "train.steps=3", "train.lr=1e-5"]
    # Variants of one seed differ only in the algorithm (same data order, seed and budget).
    differing = [(a, b) for a, b in zip(variants[0].command, variants[1].command) if a != b]
    assert differing == [("algorithm.name=grpo", "algorithm.name=sapo"),
                         (f"run.dir={tmp_path / 'grpo-s0'}", f"run.dir={tmp_path / 'sapo-s0'}")]
    assert "--config" not in plan(["grpo"], [0], tmp_path, None, [])[0].command


def test_default_jobs() -> None:
    assert default_jobs(8, cores=2) == 1  # the 2-core laptop: one at a time
    assert default_jobs(8, cores=1) == 1
    assert default_jobs(8, cores=16) == 8
    assert default_jobs(3, cores=16) == 3


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--algos", "grpo", "seed=3"], "compare sets seed for each variant"),
        (["--algos", "grpo", "run.dir=x"], "compare sets run.dir"),
        (["--algos", "grpo", "train.steps"], "not of the form dotted.key=value"),
        (["--algos", "grpo", "--seeds", "0,one"], "--seeds: 'one' is not an integer"),
        (["--algos", "grpo,grpo"], "lists an entry twice"),
        (["--algos", "grpo,nosuchalgo"], "unknown algorithm 'nosuchalgo'; registered algorithms:"),
        (["--algos", "grpo", "--jobs", "0"], "--jobs: must be >= 1"),
    ],
)
def test_bad_arguments_are_clear_errors(argv: list[str], message: str, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["compare", "--out", str(tmp_path), *argv]) == 2
    assert message in capsys.readouterr().err


def test_dry_run_prints_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["compare", "--dry-run", "--algos", "grpo,llds", "--out", str(tmp_path / "c"), "train.steps=2"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2 and "algorithm.name=llds" in lines[1] and lines[1].endswith("train.steps=2")
    assert not (tmp_path / "c").exists()


# A stand-in for `searchrl train` with the same argv contract, so compare's own logic (streaming, failure
# isolation, manifest, report) is tested with real processes in a second; the real trainer is tested below.
FAKE_TRAIN = r'''
import json, math, sys
args = dict(a.split("=", 1) for a in sys.argv[1:] if "=" in a)
algo, seed, run_dir = args["algorithm.name"], int(args["seed"]), args["run.dir"]
if algo == "sapo":
    print("error: simulated crash in the sapo variant", flush=True)
    sys.exit(3)
import pathlib
folder = pathlib.Path(run_dir); folder.mkdir(parents=True)
with open(folder / "metrics.jsonl", "w") as fh:
    for step in range(1, 4):
        row = {"step": step, "reward/mean": 0.1 * step + seed, "actor/is_ratio_mean": 1.0,
               "actor/clip_frac": 0.0, "actor/entropy": 1.0, "val/nq/em": 0.2 if step == 3 else float("nan")}
        fh.write(json.dumps(row) + "\n")
        print(f"step {step}/3 reward {row['reward/mean']:.2f} [bracketed text]", flush=True)
'''


def test_failed_variant_is_reported_and_the_others_still_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = tmp_path / "fake_train.py"
    fake.write_text(FAKE_TRAIN)
    real_plan = cli_compare.plan

    def plan_with_fake_trainer(*args, **kwargs):
        variants = real_plan(*args, **kwargs)
        for v in variants:
            assert v.command[:4] == [sys.executable, "-m", "searchrl.cli", "train"]
            v.command = [sys.executable, str(fake), *v.command[4:]]
        return variants

    monkeypatch.setattr(cli_compare, "plan", plan_with_fake_trainer)
    out = tmp_path / "cmp"
    code = cli_main(["compare", "--algos", "grpo,sapo,llds", "--out", str(out), "--jobs", "2", "train.steps=3"])
    assert code == 1  # one variant failed
    text = capsys.readouterr().out
    assert "[grpo-s0] step 3/3 reward 0.30 [bracketed text]" in text  # streamed with its prefix, markup-safe
    assert "[sapo-s0] error: simulated crash in the sapo variant" in text
    assert "sapo-s0 failed with exit status 3" in text
    manifest = json.loads((out / "compare.json").read_text())
    assert {v["name"]: v["returncode"] for v in manifest["variants"]} == {"grpo-s0": 0, "sapo-s0": 3, "llds-s0": 0}
    assert (out / "logs" / "sapo-s0.log").read_text().startswith("error: simulated crash")
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "grpo-s0" in page and "llds-s0" in page
    assert "variant sapo-s0 failed (exit status 3)" in page


HAVE_TRAINER = importlib.util.find_spec("searchrl.training.cli_train") is not None


@pytest.mark.skipif(not HAVE_TRAINER, reason="the trainer (searchrl.training.cli_train) is not written yet")
def test_compare_end_to_end_with_the_real_trainer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two algorithms, a tiny random model, two RL steps each: two run folders and a report."""
    from searchrl.models import build_tiny_random_model

    model = build_tiny_random_model(tmp_path / "tiny")
    out = tmp_path / "cmp"
    overrides = [  # the demo config, shrunk: no SFT warm start, 1×2 rollouts of one short turn, 4 val questions
        f"model.name={model}", "train.warm_start=null", "train.train_layers=null", "data.max_train_questions=8", "train.steps=2",
        "train.batch_size=1", "train.group_size=2", "train.mini_batch_size=2", "train.micro_batch_size=2",
        "rollout.max_turns=1", "rollout.max_turn_tokens=16", "val.every=0", "val.at_start=false",
        "val.untrained=false", "val.max_questions=4", "val.test_max_questions=4", "checkpoint.export_final=false", "log.tensorboard=false",
        "log.samples_every=0",
    ]
    code = cli_main(["compare", "--algos", "grpo,sapo", "--out", str(out), "--jobs", "1", *overrides])
    text = capsys.readouterr().out
    assert code == 0, text[-4000:]
    doc = (REPO / "docs" / "metrics.md").read_text(encoding="utf-8")
    for name in ("grpo-s0", "sapo-s0"):
        rows = [json.loads(line) for line in (out / name / "metrics.jsonl").read_text().splitlines()]
        assert [r["step"] for r in rows] == [1, 2]
        assert f"[{name}]" in text
        # Every key the trainer writes is in the documented schema (val/<dataset>/… by pattern).
        for key in rows[0]:
            generic = re.sub(r"^val/[^/]+/", "val/<dataset>/", key)
            generic = re.sub(r"^val/<dataset>/em/[^/]+$", "val/<dataset>/em/<type>", generic)
            generic = re.sub(r"^diag/(sapo|llds)_region/", "diag/<penalty>_region/", generic)  # one row for all
            documented = any(f"`{k}`" in doc for k in (key, generic)) or (
                generic.startswith("val/<dataset>/") and f"`…/{generic.rsplit('/', 1)[1]}`" in doc
            ) or re.search(rf"`diag/is_ratio_<stat>/{key.rsplit('/', 1)[-1]}`", doc) is not None
            assert documented, f"{key} (written by the trainer) is not documented in docs/metrics.md"
    config = (out / "grpo-s0" / "config.yaml").read_text()
    assert "seed: 0" in config and "name: grpo" in config
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "grpo-s0" in page and "sapo-s0" in page and page.count("data:image/png;base64,") >= 4
