"""Advantage estimators: GRPO (and Dr.GRPO) and CalibAdv (its per-turn scores c come from
`searchrl.rewards.silver_turn_scores`).

Pure functions over tensors and plain Python values; no model, no I/O. Each estimator is registered as it is
written, ``fn(batch: AdvantageBatch, params) -> Tensor (B, T)``, its params declared beside it;
:func:`grpo_advantages` is the one group normalisation they share.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from searchrl.algorithms.masks import expand_runs, group_index, run_layout, run_sums
from searchrl.algorithms.registry import register_advantage_estimator
from searchrl.algorithms.types import AdvantageBatch, NoParams
from searchrl.settings import check, setting

# CalibAdv stores "no credit" as 1e-6 and treats anything at or below it as no credit.
NO_CREDIT = 1e-6


def _as_reward_tensor(rewards: Tensor | Sequence[float]) -> Tensor:
    r = rewards if isinstance(rewards, Tensor) else torch.tensor(list(rewards), dtype=torch.float32)
    if r.dim() != 1:
        raise ValueError(f"rewards must be one value per trajectory, shape (B,), got {tuple(r.shape)}")
    if not r.is_floating_point():
        r = r.to(torch.float32)
    if not torch.isfinite(r).all():
        bad = int((~torch.isfinite(r)).nonzero()[0])
        raise ValueError(f"rewards[{bad}] is {r[bad].item()}; rewards must be finite")
    return r


def grpo_advantages(
    rewards: Tensor | Sequence[float],
    group_ids: Sequence[Hashable],
    *,
    norm_by_std: bool = True,
    eps: float = 1e-6,
) -> Tensor:
    """GRPO outcome advantage, one value per trajectory: (B,).

    Â_i = (R_i − mean_g(R)) / (std_g(R) + eps), std the unbiased (n−1) estimator; a group of one uses mean 0 and
    std 1. ``norm_by_std=False`` gives Dr.GRPO's Â_i = R_i − mean_g(R) (arXiv 2503.20783 §3.2).

    Source: GRPO, DeepSeekMath arXiv 2402.03300 §4.1.2; code PeterGriffinJin/Search-R1@a14dc3a:
    verl/trainer/ppo/core_algos.py ``compute_grpo_outcome_advantage`` (same in verl HEAD).
    ``group_ids`` are hashables shared by the G samples of one question (a question uid), never a per-source row
    index. Vectorised with index_add over groups (no Python loop over groups).

    Differs from the official code in: a group whose rewards are all equal gets exactly 0 (the official mean can
    leave ±1e-8 rounding residue, whose sign would flip the A ≥ 0 selections of SAPO and LLDS); statistics are
    computed in float64.
    """
    r = _as_reward_tensor(rewards)
    if len(group_ids) != r.shape[0]:
        raise ValueError(f"group_ids has {len(group_ids)} entries but rewards has {r.shape[0]}")
    gid, n_groups = group_index(group_ids)
    gid = gid.to(r.device)
    r64 = r.to(torch.float64)  # (B,)
    count = torch.zeros(n_groups, dtype=torch.float64, device=r.device).index_add_(0, gid, torch.ones_like(r64))
    mean = torch.zeros_like(count).index_add_(0, gid, r64) / count  # (G,)
    g_max = torch.full_like(count, -torch.inf).scatter_reduce(0, gid, r64, reduce="amax")
    g_min = torch.full_like(count, torch.inf).scatter_reduce(0, gid, r64, reduce="amin")
    constant = (g_max == g_min)[gid]  # (B,) all rewards of the group equal
    single = (count == 1)[gid]  # (B,)
    centred = torch.where(single, r64, r64 - mean[gid])  # singleton: mean 0
    centred = torch.where(constant & ~single, torch.zeros_like(centred), centred)
    if norm_by_std:
        var = torch.zeros_like(count).index_add_(0, gid, centred**2) / (count - 1).clamp(min=1)  # (G,)
        std = torch.where(single, torch.ones_like(r64), var.sqrt()[gid])  # (B,)
        centred = centred / (std + eps)
    return centred.to(r.dtype)


# ---------------------------------------------------------------------------------------------- GRPO, Dr.GRPO


def _broadcast(seq: Tensor, batch: AdvantageBatch) -> Tensor:
    mask = batch.response_mask
    return seq.to(mask.device)[:, None] * mask.to(seq.dtype)  # (B, T)


@dataclass(frozen=True)
class GRPOParams:
    """GRPO advantage: (R − mean_g) / (std_g + eps)."""

    eps: float = setting(1e-6, help="added to the group std", gt=0.0)

    def __post_init__(self) -> None:
        check(self)


@register_advantage_estimator("grpo", params=GRPOParams)
def grpo(batch: AdvantageBatch, params: GRPOParams) -> Tensor:
    """GRPO: :func:`grpo_advantages` (Â_i, one per trajectory) on every sampled token of trajectory i: (B, T)."""
    return _broadcast(grpo_advantages(batch.rewards, batch.group_ids, eps=params.eps), batch)


@register_advantage_estimator("dr_grpo", params=NoParams)
def dr_grpo(batch: AdvantageBatch, params: NoParams) -> Tensor:
    """Dr.GRPO: Â_i = R_i − mean_g(R), no std normalisation (arXiv 2503.20783 §3.2), on every sampled token: (B, T)."""
    return _broadcast(grpo_advantages(batch.rewards, batch.group_ids, norm_by_std=False), batch)


# ---------------------------------------------------------------------------------------------- CalibAdv


def _turn_score_table(
    turn_scores: Sequence[Sequence[float]] | Tensor, n_runs: Tensor, width: int
) -> Tensor:
    """(B, width) float64 table of c_{b,t} (turn t = 1..width in columns 0..width-1), zero-padded and validated."""
    batch = n_runs.shape[0]
    device = n_runs.device
    if isinstance(turn_scores, Tensor):
        if turn_scores.dim() != 2 or turn_scores.shape[0] != batch:
            raise ValueError(f"turn_scores tensor must be (B={batch}, K), got {tuple(turn_scores.shape)}")
        given = turn_scores.to(device=device, dtype=torch.float64)
        turn = torch.arange(1, given.shape[1] + 1, device=device)  # (K',)
        beyond = (given != 0) & (turn[None, :] > n_runs[:, None])  # (B, K')
        lengths = None
    else:
        if len(turn_scores) != batch:
            raise ValueError(f"turn_scores has {len(turn_scores)} rows but the batch has {batch}")
        lengths = torch.tensor([len(s) for s in turn_scores], dtype=torch.long)
        given = torch.zeros(batch, int(lengths.max()) if batch else 0, dtype=torch.float64)
        flat = [float(c) for s in turn_scores for c in s]
        if flat:
            rows = torch.repeat_interleave(torch.arange(batch), lengths)
            starts = torch.cumsum(lengths, 0) - lengths  # (B,)
            cols = torch.arange(len(flat)) - torch.repeat_interleave(starts, lengths)
            given[rows, cols] = torch.tensor(flat, dtype=torch.float64)
        given = given.to(device)
        beyond = (lengths.to(device) > n_runs)[:, None]  # (B, 1)
    if beyond.any():
        row = int(beyond.any(dim=1).nonzero()[0])
        count = int(lengths[row]) if lengths is not None else "nonzero"
        raise ValueError(
            f"turn_scores[{row}] scores more turns ({count}) than response_mask row {row} has "
            f"contiguous runs ({int(n_runs[row])}); give one score per search turn"
        )
    outside = (given < 0) | (given > 1) | ~torch.isfinite(given)
    if outside.any():
        row = int(outside.any(dim=1).nonzero()[0])
        raise ValueError(f"turn_scores[{row}] has a value outside [0, 1]: {given[row].tolist()}")
    table = torch.zeros(batch, width, dtype=torch.float64, device=device)
    k = min(width, given.shape[1])
    table[:, :k] = given[:, :k]
    return table


@dataclass(frozen=True)
class CalibAdvParams:
    """CalibAdv: rebalance ratio λ = 1.0 (official train_grpo.sh ``target_ratio``)."""

    rebalance_ratio: float = setting(1.0, help="λ: positive final-turn sum = negative sum / λ, per group", gt=0.0)
    eps: float = setting(1e-6, help="added to the group std of the GRPO step", gt=0.0)

    def __post_init__(self) -> None:
        check(self)


@register_advantage_estimator("calibadv", params=CalibAdvParams, requires=("turn_scores",))
def calibadv(batch: AdvantageBatch, params: CalibAdvParams) -> Tensor:
    """CalibAdv per-token advantages: GRPO, soft penalty on search turns, in-group final-turn rebalance. (B, T).

    differs from GRPO in: (1) negative trajectories' search turns credited with silver documents are penalised
    less; (2) final-turn advantages are rebalanced per group.

    Turns are the contiguous runs of ``response_mask`` (see :func:`turn_ids`): runs 1..K_b−1 are search turns,
    run K_b is the final (answer) turn.

    1. Â_b = GRPO advantage (:func:`grpo_advantages`, unbiased std + eps).
    2. Soft penalty: for Â_b < 0 and each search turn t with c_{b,t} > 1e-6, A_{b,k} = Â_b·(1 − c_{b,t}) on the
       tokens k of turn t; every other token keeps Â_b.
    3. Rebalance (per group g, final-turn tokens K_g): P_g = Σ_{K_g, A>0} A, N_g = −Σ_{K_g, A<0} A;
       positive final-turn A ← A·N_g / (λ·P_g) with λ = ``rebalance_ratio``, so Σpos = N_g/λ; if P_g = 0 or
       N_g = 0, every final-turn advantage of the group becomes 0. Negative final-turn advantages, and positive
       ones on search turns, are unchanged. Sums run over tokens, so longer answer turns weigh more.

    ``batch.turn_scores[b]`` lists c_{b,t} ∈ [0, 1] for trajectory b's search turns (``[]`` = none; see
    `searchrl.rewards.silver_turn_scores`), or a zero-padded (B, K) tensor; None means no soft penalty. A score given for the
    final run is ignored (the final run is the answer segment by definition, as in the official code).

    Source: CalibAdv, arXiv 2604.18235 (paper body not available; reconstructed from the code and the authors'
    overview figure); code wujwyi/CalibAdv@6ae1c4e: verl/trainer/ppo/core_algos.py
    ``compute_grpo_outcome_softpenalty_advantage`` (soft penalty first) and ``advantage_scale`` (only_answer,
    in_group, adjust_positive branch: factor 1/(ratio·target_ratio)). Vectorised: per-turn factors are gathered
    by turn id and group sums use index_add; the only Python loop is over rows when reading ``turn_scores``.
    Differs from the official code in: sums P_g, N_g are formed per trajectory as Â_b·|final turn| (identical in
    exact arithmetic, since the final turn carries the constant Â_b).
    """
    rewards, group_ids, response_mask, turn_scores = batch.rewards, batch.group_ids, batch.response_mask, batch.turn_scores
    rebalance_ratio = params.rebalance_ratio
    batch = response_mask.shape[0]
    seq = grpo_advantages(rewards, group_ids, eps=params.eps)  # (B,)
    if seq.shape[0] != batch:
        raise ValueError(f"rewards has {seq.shape[0]} entries but response_mask has {batch} rows")
    device = response_mask.device
    seq64 = seq.to(device=device, dtype=torch.float64)
    gid, n_groups = group_index(group_ids)
    gid = gid.to(device)

    mask_f = response_mask.to(seq.dtype)  # (B, T)
    layout = run_layout(mask_f, seq.dtype)
    n_runs, k_max = layout.n_runs, layout.k_max
    run_lengths = run_sums(mask_f, layout).to(torch.float64)  # (B, K) tokens per turn
    final_len = run_lengths.gather(1, (n_runs - 1).clamp(min=0)[:, None]).squeeze(1) if k_max else seq64 * 0
    final_len = final_len * (n_runs > 0)  # (B,)

    # Per-row, per-turn multiplier on Â_b: column k−1 for turn k.
    factor = torch.ones(batch, k_max, dtype=torch.float64, device=device)  # (B, K)
    if turn_scores is not None:
        scores = _turn_score_table(turn_scores, n_runs, k_max)  # (B, K)
        turn = torch.arange(1, k_max + 1, device=device)  # (K,)
        is_search = turn[None, :] < n_runs[:, None]  # (B, K)
        soft = (seq64 < 0)[:, None] & is_search & (scores > NO_CREDIT)  # (B, K)
        factor = torch.where(soft, 1.0 - scores, factor)

    # Final-turn rebalance, per group: P_g, N_g over final-turn tokens.
    final_sum = seq64 * final_len  # (B,) Σ of A over the final turn (A is constant Â_b there)
    pos = torch.zeros(n_groups, dtype=torch.float64, device=device).index_add_(0, gid, final_sum.clamp(min=0))
    neg = torch.zeros(n_groups, dtype=torch.float64, device=device).index_add_(0, gid, (-final_sum).clamp(min=0))
    both = (pos > 0) & (neg > 0)  # (G,)
    pos_scale = torch.where(both, neg / (rebalance_ratio * pos.clamp(min=torch.finfo(torch.float64).tiny)), 0.0)
    neg_scale = both.to(torch.float64)
    final_factor = torch.where(seq64 > 0, pos_scale[gid], neg_scale[gid])  # (B,)
    if k_max:
        has_runs = n_runs > 0
        factor[has_runs, n_runs[has_runs] - 1] = final_factor[has_runs]
    factor.mul_(seq64[:, None])  # (B, K) the advantage of each turn

    adv = expand_runs(factor.to(seq.dtype), layout)  # (B, T); gaps carry the previous turn's value ...
    return adv.mul_(mask_f)  # ... and are zeroed here
