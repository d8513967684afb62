"""Registries, the algorithm table, build_objective validation, Objective.loss, and property tests."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from searchrl.algorithms import (
    AGGREGATION_MODES,
    BASE_METRIC_KEYS,
    AdvantageBatch,
    PolicyBatch,
    Term,
    UnknownNameError,
    aggregate,
    algorithm_names,
    LLDSParams,
    PPOClipParams,
    SAPOParams,
    build_objective,
    default_algorithm_config,
    get_advantage_estimator,
    get_policy_loss,
    kl_penalty,
    llds,
    log_ratio,
    metric_keys,
    policy_loss_names,
    ppo_clip,
    register_advantage_estimator,
    register_algorithm,
    register_policy_loss,
    sapo,
    turn_ids,
    unregister,
)
from searchrl.settings import check, setting

torch.set_num_threads(2)
ALGORITHMS = ["calibadv", "calibadv_sapo", "dapo", "dr_grpo", "grpo", "gspo", "llds", "sapo", "sapo_strict"]


def value(term: Term, mode: str = "token-mean") -> torch.Tensor:
    """A term's scalar as Objective.reduce computes it: its own aggregation mode, else ``mode``."""
    return aggregate(term.per_token, term.mask, term.agg_mode or mode)


def ppo_clip_loss(lp, old, adv, mask):
    term = ppo_clip(PolicyBatch(lp, old, adv, mask), PPOClipParams())
    return value(term), term.metrics


def sapo_penalty(lp, old, adv, mask, **knobs):
    return value(sapo(PolicyBatch(lp, old, adv, mask), SAPOParams(**knobs)))


def llds_penalty(lp, old, adv, mask, *, answer_mask=None, **knobs):
    return value(llds(PolicyBatch(lp, old, adv, mask, answer_mask=answer_mask), LLDSParams(**knobs)))


def _batch(seed: int = 0, rows: int = 6, width: int = 12, drift: float = 0.3, **extra: torch.Tensor) -> PolicyBatch:
    gen = torch.Generator().manual_seed(seed)
    mask = (torch.rand(rows, width, generator=gen) > 0.3).long()
    mask[:, 0] = 1
    old = -torch.rand(rows, width, generator=gen, dtype=torch.float64) * 3
    lp = (old + drift * torch.randn(rows, width, generator=gen, dtype=torch.float64)).requires_grad_()
    adv = torch.randn(rows, generator=gen, dtype=torch.float64)
    ref = old + 0.1 * torch.randn(rows, width, generator=gen, dtype=torch.float64)
    entropy = torch.rand(rows, width, generator=gen, dtype=torch.float64).requires_grad_()
    fields = {"ref_log_probs": ref, "entropy": entropy, **extra}
    return PolicyBatch(lp, old, adv, mask, **fields)


# ------------------------------------------------------------------------------------------- table


def test_algorithm_table_names_and_defaults() -> None:
    assert algorithm_names() == ALGORITHMS
    sapo = default_algorithm_config("sapo")
    assert sapo["penalties"] == ["sapo"] and sapo["sapo"]["gamma"] == 0.1 and sapo["sapo"]["tau"] == 1.0
    assert sapo["ppo_clip"] == {"clip_low": 0.2, "clip_high": 0.2}
    assert sapo["kl_coef"] == 0.001 and sapo["kl_type"] == "low_var_kl" and sapo["entropy_coef"] == 0.001
    assert sapo["sapo"]["strict_positive"] is False  # the official code's A >= 0
    assert default_algorithm_config("sapo_strict")["sapo"]["strict_positive"] is True  # the paper's A > 0
    llds = default_algorithm_config("llds")
    assert llds["llds"]["lam"] == 0.2 and llds["llds"]["gate"] == "action"
    assert default_algorithm_config("dapo")["ppo_clip"] == {"clip_low": 0.2, "clip_high": 0.28}
    dr = default_algorithm_config("dr_grpo")
    assert dr["advantage_estimator"] == "dr_grpo" and dr["loss_agg_mode"] == "seq-mean-token-sum-norm"
    gspo = default_algorithm_config("gspo")
    assert gspo["policy_loss"] == "gspo" and gspo["gspo"] == {"clip_low": 3e-4, "clip_high": 4e-4}
    calib = default_algorithm_config("calibadv")
    assert calib["kl_coef"] == 0.0 and calib["entropy_coef"] == 0.0 and calib["calibadv"]["rebalance_ratio"] == 1.0


@pytest.mark.parametrize("name", ALGORITHMS)
def test_resolved_config_round_trips(name: str) -> None:
    objective = build_objective({"name": name})
    again = build_objective(objective.resolved)
    assert again.resolved == objective.resolved
    assert objective.resolved is not objective.resolved  # a fresh copy each time


def test_needs_flags() -> None:
    assert build_objective({"name": "grpo"}).needs_ref
    assert not build_objective({"name": "calibadv"}).needs_ref
    assert build_objective({"name": "calibadv"}).needs_turn_scores
    assert not build_objective({"name": "sapo"}).needs_turn_scores
    assert build_objective({"name": "grpo"}).needs_entropy
    assert not build_objective({"name": "grpo", "entropy_coef": 0}).needs_entropy
    assert not build_objective({"name": "llds"}).needs_answer_mask
    assert build_objective({"name": "llds", "llds": {"answer_weight": 0.5}}).needs_answer_mask


# ------------------------------------------------------------------------------------------- validation


def _error(cfg: dict) -> str:
    with pytest.raises(ValueError) as err:
        build_objective(cfg)
    return str(err.value)


def test_build_objective_errors_name_the_dotted_key() -> None:
    msg = _error({"name": "sapo", "sapo": {"gamma": -0.1}})
    assert "algorithm.sapo.gamma" in msg and ">= 0" in msg
    msg = _error({"name": "sapo", "sapo": {"gama": 0.1}})
    assert "algorithm.sapo.gama" in msg and "gamma" in msg and "tau" in msg
    msg = _error({"name": "llds", "llds": {"gate": "turn"}})
    assert "algorithm.llds.gate" in msg and all(g in msg for g in ("action", "response", "token"))
    msg = _error({"name": "grpo", "klcoef": 0.1})
    assert "algorithm.klcoef" in msg and "kl_coef" in msg and "sapo" in msg
    msg = _error({"name": "ppo"})
    assert "algorithm.name" in msg and all(n in msg for n in ALGORITHMS)
    assert "algorithm.name" in _error({})
    msg = _error({"name": "grpo", "kl_type": "k9"})
    assert "algorithm.kl_type" in msg and "low_var_kl" in msg
    msg = _error({"name": "grpo", "loss_agg_mode": "mean"})
    assert "algorithm.loss_agg_mode" in msg and all(m in msg for m in AGGREGATION_MODES)
    msg = _error({"name": "grpo", "kl_coef": True})
    assert "algorithm.kl_coef" in msg
    msg = _error({"name": "grpo", "ppo_clip": {"clip_high": "0.28"}})
    assert "algorithm.ppo_clip.clip_high" in msg


def test_build_objective_composition_errors() -> None:
    msg = _error({"name": "grpo", "sapo": {"gamma": 0.2}})
    assert "algorithm.sapo" in msg and "does not use" in msg
    msg = _error({"name": "grpo", "penalties": "sapo"})
    assert "algorithm.penalties" in msg
    msg = _error({"name": "grpo", "penalties": ["sapo", "sapo"]})
    assert "algorithm.penalties[1]" in msg and "twice" in msg
    msg = _error({"name": "grpo", "penalties": ["ppo_clip"]})
    assert "algorithm.penalties[0]" in msg and "llds" in msg and "sapo" in msg
    msg = _error({"name": "grpo", "policy_loss": "sapo"})  # a penalty is not a base loss
    assert "algorithm.policy_loss" in msg and "gspo" in msg and "ppo_clip" in msg
    msg = _error({"name": "grpo", "advantage_estimator": "gae"})
    assert "algorithm.advantage_estimator" in msg and "calibadv" in msg and "dr_grpo" in msg
    msg = _error({"name": "sapo", "sapo": [0.1]})
    assert "algorithm.sapo" in msg


def test_composition_calibadv_with_sapo_and_overrides() -> None:
    objective = build_objective({"name": "calibadv", "penalties": ["sapo"], "sapo": {"gamma": 0.05}})
    resolved = objective.resolved
    assert resolved["advantage_estimator"] == "calibadv" and resolved["penalties"] == ["sapo"]
    assert resolved["sapo"]["gamma"] == 0.05 and resolved["sapo"]["tau"] == 1.0
    dapo_gspo = build_objective({"name": "dapo", "policy_loss": "gspo"}).resolved
    assert "ppo_clip" not in dapo_gspo and dapo_gspo["gspo"]["clip_high"] == 4e-4


# ------------------------------------------------------------------------------------------- registries


def test_registry_lookups_list_names() -> None:
    with pytest.raises(KeyError) as err:
        get_policy_loss("vanilla")
    assert all(n in str(err.value) for n in ("gspo", "llds", "ppo_clip", "sapo"))
    with pytest.raises(ValueError) as err2:
        get_advantage_estimator("gae")
    assert all(n in str(err2.value) for n in ("calibadv", "dr_grpo", "grpo"))
    assert isinstance(err2.value, UnknownNameError)


def test_duplicate_and_bad_registrations_raise() -> None:
    with pytest.raises(ValueError, match="already registered"):
        register_policy_loss("sapo", role="penalty", params=get_policy_loss("sapo").params)(lambda b, p, c: None)
    with pytest.raises(ValueError, match="already registered"):
        register_advantage_estimator("gspo")(lambda b, p: None)  # names are shared across the two registries
    with pytest.raises(ValueError, match="reserved"):
        register_advantage_estimator("kl_coef")(lambda b, p: None)
    with pytest.raises(ValueError, match="coef"):
        register_policy_loss("no_coef", role="penalty")(lambda b, p, c: None)
    with pytest.raises(ValueError, match="role"):
        register_policy_loss("x", role="bonus")
    with pytest.raises(ValueError, match="requirement"):
        register_policy_loss("x", requires=("values",))
    with pytest.raises(ValueError, match="built in"):
        unregister("sapo")


@dataclass(frozen=True)
class _RatioL2Params:
    coef: float = setting(0.5, help="weight", ge=0.0)

    def __post_init__(self) -> None:
        check(self)


def test_user_penalty_and_algorithm_compose_without_touching_ours() -> None:
    @register_policy_loss("ratio_l2", params=_RatioL2Params, role="penalty")
    def ratio_l2(batch: PolicyBatch, params: _RatioL2Params) -> Term:
        mask = batch.response_mask.bool()
        per_token = log_ratio(batch.log_probs, batch.old_log_probs).square() * mask
        return Term(per_token, mask, "token-mean", {"active": torch.ones(())})

    try:
        register_algorithm("grpo_l2", advantage_estimator="grpo", policy_loss="ppo_clip", penalties=["ratio_l2"])
        objective = build_objective({"name": "grpo_l2", "ratio_l2": {"coef": 2.0}, "kl_coef": 0, "entropy_coef": 0})
        batch = _batch(1)
        loss, metrics, _ = objective.loss(batch)
        pg, _ = ppo_clip_loss(batch.log_probs, batch.old_log_probs, batch.advantages, batch.response_mask)
        m = batch.response_mask.double()
        l2 = (((batch.log_probs - batch.old_log_probs) ** 2) * m).sum() / m.sum()
        assert loss.item() == pytest.approx(pg.item() + 2.0 * l2.item())
        assert metrics["penalty/ratio_l2"].item() == pytest.approx(l2.item())
        assert "penalty/ratio_l2_active" in metric_keys()
        msg = _error({"name": "grpo_l2", "ratio_l2": {"coef": -1}})
        assert "algorithm.ratio_l2.coef" in msg
    finally:
        unregister("ratio_l2")
        from searchrl.algorithms import objective as objective_module

        objective_module._ALGORITHMS.pop("grpo_l2", None)
    assert "ratio_l2" not in policy_loss_names()


# ------------------------------------------------------------------------------------------- Objective.loss


@pytest.mark.parametrize("name", ALGORITHMS)
def test_metric_key_set_is_fixed(name: str) -> None:
    objective = build_objective({"name": name})
    batch = _batch(2)
    with_all = objective.loss(batch)[1]
    bare = build_objective({"name": name, "kl_coef": 0, "entropy_coef": 0})
    without = bare.loss(PolicyBatch(batch.log_probs, batch.old_log_probs, batch.advantages, batch.response_mask))[1]
    assert list(with_all) == metric_keys() == list(without)
    assert all(v.dim() == 0 and not v.requires_grad for v in with_all.values())
    assert torch.isnan(without["kl_ref"]) and torch.isnan(without["entropy"])
    assert not torch.isnan(with_all["kl_ref"])
    assert torch.isnan(with_all["entropy"]) == (objective.settings.entropy_coef == 0)  # a term only when it acts
    for key in BASE_METRIC_KEYS:
        assert torch.isfinite(with_all[key]), key


def test_objective_total_is_the_sum_of_its_parts() -> None:
    batch = _batch(3)
    objective = build_objective({"name": "sapo"})
    loss, metrics, _ = objective.loss(batch)
    lp, old, adv, mask = batch.log_probs, batch.old_log_probs, batch.advantages, batch.response_mask
    pg, _ = ppo_clip_loss(lp, old, adv, mask)
    sapo = sapo_penalty(lp, old, adv, mask)
    kl = aggregate(kl_penalty(lp, batch.ref_log_probs, "low_var_kl"), mask)
    ent = aggregate(batch.entropy, mask)
    assert loss.item() == pytest.approx(pg.item() + 0.1 * sapo.item() + 0.001 * kl.item() - 0.001 * ent.item())
    assert metrics["pg_loss"].item() == pytest.approx(pg.item())
    assert metrics["penalty"].item() == pytest.approx(0.1 * sapo.item())
    assert metrics["penalty/sapo"].item() == pytest.approx(sapo.item())
    assert torch.isnan(metrics["penalty/llds"]) and torch.isnan(metrics["penalty/llds_active"])
    assert 0 < metrics["penalty/sapo_active"].item() < 1
    llds_loss, llds_metrics, _ = build_objective({"name": "llds"}).loss(batch)
    llds = llds_penalty(lp, old, adv, mask)
    assert llds_metrics["penalty"].item() == pytest.approx(0.2 * llds.item())
    # the objective's gradient equals the sum of the separately computed terms' gradients
    loss.backward()
    fused_lp, fused_entropy = lp.grad.clone(), batch.entropy.grad.clone()
    lp.grad, batch.entropy.grad = None, None
    (pg + 0.1 * sapo + 0.001 * kl - 0.001 * ent).backward()
    torch.testing.assert_close(fused_lp, lp.grad)
    torch.testing.assert_close(fused_entropy, batch.entropy.grad)


def test_sapo_gradient_through_objective_is_minus_gamma_over_n() -> None:
    """With PPO's part removed (A = 0 rows: surrogate gradient 0), the gradient is exactly SAPO's −γ/N."""
    old = torch.zeros(2, 3, dtype=torch.float64)
    lp = torch.tensor([[-0.5, 0.4, -0.1], [-0.2, 0.0, 0.0]], dtype=torch.float64, requires_grad=True)
    mask = torch.tensor([[1, 1, 1], [1, 0, 0]])
    objective = build_objective({"name": "sapo", "kl_coef": 0, "entropy_coef": 0, "sapo": {"gamma": 0.3}})
    loss, _, _ = objective.loss(PolicyBatch(lp, old, torch.zeros(2, dtype=torch.float64), mask))
    loss.backward()
    n = 4
    assert lp.grad.tolist() == [pytest.approx([-0.3 / n, 0.0, -0.3 / n]), pytest.approx([-0.3 / n, 0.0, 0.0])]


def test_objective_penalty_terms_for_external_aggregation() -> None:
    batch = _batch(6)
    objective = build_objective({"name": "sapo", "penalties": ["sapo", "llds"], "llds": {"lam": 0.5}})
    terms = objective.penalty_terms(batch)
    assert [(name, coef, term.agg_mode) for name, coef, term in terms] == [
        ("sapo", 0.1, "token-mean"), ("llds", 0.5, "token-mean")]
    lp, old, adv, mask = batch.log_probs, batch.old_log_probs, batch.advantages, batch.response_mask
    llds_term = terms[1][2]
    torch.testing.assert_close(aggregate(llds_term.per_token, mask), llds_penalty(lp, old, adv, mask))
    assert llds_term.per_token.requires_grad and llds_term.acting.dtype == torch.bool


@pytest.mark.parametrize("normalization", ["official", "paper"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_penalty_normalisations_by_their_definitions(normalization, seed) -> None:
    """Each penalty's two normalisations, written out from their definitions (SAPO: official token mean over the
    A ≥ 0 rows' tokens, paper Eq. 9 mean over all trajectories of per-row means; LLDS: official token mean over
    every masked token, paper Eq. 4 mean over Y_pre of per-row means) equal what the objective adds, with a fully
    padded row and negative rows in the batch."""
    base = _batch(10 + seed)
    mask = base.response_mask.clone()
    mask[-1] = 0  # a fully padded row must not count in any denominator
    old, adv = base.old_log_probs, base.advantages
    assert (adv < 0).any() and (adv >= 0).any()
    m = mask.double()
    lengths = m.sum(-1)
    pre = (adv >= 0).double() * (lengths > 0)
    objective = build_objective({"name": "sapo", "penalties": ["sapo", "llds"], "kl_coef": 0.0, "entropy_coef": 0.0,
                                 "sapo": {"normalization": normalization},
                                 "llds": {"normalization": normalization, "gate": "token"}})
    lp = base.log_probs.detach().clone().requires_grad_(True)
    _, metrics, _ = objective.loss(PolicyBatch(lp, old, adv, mask))
    x = (lp - old).detach()
    sapo_rows = (-x * (x <= 0) * m).sum(-1) * pre  # Σ_t over acting tokens of the A ≥ 0 rows
    llds_rows = ((-x).clamp(min=0) * m).sum(-1) * pre
    if normalization == "official":
        sapo_expected = sapo_rows.sum() / (lengths * pre).sum()
        llds_expected = llds_rows.sum() / m.sum()
    else:
        sapo_expected = (sapo_rows / lengths.clamp(min=1)).sum() / (lengths > 0).sum()
        llds_expected = (llds_rows / lengths.clamp(min=1)).sum() / pre.sum()
    for name, expected in (("sapo", sapo_expected), ("llds", llds_expected)):
        torch.testing.assert_close(metrics[f"penalty/{name}"], expected, msg=f"{name}/{normalization}")
        assert float(expected) > 0


def test_objective_reports_missing_inputs() -> None:
    batch = _batch(4)
    bare = PolicyBatch(batch.log_probs, batch.old_log_probs, batch.advantages, batch.response_mask)
    with pytest.raises(ValueError, match="ref_log_probs.*kl_coef"):
        build_objective({"name": "grpo"}).loss(bare)
    with pytest.raises(ValueError, match="entropy"):
        build_objective({"name": "grpo", "kl_coef": 0}).loss(bare)
    with pytest.raises(ValueError, match="answer_mask"):
        build_objective({"name": "llds", "llds": {"answer_weight": 0.5}}).loss(batch)
    adv_batch = AdvantageBatch(torch.tensor([1.0, 0.0]), ["a", "a"], torch.ones(2, 3))
    with pytest.raises(ValueError, match="turn_scores"):
        build_objective({"name": "calibadv"}).advantages(adv_batch)
    with pytest.raises(ValueError, match="PolicyBatch.entropy"):
        PolicyBatch(batch.log_probs, batch.old_log_probs, batch.advantages, batch.response_mask, entropy=torch.ones(2))
    with pytest.raises(ValueError, match="advantages"):
        PolicyBatch(batch.log_probs, batch.old_log_probs, torch.ones(3), batch.response_mask)
    with pytest.raises(ValueError, match="group_ids"):
        AdvantageBatch(torch.tensor([1.0, 0.0]), ["a"], torch.ones(2, 3))


def test_objective_advantages_are_masked_and_shaped() -> None:
    mask = torch.tensor([[1, 1, 0, 1], [1, 0, 0, 0], [1, 1, 1, 1]])
    batch = AdvantageBatch(torch.tensor([1.0, 0.0, 0.5]), ["a", "a", "b"], mask, [[0.5], [], []])
    for name in ALGORITHMS:
        adv = build_objective({"name": name}).advantages(batch)
        assert adv.shape == (3, 4) and (adv[mask == 0] == 0).all(), name
    dr = build_objective({"name": "dr_grpo"}).advantages(batch)
    assert dr[0, 0].item() == pytest.approx(0.5) and dr[1, 0].item() == pytest.approx(-0.5)


# ------------------------------------------------------------------------------------------- graphs and masks


TERMS = ["ppo_clip", "gspo", "sapo", "llds"]


@pytest.mark.parametrize("name", ALGORITHMS + ["llds-response", "llds-token"])
def test_masked_tokens_get_exactly_zero_gradient(name: str) -> None:
    cfg = {"name": name.split("-")[0]}
    if "-" in name:
        cfg["llds"] = {"gate": name.split("-")[1]}
    batch = _batch(5)
    loss, _, _ = build_objective(cfg).loss(batch)
    loss.backward()
    off = batch.response_mask == 0
    assert off.any()
    assert torch.equal(batch.log_probs.grad[off], torch.zeros(int(off.sum()), dtype=torch.float64))
    if batch.entropy.grad is not None:  # None when the entropy coefficient is 0 (calibadv)
        assert torch.equal(batch.entropy.grad[off], torch.zeros(int(off.sum()), dtype=torch.float64))


@pytest.mark.parametrize("name", ALGORITHMS)
def test_empty_selections_give_finite_zero_with_graph(name: str) -> None:
    objective = build_objective({"name": name})
    lp = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)
    old = torch.randn(3, 5, dtype=torch.float64)
    ent = torch.rand(3, 5, dtype=torch.float64, requires_grad=True)
    empty = PolicyBatch(lp, old, torch.ones(3, dtype=torch.float64), torch.zeros(3, 5), ref_log_probs=old, entropy=ent)
    loss, metrics, _ = objective.loss(empty)
    assert loss.item() == 0.0 and loss.requires_grad
    loss.backward()
    assert torch.equal(lp.grad, torch.zeros_like(lp))
    assert all(not torch.isinf(v) for v in metrics.values())


@pytest.mark.parametrize("term", ["sapo", "llds"])
def test_penalties_with_no_selected_rows_are_finite_zero_with_graph(term: str) -> None:
    lp = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)
    old = lp.detach() + 1.0  # every likelihood fell, but every advantage is negative
    out = get_policy_loss(term)(PolicyBatch(lp, old, -torch.ones(3, dtype=torch.float64), torch.ones(3, 5)))
    loss = value(out)
    assert loss.item() == 0.0 and loss.requires_grad and out.metrics["active"].item() == 0.0
    loss.backward()
    assert torch.equal(lp.grad, torch.zeros_like(lp))


# ------------------------------------------------------------------------------------------- properties

_PROPERTY = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def _policy_case(draw: st.DrawFn) -> tuple:
    rows = draw(st.integers(1, 5))
    width = draw(st.integers(1, 8))
    seed = draw(st.integers(0, 2**16))
    pad = draw(st.integers(1, 4))
    token_adv = draw(st.booleans())
    gen = torch.Generator().manual_seed(seed)
    mask = (torch.rand(rows, width, generator=gen) > 0.3).long()
    old = -torch.rand(rows, width, generator=gen, dtype=torch.float64) * 2
    lp = (old + 0.4 * torch.randn(rows, width, generator=gen, dtype=torch.float64)).requires_grad_()
    adv = torch.randn(rows, generator=gen, dtype=torch.float64)
    adv = adv.where(torch.rand(rows, generator=gen) > 0.2, torch.zeros_like(adv))
    if token_adv:
        adv = adv[:, None] * mask
    return lp, old, adv, mask, pad, seed


def _pad(t: torch.Tensor, pad: int, value: float) -> torch.Tensor:
    return torch.cat([t, torch.full((t.shape[0], pad), value, dtype=t.dtype)], dim=1)


@_PROPERTY
@given(case=_policy_case(), mode=st.sampled_from(AGGREGATION_MODES))
def test_padding_with_masked_tokens_changes_no_loss(case: tuple, mode: str) -> None:
    lp, old, adv, mask, pad, seed = case
    gen = torch.Generator().manual_seed(seed + 1)
    junk_lp = torch.randn(lp.shape[0], pad, generator=gen, dtype=lp.dtype)
    lp_p = torch.cat([lp, junk_lp], dim=1)
    old_p = _pad(old, pad, -0.7)
    mask_p = _pad(mask, pad, 0)
    adv_p = adv if adv.dim() == 1 else _pad(adv, pad, 3.0)
    answer = (torch.rand(lp.shape, generator=gen) > 0.5).long()
    for name in policy_loss_names():
        entry = get_policy_loss(name)
        gates = ("action", "response", "token")
        variants = [{}] if name != "llds" else [{"gate": g, "answer_weight": 0.5} for g in gates]
        for extra in variants:
            params = entry.params(**extra)
            a = entry.fn(PolicyBatch(lp, old, adv, mask, answer_mask=answer), params)
            b = entry.fn(PolicyBatch(lp_p, old_p, adv_p, mask_p, answer_mask=_pad(answer, pad, 1)), params)
            va = aggregate(a.per_token, a.mask, a.agg_mode or mode, norm_constant=7.0)
            vb = aggregate(b.per_token, b.mask, b.agg_mode or mode, norm_constant=7.0)
            assert vb.item() == pytest.approx(va.item(), rel=1e-9, abs=1e-12), (name, extra)
            if va.requires_grad:  # the gradient on the real tokens is unchanged, and exactly 0 on the padding
                (ga,) = torch.autograd.grad(va, lp, allow_unused=True, materialize_grads=True)
                (gb,) = torch.autograd.grad(vb, lp_p, allow_unused=True, materialize_grads=True)
                torch.testing.assert_close(gb[:, : lp.shape[1]], ga, rtol=1e-9, atol=1e-12)
                assert (gb[:, lp.shape[1] :] == 0).all()
            for key, metric in a.metrics.items():
                if not torch.isnan(metric):
                    assert b.metrics[key].item() == pytest.approx(metric.item(), rel=1e-9, abs=1e-12), (name, key)


@_PROPERTY
@given(seed=st.integers(0, 2**16), name=st.sampled_from(["grpo", "dr_grpo", "calibadv"]))
def test_permuting_trajectories_with_group_ids_permutes_advantages(seed: int, name: str) -> None:
    gen = torch.Generator().manual_seed(seed)
    rows, width = 10, 9
    uid = [f"q{int(i)}" for i in torch.randint(0, 3, (rows,), generator=gen)]
    rewards = (torch.randint(0, 3, (rows,), generator=gen) / 2.0).float()
    mask = (torch.rand(rows, width, generator=gen) > 0.4).long()
    n_runs = turn_ids(mask).amax(dim=1).tolist()
    scores = [[float(torch.rand(1, generator=gen)) for _ in range(max(0, k - 1))] for k in n_runs]
    objective = build_objective({"name": name})
    adv = objective.advantages(AdvantageBatch(rewards, uid, mask, scores))
    perm = torch.randperm(rows, generator=gen)
    permuted = AdvantageBatch(rewards[perm], [uid[i] for i in perm], mask[perm], [scores[i] for i in perm])
    torch.testing.assert_close(objective.advantages(permuted), adv[perm], atol=1e-6, rtol=1e-6)


# ------------------------------------------------------------------------------------------- what runs


@pytest.mark.parametrize("name", ["sapo", "llds", "gspo", "calibadv_sapo"])
def test_objective_runs_the_documented_functions(name: str) -> None:
    """The functions whose docstrings give the equations are the code Objective.loss executes (profiled)."""
    import sys

    from searchrl.algorithms import losses, masks

    called: set[object] = set()

    def profile(frame, event, arg):  # noqa: ANN001
        if event == "call":
            called.add(frame.f_code)

    objective = build_objective({"name": name})
    batch = _batch(7)
    sys.setprofile(profile)
    try:
        loss, _, _ = objective.loss(batch)
        loss.backward()
    finally:
        sys.setprofile(None)
    expected = {losses.kl_penalty, masks.aggregate}
    expected.add(losses.gspo if name == "gspo" else losses.ppo_clip)
    expected |= {losses.sapo} if "sapo" in name else set()
    expected |= {losses.llds, losses.likelihood_decrease_gate} if name == "llds" else set()
    missing = [fn.__name__ for fn in expected if fn.__code__ not in called]
    assert not missing, f"Objective.loss did not run {missing}"
