"""benchmarks/demo_pairs.py, which tables the demo's RL steps and gains for two codes: on the committed EPYC pairs
it recomputes what docs/demo.md reports from the same files, and a folder without its files is a clear error."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from demo_pairs import main  # noqa: E402

RUNS = ROOT / "results" / "demo" / "epyc-avx512-speedups"


def test_recomputes_the_committed_epyc_pairs(tmp_path, capsys):
    out = tmp_path / "pairs.json"
    a = [str(RUNS / f"seed{s}") for s in range(3)]
    b = [str(RUNS / f"seed{s}-0484c94") for s in range(3)]
    assert main(["--a", *a, "--b", *b, "--labels", "current,0484c94", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["rl_steps"] == [78, 48]  # 27 + 23 + 28 against 16 + 17 + 15
    assert [p["steps"] for p in result["pairs"]] == [[27, 16], [23, 17], [28, 15]]
    assert [round(r["gain"]["em_gain"], 3) for r in result["a"]] == [0.178, 0.336, 0.352]
    # Final EM, current minus 0484c94, paired over the same 500 questions per seed (docs/demo.md: +0.034, +0.014,
    # +0.042), and its mean over seeds (+0.030).
    assert [round(p["final_em_difference"]["mean"], 3) for p in result["pairs"]] == [0.034, 0.014, 0.042]
    assert all(p["final_em_difference"]["n"] == 500 for p in result["pairs"])
    over = result["final_em_difference_over_seeds"]
    assert over["mean"] == pytest.approx(0.030, abs=5e-4)
    assert over["seeds_t"][0] < over["mean"] < over["seeds_t"][1]
    gain = result["gain_over_seeds"]["current"]
    assert gain["mean"] == pytest.approx((0.178 + 0.336 + 0.352) / 3, abs=1e-3)
    assert gain["seeds_t"][0] == pytest.approx(0.050, abs=1e-3) and gain["seeds_t"][1] == pytest.approx(0.528, abs=1e-3)
    assert "RL steps over the seeds: 78 / 48 = 1.625x" in capsys.readouterr().out


def test_a_folder_without_its_run_files_names_what_is_missing(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(RUNS / "seed0", run)
    (run / "evals.json").unlink()
    with pytest.raises(SystemExit, match=r"lacks evals\.json"):
        main(["--a", str(run), "--b", str(RUNS / "seed0-0484c94")])


def test_unequal_sides_are_refused(capsys):
    with pytest.raises(SystemExit):
        main(["--a", str(RUNS / "seed0"), "--b", str(RUNS / "seed0-0484c94"), str(RUNS / "seed1-0484c94")])
    assert "one per seed" in capsys.readouterr().err
