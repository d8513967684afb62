"""Hand-computed cases and oracle comparisons for the math in searchrl.algorithms (losses and advantages)."""

from __future__ import annotations

import math
from collections import defaultdict

import pytest
import torch

from searchrl.algorithms import (
    AGGREGATION_MODES,
    KL_KINDS,
    LLDS_GATES,
    AdvantageBatch,
    CalibAdvParams,
    GSPOParams,
    LLDSParams,
    PolicyBatch,
    PPOClipParams,
    SAPOParams,
    Term,
    aggregate,
    build_objective,
    calibadv,
    entropy_from_logits,
    group_index,
    grpo_advantages,
    gspo,
    kl_penalty,
    llds,
    ppo_clip,
    sapo,
    turn_ids,
)
from searchrl.rewards import silver_turn_scores, word_edit_similarity, word_levenshtein

torch.set_num_threads(2)
LN = math.log


def leaf(values: list[list[float]]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64, requires_grad=True)


def value(term: Term, mode: str = "token-mean", norm_constant: float | None = None) -> torch.Tensor:
    """A term's scalar as Objective.reduce computes it: its own aggregation mode, else ``mode``."""
    return aggregate(term.per_token, term.mask, term.agg_mode or mode, norm_constant=norm_constant)


# The registered terms take (PolicyBatch, params); these wrappers give the tests the tensor-and-knob form.


def ppo_clip_loss(lp, old, adv, mask, *, loss_agg_mode="token-mean", norm_constant=None, **knobs):
    term = ppo_clip(PolicyBatch(lp, old, adv, mask), PPOClipParams(**knobs))
    return value(term, loss_agg_mode, norm_constant), term.metrics


def gspo_loss(lp, old, adv, mask, *, loss_agg_mode="seq-mean-token-mean", **knobs):
    term = gspo(PolicyBatch(lp, old, adv, mask), GSPOParams(**knobs))
    return value(term, loss_agg_mode), term.metrics


def sapo_penalty(lp, old, adv, mask, **knobs):
    return value(sapo(PolicyBatch(lp, old, adv, mask), SAPOParams(**knobs)))


def llds_penalty(lp, old, adv, mask, *, answer_mask=None, **knobs):
    return value(llds(PolicyBatch(lp, old, adv, mask, answer_mask=answer_mask), LLDSParams(**knobs)))


def calibadv_advantages(rewards, group_ids, mask, turn_scores, **knobs):
    rewards = rewards if isinstance(rewards, torch.Tensor) else torch.tensor(rewards, dtype=torch.float32)
    return calibadv(AdvantageBatch(rewards, group_ids, mask, turn_scores), CalibAdvParams(**knobs))


# ------------------------------------------------------------------------------------------- masks and groups


def test_turn_ids_numbers_contiguous_runs() -> None:
    mask = torch.tensor([[1, 1, 0, 0, 1, 0, 1, 1], [0, 1, 1, 1, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0, 0]])
    expected = torch.tensor([[1, 1, 0, 0, 2, 0, 3, 3], [0, 1, 1, 1, 0, 0, 0, 0], [0] * 8])
    assert torch.equal(turn_ids(mask), expected)
    assert torch.equal(turn_ids(mask.float()), expected)


def test_group_index_first_appearance_and_unhashable() -> None:
    gid, n = group_index(["nq:7", ("hp", 1), "nq:7", 3, ("hp", 1)])
    assert gid.tolist() == [0, 1, 0, 2, 1] and n == 3
    with pytest.raises(ValueError, match="hashable"):
        group_index([["a"], ["b"]])


# ------------------------------------------------------------------------------------------- aggregation


def test_aggregate_modes_by_hand() -> None:
    x = torch.tensor([[1.0, 2.0, 3.0, 100.0], [4.0, 5.0, 100.0, 100.0], [100.0] * 4])
    m = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0], [0, 0, 0, 0]])
    assert aggregate(x, m, "token-mean").item() == pytest.approx(15 / 5)
    # two non-empty rows: (6 + 9) / 2
    assert aggregate(x, m, "seq-mean-token-sum").item() == pytest.approx(7.5)
    assert aggregate(x, m, "seq-mean-token-mean").item() == pytest.approx((2.0 + 4.5) / 2)
    assert aggregate(x, m, "seq-mean-token-sum-norm", norm_constant=10).item() == pytest.approx(15 / (2 * 10))
    assert aggregate(x, m, "seq-mean-token-sum-norm").item() == pytest.approx(15 / (2 * 4))  # C = T
    with pytest.raises(ValueError) as err:
        aggregate(x, m, "sum")
    assert all(mode in str(err.value) for mode in AGGREGATION_MODES)


@pytest.mark.parametrize("mode", AGGREGATION_MODES)
def test_aggregate_empty_mask_is_finite_zero_with_graph(mode: str) -> None:
    x = torch.randn(3, 5, requires_grad=True)
    out = aggregate(x, torch.zeros(3, 5), mode)
    assert out.item() == 0.0 and out.requires_grad
    out.backward()
    assert torch.equal(x.grad, torch.zeros(3, 5))


# ------------------------------------------------------------------------------------------- GRPO


def test_grpo_advantages_by_hand() -> None:
    adv = grpo_advantages(torch.tensor([1.0, 0.0, 0.0, 0.5, 0.5, 0.7, 0.2]), ["a", "a", "a", "b", "b", "c", "d"])
    # group a: mean 1/3, unbiased std sqrt(1/3)
    std = math.sqrt(1 / 3)
    assert adv[:3].tolist() == pytest.approx([(2 / 3) / (std + 1e-6)] + [(-1 / 3) / (std + 1e-6)] * 2)
    assert adv[3].item() == 0.0 and adv[4].item() == 0.0  # all-equal group: exactly 0
    # a group of one: mean 0, std 1 (verl / Search-R1)
    assert adv[5].item() == pytest.approx(0.7 / (1 + 1e-6)) and adv[6].item() == pytest.approx(0.2 / (1 + 1e-6))


def test_dr_grpo_has_no_std_normalisation() -> None:
    adv = grpo_advantages([1.0, 0.0, 0.0, 0.4], ["a", "a", "a", "b"], norm_by_std=False)
    assert adv.tolist() == pytest.approx([2 / 3, -1 / 3, -1 / 3, 0.4])


def test_all_equal_group_is_exactly_zero_despite_rounding() -> None:
    adv = grpo_advantages(torch.tensor([0.1, 0.1, 0.1, 0.3, 0.3, 0.3, 0.3]), [0, 0, 0, 1, 1, 1, 1])
    assert (adv == 0).all()


def _grpo_loop_oracle(rewards: torch.Tensor, uid: list, eps: float = 1e-6) -> torch.Tensor:
    """Search-R1's compute_grpo_outcome_advantage, written as its loop."""
    groups = defaultdict(list)
    for i, u in enumerate(uid):
        groups[u].append(rewards[i])
    out = rewards.clone()
    for i, u in enumerate(uid):
        scores = torch.stack(groups[u])
        mean, std = (torch.tensor(0.0), torch.tensor(1.0)) if len(scores) == 1 else (scores.mean(), scores.std())
        out[i] = (rewards[i] - mean) / (std + eps)
    return out


def test_grpo_matches_loop_oracle_on_random_groups() -> None:
    gen = torch.Generator().manual_seed(3)
    for _ in range(3):
        uid = torch.randint(0, 12, (48,), generator=gen).tolist()
        rewards = torch.rand(48, generator=gen)
        torch.testing.assert_close(grpo_advantages(rewards, uid), _grpo_loop_oracle(rewards, uid), atol=2e-5, rtol=1e-5)


def test_grpo_input_errors() -> None:
    with pytest.raises(ValueError, match="group_ids has 2 entries"):
        grpo_advantages([1.0, 0.0, 1.0], ["a", "a"])
    with pytest.raises(ValueError, match=r"rewards\[1\]"):
        grpo_advantages([1.0, float("nan")], ["a", "a"])


# ------------------------------------------------------------------------------------------- PPO clip


def _ppo_case(advantage: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    old = torch.tensor([[-1.0, -2.0, -0.5, -3.0]], dtype=torch.float64)
    lp = leaf([[-1.0 + LN(1.5), -2.0 + LN(0.5), -0.5, 50.0]])  # last token masked, absurd value
    mask = torch.tensor([[1, 1, 1, 0]])
    return lp, old, torch.tensor([advantage], dtype=torch.float64), mask


def test_ppo_clip_positive_advantage_by_hand() -> None:
    lp, old, adv, mask = _ppo_case(1.0)
    loss, metrics = ppo_clip_loss(lp, old, adv, mask)
    # r = [1.5, 0.5, 1]: max(-1.5, -1.2) = -1.2; max(-0.5, -0.8) = -0.5; -1
    assert loss.item() == pytest.approx((-1.2 - 0.5 - 1.0) / 3)
    assert metrics["ppo_kl"].item() == pytest.approx(-(LN(1.5) + LN(0.5)) / 3)
    loss.backward()
    # clipped token: no gradient; unclipped: -A·r/N; masked: exactly 0
    assert lp.grad[0].tolist() == pytest.approx([0.0, -0.5 / 3, -1.0 / 3, 0.0])


def test_ppo_clip_negative_advantage_and_clip_higher() -> None:
    lp, old, adv, mask = _ppo_case(-1.0)
    loss, _ = ppo_clip_loss(lp, old, adv, mask)
    assert loss.item() == pytest.approx((1.5 + 0.8 + 1.0) / 3)
    lp, old, adv, mask = _ppo_case(1.0)
    dapo, _ = ppo_clip_loss(lp, old, adv, mask, clip_low=0.2, clip_high=0.28)
    assert dapo.item() == pytest.approx((-1.28 - 0.5 - 1.0) / 3)


def test_ppo_clip_token_advantages_equal_broadcast() -> None:
    lp, old, adv, mask = _ppo_case(0.7)
    a, ma = ppo_clip_loss(lp, old, adv, mask)
    b, mb = ppo_clip_loss(lp, old, adv[:, None].expand(1, 4), mask)
    assert a.item() == pytest.approx(b.item())
    assert {k: v.item() for k, v in ma.items()} == pytest.approx({k: v.item() for k, v in mb.items()})


# ------------------------------------------------------------------------------------------- SAPO


def _sapo_case() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    old = torch.zeros(3, 4, dtype=torch.float64)
    lp = leaf([[LN(0.5), LN(2.0), 0.0, 9.0], [LN(0.25), 9.0, 9.0, 9.0], [LN(0.5), 9.0, 9.0, 9.0]])
    mask = torch.tensor([[1, 1, 1, 0], [1, 0, 0, 0], [1, 0, 0, 0]])
    adv = torch.tensor([1.0, 0.0, -1.0], dtype=torch.float64)
    return lp, old, adv, mask


def test_sapo_penalty_by_hand_code_vs_paper() -> None:
    lp, old, adv, mask = _sapo_case()
    # rows A >= 0: row 0 (r = .5, 2, 1) and row 1 (r = .25); r = 2 > τ dropped; denominator 3 + 1 tokens
    assert sapo_penalty(lp, old, adv, mask).item() == pytest.approx((LN(2) + LN(4)) / 4)
    # paper A > 0: row 0 only
    assert sapo_penalty(lp, old, adv, mask, strict_positive=True).item() == pytest.approx(LN(2) / 3)
    # paper Eq. 9 normalisation: (1/G) Σ_i (1/|o_i|) Σ_t over all G = 3 trajectories
    paper = sapo_penalty(lp, old, adv, mask, normalization="paper")
    assert paper.item() == pytest.approx((LN(2) / 3 + LN(4) / 1 + 0.0) / 3)
    # τ = 2 keeps r = 2 (r ≤ τ), whose −log r is negative
    assert sapo_penalty(lp, old, adv, mask, tau=2.0).item() == pytest.approx((LN(2) - LN(2) + LN(4)) / 4)


def test_sapo_gradient_is_minus_gamma_over_n_on_selected_tokens() -> None:
    lp, old, adv, mask = _sapo_case()
    gamma = 0.1
    (gamma * sapo_penalty(lp, old, adv, mask)).backward()
    n = 4
    expected = [[-gamma / n, 0.0, -gamma / n, 0.0], [-gamma / n, 0, 0, 0], [0.0, 0, 0, 0]]
    # r = 1 exactly is selected (official code keeps ratio == τ), so it gets the constant NLL gradient too
    assert lp.grad.tolist() == [pytest.approx(row) for row in expected]


def test_sapo_value_vanishes_at_equal_policies_but_gradient_does_not() -> None:
    old = torch.randn(4, 6, dtype=torch.float64)
    lp = old.clone().requires_grad_()
    mask = torch.ones(4, 6)
    adv = torch.tensor([1.0, 0.0, -1.0, 2.0], dtype=torch.float64)
    value = sapo_penalty(lp, old, adv, mask)
    assert value.item() == 0.0
    value.backward()
    # γ·∇log π with constant weight (SAPO Eq. 12-13): −1/N on rows with A ≥ 0, as the official code at r = 1
    expected = torch.tensor([-1 / 18] * 6 + [-1 / 18] * 6 + [0.0] * 6 + [-1 / 18] * 6, dtype=torch.float64)
    torch.testing.assert_close(lp.grad.flatten(), expected)


# ------------------------------------------------------------------------------------------- LLDS


def _llds_case() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    # Δ = old − lp. Row 0 (A ≥ 0): turn 1 Δ = [.5, −.2] (Σ .3 > 0: on), turn 2 Δ = [.1, −.3] (Σ −.2: off);
    # row Σ Δ = .1 > 0. Row 1 (A < 0): Δ = [1]. Row 2 (A = 0): one turn Δ = [.3, −.5] (Σ −.2: off).
    old = torch.zeros(3, 6, dtype=torch.float64)
    lp = leaf([[-0.5, 0.2, 7.0, -0.1, 0.3, 7.0], [-1.0, 7.0, 7.0, 7.0, 7.0, 7.0], [-0.3, 0.5, 7.0, 7.0, 7.0, 7.0]])
    mask = torch.tensor([[1, 1, 0, 1, 1, 0], [1, 0, 0, 0, 0, 0], [1, 1, 0, 0, 0, 0]])
    adv = torch.tensor([0.8, -1.2, 0.0], dtype=torch.float64)
    return lp, old, adv, mask


def test_llds_gates_by_hand() -> None:
    lp, old, adv, mask = _llds_case()
    n_all = 7  # every masked token of the batch, negative row included (official denominator)
    assert llds_penalty(lp, old, adv, mask, gate="action").item() == pytest.approx(0.5 / n_all)
    assert llds_penalty(lp, old, adv, mask, gate="response").item() == pytest.approx((0.5 + 0.1) / n_all)
    assert llds_penalty(lp, old, adv, mask, gate="token").item() == pytest.approx((0.5 + 0.1 + 0.3) / n_all)
    # paper Eq. 4: mean over Y_pre = {row 0, row 2} of (Σ penalty / |y_i|)
    paper = llds_penalty(lp, old, adv, mask, gate="action", normalization="paper")
    assert paper.item() == pytest.approx((0.5 / 4 + 0.0 / 2) / 2)


def test_llds_answer_masking_weights_answer_tokens() -> None:
    lp, old, adv, mask = _llds_case()
    answer = torch.zeros(3, 6)
    answer[0, 0] = 1
    value = llds_penalty(lp, old, adv, mask, gate="token", answer_mask=answer, answer_weight=0.25)
    assert value.item() == pytest.approx((0.25 * 0.5 + 0.1 + 0.3) / 7)


def test_llds_gradient_only_on_active_tokens() -> None:
    lp, old, adv, mask = _llds_case()
    llds_penalty(lp, old, adv, mask, gate="action").backward()
    expected = torch.zeros(3, 6, dtype=torch.float64)
    expected[0, 0] = -1 / 7
    assert torch.equal(lp.grad, expected)


def test_llds_unknown_gate_lists_the_gates() -> None:
    lp, old, adv, mask = _llds_case()
    with pytest.raises(ValueError) as err:
        llds_penalty(lp, old, adv, mask, gate="turn")
    assert all(g in str(err.value) for g in LLDS_GATES)


@pytest.mark.parametrize("gate", LLDS_GATES)
def test_llds_and_its_gradient_vanish_at_equal_policies(gate: str) -> None:
    old = torch.randn(4, 6, dtype=torch.float64)
    lp = old.clone().requires_grad_()
    value = llds_penalty(lp, old, torch.tensor([1.0, 0.0, -1.0, 2.0]), torch.ones(4, 6), gate=gate)
    value.backward()
    assert value.item() == 0.0 and torch.equal(lp.grad, torch.zeros_like(old))


# ------------------------------------------------------------------------------------------- GSPO


def test_gspo_sequence_ratio_by_hand() -> None:
    old = torch.zeros(1, 3, dtype=torch.float64)
    lp = leaf([[LN(0.81), 0.0, 5.0]])  # geometric mean over the 2 masked tokens: s = 0.9
    mask = torch.tensor([[1, 1, 0]])
    loss, metrics = gspo_loss(lp, old, torch.tensor([1.0], dtype=torch.float64), mask)
    # A > 0, s = 0.9 < 1 − 3e-4: max(−0.9, −0.9997) = −0.9 (not clipped), seq-mean-token-mean
    assert loss.item() == pytest.approx(-0.9)
    loss.backward()
    # ∂/∂lp_t of −A·s_{i,t} = −A·s, averaged over the row's 2 tokens
    assert lp.grad[0].tolist() == pytest.approx([-0.45, -0.45, 0.0])
    lp2 = leaf([[LN(1.21), 0.0, 5.0]])  # s = 1.1 > 1 + 4e-4: clipped, no gradient
    loss2, metrics2 = gspo_loss(lp2, old, torch.tensor([1.0], dtype=torch.float64), mask)
    assert loss2.item() == pytest.approx(-(1 + 4e-4))
    loss2.backward()
    assert torch.equal(lp2.grad, torch.zeros_like(lp2))


def test_gspo_on_single_token_rows_equals_ppo_clip() -> None:
    gen = torch.Generator().manual_seed(1)
    old = -torch.rand(8, 1, generator=gen, dtype=torch.float64)
    lp = old + 0.3 * torch.randn(8, 1, generator=gen, dtype=torch.float64)
    adv = torch.randn(8, generator=gen, dtype=torch.float64)
    mask = torch.ones(8, 1)
    a, _ = gspo_loss(lp, old, adv, mask, clip_low=0.2, clip_high=0.2, loss_agg_mode="token-mean")
    b, _ = ppo_clip_loss(lp, old, adv, mask)
    assert a.item() == pytest.approx(b.item())


# ------------------------------------------------------------------------------------------- KL and entropy


def test_kl_estimators_by_hand() -> None:
    lp = torch.tensor([[0.5, -30.0]])
    ref = torch.zeros(1, 2)
    assert kl_penalty(lp, ref, "kl").tolist() == [[0.5, -30.0]]
    assert kl_penalty(lp, ref, "abs").tolist() == [[0.5, 30.0]]
    assert kl_penalty(lp, ref, "mse")[0].tolist() == pytest.approx([0.125, 450.0])
    k3 = kl_penalty(lp, ref, "low_var_kl")[0]
    assert k3[0].item() == pytest.approx(math.exp(-0.5) + 0.5 - 1)
    assert k3[1].item() == 10.0  # exp(20) − 21 clamped to 10, as verl
    with pytest.raises(ValueError) as err:
        kl_penalty(lp, ref, "k4")
    assert all(k in str(err.value) for k in KL_KINDS)


def test_entropy_from_logits_matches_categorical_and_is_stable() -> None:
    gen = torch.Generator().manual_seed(0)
    logits = 3 * torch.randn(2, 5, 11, generator=gen, dtype=torch.float64)
    expected = torch.distributions.Categorical(logits=logits).entropy()
    torch.testing.assert_close(entropy_from_logits(logits), expected)
    torch.testing.assert_close(entropy_from_logits(logits, chunk_size=3), expected)
    assert entropy_from_logits(torch.zeros(1, 1, 8)).item() == pytest.approx(math.log(8))
    huge = torch.tensor([[[1000.0, 0.0, -1000.0]]], requires_grad=True)
    masked_vocab = torch.tensor([[[0.0, 0.0, -math.inf]]], requires_grad=True)
    assert entropy_from_logits(huge).item() == pytest.approx(0.0, abs=1e-6)
    h = entropy_from_logits(masked_vocab)
    assert h.item() == pytest.approx(math.log(2))
    (h + entropy_from_logits(huge)).sum().backward()
    assert torch.isfinite(masked_vocab.grad).all() and torch.isfinite(huge.grad).all()


def test_entropy_bf16_is_upcast() -> None:
    logits = torch.randn(4, 16).to(torch.bfloat16)
    out = entropy_from_logits(logits, chunk_size=2)
    assert out.dtype == torch.float32 and out.shape == (4,)


# ------------------------------------------------------------------------------------------- CalibAdv


def _calibadv_loop_oracle(
    rewards: torch.Tensor, uid: list, mask: torch.Tensor, scores: list[list[float]], lam: float = 1.0
) -> torch.Tensor:
    """The reference §3(c) pseudo-code (a loop over rows, turns and groups), with verl's singleton rule."""
    seq = _grpo_loop_oracle(rewards.double(), uid)
    for g in set(uid):  # all-equal groups give exactly 0
        rows = [i for i, u in enumerate(uid) if u == g]
        if len(rows) > 1 and len({float(rewards[i]) for i in rows}) == 1:
            seq[rows] = 0.0
    tid = turn_ids(mask)
    n_turns = tid.max(dim=1).values
    adv = seq[:, None].expand(mask.shape).clone() * mask.double()
    for b in range(mask.shape[0]):
        if seq[b] < 0:
            for t, c in enumerate(scores[b], start=1):
                if c > 1e-6 and t < n_turns[b]:
                    adv[b, tid[b] == t] = seq[b] * (1.0 - c)
    last = (tid == n_turns[:, None]) & (tid > 0)
    for g in set(uid):
        rows = [b for b, u in enumerate(uid) if u == g]
        m = torch.zeros_like(last)
        m[rows] = last[rows]
        pos, neg = m & (adv > 0), m & (adv < 0)
        p, n = adv[pos].sum(), -adv[neg].sum()
        if p == 0 or n == 0:
            adv[m] = 0.0
        else:
            adv[pos] = adv[pos] * (n / (lam * p))
    return adv


def _random_rollouts(gen: torch.Generator, batch: int, width: int) -> tuple:
    uid = [f"q{int(i)}" for i in torch.randint(0, max(1, batch // 4), (batch,), generator=gen)]
    rewards = (torch.randint(0, 4, (batch,), generator=gen) / 3.0).float()
    mask = torch.zeros(batch, width, dtype=torch.long)
    scores: list[list[float]] = []
    for b in range(batch):
        pos, runs = 0, int(torch.randint(0, 5, (1,), generator=gen))
        for _ in range(runs):
            length = int(torch.randint(1, 4, (1,), generator=gen))
            if pos + length > width:
                break
            mask[b, pos : pos + length] = 1
            pos += length + int(torch.randint(1, 3, (1,), generator=gen))
        n_runs = int(turn_ids(mask[b : b + 1]).max())
        k = max(0, n_runs - 1) if torch.rand(1, generator=gen) < 0.8 else n_runs
        levels = [0.0, 1 / 3, 2 / 3, 1.0, 1e-6]
        scores.append([levels[int(torch.randint(0, 5, (1,), generator=gen))] for _ in range(k)])
    return rewards, uid, mask, scores


@pytest.mark.parametrize("seed", range(6))
def test_calibadv_matches_loop_oracle(seed: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    rewards, uid, mask, scores = _random_rollouts(gen, 24, 24)
    lam = [1.0, 0.5, 2.0][seed % 3]
    got = calibadv_advantages(rewards, uid, mask, scores, rebalance_ratio=lam)
    expected = _calibadv_loop_oracle(rewards, uid, mask, scores, lam)
    torch.testing.assert_close(got.double(), expected, atol=1e-5, rtol=1e-5)


def test_calibadv_soft_penalty_values() -> None:
    # one group: row 0 correct (R=1), rows 1-2 wrong; row 1 has c = 2/3 on turn 1 and 1/3 on turn 2
    mask = torch.tensor([[1, 0, 1, 0, 1, 1], [1, 0, 1, 0, 1, 1], [1, 0, 1, 0, 1, 1]])
    rewards = torch.tensor([1.0, 0.0, 0.0])
    adv = calibadv_advantages(rewards, ["q", "q", "q"], mask, [[1.0, 1.0], [2 / 3, 1 / 3], [1e-6, 0.0]])
    a_neg = grpo_advantages(rewards, ["q", "q", "q"])[1].item()
    assert adv[1, 0].item() == pytest.approx(a_neg / 3)  # 2/3 silver docs: 1/3 of the penalty
    assert adv[1, 2].item() == pytest.approx(a_neg * 2 / 3)  # 1/3 silver docs: 2/3 of the penalty
    assert adv[2, 0].item() == pytest.approx(a_neg) and adv[2, 2].item() == pytest.approx(a_neg)  # no credit
    a_pos = grpo_advantages(rewards, ["q", "q", "q"])[0].item()
    assert adv[0, 0].item() == pytest.approx(a_pos)  # positive rows never soft-penalised
    assert (adv[:, [1, 3]] == 0).all()  # observation tokens


def test_calibadv_rebalances_final_turns_per_group() -> None:
    gen = torch.Generator().manual_seed(11)
    rewards, uid, mask, scores = _random_rollouts(gen, 40, 20)
    lam = 1.5
    adv = calibadv_advantages(rewards, uid, mask, scores, rebalance_ratio=lam).double()
    tid = turn_ids(mask)
    last = (tid == tid.max(dim=1, keepdim=True).values) & (tid > 0)
    checked = 0
    for g in set(uid):
        rows = torch.tensor([u == g for u in uid])
        final = adv[rows][last[rows]]
        pos, neg = final[final > 0].sum(), -final[final < 0].sum()
        if pos > 0:
            assert pos.item() == pytest.approx(neg.item() / lam, rel=1e-6)
            checked += 1
        else:
            assert (final == 0).all()  # one-sign (or zero) groups: every final-turn advantage is 0
    assert checked > 0


def test_calibadv_zeroes_one_sign_groups_and_keeps_search_turns() -> None:
    mask = torch.tensor([[1, 0, 1, 1], [1, 0, 1, 1], [1, 1, 1, 1]])
    # group "a": both rows positive after a singleton-free z-score? no: rows 0-1 differ -> one pos, one neg.
    # group "s": a single row, positive advantage R/(1+eps) -> its final turn has no negative partner -> 0
    adv = calibadv_advantages(torch.tensor([1.0, 0.0, 0.6]), ["a", "a", "s"], mask, [[], [], []])
    assert (adv[2] == 0).all()
    assert adv[0, 0].item() > 0 and adv[0, 2].item() > 0  # balanced group: scale 1
    assert adv[0, 2].item() == pytest.approx(-adv[1, 2].item())
    # a row that is all one run is its own final turn
    mask2 = torch.tensor([[1, 0, 1, 1], [1, 0, 1, 1]])
    adv2 = calibadv_advantages(torch.tensor([1.0, 1.0]), ["a", "a"], mask2, None)
    assert (adv2 == 0).all()


def test_calibadv_turn_score_validation() -> None:
    mask = torch.tensor([[1, 0, 1], [1, 1, 1]])
    with pytest.raises(ValueError, match=r"turn_scores\[1\] scores more turns"):
        calibadv_advantages([1.0, 0.0], ["a", "a"], mask, [[0.5], [0.5, 0.5]])
    with pytest.raises(ValueError, match=r"outside \[0, 1\]"):
        calibadv_advantages([1.0, 0.0], ["a", "a"], mask, [[1.5], []])
    with pytest.raises(ValueError, match="2 rows"):
        calibadv_advantages([1.0, 0.0, 1.0], ["a", "a", "a"], torch.ones(3, 3), [[], []])
    # a padded tensor of scores is accepted and equals the list form
    lists = calibadv_advantages([1.0, 0.0], ["a", "a"], mask, [[], [0.0]])
    table = calibadv_advantages([1.0, 0.0], ["a", "a"], mask, torch.zeros(2, 1))
    assert torch.equal(lists, table)


# ------------------------------------------------------------------------------------------- silver scores


def test_word_edit_similarity() -> None:
    assert word_levenshtein("a b c".split(), "a x c d".split()) == 2
    assert word_edit_similarity("a b c", "a b d") == pytest.approx(2 / 3)
    assert word_edit_similarity("", "") == 0.0  # official: empty texts are not similar
    assert word_edit_similarity("same words here", "same  words\nhere") == 1.0


def test_silver_turn_scores_rules() -> None:
    docs = [
        # 0: best correct (F1 1.0): every document it retrieved is silver
        [["s1", "x1", "x2"], ["s2", "x3", "x4"]],
        # 1: tied best: its documents are pooled into the silver set (s3, y1, y2)
        [["s3", "y1", "y2"]],
        # 2: correct but not best (0.8): z9 and q1 are NOT silver
        [["z9", "s1", "q1"]],
        # 3: wrong answer, valid format. turn 1: s1, s2 silver -> 2/3. turn 2: s1 already seen, s3 new, one doc
        #    shared with turn 1 (allowed) -> 1/3. turn 3: new silver x1 but the same think as turn 1 -> 0.
        #    turn 4: new silver x2 but shares s2 and n1 with turn 1 (> 1 shared doc) -> 0
        [["s1", "s2", "n1"], ["s1", "s3", "n2"], ["x1", "n3", "n4"], ["s2", "n1", "x2"]],
        # 4: invalid format with F1 1.0: not scored and not in the correct set
        [["w1", "w2", "w3"]],
        # 5: first search returned nothing; second found only the invalid rollout's documents
        [[], ["w1", "w2", "w3"]],
    ]
    thinks = [
        ["find a", "find b"],
        ["find c"],
        ["find z"],
        ["look up the city of birth", "now the river", "look up the city of birth", "what flows there"],
        ["x"],
        ["empty", "other"],
    ]
    f1 = [1.0, 1.0, 0.8, 0.0, 1.0, 0.2]
    valid = [True, True, True, True, False, True]
    out = silver_turn_scores(docs, thinks, f1, valid)
    assert out[0] == pytest.approx([1.0, 1.0])  # "find a" vs "find b": similarity 0.5, not > 0.5
    assert out[1] == pytest.approx([1.0])
    assert out[2] == pytest.approx([1 / 3])
    assert out[3] == pytest.approx([2 / 3, 1 / 3, 0.0, 0.0])
    assert out[4] == []
    assert out[5] == [0.0, 0.0]


def test_silver_turn_scores_threshold_and_similarity_boundary() -> None:
    docs = [[["a", "b", "c"]], [["a", "d", "e"], ["f", "g", "h"]]]
    # below the F1 threshold everywhere: no silver set, nobody is scored
    assert silver_turn_scores(docs, [["t"], ["t1", "t2"]], [0.69, 0.5], [True, True]) == [[], []]
    # think similarity exactly 0.5 does not zero the turn (strictly greater does)
    docs2 = [[["a", "b", "c"]], [["x", "y", "z"], ["a", "q", "r"]]]
    half = silver_turn_scores(docs2, [["t"], ["w1 w2 w3 w4", "w1 w2 v3 v4"]], [0.9, 0.0], [True, True])
    assert half[1] == pytest.approx([0.0, 1 / 3])
    more = silver_turn_scores(docs2, [["t"], ["w1 w2 w3 w4", "w1 w2 w3 v4"]], [0.9, 0.0], [True, True])
    assert more[1] == pytest.approx([0.0, 0.0])


def test_silver_turn_scores_input_errors() -> None:
    with pytest.raises(ValueError, match="one entry per rollout"):
        silver_turn_scores([[["a"]]], [["t"], ["u"]], [1.0], [True])
    with pytest.raises(ValueError, match="rollout 0"):
        silver_turn_scores([[["a"], ["b"]]], [["t"]], [1.0], [True])


# ------------------------------------------------------------------------------------------- analytic gradients
# The built-in terms compute ∂loss/∂log_probs in closed form; these oracles are the straightforward autograd
# versions of the same formulas (the official code's expressions), kept only here.


def _oracle_ppo(lp, old, adv, mask, lo=0.2, hi=0.2, mode="token-mean", norm_constant=None):
    a = adv[:, None] if adv.dim() == 1 else adv
    r = torch.exp((lp - old).clamp(-20, 20))
    return aggregate(torch.maximum(-a * r, -a * r.clamp(1 - lo, 1 + hi)), mask, mode, norm_constant=norm_constant)


def _oracle_gspo(lp, old, adv, mask, lo=3e-4, hi=4e-4, mode="seq-mean-token-mean"):
    a = adv[:, None] if adv.dim() == 1 else adv
    m = mask.double()
    seq = ((lp - old) * m).sum(-1) / m.sum(-1).clamp(min=1)
    s = torch.exp((lp - lp.detach() + seq.detach()[:, None]).clamp(max=10.0))
    return aggregate(torch.maximum(-a * s, -a * s.clamp(1 - lo, 1 + hi)), mask, mode)


def _oracle_sapo(lp, old, adv, mask, tau=1.0):
    row = adv if adv.dim() == 1 else (adv * mask).sum(-1) / mask.sum(-1).clamp(min=1)
    kl_term = -(lp - old)
    kl_term = kl_term.masked_fill(torch.exp(lp - old) > tau, 0.0)
    index = row >= 0
    m = mask.double()[index]
    return (kl_term[index] * m).sum() / m.sum().clamp(min=1)


def _oracle_llds(lp, old, adv, mask, gate):
    row = adv if adv.dim() == 1 else (adv * mask).sum(-1) / mask.sum(-1).clamp(min=1)
    m = mask.double()
    pres = (row >= 0).double()[:, None] * m
    delta = old - lp
    base = torch.relu(delta)
    if gate == "action":
        ids = turn_ids(pres)
        sums = torch.zeros(lp.shape[0], int(ids.max()) + 1, dtype=lp.dtype).scatter_add(1, ids, (delta * pres).detach())
        on = (sums > 0).double()
        on[:, 0] = 0
        g = on.gather(1, ids)
    elif gate == "response":
        g = ((delta * pres).detach().sum(-1, keepdim=True) > 0).double() * pres
    else:
        g = pres
    return (g * base * m).sum() / m.sum().clamp(min=1)


def _random_policy(seed: int, token_adv: bool):
    gen = torch.Generator().manual_seed(seed)
    rows, width = 7, 13
    mask = (torch.rand(rows, width, generator=gen) > 0.35).long()
    mask[-1] = 0  # a fully padded row
    old = -3 * torch.rand(rows, width, generator=gen, dtype=torch.float64)
    lp = (old + 0.3 * torch.randn(rows, width, generator=gen, dtype=torch.float64)).requires_grad_()
    adv = torch.randn(rows, generator=gen, dtype=torch.float64)
    adv[1] = 0.0
    if token_adv:  # per-token advantages whose sign also varies inside a row
        adv = adv[:, None] * mask * (torch.rand(rows, width, generator=gen, dtype=torch.float64) - 0.2)
    return lp, old, adv, mask


def _grad(fn, lp):
    lp.grad = None
    value = fn()
    value.backward()
    return value.detach(), lp.grad.clone()


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("token_adv", [False, True])
def test_losses_match_independent_oracles(seed: int, token_adv: bool) -> None:
    lp, old, adv, mask = _random_policy(seed, token_adv)
    cases = {
        "ppo": (lambda: ppo_clip_loss(lp, old, adv, mask)[0], lambda: _oracle_ppo(lp, old, adv, mask)),
        "dapo": (
            lambda: ppo_clip_loss(lp, old, adv, mask, clip_high=0.28)[0],
            lambda: _oracle_ppo(lp, old, adv, mask, hi=0.28),
        ),
        "gspo": (
            lambda: gspo_loss(lp, old, adv, mask, clip_low=0.01, clip_high=0.02)[0],
            lambda: _oracle_gspo(lp, old, adv, mask, lo=0.01, hi=0.02),
        ),
        "sapo": (lambda: sapo_penalty(lp, old, adv, mask), lambda: _oracle_sapo(lp, old, adv, mask)),
        "sapo tau 1.1": (
            lambda: sapo_penalty(lp, old, adv, mask, tau=1.1),
            lambda: _oracle_sapo(lp, old, adv, mask, tau=1.1),
        ),
    }
    for mode in AGGREGATION_MODES:
        cases[f"ppo {mode}"] = (
            lambda mode=mode: ppo_clip_loss(lp, old, adv, mask, loss_agg_mode=mode, norm_constant=9.0)[0],
            lambda mode=mode: _oracle_ppo(lp, old, adv, mask, mode=mode, norm_constant=9.0),
        )
        cases[f"gspo {mode}"] = (
            lambda mode=mode: gspo_loss(lp, old, adv, mask, loss_agg_mode=mode)[0],
            lambda mode=mode: _oracle_gspo(lp, old, adv, mask, mode=mode),
        )
    for gate in LLDS_GATES:
        cases[f"llds {gate}"] = (
            lambda gate=gate: llds_penalty(lp, old, adv, mask, gate=gate),
            lambda gate=gate: _oracle_llds(lp, old, adv, mask, gate),
        )
    for name, (ours, oracle) in cases.items():
        value, grad = _grad(ours, lp)
        expected_value, expected_grad = _grad(oracle, lp)
        torch.testing.assert_close(value, expected_value, msg=f"value of {name}")
        torch.testing.assert_close(grad, expected_grad, msg=f"gradient of {name}")


@pytest.mark.parametrize("kind", KL_KINDS)
def test_kl_derivatives_match_autograd(kind: str) -> None:
    gen = torch.Generator().manual_seed(7)
    ref = torch.randn(4, 9, generator=gen, dtype=torch.float64)
    x = 3 * torch.randn(4, 9, generator=gen, dtype=torch.float64)
    x[0, :3] = torch.tensor([-25.0, 25.0, -2.5])  # beyond the ±20 clamp, and k3 above its 10 cap
    lp = (ref + x).requires_grad_()
    weights = torch.rand(4, 9, generator=gen, dtype=torch.float64)
    (kl_penalty(lp, ref, kind) * weights).sum().backward()
    ours = lp.grad.clone()
    lp.grad = None
    diff = lp - ref
    oracle = {
        "kl": diff,
        "abs": diff.abs(),
        "mse": 0.5 * diff.square(),
        "low_var_kl": (torch.exp((-diff).clamp(-20, 20)) - (-diff).clamp(-20, 20) - 1).clamp(-10, 10),
    }[kind]
    (oracle * weights).sum().backward()
    torch.testing.assert_close(ours, lp.grad)


# ------------------------------------------------------------------------------------------- per-token penalty form


def test_per_token_penalty_masks_by_hand() -> None:
    lp, old, adv, mask = _sapo_case()
    terms = sapo(PolicyBatch(lp, old, adv, mask), SAPOParams())
    # rows A ≥ 0: 0 and 1 (the official token mean runs over their tokens); acting tokens r ≤ 1: row 0 tokens 0
    # and 2, row 1 token 0
    assert terms.agg_mode == "token-mean"
    assert terms.mask.tolist() == [[True, True, True, False], [True, False, False, False], [False] * 4]
    assert terms.acting.tolist() == [[True, False, True, False], [True, False, False, False], [False] * 4]
    assert terms.per_token[0].tolist() == pytest.approx([LN(2), 0.0, 0.0, 0.0])
    assert terms.metrics["active"].item() == pytest.approx(3 / 5)
    assert terms.metrics["selected"].item() == pytest.approx(4 / 5)
    paper = sapo(PolicyBatch(lp, old, adv, mask), SAPOParams(normalization="paper"))
    assert paper.agg_mode == "seq-mean-token-mean" and torch.equal(paper.mask, mask.bool())
    lp, old, adv, mask = _llds_case()
    terms = llds(PolicyBatch(lp, old, adv, mask), LLDSParams(gate="action"))
    assert terms.acting.nonzero().tolist() == [[0, 0]]
    assert torch.equal(terms.mask, mask.bool())  # official: every masked token
    assert terms.per_token[1].tolist() == [0.0] * 6  # A < 0
    assert terms.metrics["selected"].item() == pytest.approx(6 / 7)


# ------------------------------------------------------------------------------------------- LLDS action gate


def _ragged_masks(gen: torch.Generator, rows: int, width: int) -> torch.Tensor:
    """Masks with ragged runs: empty rows, fully masked rows, runs at the row's start and touching its end,
    one-token runs and one-token gaps."""
    mask = torch.zeros(rows, width, dtype=torch.long)
    for b in range(rows):
        kind = b % 5
        if kind == 0:
            continue  # an empty row
        if kind == 1:
            mask[b] = 1  # one run over the whole row
            continue
        pos = 0 if kind == 2 else int(torch.randint(0, 4, (1,), generator=gen))
        while pos < width:
            length = int(torch.randint(1, 12, (1,), generator=gen))
            mask[b, pos : pos + length] = 1
            pos += length + int(torch.randint(1, 5, (1,), generator=gen))
        if kind == 3:
            mask[b, -3:] = 1  # a run touching the row's end
    return mask


def _dyadic(gen: torch.Generator, shape: tuple[int, int], dtype: torch.dtype, low: int, high: int) -> torch.Tensor:
    """Multiples of 1/16 in [low/16, high/16]: every sum of a few hundred is exact in float32 and float64, so the
    implementation and the loop agree exactly whatever their summation order, and some actions sum to exactly 0."""
    return (torch.randint(low, high + 1, shape, generator=gen) / 16).to(dtype)


def _loop_runs(mask_row: list[int]) -> list[tuple[int, int]]:
    runs, t = [], 0
    while t < len(mask_row):
        if mask_row[t]:
            end = t
            while end < len(mask_row) and mask_row[end]:
                end += 1
            runs.append((t, end))
            t = end
        else:
            t += 1
    return runs


def _loop_llds_action(lp: torch.Tensor, old: torch.Tensor, adv: torch.Tensor, mask: torch.Tensor):
    """LLDS with the action gate as Eq. 4 reads, one row and one action at a time (official normalisation):
    (value, ∂value/∂lp, per-token penalty, active tokens)."""
    rows, width = mask.shape
    m = mask.tolist()
    n_tokens = max(1, sum(map(sum, m)))
    row_adv = adv.tolist() if adv.dim() == 1 else [
        sum(a * k for a, k in zip(adv[b].tolist(), m[b])) / max(1, sum(m[b])) for b in range(rows)
    ]
    delta = (old - lp.detach()).tolist()
    value, grad = 0.0, [[0.0] * width for _ in range(rows)]
    per_token, active = [[0.0] * width for _ in range(rows)], [[False] * width for _ in range(rows)]
    for b in range(rows):
        if row_adv[b] < 0:
            continue
        for start, end in _loop_runs(m[b]):
            if sum(delta[b][start:end]) <= 0:
                continue  # the action's likelihood did not fall: gate off
            for t in range(start, end):
                if delta[b][t] > 0:
                    value += delta[b][t] / n_tokens
                    grad[b][t] = -1.0 / n_tokens
                    per_token[b][t] = delta[b][t]
                    active[b][t] = True
    as_tensor = lambda x: torch.tensor(x, dtype=lp.dtype)  # noqa: E731
    return value, as_tensor(grad), as_tensor(per_token), torch.tensor(active)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_llds_action_gate_equals_a_loop_over_rows_and_actions(seed: int, dtype: torch.dtype) -> None:
    gen = torch.Generator().manual_seed(seed)
    rows, width = [(10, 37), (7, 64), (11, 5), (3, 100)][seed]  # widths off and on the 32-token blocks
    mask = _ragged_masks(gen, rows, width)
    old = _dyadic(gen, (rows, width), dtype, -48, 0)
    lp = (old + _dyadic(gen, (rows, width), dtype, -3, 3)).requires_grad_()
    adv = _dyadic(gen, (rows, 1), dtype, -8, 8)[:, 0]
    adv[1] = 0.0  # A = 0 is in the preserving set
    if seed % 2:
        adv = adv[:, None] * mask  # (B, T) advantages, as Objective.advantages returns
    value, grad, per_token, active = _loop_llds_action(lp, old, adv, mask)
    got = llds_penalty(lp, old, adv, mask, gate="action")
    got.backward()
    assert got.item() == pytest.approx(value, rel=1e-6, abs=1e-12)
    assert torch.equal(lp.grad, grad)
    lp.grad = None
    terms = llds(PolicyBatch(lp, old, adv, mask), LLDSParams(gate="action"))
    assert torch.equal(terms.per_token.detach(), per_token) and torch.equal(terms.acting, active)
    terms.per_token.sum().backward()
    n_tokens = max(1, int(mask.sum()))
    assert torch.equal(lp.grad * (1.0 / n_tokens), grad)  # ∂P/∂lp = −1 on the active tokens
    # the objective runs the same term
    objective = build_objective({"name": "llds", "kl_coef": 0, "entropy_coef": 0})
    _, metrics, _ = objective.loss(PolicyBatch(lp, old, adv, mask))
    assert metrics["penalty/llds"].item() == pytest.approx(value, rel=1e-6, abs=1e-12)


def test_llds_action_gate_edge_shapes() -> None:
    for rows, width in [(0, 5), (3, 0), (4, 1)]:
        old = torch.zeros(rows, width)
        lp = torch.full((rows, width), -0.5).requires_grad_()
        mask = torch.ones(rows, width, dtype=torch.long)
        value = llds_penalty(lp, old, torch.ones(rows), mask, gate="action")
        value.backward()
        expected = 0.5 if rows * width else 0.0  # every token's likelihood fell by 0.5; one action per row
        assert value.item() == pytest.approx(expected)
    zero_mask = torch.zeros(3, 8, dtype=torch.long)
    lp = torch.full((3, 8), -1.0).requires_grad_()
    assert llds_penalty(lp, torch.zeros(3, 8), torch.ones(3), zero_mask, gate="action").item() == 0.0


def test_per_token_advantages_select_rows_by_their_masked_mean() -> None:
    """docs/algorithms.md's divergence: with per-token advantages (CalibAdv), SAPO and LLDS select a row by its
    masked mean advantage, where the official code reads advantages[:, 0]. Row 0: −0.2 on its first turn, +0.4 on
    its answer turn (two tokens each), mean +0.1; row 1: −1 everywhere. Log-ratio −0.1 on every token."""
    import torch

    from searchrl.algorithms import PolicyBatch, SAPOParams, aggregate, sapo

    adv = torch.tensor([[-0.2, -0.2, 0.4, 0.4], [-1.0, -1.0, -1.0, -1.0]], dtype=torch.float64)
    mask = torch.ones(2, 4, dtype=torch.float64)
    old = torch.zeros(2, 4, dtype=torch.float64)
    lp = (old - 0.1).requires_grad_(True)
    term = sapo(PolicyBatch(lp, old, adv, mask), SAPOParams())
    assert term.acting[0].all() and not term.acting[1].any()  # row 0 selected by its mean (+0.1)
    assert float(aggregate(term.per_token, term.mask, term.agg_mode).detach()) == pytest.approx(0.1)
    # The official code's reading (the first token's advantage, −0.2): row 0 not selected, nothing acts.
    official = sapo(PolicyBatch(lp, old, adv[:, 0], mask), SAPOParams())
    assert not official.acting.any()
    assert float(aggregate(official.per_token, official.mask, official.agg_mode).detach()) == 0.0
