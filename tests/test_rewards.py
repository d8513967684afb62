"""Rewards: Search-R1 normalisation, EM, F1 (SAPO), cover-EM, answer extraction, format automaton, v0.3 table."""

from __future__ import annotations

import pytest

from searchrl.data import Question
from searchrl.errors import ConfigError
from searchrl.protocol import INVALID_ACTION_MESSAGE
from searchrl.rewards import (
    RewardConfig,
    _search_r1_normalize,
    answer_in_retrieval,
    cover_em,
    exact_match,
    extract_answer,
    f1,
    format_valid,
    normalize_answer,
    score_trajectories,
    score_trajectory,
    shaped_reward,
)
from searchrl.rollout.types import Trajectory, Turn

OBS = "\n\n<information>Doc 1(Title: Paris) Paris is the capital of France.</information>\n\n"


def test_normalisation_order():
    assert normalize_answer("The  Eiffel-Tower!") == "eiffeltower"
    assert normalize_answer("A Tale of Two Cities") == "tale of two cities"
    # Punctuation goes before articles are removed: "the-end" → "theend" keeps its letters.
    assert normalize_answer("the-end") == "theend"
    assert normalize_answer("  An   apple ") == "apple"


def test_exact_match_and_cover_em():
    assert exact_match("the Beatles", ["Beatles", "x"]) == 1.0
    assert exact_match("Beatles band", ["Beatles"]) == 0.0
    assert exact_match("Paris", "paris.") == 1.0
    assert cover_em("the band was The Beatles", ["beatles"]) == 1.0
    assert cover_em("Lennon", ["beatles"]) == 0.0


def test_f1_hand_computed():
    # pred tokens {barack, obama}, gold {obama}: P = 1/2, R = 1, F1 = 2/3.
    assert f1("Barack Obama", ["Obama"]) == pytest.approx(2 / 3)
    assert f1("Barack Obama", ["Michelle", "barack obama"]) == pytest.approx(1.0)
    assert f1("Paris", ["London"]) == 0.0
    # SAPO / FlashRAG yes-no rule: "no" never gets partial credit against something else.
    assert f1("no", ["no way"]) == 0.0
    assert f1("yes", ["yes"]) == 1.0
    # Repeated tokens count as a multiset: pred "a b b", gold "b b c" → common 2, P = R = 2/3.
    assert f1("x y y", ["y y z"]) == pytest.approx(2 / 3)


def test_extract_answer_takes_the_last_answer_of_the_response():
    assert extract_answer("<answer> Paris </answer> then <answer>Lyon</answer>") == "Lyon"
    assert extract_answer("<answer>multi\nline</answer>") == "multi\nline"
    assert extract_answer("no answer here") is None
    assert extract_answer("<answer>unclosed") is None


@pytest.mark.parametrize(
    ("text", "prefix", "valid"),
    [
        ("<answer>Paris</answer>", "", True),
        ("<think>x</think><answer>Paris</answer>", "", True),
        ("<think>a</think><search>q</search>" + OBS + "<think>b</think><answer>Paris</answer>", "", True),
        ("<search>q</search>" + OBS + "<search>q2</search>" + OBS + "<answer>P</answer>\n", "", True),
        ("q</search>" + OBS + "<answer>Paris</answer>", "<search>", True),  # prefix put back in front
        ("q</search>" + OBS + "<answer>Paris</answer>", "", False),
        ("<search>q</search>" + OBS, "", False),  # no answer
        ("Paris", "", False),
        ("The answer: <answer>Paris</answer>", "", False),  # text outside tags
        ("<answer>Paris</answer> trailing", "", False),
        ("<think>x</think><information>fake</information><answer>P</answer>", "", False),  # model-written info
        ("<search>q</search>" + OBS + "<information>fake</information><answer>P</answer>", "", False),
        ("<think><search>q</search></think><answer>P</answer>", "", False),  # nested
        ("<think>x<answer>P</answer>", "", False),  # unclosed think
        ("blah" + INVALID_ACTION_MESSAGE + "<answer>P</answer>", "", False),
        ("<answer>a</answer><answer>b</answer>", "", False),
    ],
)
def test_format_valid(text, prefix, valid):
    assert format_valid(text, prefix) is valid


def test_answer_in_retrieval():
    assert answer_in_retrieval(['"Paris"\nThe city of PARIS.'], ["paris"])
    assert not answer_in_retrieval(["Lyon"], ["Paris"])
    assert not answer_in_retrieval(["anything"], [""])  # an empty gold never matches everything


def _traj(turn_texts, observations, answer, golds=("Paris",), docs=(), prefix=""):
    turns = [Turn(text=t, think="", action="answer" if "<answer>" in t else "search") for t in turn_texts]
    if docs:
        turns[0].query = "q"
        turns[0].docs = list(docs)
    return Trajectory(
        question=Question("1", "capital of france", list(golds), "nq"),
        group_id="nq:1",
        prompt_ids=[1],
        response_ids=[],
        response_mask=[],
        sampling_logprobs=[],
        turns=turns,
        answer=answer,
        num_searches=len(docs) > 0,
        finish_reason="answer",
        extras={"assistant_prefix": prefix, "observations": list(observations)},
    )


def test_search_r1_v03_table_for_em():
    cfg = RewardConfig.search_r1_v03()
    assert (cfg.format_score, cfg.final_format_score, cfg.retrieval_score) == (0.2, 0.1, 0.0)
    cases = [
        # (turns, observations, answer, expected)
        (["<search>q</search>", "<answer>Paris</answer>"], [OBS, ""], "Paris", 1.0),  # correct, valid
        (["Paris <answer>Paris</answer>"], [""], "Paris", 0.8),  # correct, invalid
        (["<search>q</search>", "<answer>Lyon</answer>"], [OBS, ""], "Lyon", 0.2),  # wrong, valid
        (["so <answer>Lyon</answer>"], [""], "Lyon", 0.1),  # wrong, invalid
        (["<search>q</search>"], [OBS], None, 0.0),  # no answer, invalid
    ]
    for turns, obs, answer, expected in cases:
        assert score_trajectory(_traj(turns, obs, answer), cfg) == pytest.approx(expected), turns


def test_retrieval_bonus_and_f1_interpolation():
    cfg = RewardConfig(metric="em", format_score=0.2, final_format_score=0.1, retrieval_score=0.1)
    traj = _traj(["<search>q</search>", "<answer>Lyon</answer>"], [OBS, ""], "Lyon", docs=['"Paris"\nParis'])
    assert score_trajectory(traj, cfg) == pytest.approx(0.3)
    assert traj.extras["answer_in_retrieval"] is True
    # F1 interpolates between the wrong and the right score: valid, F1 = 2/3 → 0.2 + 0.8·2/3.
    cfg_f1 = RewardConfig.search_r1_v03(metric="f1")
    traj = _traj(["<answer>Barack Obama</answer>"], [""], "Barack Obama", golds=("Obama",))
    assert score_trajectory(traj, cfg_f1) == pytest.approx(0.2 + 0.8 * 2 / 3)
    assert shaped_reward(0.5, True, False, False, cfg_f1) == pytest.approx(0.1 + 0.7 * 0.5)


def test_plain_metric_by_default_and_extras():
    traj = _traj(["I say <answer>the Paris</answer>"], [""], "the Paris")
    assert score_trajectory(traj, RewardConfig()) == 1.0  # format is not scored by default
    assert traj.reward == 1.0
    assert traj.extras["em"] == 1.0 and traj.extras["f1"] == 1.0 and traj.extras["cover_em"] == 1.0
    assert traj.extras["format_valid"] is False
    none = _traj(["<search>q</search>"], [OBS], None)
    assert score_trajectory(none, RewardConfig()) == 0.0 and none.extras["em"] == 0.0


def test_model_written_information_is_invalid_even_where_the_automaton_would_accept_it():
    # The model wrote an <information> block right after its own </search> in one turn: the text alone looks
    # legal, but the turn text shows the model wrote it.
    traj = _traj(["<search>q</search><information>x</information>", "<answer>Paris</answer>"], ["", ""], "Paris")
    score_trajectory(traj, RewardConfig.search_r1_v03())
    assert traj.extras["format_valid"] is False
    assert traj.reward == pytest.approx(0.8)


def test_answer_tag_spam_scores_zero():
    spam = "<answer>" * 11 + "<answer>Paris</answer>"
    traj = _traj([spam], [""], "Paris")
    assert score_trajectory(traj, RewardConfig()) == 0.0
    assert traj.extras["answer_tags"] == 12 and traj.extras["em"] == 1.0


def test_prefix_counts_for_format():
    traj = _traj(["q</search>", "<answer>Paris</answer>"], [OBS, ""], "Paris", prefix="<search>")
    score_trajectory(traj, RewardConfig.search_r1_v03())
    assert traj.extras["format_valid"] is True and traj.reward == 1.0


def test_score_trajectories_and_config_errors():
    trajs = [_traj(["<answer>Paris</answer>"], [""], "Paris"), _traj(["<answer>x</answer>"], [""], "x")]
    assert score_trajectories(trajs, RewardConfig()) == [1.0, 0.0]
    with pytest.raises(ConfigError, match="reward.metric"):
        RewardConfig(metric="acc")
    with pytest.raises(ConfigError, match="reward.format_score"):
        RewardConfig(format_score=1.5)
    with pytest.raises(ConfigError, match="reward.fromat_score: unknown key"):
        RewardConfig.from_dict({"fromat_score": 0.2})
    assert RewardConfig.from_dict({"preset": "search_r1_v03", "metric": "f1"}) == RewardConfig.search_r1_v03("f1")


def test_unicode_forms_of_one_answer_match() -> None:
    import unicodedata

    composed = "Müller, São Paulo and Ærøskøbing"
    decomposed = unicodedata.normalize("NFD", composed)
    assert decomposed != composed and _search_r1_normalize(decomposed) != _search_r1_normalize(composed)
    assert exact_match(composed, [decomposed]) == 1.0 and exact_match(decomposed, composed) == 1.0
    assert f1(composed, [decomposed]) == 1.0
    # compatibility forms: full-width letters and punctuation, a ligature, a non-breaking space
    assert exact_match("ＴＨＥ Ｂｅａｔｌｅｓ！", ["the beatles"]) == 1.0
    assert exact_match("ﬁnland\u00a0city", ["finland city"]) == 1.0


def test_unicode_normalisation_only_adds_matches_to_search_r1s() -> None:
    """Answers Search-R1's normaliser matches still match: the edits it ignores (case, ASCII punctuation, articles,
    spacing) applied to random text around combining marks and compatibility characters never break a match."""
    import random

    rng = random.Random(0)
    alphabet = ["a", "e", "o", "n", "x", "\u0301", "\u0308", "\u00e9", "\uff41", "\ufb01", "\u00bd", "-", ".", " "]
    ignored = [".", ",", "!", "-", "'", " the ", " a ", "  ", "\t"]
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))
        edited = list(text)
        for _ in range(rng.randint(1, 3)):
            edited.insert(rng.randint(0, len(edited)), rng.choice(ignored))
        other = "".join(edited)
        other = other.upper() if rng.random() < 0.3 else other
        if _search_r1_normalize(text) == _search_r1_normalize(other):
            assert normalize_answer(text) == normalize_answer(other), (text, other)
