"""The records that cross into and out of the algorithms: what a loss term or an advantage estimator is given,
and what a loss term returns. Tensors only; shapes (B, T) over the response tokens of B trajectories.

Masks follow one convention everywhere: 1 = model-generated token (trained), 0 = retrieved observation or padding.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

from torch import Tensor

from searchrl.algorithms.masks import AGGREGATION_MODES


@dataclass(frozen=True)
class NoParams:
    """The params record of a component that has no knobs."""


def check_policy_tensors(log_probs: Tensor, old_log_probs: Tensor, advantages: Tensor, response_mask: Tensor) -> None:
    """Raise ValueError naming the tensor whose shape or dtype does not fit the (B, T) policy-loss contract."""
    if not log_probs.is_floating_point():
        raise ValueError(f"log_probs must be a floating-point tensor, got {log_probs.dtype}")
    if log_probs.dim() != 2:
        raise ValueError(f"log_probs must be (B, T), got shape {tuple(log_probs.shape)}")
    for name, tensor in (("old_log_probs", old_log_probs), ("response_mask", response_mask)):
        if tensor.shape != log_probs.shape:
            raise ValueError(
                f"{name} has shape {tuple(tensor.shape)}; expected {tuple(log_probs.shape)} like log_probs"
            )
    if advantages.shape not in (log_probs.shape[:1], log_probs.shape):
        raise ValueError(
            f"advantages has shape {tuple(advantages.shape)}; expected (B,) = {tuple(log_probs.shape[:1])} "
            f"or (B, T) = {tuple(log_probs.shape)}"
        )


@dataclass(frozen=True)
class PolicyBatch:
    """One micro-batch for the policy loss. All tensors (B, T) except ``advantages`` ((B,) or (B, T)).

    ``log_probs`` carries the gradient (π_θ); ``old_log_probs`` are the behaviour policy's (π_old); ``ref_log_probs``
    the frozen reference model's (needed when the KL coefficient is > 0); ``entropy`` the per-token policy entropy
    (with gradient, needed when the entropy coefficient is > 0); ``answer_mask`` 1 on the final ``<answer>`` span
    (for LLDS-MA). Masked positions must hold finite numbers; half-precision log-probs are computed in float32.
    """

    log_probs: Tensor
    old_log_probs: Tensor
    advantages: Tensor
    response_mask: Tensor
    ref_log_probs: Tensor | None = None
    entropy: Tensor | None = None
    answer_mask: Tensor | None = None

    def __post_init__(self) -> None:
        check_policy_tensors(self.log_probs, self.old_log_probs, self.advantages, self.response_mask)
        for name in ("ref_log_probs", "entropy", "answer_mask"):
            value = getattr(self, name)
            if value is not None and value.shape != self.log_probs.shape:
                raise ValueError(
                    f"PolicyBatch.{name} has shape {tuple(value.shape)}; expected {tuple(self.log_probs.shape)}"
                )


@dataclass(frozen=True)
class AdvantageBatch:
    """The rollout batch an advantage estimator sees: rewards (B,), group ids (B hashables), mask (B, T).

    ``group_ids`` identify the G samples of one question (e.g. ``f"{data_source}:{id}"``); ``turn_scores[b]``
    lists CalibAdv's c for trajectory b's search turns (see ``searchrl.rewards.silver_turn_scores``).
    """

    rewards: Tensor
    group_ids: Sequence[Hashable]
    response_mask: Tensor
    turn_scores: Sequence[Sequence[float]] | Tensor | None = None

    def __post_init__(self) -> None:
        if self.rewards.dim() != 1:
            raise ValueError(f"AdvantageBatch.rewards must be (B,), got shape {tuple(self.rewards.shape)}")
        batch = self.rewards.shape[0]
        if len(self.group_ids) != batch:
            raise ValueError(f"AdvantageBatch.group_ids has {len(self.group_ids)} entries; expected B = {batch}")
        if self.response_mask.dim() != 2 or self.response_mask.shape[0] != batch:
            raise ValueError(
                f"AdvantageBatch.response_mask must be (B={batch}, T), got shape {tuple(self.response_mask.shape)}"
            )
        if self.turn_scores is not None and len(self.turn_scores) != batch:
            raise ValueError(f"AdvantageBatch.turn_scores has {len(self.turn_scores)} rows; expected B = {batch}")


@dataclass(frozen=True)
class Term:
    """One loss term as a per-token matrix and how to reduce it.

    ``per_token`` (B, T): each token's contribution, differentiable in ``log_probs``, zero off ``mask``.
    ``mask`` (B, T) bool: the tokens the term is averaged over (for most terms the response mask; SAPO's official
    form averages over the tokens of the A ≥ 0 rows only). ``agg_mode``: the term's own aggregation mode, or None
    to follow the objective's ``loss_agg_mode`` (the surrogate, KL and entropy do; the penalties keep their
    papers' normalisation whatever the surrogate uses). ``metrics``: detached 0-d tensors; penalties report
    ``active`` (share of masked tokens with a non-zero gradient) and ``selected`` (share of masked tokens in the
    rows they may act on). ``acting`` (B, T) bool: the tokens where the term's gradient is non-zero — for a
    penalty where it acts, for a clipped surrogate the tokens its clip did not cut off; the diagnostics read
    where a term acted from here, never by re-deriving its rule. The scalar loss is
    ``aggregate(per_token, mask, agg_mode or loss_agg_mode)``.
    """

    per_token: Tensor
    mask: Tensor
    agg_mode: str | None = None
    metrics: dict[str, Tensor] = field(default_factory=dict)
    acting: Tensor | None = None

    def __post_init__(self) -> None:
        if self.per_token.shape != self.mask.shape:
            raise ValueError(f"Term: per_token {tuple(self.per_token.shape)} and mask {tuple(self.mask.shape)} differ")
        if self.agg_mode is not None and self.agg_mode not in AGGREGATION_MODES:
            raise ValueError(f"Term: unknown aggregation mode {self.agg_mode!r}; allowed: {list(AGGREGATION_MODES)}")
