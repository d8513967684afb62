"""The built-in registered components: base losses, penalties and advantage estimators with their params.

Each entry is a thin adapter from the typed records to the one implementation in ``losses`` / ``advantages``;
defaults are the papers' (see the docstrings of the functions they call for equations and sources).
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor

from searchrl.algorithms import losses
from searchrl.algorithms.advantages import calibadv_advantages, grpo_advantages
from searchrl.algorithms.losses import LLDS_GATES, PENALTY_NORMALIZATIONS, Term
from searchrl.algorithms.registry import (
    AdvantageBatch,
    NoParams,
    PolicyBatch,
    register_advantage_estimator,
    register_policy_loss,
)
from searchrl.settings import check, setting

# ---------------------------------------------------------------------------------------------- params


@dataclass(frozen=True)
class PPOClipParams:
    """PPO clip bounds; ε_low = ε_high = 0.2 (Search-R1), DAPO's clip-higher sets ε_high = 0.28."""

    clip_low: float = setting(0.2, help="ε_low: the ratio is clipped below at 1 − ε_low", ge=0.0, lt=1.0)
    clip_high: float = setting(0.2, help="ε_high: the ratio is clipped above at 1 + ε_high", ge=0.0)

    def __post_init__(self) -> None:
        check(self)


@dataclass(frozen=True)
class GSPOParams:
    """GSPO clip bounds on the sequence-level ratio (GSPO paper §5.1: 3e-4 and 4e-4)."""

    clip_low: float = setting(3e-4, help="ε_low on the sequence ratio s_i", ge=0.0, lt=1.0)
    clip_high: float = setting(4e-4, help="ε_high on the sequence ratio s_i", ge=0.0)

    def __post_init__(self) -> None:
        check(self)


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


@dataclass(frozen=True)
class GRPOParams:
    """GRPO advantage: (R − mean_g) / (std_g + eps)."""

    eps: float = setting(1e-6, help="added to the group std", gt=0.0)

    def __post_init__(self) -> None:
        check(self)


@dataclass(frozen=True)
class CalibAdvParams:
    """CalibAdv: rebalance ratio λ = 1.0 (official train_grpo.sh ``target_ratio``)."""

    rebalance_ratio: float = setting(1.0, help="λ: positive final-turn sum = negative sum / λ, per group", gt=0.0)
    eps: float = setting(1e-6, help="added to the group std of the GRPO step", gt=0.0)

    def __post_init__(self) -> None:
        check(self)


# ---------------------------------------------------------------------------------------------- base losses


@register_policy_loss("ppo_clip", params=PPOClipParams)
def ppo_clip_term(batch: PolicyBatch, params: PPOClipParams) -> Term:
    """PPO clipped surrogate (GRPO/DAPO): :func:`searchrl.algorithms.losses.ppo_clip`."""
    return losses.ppo_clip(
        batch.log_probs, batch.old_log_probs, batch.advantages, batch.response_mask,
        clip_low=params.clip_low, clip_high=params.clip_high,
    )


@register_policy_loss("gspo", params=GSPOParams)
def gspo_term(batch: PolicyBatch, params: GSPOParams) -> Term:
    """GSPO sequence-ratio surrogate: :func:`searchrl.algorithms.losses.gspo`."""
    return losses.gspo(
        batch.log_probs, batch.old_log_probs, batch.advantages, batch.response_mask,
        clip_low=params.clip_low, clip_high=params.clip_high,
    )


# ---------------------------------------------------------------------------------------------- penalties


@register_policy_loss("sapo", params=SAPOParams, role="penalty")
def sapo_term(batch: PolicyBatch, params: SAPOParams) -> Term:
    """SAPO penalty: :func:`searchrl.algorithms.losses.sapo`."""
    return losses.sapo(
        batch.log_probs, batch.old_log_probs, batch.advantages, batch.response_mask,
        tau=params.tau, strict_positive=params.strict_positive, normalization=params.normalization,
    )


def _llds_requires(params: LLDSParams) -> frozenset[str]:
    return frozenset({"answer_mask"}) if params.answer_weight != 1.0 else frozenset()


@register_policy_loss("llds", params=LLDSParams, role="penalty", requires=_llds_requires)
def llds_term(batch: PolicyBatch, params: LLDSParams) -> Term:
    """LLDS penalty: :func:`searchrl.algorithms.losses.llds`."""
    return losses.llds(
        batch.log_probs, batch.old_log_probs, batch.advantages, batch.response_mask,
        gate=params.gate, answer_mask=batch.answer_mask, answer_weight=params.answer_weight,
        normalization=params.normalization,
    )


# ---------------------------------------------------------------------------------------------- advantages


def _broadcast(seq: Tensor, batch: AdvantageBatch) -> Tensor:
    mask = batch.response_mask
    return seq.to(mask.device)[:, None] * mask.to(seq.dtype)  # (B, T)


@register_advantage_estimator("grpo", params=GRPOParams)
def grpo_estimator(batch: AdvantageBatch, params: GRPOParams) -> Tensor:
    """GRPO advantage broadcast over the response mask: (B, T)."""
    return _broadcast(grpo_advantages(batch.rewards, batch.group_ids, eps=params.eps), batch)


@register_advantage_estimator("dr_grpo", params=NoParams)
def dr_grpo_estimator(batch: AdvantageBatch, params: NoParams) -> Tensor:
    """Dr.GRPO advantage R − mean_g(R) (no std normalisation) broadcast over the mask: (B, T)."""
    return _broadcast(grpo_advantages(batch.rewards, batch.group_ids, norm_by_std=False), batch)


@register_advantage_estimator("calibadv", params=CalibAdvParams, requires=("turn_scores",))
def calibadv_estimator(batch: AdvantageBatch, params: CalibAdvParams) -> Tensor:
    """CalibAdv per-token advantages; see :func:`searchrl.algorithms.advantages.calibadv_advantages`."""
    return calibadv_advantages(
        batch.rewards,
        batch.group_ids,
        batch.response_mask,
        batch.turn_scores,
        rebalance_ratio=params.rebalance_ratio,
        eps=params.eps,
    )


BUILTIN_NAMES: frozenset[str] = frozenset({"ppo_clip", "gspo", "sapo", "llds", "grpo", "dr_grpo", "calibadv"})
