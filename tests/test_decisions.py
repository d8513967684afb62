"""The search-again decision analysis (`searchrl decisions`): points, teacher-forced log-odds, summaries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from conftest import assert_same_math

from searchrl.analysis.decisions import (
    ANSWER_TAG,
    SEARCH_TAG,
    DecisionPoint,
    compare_summaries,
    decision_log_odds,
    decision_points,
    summarise_decisions,
)

OBS = "\n\n<information>Doc 1(Title: \"X\") X was born in Y.</information>\n\n"
TEXT = f"<search>X</search>{OBS}<search>Y</search>{OBS}<answer>Z</answer>"


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    from searchrl.models import build_tiny_random_model

    return build_tiny_random_model(tmp_path_factory.getbasetemp() / "searchrl_tiny_model")


def record(uid: str = "q1", hops: int | None = 2, text: str = TEXT, kind: str = "bridge") -> dict:
    return {"uid": uid, "question": "Where?", "type": kind, "dataset": "world", "hops": hops, "text": text}


def test_a_point_follows_each_observation_that_still_allows_a_search():
    prompts = {"q1": "Question: Where?\n"}
    two = decision_points([record()], prompts, max_turns=2)
    # After the second search the engine allows no third: only the point after the first observation.
    assert [(p.searches, p.needs_search) for p in two] == [(1, True)]
    assert two[0].context == prompts["q1"] + f"<search>X</search>{OBS}"
    four = decision_points([record()], prompts, max_turns=4)
    assert [(p.searches, p.needs_search) for p in four] == [(1, True), (2, False)]
    assert four[1].context == prompts["q1"] + TEXT[: TEXT.rindex("<answer>")]
    unknown = decision_points([record(hops=None, kind=None)], prompts, max_turns=4)
    assert [p.needs_search for p in unknown] == [None, None] and unknown[0].group == "world"
    assert decision_points([record(text="<answer>Z</answer>")], prompts, max_turns=4) == []


def test_log_odds_match_an_unbatched_forward_of_each_full_sequence(tiny_model, float64_norms):
    from searchrl.models import load_policy

    torch.set_num_threads(1)
    # float64: batched (padded, mixed lengths) and unbatched forwards are the same math summed in other orders
    model, tok = load_policy(tiny_model, dtype=torch.float64)
    contexts = ["Question: a?\n<search>a</search>" + OBS, "Q: a much longer question, with more words?\n"
                "<search>b</search>" + OBS, "short"]
    got = decision_log_odds(model, tok, contexts, batch_size=4)  # 6 sequences: the batches mix lengths

    def seq_logprob(context: str, tag: str) -> float:
        ctx = tok(context)["input_ids"]
        ids = ctx + tok(tag, add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            lp = torch.log_softmax(model(torch.tensor([ids])).logits[0], -1)
        return float(sum(lp[i - 1, ids[i]] for i in range(len(ctx), len(ids))))

    want = [seq_logprob(c, SEARCH_TAG) - seq_logprob(c, ANSWER_TAG) for c in contexts]
    assert got.shape == (3,)
    assert_same_math(got, torch.tensor(want, dtype=torch.float64))


def points(needs: list[bool], group: str = "g") -> list[DecisionPoint]:
    return [DecisionPoint(f"q{i}", group, 1, n, "") for i, n in enumerate(needs)]


def test_summary_counts_right_decisions_auc_and_the_best_shared_shift():
    s = summarise_decisions(points([True, True, False, False]), [1.0, -0.5, 0.2, -1.0])
    a = s["all"]
    assert a["correct"] == 2 and a["labelled"] == 4 and a["search_share"] == 0.5
    assert a["auc"] == 0.75  # 3 of the 4 (needs, does not) pairs are ordered right
    # No shift separates -0.5 (needs) from 0.2 (does not); the best one leaves one wrong, the smallest |δ| wins.
    assert a["best_shift_correct"] == 3 and -1.0 < a["best_shift"] < -0.2
    assert s["groups"]["g"]["mean_log_odds"] == pytest.approx(-0.075)
    perfect = summarise_decisions(points([True, False]), [-2.0, -3.0])["all"]
    assert perfect["correct"] == 1 and perfect["auc"] == 1.0 and perfect["best_shift_correct"] == 2
    unlabelled = summarise_decisions([DecisionPoint("q", "g", 1, None, "")], [0.3])["all"]
    assert "auc" not in unlabelled and unlabelled["search_share"] == 1.0
    with pytest.raises(ValueError, match="2 decision points but 1"):
        summarise_decisions(points([True, False]), [0.0])


def test_a_constant_shift_shows_as_a_shared_shift_with_no_change_in_auc():
    pts = points([True, False, True], "a") + points([False, True], "b")
    x = [0.5, -0.2, 1.0, 0.1, 0.3]
    before = summarise_decisions(pts, x)
    after = summarise_decisions(pts, [v + 0.7 for v in x])
    change = compare_summaries(before, after)
    assert change["shared_shift"] == pytest.approx(0.7)
    assert change["group_shift"] == pytest.approx({"a": 0.7, "b": 0.7})
    assert change["auc_change"] == pytest.approx(0.0)


def test_cli_scores_every_model_on_the_first_ones_trajectories(tiny_model, tmp_path, monkeypatch):
    """The command end to end on the tiny model; its random trajectories never search, so the evaluation's
    records are replaced by fixed ones (everything after them — scoring, tables, files — is the real path)."""
    import searchrl.evaluation.harness as harness
    from searchrl.cli import main as cli_main
    from searchrl.evaluation.harness import EvalReport

    recs = [record("q1"), record("q2", hops=1, kind="single-hop")]

    def fake_evaluate(*args, **kwargs):
        return EvalReport(datasets={}, macro={}, settings={}, timing={}, records=recs)

    monkeypatch.setattr(harness, "evaluate", fake_evaluate)
    # A checkpoint folder of a run: scored with the weights it holds, on the model its config names.
    from safetensors.torch import save_file

    from searchrl.models import load_policy

    model, _ = load_policy(tiny_model)
    state = {k: v.clone() for k, v in model.state_dict().items() if not k.endswith("lm_head.weight")}
    state["model.norm.weight"] = state["model.norm.weight"] * 3.0
    ckpt = tmp_path / "run" / "checkpoints" / "step_000002"
    ckpt.mkdir(parents=True)
    save_file(state, str(ckpt / "weights.safetensors"))
    (ckpt / "state.json").write_text("{}")
    (tmp_path / "run" / "config.yaml").write_text(f"model:\n  name: {tiny_model}\n")
    out = tmp_path / "dec"
    code = cli_main(["decisions", "--model", str(tiny_model), "--model", str(tiny_model), "--model", str(ckpt),
                     f"model.name={tiny_model}", "rollout.max_turns=2", "--out", str(out), "--device", "cpu"])
    assert code == 0
    data = json.loads((out / "decisions.json").read_text())
    first, same, other = data["results"]
    assert [p["needs_search"] for p in first["points"]] == [True, False]
    assert [p["group"] for p in first["points"]] == ["bridge", "single-hop"]
    # Exactly: the same model scored on the same batches with the same kernels, twice in one process
    assert same["points"] == first["points"] and same["change"]["shared_shift"] == 0.0
    assert other["points"] != first["points"]  # the checkpoint's weights were used
    assert (out / "decisions.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_errors_name_the_problem(tiny_model, tmp_path, capsys):
    from searchrl.cli import main as cli_main

    # The tiny random model never closes a <search>, so it reaches no decision point.
    assert cli_main(["decisions", "--model", str(tiny_model), f"model.name={tiny_model}", "--limit", "2",
                     "rollout.max_turn_tokens=4", "rollout.max_turns=2"]) == 2
    assert "reached no decision point" in capsys.readouterr().err
    ckpt = tmp_path / "run" / "checkpoints" / "step_000001"
    ckpt.mkdir(parents=True)
    (ckpt / "state.json").write_text("{}")
    (ckpt / "weights.safetensors").write_bytes(b"")
    assert cli_main(["decisions", "--model", str(ckpt)]) == 2
    assert "neither final_model/ nor a config.yaml" in capsys.readouterr().err
