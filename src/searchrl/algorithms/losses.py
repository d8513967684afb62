"""Policy losses, anti-collapse penalties, KL estimators and entropy: plain functions over (B, T) tensors.

Every policy-loss term is written the way the paper states it and autograd differentiates it, and is registered
here as it is written: ``fn(batch: PolicyBatch, params) -> Term``, its params dataclass declared right above it
(the papers' defaults, written once). A :class:`Term` carries the per-token matrix P (B, T), the tokens it is
averaged over, how, and where it acted; :func:`~searchrl.algorithms.masks.aggregate` reduces every term to its
scalar, in the native trainer and in the verl plugin alike. :class:`~searchrl.algorithms.objective.Objective`
calls these functions and nothing else.

Conventions: ``log_probs`` carries the gradient (current policy π_θ), ``old_log_probs`` is the behaviour policy
π_θold of the rollout batch, ``response_mask`` is 1 on model-generated tokens and 0 on retrieved observations and
padding, ``advantages`` is (B,) (one per trajectory) or (B, T). Masked positions must hold finite numbers.
Half-precision log-probs are computed in float32.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from searchrl.algorithms.masks import expand_runs, run_layout, run_sums
from searchrl.algorithms.registry import register_policy_loss
from searchrl.algorithms.types import PolicyBatch, Term
from searchrl.settings import check, setting

KL_KINDS: tuple[str, ...] = ("kl", "abs", "mse", "low_var_kl")
LLDS_GATES: tuple[str, ...] = ("action", "response", "token")
PENALTY_NORMALIZATIONS: tuple[str, ...] = ("official", "paper")
# Bound on |log r| before exp, as verl compute_policy_loss_vanilla, so the ratio never overflows.
LOG_RATIO_BOUND = 20.0
GSPO_LOG_RATIO_MAX = 10.0

# The base losses' own metrics. Statistics of the ratio, clipping and entropy are the diagnostics' business
# (searchrl.analysis.diagnostics), computed once there from the same tensors and the terms' `acting` masks.
BASE_METRIC_KEYS: tuple[str, ...] = ("ppo_kl",)


# ---------------------------------------------------------------------------------------------- shared pieces


def compute_dtype(log_probs: Tensor) -> torch.dtype:
    """log_probs' dtype, at least float32 (bf16 log-probs are upcast)."""
    return torch.promote_types(log_probs.dtype, torch.float32)


def log_ratio(log_probs: Tensor, old_log_probs: Tensor) -> Tensor:
    """log r = log π_θ − log π_old (B, T), in the compute dtype; differentiable in ``log_probs``."""
    dtype = compute_dtype(log_probs)
    return log_probs.to(dtype) - old_log_probs.detach().to(dtype)


def importance_ratio(log_probs: Tensor, old_log_probs: Tensor) -> Tensor:
    """r = exp(clamp(log π_θ − log π_old, ±20)) (B, T), as verl; the clamp zeroes the gradient beyond ±20."""
    return log_ratio(log_probs, old_log_probs).clamp(-LOG_RATIO_BOUND, LOG_RATIO_BOUND).exp()


def token_advantages(advantages: Tensor, dtype: torch.dtype) -> Tensor:
    """Advantages broadcastable to (B, T): (B, 1) for per-trajectory advantages, else (B, T); detached."""
    a = advantages.detach().to(dtype)
    return a[:, None] if a.dim() == 1 else a


def row_advantages(advantages: Tensor, response_mask: Tensor) -> Tensor:
    """One advantage per trajectory (B,): the given (B,) values, or the masked mean of a (B, T) matrix."""
    a = advantages.detach().float()
    if a.dim() == 1:
        return a
    m = response_mask.float()
    return (a * m).sum(dim=-1) / m.sum(dim=-1).clamp(min=1.0)


def selected_rows(advantages: Tensor, response_mask: Tensor, strict_positive: bool = False) -> Tensor:
    """The trajectories a penalty may act on (B,) bool: A ≥ 0, or A > 0 with ``strict_positive``."""
    row = row_advantages(advantages, response_mask)
    return row > 0 if strict_positive else row >= 0


def masked_share(tokens: Tensor, mask: Tensor) -> Tensor:
    """Σ (tokens ∧ mask) / Σ mask: the share of masked tokens where ``tokens`` holds (0 when nothing is masked)."""
    return (tokens & mask).sum() / mask.sum().clamp(min=1)


def _clipped_surrogate(ratio: Tensor, adv: Tensor, mask: Tensor, clip_low: float, clip_high: float) -> tuple[Tensor, Tensor]:
    """PPO's max(−A·r, −A·clip(r, 1 − ε_low, 1 + ε_high)) per token and where its gradient flows (B, T) bool:
    the tokens with A ≠ 0 that the clip did not cut off (A < 0 with r < 1 − ε_low, A > 0 with r > 1 + ε_high)."""
    unclipped = -adv * ratio
    clipped = -adv * ratio.clamp(1.0 - clip_low, 1.0 + clip_high)
    per_token = torch.maximum(unclipped, clipped) * mask
    with torch.no_grad():
        cut = ((adv < 0) & (ratio < 1.0 - clip_low)) | ((adv > 0) & (ratio > 1.0 + clip_high))
        acting = mask & (adv != 0) & ~cut
    return per_token, acting


# ---------------------------------------------------------------------------------------------- PPO clip


@dataclass(frozen=True)
class PPOClipParams:
    """PPO clip bounds; ε_low = ε_high = 0.2 (Search-R1), DAPO's clip-higher sets ε_high = 0.28."""

    clip_low: float = setting(0.2, help="ε_low: the ratio is clipped below at 1 − ε_low", ge=0.0, lt=1.0)
    clip_high: float = setting(0.2, help="ε_high: the ratio is clipped above at 1 + ε_high", ge=0.0)

    def __post_init__(self) -> None:
        check(self)


@register_policy_loss("ppo_clip", params=PPOClipParams)
def ppo_clip(batch: PolicyBatch, params: PPOClipParams) -> Term:
    """PPO clipped surrogate per token, aggregated with the objective's ``loss_agg_mode`` (token-mean: GRPO).

    P_t = max(−A·r, −A·clip(r, 1 − ε_low, 1 + ε_high)),  r = exp(clamp(log π_θ − log π_old, ±20)).
    ε_low = ε_high = 0.2 is PPO/GRPO (Search-R1); ε_high = 0.28 is DAPO's clip-higher (arXiv 2503.14476 §3.1).

    Source: PPO arXiv 1707.06347 Eq. 7; code PeterGriffinJin/Search-R1@a14dc3a: verl/trainer/ppo/core_algos.py
    ``compute_policy_loss``; verl HEAD ``compute_policy_loss_vanilla`` (log r clamped to ±20 before exp, as here).
    No dual clip. Metric: ``ppo_kl``, the masked mean of −log r (Search-R1's ``ppo_kl``). ``acting``: the tokens
    whose gradient the clip did not cut off (the clip fractions of the diagnostics are read from it).
    """
    mask = batch.response_mask.bool()
    ratio = importance_ratio(batch.log_probs, batch.old_log_probs)  # (B, T)
    adv = token_advantages(batch.advantages, ratio.dtype)  # (B, 1) or (B, T)
    per_token, acting = _clipped_surrogate(ratio, adv, mask, params.clip_low, params.clip_high)
    with torch.no_grad():
        ppo_kl = -(log_ratio(batch.log_probs, batch.old_log_probs) * mask).sum() / mask.sum().clamp(min=1)
    return Term(per_token, mask, None, {"ppo_kl": ppo_kl}, acting)


# ---------------------------------------------------------------------------------------------- GSPO


@dataclass(frozen=True)
class GSPOParams:
    """GSPO clip bounds on the sequence-level ratio (GSPO paper §5.1: 3e-4 and 4e-4)."""

    clip_low: float = setting(3e-4, help="ε_low on the sequence ratio s_i", ge=0.0, lt=1.0)
    clip_high: float = setting(4e-4, help="ε_high on the sequence ratio s_i", ge=0.0)

    def __post_init__(self) -> None:
        check(self)


@register_policy_loss("gspo", params=GSPOParams)
def gspo(batch: PolicyBatch, params: GSPOParams) -> Term:
    """GSPO: PPO clipping on the sequence-level ratio, per token.

    s_i = exp( (1/|y_i|) Σ_t log r_{i,t} ) (geometric mean of the token ratios over the masked tokens), in the
    token-level stop-gradient form s_{i,t} = sg[s_i] · π_θ(y_{i,t}) / sg[π_θ(y_{i,t})] (value s_i, gradient
    s_i·∇log π_θ(y_{i,t})), log s clamped at 10; P_t = max(−A·s_{i,t}, −A·clip(s_{i,t}, 1 − ε_low, 1 + ε_high)).
    The GSPO algorithm aggregates with seq-mean-token-mean (its row of the algorithm table).

    Source: GSPO arXiv 2507.18071 §4.1 Eq. 5–7 (GSPO-token Eq. 13); code volcengine/verl HEAD
    verl/trainer/ppo/core_algos.py ``compute_policy_loss_gspo``. Differs from verl in: the aggregation mode is
    honoured (verl forces seq-mean-token-mean whatever is configured). Metric as :func:`ppo_clip`.
    """
    mask = batch.response_mask.bool()
    m = mask.to(compute_dtype(batch.log_probs))
    lr = log_ratio(batch.log_probs, batch.old_log_probs)  # (B, T)
    seq_log_ratio = (lr.detach() * m).sum(dim=-1) / m.sum(dim=-1).clamp(min=1.0)  # (B,)
    in_range = (seq_log_ratio <= GSPO_LOG_RATIO_MAX)[:, None]  # the clamp at 10 passes no gradient
    log_s = seq_log_ratio.clamp(max=GSPO_LOG_RATIO_MAX)[:, None] + (lr - lr.detach()) * in_range  # value log s_i
    seq_ratio = log_s.exp()  # (B, T)
    adv = token_advantages(batch.advantages, seq_ratio.dtype)
    per_token, acting = _clipped_surrogate(seq_ratio, adv, mask, params.clip_low, params.clip_high)
    with torch.no_grad():
        ppo_kl = -(lr * m).sum() / m.sum().clamp(min=1.0)
    return Term(per_token, mask, None, {"ppo_kl": ppo_kl}, acting & in_range)


# ---------------------------------------------------------------------------------------------- SAPO


@dataclass(frozen=True)
class SAPOParams:
    """SAPO (Search Agent Policy Optimization) penalty: γ = 0.1, τ = 1.0 (SAPO paper Table 4; official code)."""

    gamma: float = setting(0.1, help="γ: weight of the SAPO term in the loss", ge=0.0)
    tau: float = setting(1.0, help="τ: tokens with importance ratio r ≤ τ are penalised", gt=0.0)
    strict_positive: bool = setting(False, help="select trajectories with A > 0 (paper) instead of A ≥ 0 (code)")
    normalization: str = setting(
        "official", help="official: token mean over selected rows; paper: Eq. 9 per-sequence mean",
        choices=PENALTY_NORMALIZATIONS,
    )

    def __post_init__(self) -> None:
        check(self)

    @property
    def coef(self) -> float:
        return self.gamma


@register_policy_loss("sapo", params=SAPOParams, role="penalty")
def sapo(batch: PolicyBatch, params: SAPOParams) -> Term:
    """SAPO (Search Agent Policy Optimization) penalty per token, without its coefficient γ.

    Not Qwen's "Soft Adaptive Policy Optimization" (arXiv 2511.20347), which replaces clipping by a sigmoid gate.
    Differs from GRPO in: adds a conditional KL-like term that restores the likelihood of non-negative-advantage
    tokens whose importance ratio fell to r ≤ τ; the SAPO loss is ppo_clip + γ·penalty, γ = 0.1.

    P_{b,t} = 1[A_b ≥ 0] · m_{b,t} · 1[r_{b,t} ≤ τ] · (−log r_{b,t})
    penalty = Σ P / Σ_{b: A_b ≥ 0} Σ_t m_{b,t}     (token mean over every masked token of the selected rows)

    The gradient on an acting token is −1/N·∇log π_θ (constant weight, Eq. 12–13), also at r = 1 exactly, as the
    official code (``kl_term[ratio > threshold] = 0`` keeps r = τ): the gradient does not vanish when π_θ = π_old.

    Source: SAPO arXiv 2603.10069 §3.3 Eq. 9–11; code swordlidev/SAPO@d1d2d33: verl/trainer/ppo/core_algos.py
    ``compute_policy_loss`` (lines 185–208). We follow the official code rather than the paper in: rows with
    A ≥ 0 (the paper says A > 0; ``strict_positive=True`` gives the paper); r ≤ τ (paper r < τ); token mean over
    the selected rows (``normalization="paper"`` gives Eq. 9's (1/G) Σ_i (1/|o_i|) Σ_t over all G trajectories:
    seq-mean-token-mean over the response mask). With (B, T) advantages a row's advantage is its masked mean (the
    official code reads ``advantages[:, 0]``).
    """
    mask = batch.response_mask.bool()
    selected = selected_rows(batch.advantages, batch.response_mask, params.strict_positive)[:, None] & mask  # (B, T)
    lr = log_ratio(batch.log_probs, batch.old_log_probs)
    acting = selected & (lr.detach() <= math.log(params.tau))  # r ≤ τ, compared in log space
    per_token = -lr * acting
    metrics = {"active": masked_share(acting, mask), "selected": masked_share(selected, mask)}
    if params.normalization == "official":
        return Term(per_token, selected, "token-mean", metrics, acting)
    return Term(per_token, mask, "seq-mean-token-mean", metrics, acting)


# ---------------------------------------------------------------------------------------------- LLDS


def likelihood_decrease_gate(delta: Tensor, response_mask: Tensor, gate: str) -> Tensor:
    """LLDS's gate g (B, T) bool on the mask: where the term may act given Δ = log π_old − log π_θ (detached).

    ``"action"``: per contiguous run of the mask (one model turn), on iff the run's Σ_k Δ > 0 (LLDS Eq. 4);
    ``"response"``: on iff the trajectory's Σ_t Δ > 0 (Eq. 10); ``"token"``: always on (Eq. 9). Sums are taken in
    float64, as differences of running sums at the run bounds (the official code sums by scatter), so a sum within
    float rounding of 0 may gate differently.
    """
    if gate not in LLDS_GATES:
        raise ValueError(f"unknown LLDS gate {gate!r}; allowed: {list(LLDS_GATES)}")
    mask = response_mask.bool()
    if gate == "token":
        return mask
    masked_delta = delta.detach().double() * mask
    if gate == "response":
        return (masked_delta.sum(dim=-1) > 0)[:, None] & mask
    layout = run_layout(mask, torch.float64)
    run_on = (run_sums(masked_delta, layout) > 0).double()  # (B, K) one per action
    return (expand_runs(run_on, layout) > 0) & mask


@dataclass(frozen=True)
class LLDSParams:
    """LLDS penalty: λ = 0.2, action-level gate (LLDS paper §6; official train_grpo_nqhot.sh)."""

    lam: float = setting(0.2, help="λ: weight of the LLDS term in the loss (0.3 for Qwen2.5-7B-Instruct)", ge=0.0)
    gate: str = setting("action", help="granularity of the likelihood-decrease gate", choices=LLDS_GATES)
    answer_weight: float = setting(
        1.0, help="LLDS-MA weight β on answer-span tokens (1.0 = off; needs answer_mask when ≠ 1)", ge=0.0
    )
    normalization: str = setting(
        "official", help="official: divide by all masked tokens; paper: Eq. 4 mean over Y_pre",
        choices=PENALTY_NORMALIZATIONS,
    )

    def __post_init__(self) -> None:
        check(self)

    @property
    def coef(self) -> float:
        return self.lam


def _llds_requires(params: LLDSParams) -> frozenset[str]:
    return frozenset({"answer_mask"}) if params.answer_weight != 1.0 else frozenset()


@register_policy_loss("llds", params=LLDSParams, role="penalty", requires=_llds_requires)
def llds(batch: PolicyBatch, params: LLDSParams) -> Term:
    """LLDS (Lazy Likelihood-Displacement Suppression) penalty per token, without its coefficient λ.

    Differs from GRPO in: adds a likelihood-preserving term on non-negative-advantage trajectories whose token
    likelihood fell; the total is loss + λ·penalty, λ = 0.2.

    Δ = log π_old − log π_θ;  P_{b,t} = 1[A_b ≥ 0] · m · g · max(0, Δ) · w;  penalty = Σ P / Σ_{b,t} m.

    Gate g: :func:`likelihood_decrease_gate` (per action by default). LLDS-MA (Eq. 5): w = ``answer_weight`` on
    tokens where ``answer_mask`` = 1 (the final answer span), 1 elsewhere.

    Source: LLDS arXiv 2512.04220v2 §5 Eq. 4–6, App. B.3; code vengdeng/LLDS-On-Group-Relative-Policy-Optimization-
    Collapse-in-Search-R1@c19a094: verl/workers/actor/dp_actor.py ``update_policy`` (``chunk_sums_vectorized``,
    ``expand_chunk_mask``). We follow the official code rather than the paper in: the denominator is every masked
    token of the batch (``normalization="paper"`` gives Eq. 4's mean over Y_pre of per-response token means:
    seq-mean-token-mean over the selected rows). Differs from the official code in: ``answer_mask`` = 1 marks
    answer tokens (the official mask uses the inverse convention); rows are selected by their advantage (masked
    mean for (B, T) advantages) rather than per token; at Δ = 0 exactly the subgradient is 0 (relu's; the official
    ``torch.maximum`` splits it 1/2), so the penalty and its gradient vanish when log_probs == old_log_probs.
    """
    answer_mask = batch.answer_mask
    mask = batch.response_mask.bool()
    selected = selected_rows(batch.advantages, batch.response_mask)[:, None] & mask  # (B, T) Y_pre: A ≥ 0
    delta = -log_ratio(batch.log_probs, batch.old_log_probs)  # Δ (B, T)
    gated = selected & likelihood_decrease_gate(delta, mask, params.gate)
    per_token = torch.relu(delta) * gated
    if answer_mask is not None and params.answer_weight != 1.0:
        per_token = per_token * torch.where(answer_mask.bool(), params.answer_weight, 1.0).to(per_token.dtype)
    acting = gated & (delta.detach() > 0)
    metrics = {"active": masked_share(acting, mask), "selected": masked_share(selected, mask)}
    if params.normalization == "official":
        return Term(per_token, mask, "token-mean", metrics, acting)
    return Term(per_token, selected, "seq-mean-token-mean", metrics, acting)


# ---------------------------------------------------------------------------------------------- KL, entropy


def kl_penalty(log_probs: Tensor, ref_log_probs: Tensor, kind: str = "low_var_kl") -> Tensor:
    """Per-token KL estimator between π_θ and the reference policy: (B, T), differentiable in ``log_probs``.

    With x = log π_θ − log π_ref: ``kl`` (k1) = x; ``abs`` = |x|; ``mse`` (k2) = x²/2;
    ``low_var_kl`` (k3) = exp(−x) + x − 1 with −x clamped to [−20, 20] and the result to [−10, 10].
    Source: J. Schulman, "Approximating KL divergence" (2020); code volcengine/verl verl/trainer/ppo/core_algos.py
    ``kl_penalty`` (Search-R1 uses ``low_var_kl`` with coefficient 0.001).
    """
    if kind not in KL_KINDS:
        raise ValueError(f"unknown KL estimator {kind!r}; allowed: {list(KL_KINDS)}")
    if log_probs.shape != ref_log_probs.shape:
        raise ValueError(f"ref_log_probs has shape {tuple(ref_log_probs.shape)}; expected {tuple(log_probs.shape)}")
    dtype = compute_dtype(log_probs)
    x = log_probs.to(dtype) - ref_log_probs.detach().to(dtype)
    if kind == "kl":
        return x
    if kind == "abs":
        return x.abs()
    if kind == "mse":
        return 0.5 * x.square()
    reverse = (-x).clamp(-20.0, 20.0)  # log π_ref − log π_θ
    return (reverse.exp() - reverse - 1.0).clamp(-10.0, 10.0)


def entropy_from_logits(logits: Tensor, *, log_probs: Tensor | None = None, chunk_size: int | None = None) -> Tensor:
    """Categorical entropy per position: (…, V) logits → (…) entropies, e.g. (B, T, V) → (B, T).

    H = −Σ_v p_v · log p_v,  log p = log_softmax(z)  (−inf logits contribute 0). Half-precision logits are upcast
    to float32 (float64 stays float64). ``log_probs``: the caller's log_softmax of the same logits, reused instead
    of computed again (the trainer's forward has it for the token log-probs). ``chunk_size`` rows of the flattened
    (N, V) input are processed at a time to bound the softmax memory. Differentiable by autograd. The trainer's
    entropy is this function (``searchrl.training.forward``); there is no second copy.
    Source: volcengine/verl verl/utils/torch_functional.py ``entropy_from_logits``.
    """
    if logits.dim() < 1:
        raise ValueError("logits must have a vocabulary dimension")
    if chunk_size is not None and chunk_size <= 0:
        raise ValueError(f"chunk_size must be > 0, got {chunk_size}")

    def entropy(z: Tensor, lp: Tensor | None) -> Tensor:
        if lp is None:
            z = z.to(torch.promote_types(z.dtype, torch.float32))
            z = z.clamp(min=torch.finfo(z.dtype).min)  # −inf logits (masked vocabulary) → finite, probability 0
            lp = torch.log_softmax(z, dim=-1)
        return -(lp.exp() * lp).sum(dim=-1)

    if chunk_size is None:
        return entropy(logits, log_probs)
    flat = logits.reshape(-1, logits.shape[-1])  # (N, V)
    flat_lp = None if log_probs is None else log_probs.reshape(-1, logits.shape[-1])
    parts = [entropy(flat[i : i + chunk_size], None if flat_lp is None else flat_lp[i : i + chunk_size])
             for i in range(0, flat.shape[0], chunk_size)]
    out = torch.cat(parts) if parts else flat.new_zeros(0)
    return out.reshape(logits.shape[:-1])
