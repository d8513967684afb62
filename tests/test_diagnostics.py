"""Diagnostics on hand-made tensors with hand-computed expected values."""

from __future__ import annotations

import math
import re

import pytest
import torch

from searchrl.algorithms import PolicyBatch, PPOClipParams, SAPOParams, ppo_clip, sapo
from searchrl.analysis.diagnostics import (
    all_diagnostic_keys,
    average_diagnostics,
    calibadv_diagnostics,
    log_ratio_drift,
    quantile,
    rollout_diagnostics,
    token_diagnostic_keys,
    token_diagnostics,
    turn_kind_from_mask,
)

TOKEN_DIAGNOSTIC_KEYS = token_diagnostic_keys()
ALL_DIAGNOSTIC_KEYS = all_diagnostic_keys()

LN2 = math.log(2.0)

# Row 0: a search turn (tokens 0-1), an observation (2-3), the answer turn (4-5).
# Row 1: a single turn (0-2) = the answer turn, then padding.
MASK = torch.tensor([[1, 1, 0, 0, 1, 1], [1, 1, 1, 0, 0, 0]])
# Importance ratios on sampled tokens; masked positions get an absurd ratio (e^10) that must be ignored.
RATIOS = torch.tensor([[1.0, 0.25, math.e**10, math.e**10, 2.0, 1.0], [0.5, 1.0, 4.0, math.e**10, math.e**10, math.e**10]])
# log π_old = 0 and float64 keep exp(log r) exact, so the r = 0.5 boundary below is tested exactly.
OLD = torch.zeros(2, 6, dtype=torch.float64)
NEW = OLD + torch.log(RATIOS.double())


def approx(x: float | torch.Tensor, rel: float = 1e-6) -> object:
    return pytest.approx(float(x), rel=rel, abs=1e-9)  # inputs are float32


def diagnostics(log_probs, old_log_probs, advantages, response_mask, *, entropy=None, clip=(0.2, 0.2),
                sapo_params: SAPOParams | None = SAPOParams()) -> dict:
    """token_diagnostics as the trainer calls it: where the terms acted comes from the terms the objective ran
    (the PPO surrogate with `clip`, and SAPO with `sapo_params` unless None)."""
    batch = PolicyBatch(log_probs, old_log_probs, advantages, response_mask)
    base = ppo_clip(batch, PPOClipParams(*clip))
    penalties = {"sapo": sapo(batch, sapo_params).acting} if sapo_params is not None else {}
    return token_diagnostics(log_probs=log_probs, old_log_probs=old_log_probs, advantages=advantages,
                             response_mask=response_mask, turn_kind=turn_kind_from_mask(response_mask),
                             entropy=entropy, base_acting=base.acting, penalty_acting=penalties)


def test_turn_kind_from_mask_labels_last_run_as_answer() -> None:
    kind = turn_kind_from_mask(MASK)
    assert kind.tolist() == [[1, 1, 0, 0, 2, 2], [2, 2, 2, 0, 0, 0]]
    three_turns = torch.tensor([[1, 0, 1, 1, 0, 1, 0]])
    assert turn_kind_from_mask(three_turns).tolist() == [[1, 0, 1, 1, 0, 2, 0]]
    assert turn_kind_from_mask(torch.zeros(1, 4, dtype=torch.long)).tolist() == [[0, 0, 0, 0]]


def test_quantile_matches_linear_interpolation() -> None:
    values = torch.tensor([4.0, 0.25, 1.0, 2.0, 1.0, 0.5, 1.0])
    # sorted: 0.25 0.5 1 1 1 2 4; h = q·6
    assert quantile(values, 0.01) == approx(0.25 + 0.06 * 0.25)
    assert quantile(values, 0.05) == approx(0.25 + 0.30 * 0.25)
    assert quantile(values, 0.5) == approx(1.0)
    assert quantile(values, 1.0) == approx(4.0)
    assert math.isnan(float(quantile(torch.tensor([]), 0.5)))
    with pytest.raises(ValueError):
        quantile(values, 1.5)


def test_log_ratio_drift_is_mu_plus_half_variance() -> None:
    x = torch.tensor([0.0, -2.0, 1.0, 0.0, -1.0, 0.0, 2.0]) * LN2  # mean 0, var 10/7·ln²2
    assert log_ratio_drift(x) == approx(5 / 7 * LN2**2)
    assert log_ratio_drift(torch.tensor([-0.3])) == approx(-0.3)  # one token: sigma^2 = 0
    assert math.isnan(float(log_ratio_drift(torch.tensor([]))))


def test_token_diagnostics_hand_computed() -> None:
    entropy = torch.tensor([[1.0, 2.0, 99.0, 99.0, 3.0, 4.0], [5.0, 6.0, 7.0, 99.0, 99.0, 99.0]])
    d = diagnostics(NEW, OLD, torch.tensor([1.0, -1.0]), MASK.double(), entropy=entropy.double())
    assert set(d) == set(TOKEN_DIAGNOSTIC_KEYS)
    # all sampled ratios: 1, 0.25, 2, 1 | 0.5, 1, 4   (sorted 0.25 0.5 1 1 1 2 4)
    assert d["diag/is_ratio_mean"] == approx(9.75 / 7)
    assert d["diag/is_ratio_min"] == approx(0.25)
    assert d["diag/is_ratio_p01"] == approx(0.265)
    assert d["diag/is_ratio_p05"] == approx(0.325)
    assert d["diag/is_ratio_lt_0.5"] == approx(1 / 7)  # 0.5 itself is not below 0.5
    # tokens with advantage >= 0 (row 0): 1, 0.25, 2, 1
    assert d["diag/is_ratio_mean/nonneg_adv"] == approx(4.25 / 4)
    assert d["diag/is_ratio_min/nonneg_adv"] == approx(0.25)
    assert d["diag/is_ratio_lt_0.5/nonneg_adv"] == approx(1 / 4)
    # search turn tokens: 1, 0.25
    assert d["diag/is_ratio_mean/search"] == approx(0.625)
    assert d["diag/is_ratio_min/search"] == approx(0.25)
    assert d["diag/is_ratio_p01/search"] == approx(0.25 + 0.01 * 0.75)
    assert d["diag/is_ratio_p05/search"] == approx(0.25 + 0.05 * 0.75)
    assert d["diag/is_ratio_lt_0.5/search"] == approx(0.5)
    # answer turn tokens: 2, 1, 0.5, 1, 4 (sorted 0.5 1 1 2 4)
    assert d["diag/is_ratio_mean/answer"] == approx(1.7)
    assert d["diag/is_ratio_min/answer"] == approx(0.5)
    assert d["diag/is_ratio_p01/answer"] == approx(0.52)
    assert d["diag/is_ratio_p05/answer"] == approx(0.6)
    assert d["diag/is_ratio_lt_0.5/answer"] == approx(0.0)
    # drift in units of ln2: all [0,-2,1,0,-1,0,2]; search [0,-2]; answer [1,0,-1,0,2]
    assert d["diag/log_ratio_drift"] == approx(5 / 7 * LN2**2, rel=1e-6)
    assert d["diag/log_ratio_drift/search"] == approx(-LN2 + 0.5 * LN2**2, rel=1e-6)
    assert d["diag/log_ratio_drift/answer"] == approx(0.4 * LN2 + 0.52 * LN2**2, rel=1e-6)
    # A=+1 on row 0: r=2 > 1.2 is clipped high; A=-1 on row 1: r=0.5 < 0.8 is clipped low.
    assert d["diag/clip_frac_high"] == approx(1 / 7)
    assert d["diag/clip_frac_low"] == approx(1 / 7)
    assert d["diag/clip_frac"] == approx(2 / 7)
    assert d["diag/entropy"] == approx(28 / 7)


def test_clip_fraction_equals_search_r1_pg_clipfrac() -> None:
    """Oracle: Search-R1's masked_mean(1[-A*clip(r) > -A*r]) on random data, asymmetric bounds included."""
    gen = torch.Generator().manual_seed(0)
    B, T = 6, 40
    old = -torch.rand(B, T, generator=gen) * 3
    new = old + torch.randn(B, T, generator=gen) * 0.4
    mask = (torch.rand(B, T, generator=gen) > 0.3).long()
    adv = torch.randn(B, T, generator=gen)
    for low, high in ((0.2, 0.2), (0.2, 0.28)):
        d = diagnostics(new, old, adv, mask.float(), clip=(low, high))
        ratio = torch.exp(new - old)
        clipped = torch.clamp(ratio, 1 - low, 1 + high)
        oracle = (((-adv * clipped) > (-adv * ratio)).float() * mask).sum() / mask.sum()
        assert d["diag/clip_frac"] == approx(oracle, rel=1e-6)


def test_token_advantages_per_token_and_empty_selections() -> None:
    # Per-token advantages: zeroing A on row 0's r=2 token removes the high clip.
    adv = torch.tensor([[1.0, 1.0, 0.0, 0.0, 0.0, 1.0], [-1.0, -1.0, -1.0, 0.0, 0.0, 0.0]])
    d = diagnostics(NEW, OLD, adv.double(), MASK.double())
    assert d["diag/clip_frac_high"] == approx(0.0)
    assert math.isnan(float(d["diag/entropy"]))  # no entropy given
    # Only answer turns: the /search selection is empty -> NaN, never an exception.
    single = torch.tensor([[1, 1, 1, 0]])
    d = diagnostics(torch.zeros(1, 4), torch.zeros(1, 4), torch.ones(1), single.float())
    assert math.isnan(float(d["diag/is_ratio_mean/search"])) and math.isnan(float(d["diag/log_ratio_drift/search"]))
    assert d["diag/is_ratio_mean/answer"] == approx(1.0)
    # Nothing sampled at all: every key present and NaN.
    empty = torch.zeros(2, 3, dtype=torch.long)
    d = diagnostics(torch.zeros(2, 3), torch.zeros(2, 3), torch.ones(2), empty.float(), entropy=torch.ones(2, 3))
    assert set(d) == set(TOKEN_DIAGNOSTIC_KEYS) and all(math.isnan(float(v)) for v in d.values())


def test_token_diagnostics_detach_and_shape_check() -> None:
    new = NEW.clone().requires_grad_(True)
    d = token_diagnostics(log_probs=new, old_log_probs=OLD, advantages=torch.ones(2), response_mask=MASK,
                          turn_kind=turn_kind_from_mask(MASK))
    assert not any(v.requires_grad for v in d.values())
    with pytest.raises(ValueError, match="shape"):
        token_diagnostics(log_probs=NEW[:, :5], old_log_probs=OLD, advantages=torch.ones(2), response_mask=MASK,
                          turn_kind=turn_kind_from_mask(MASK))


def test_rollout_diagnostics_hand_computed() -> None:
    # Row 0 search turn: p = 0.01 per token (perplexity 100, garbled); answer turn p = 0.5 (perplexity 2).
    # Row 1 single turn: p = 0.1 (perplexity 10). Masked positions hold junk that must be ignored.
    old = torch.tensor([
        [math.log(0.01), math.log(0.01), -50.0, -50.0, math.log(0.5), math.log(0.5)],
        [math.log(0.1)] * 3 + [-50.0] * 3,
    ])
    sampling = old + torch.tensor([[0.1, -0.1, 5.0, 5.0, 0.1, -0.1], [0.1, 0.1, -0.1, 5.0, 5.0, 5.0]])
    d = rollout_diagnostics(
        old_log_probs=old, response_mask=MASK, advantages=torch.tensor([1.0, -1.0]), rewards=[1.0, 0.0],
        format_valid=[True, False], num_searches=[1, 0], response_lengths=[6, 3],
        turn_kind=turn_kind_from_mask(MASK), group_ids=["q1", "q1"], sampling_log_probs=sampling,
    )
    assert d["diag/ll_pos"] == approx((2 * math.log(0.01) + 2 * math.log(0.5)) / 4)
    assert d["diag/ll_neg"] == approx(math.log(0.1))
    assert d["diag/ll_search"] == approx(math.log(0.01))
    assert d["diag/ll_answer"] == approx((2 * math.log(0.5) + 3 * math.log(0.1)) / 5)
    assert d["diag/garbled_rate"] == approx(1 / 3)  # 1 of 3 turns has perplexity >= 50
    assert d["diag/format_valid"] == approx(0.5)
    assert d["diag/searches_mean"] == approx(0.5)
    assert d["diag/response_length_mean"] == approx(4.5)
    assert d["diag/sampler_logprob_gap"] == approx(0.1, rel=1e-6)
    assert d["diag/zero_adv_group_share"] == approx(0.0)
    assert d["diag/group_all_correct_share"] == approx(0.0) and d["diag/group_all_wrong_share"] == approx(0.0)


def test_rollout_diagnostics_group_shares_and_missing_inputs() -> None:
    mask = torch.ones(4, 3, dtype=torch.long)
    kind = turn_kind_from_mask(mask)
    d = rollout_diagnostics(
        old_log_probs=torch.full((4, 3), -1.0), response_mask=mask, advantages=torch.tensor([0.0, 0.0, -0.7, 0.7]),
        rewards=[1.0, 1.0, 0.0, 0.5], format_valid=[1, 1, 1, 1], num_searches=[0, 1, 2, 3],
        response_lengths=[3, 3, 3, 3], turn_kind=kind, group_ids=["a", "a", "b", "b"],
    )
    assert d["diag/zero_adv_group_share"] == approx(0.5)
    assert d["diag/group_all_correct_share"] == approx(0.5)
    assert d["diag/group_all_wrong_share"] == approx(0.0)
    assert math.isnan(d["diag/ll_neg"]) is False and math.isnan(d["diag/sampler_logprob_gap"])
    d = rollout_diagnostics(
        old_log_probs=torch.full((4, 3), -1.0), response_mask=mask, advantages=torch.zeros(4),
        rewards=[0.0] * 4, format_valid=[0] * 4, num_searches=[0] * 4, response_lengths=[3] * 4, turn_kind=kind,
    )
    assert math.isnan(d["diag/ll_pos"]) and math.isnan(d["diag/ll_neg"])  # no A>0 nor A<0 trajectory
    assert math.isnan(d["diag/zero_adv_group_share"])  # no group ids
    with pytest.raises(ValueError, match="group_ids"):
        rollout_diagnostics(
            old_log_probs=torch.full((4, 3), -1.0), response_mask=mask, advantages=torch.zeros(4),
            rewards=[0.0] * 4, format_valid=[0] * 4, num_searches=[0] * 4, response_lengths=[3] * 4,
            turn_kind=kind, group_ids=["a"],
        )


def test_calibadv_diagnostics_hand_computed() -> None:
    kwargs = dict(
        advantages_seq=[-1.0, -0.5, 1.0, -0.2], group_ids=["a", "a", "b", "b"], rewards_f1=[0.2, 0.8, 0.9, 0.0],
        format_valid=[1, 0, 1, 1],
    )
    d = calibadv_diagnostics(turn_scores=[[0.0, 0.33], [1e-6, 0.0, 0.67], [0.5], []], **kwargs)
    # negative rows 0, 1, 3 have 2 + 3 + 0 search turns; relieved: 0.33 and 0.67 (1e-6 means "no score")
    assert d["diag/calibadv_soft_penalised_share"] == approx(2 / 5)
    # group a: the F1 0.8 rollout is format-invalid -> no silver set; group b has one (0.9, valid)
    assert d["diag/calibadv_empty_silver_share"] == approx(0.5)
    d = calibadv_diagnostics(turn_scores=None, **kwargs)
    assert math.isnan(d["diag/calibadv_soft_penalised_share"])
    assert d["diag/calibadv_empty_silver_share"] == approx(0.5)
    positive_only = dict(kwargs, advantages_seq=[1.0, 1.0, 1.0, 1.0])
    assert math.isnan(calibadv_diagnostics(turn_scores=[[0.5]] * 4, **positive_only)["diag/calibadv_soft_penalised_share"])
    with pytest.raises(ValueError, match="one entry per trajectory"):
        calibadv_diagnostics(turn_scores=None, **dict(kwargs, group_ids=["a"]))


def test_average_diagnostics_ignores_nan_and_takes_min_of_minima() -> None:
    parts = [
        {"diag/is_ratio_mean": torch.tensor(1.0), "diag/is_ratio_min": torch.tensor(0.5),
         "diag/is_ratio_min/search": torch.tensor(float("nan")), "diag/entropy": torch.tensor(float("nan"))},
        {"diag/is_ratio_mean": torch.tensor(0.5), "diag/is_ratio_min": torch.tensor(0.2),
         "diag/is_ratio_min/search": torch.tensor(0.3), "diag/entropy": torch.tensor(float("nan"))},
    ]
    out = average_diagnostics(parts)
    assert out["diag/is_ratio_mean"] == approx(0.75)
    assert out["diag/is_ratio_min"] == approx(0.2)
    assert out["diag/is_ratio_min/search"] == approx(0.3)
    assert math.isnan(out["diag/entropy"])


def test_documented_schema_lists_every_key() -> None:
    """docs/metrics.md is the schema: every key the diagnostics emit must be documented there."""
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "metrics.md").read_text(encoding="utf-8")
    from searchrl.algorithms import policy_loss_names

    penalty = re.compile(r"^diag/(" + "|".join(policy_loss_names("penalty")) + r")_")
    for key in ALL_DIAGNOSTIC_KEYS:
        stat = key.split("/")[1]
        generic = penalty.sub("diag/<penalty>_", key)  # per-penalty keys are documented once, for <penalty>
        documented = f"`{key}`" in doc or f"`{generic}`" in doc or (
            key.startswith("diag/is_ratio_") and key.count("/") == 2 and f"`diag/is_ratio_<stat>/{key.split('/')[2]}`" in doc
            and f"`diag/{stat}`" in doc
        )
        assert documented, f"{key} is not documented in docs/metrics.md"


def test_sapo_region_is_where_the_sapo_term_acted_by_turn_and_advantage_sign() -> None:
    # row 0 (A > 0): search r = 1, 0.25 (both r <= 1), answer r = 2 (not), 1; row 1 (A = 0): answer r = 0.5, 1, 4
    d = diagnostics(NEW, OLD, torch.tensor([1.0, 0.0], dtype=torch.float64), MASK.double())
    assert d["diag/sapo_region/search_pos"] == approx(2 / 7)
    assert d["diag/sapo_region/answer_pos"] == approx(1 / 7)
    assert d["diag/sapo_region/answer_zero"] == approx(2 / 7)
    assert d["diag/sapo_region/search_zero"] == approx(0.0)
    # a negative row is outside the region altogether
    d = diagnostics(NEW, OLD, torch.tensor([1.0, -1.0], dtype=torch.float64), MASK.double())
    assert d["diag/sapo_region/answer_zero"] == approx(0.0) and d["diag/sapo_region/answer_pos"] == approx(1 / 7)
    # The region is read from the term, with the run's parameters: τ = 2 takes row 0's answer token at r = 2 in,
    # the paper's A > 0 (strict_positive) leaves the A = 0 row out; re-deriving it with τ = 1, A >= 0 would not.
    adv = torch.tensor([1.0, 0.0], dtype=torch.float64)
    assert diagnostics(NEW, OLD, adv, MASK.double(), sapo_params=SAPOParams(tau=2.0))["diag/sapo_region/answer_pos"] == approx(2 / 7)
    strict = diagnostics(NEW, OLD, adv, MASK.double(), sapo_params=SAPOParams(strict_positive=True))
    assert strict["diag/sapo_region/answer_zero"] == approx(0.0) and strict["diag/sapo_region/answer_pos"] == approx(1 / 7)
    # Without SAPO in the objective the region is not applicable: NaN, the key still there.
    assert math.isnan(float(diagnostics(NEW, OLD, adv, MASK.double(), sapo_params=None)["diag/sapo_region/answer_pos"]))


def test_isdd_is_the_share_of_nonnegative_advantage_tokens_whose_ratio_fell_below_0_8() -> None:
    # A >= 0 tokens: row 0's 1, 0.25, 2, 1 (A = +1); row 1 (A = -1) is not counted. Below 0.8: only 0.25.
    d = diagnostics(NEW, OLD, torch.tensor([1.0, -1.0], dtype=torch.float64), MASK.double())
    assert d["diag/isdd_share"] == approx(1 / 4) and d["diag/isdd_ratio_mean"] == approx(0.25)
    d = diagnostics(NEW, OLD, torch.tensor([1.0, 0.0], dtype=torch.float64), MASK.double())  # row 1 joins: 0.5
    assert d["diag/isdd_share"] == approx(2 / 7) and d["diag/isdd_ratio_mean"] == approx(0.375)