"""benchmarks/eval_floor.py, the least time a run's evaluations can take on this CPU: on a tiny model's run folder
it re-runs the five evaluations, counts their tokens, prices them as Linear products, and the floor it reports is
at most what they took; a folder without the run's files is a clear error."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from eval_floor import main  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_thread")  # conftest.py


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> Path:
    """A finished run's folder as the floor reads it: config.yaml (the demo's, on the tiny model), the two exported
    models and summary.json."""
    from searchrl.models import build_tiny_random_model
    from searchrl.training.config import load_config, save_config

    model = build_tiny_random_model(tmp_path_factory.getbasetemp() / "searchrl_tiny_model")
    run = tmp_path_factory.mktemp("run")
    save_config(load_config("demo", [f"model.name={model}"]), run / "config.yaml")
    for name in ("start_model", "final_model"):
        shutil.copytree(model, run / name)
    (run / "summary.json").write_text(json.dumps({"time": {"evaluations_s": 12.5}}))
    return run


def test_counts_and_prices_the_five_evaluations(tiny_run, tmp_path, capsys):
    out = tmp_path / "floor.json"
    assert main([str(tiny_run), "--threads", "1", "--limit", "3", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    rows = result["evaluations"]
    assert [(r["evaluation"], r["split"]) for r in rows] == [
        ("untrained", "test"), ("start", "test"), ("start", "dev"), ("final", "test"), ("final", "dev")]
    body, head = result["linear_params"]["blocks"], result["linear_params"]["head"]
    c = json.loads((tiny_run / "final_model" / "config.json").read_text())
    h, kv = c["hidden_size"], c["num_key_value_heads"] * c["hidden_size"] // c["num_attention_heads"]
    assert head == h * c["vocab_size"]  # the output head: hidden -> vocabulary
    assert body == c["num_hidden_layers"] * (2 * h * h + 2 * h * kv + 3 * h * c["intermediate_size"])  # q o, k v, MLP
    rate = result["product_gflops"]
    for r in rows:
        assert r["questions"] == 3
        # Every question's prompt is encoded and every turn generates at least one token.
        assert r["encoded_tokens"] > 3 * 10 and r["generated_tokens"] >= 3
        assert r["linear_gflop"] == pytest.approx(2e-9 * (body * r["encoded_tokens"] + head * r["generated_tokens"]))
        expected = 2e-9 * (body * r["encoded_tokens"] / rate["blocks_4096_rows"]
                           + head * r["generated_tokens"] / rate["head_256_rows"])
        assert r["floor_s"] == pytest.approx(expected)
        assert 0 < r["floor_s"] <= r["seconds"]  # a lower bound of what it took
    assert result["run_evaluations_s"] == 12.5
    printed = capsys.readouterr().out
    assert "a third of the 16-minute budget: 320 s" in printed


def test_a_folder_without_the_runs_files_is_a_clear_error(tmp_path, capsys):
    (tmp_path / "config.yaml").write_text("seed: 0\n")
    assert main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "missing: start_model, final_model, summary.json" in err
    assert "checkpoint.export_final=true" in err


def test_a_config_that_does_not_load_is_a_clear_error(tiny_run, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(tiny_run, run)
    (run / "config.yaml").write_text("train:\n  stepz: 3\n")
    assert main([str(run)]) == 2
    err = capsys.readouterr().err
    assert str(run) in err and "stepz" in err
