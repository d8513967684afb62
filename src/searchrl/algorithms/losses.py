"""Policy losses, anti-collapse penalties, KL estimators and entropy — pure functions over (B, T) tensors.

Conventions: ``log_probs`` carries the gradient (current policy π_θ), ``old_log_probs`` is the behaviour policy
π_θold of the rollout batch, ``response_mask`` is 1 on model-generated tokens and 0 on retrieved observations and
padding, ``advantages`` is (B,) (one per trajectory) or (B, T). Masked positions must hold finite numbers.

How gradients are computed. Every built-in term is a closed-form function of ``log_probs`` token by token, so
its derivative is closed-form too: each ``_term`` function computes, without autograd, the value and
∂value/∂log_probs (B, T) in the same pass over the data, and :func:`attach_gradient` hands both to autograd as
one node. The derivatives are the exact ones autograd would give for the formulas in the docstrings (tested
against autograd in tests/test_algorithms.py), including the official code's choices at ties (e.g. SAPO keeps
r = τ). This avoids autograd's mask-heavy backward kernels (clamp, maximum, where), which on CPU cost more than
the forward math, and lets :class:`~searchrl.algorithms.objective.Objective` sum the base loss, penalties and
KL gradients into one (B, T) tensor (the fused path). Double backward is not supported.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from searchrl.algorithms.kernels import fused_available, llds_rows
from searchrl.algorithms.masks import (
    AGGREGATION_MODES,
    BlockRunLayout,
    RunLayout,
    aggregate,
    aggregation_weights,
    block_run_layout,
    padded_size,
    run_layout,
    run_windows,
    scale_run_spans_,
    span_sums,
)

KL_KINDS: tuple[str, ...] = ("kl", "abs", "mse", "low_var_kl")
LLDS_GATES: tuple[str, ...] = ("action", "response", "token")
PENALTY_NORMALIZATIONS: tuple[str, ...] = ("official", "paper")
# Bound on |log r| before exp, as verl compute_policy_loss_vanilla, so the ratio never overflows.
_LOG_RATIO_BOUND = 20.0
_GSPO_LOG_RATIO_MAX = 10.0

BASE_METRIC_KEYS: tuple[str, ...] = (
    "clip_frac",
    "clip_frac_low",
    "clip_frac_high",
    "ppo_kl",
    "is_ratio_mean",
    "is_ratio_min",
    "is_ratio_max",
)


# ---------------------------------------------------------------------------------------------- autograd glue


class _ScalarWithGradient(torch.autograd.Function):
    """A scalar ``value`` whose gradient with respect to ``log_probs`` is the precomputed ``gradient``."""

    @staticmethod
    def forward(ctx, log_probs: Tensor, value: Tensor, gradient: Tensor) -> Tensor:  # type: ignore[override]
        ctx.save_for_backward(gradient)
        return value.detach().clone()

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output: Tensor) -> tuple[Tensor, None, None]:  # type: ignore[override]
        (gradient,) = ctx.saved_tensors
        return gradient * grad_output, None, None


class _ElementwiseWithDerivative(torch.autograd.Function):
    """A (B, T) ``values`` whose elementwise derivative with respect to ``log_probs`` is ``derivative``."""

    @staticmethod
    def forward(ctx, log_probs: Tensor, values: Tensor, derivative: Tensor) -> Tensor:  # type: ignore[override]
        ctx.save_for_backward(derivative)
        return values.detach().clone()

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output: Tensor) -> tuple[Tensor, None, None]:  # type: ignore[override]
        (derivative,) = ctx.saved_tensors
        return grad_output * derivative, None, None


def attach_gradient(log_probs: Tensor, value: Tensor, gradient: Tensor | None) -> Tensor:
    """Return ``value`` (a detached scalar) wired into autograd with ∂value/∂log_probs = ``gradient`` (B, T)."""
    if gradient is None or not (log_probs.requires_grad and torch.is_grad_enabled()):
        return value
    return _ScalarWithGradient.apply(log_probs, value, gradient)


def _indicator_positive(x: Tensor) -> Tensor:
    """1.0 where x > 0 else 0.0, in x's dtype (float arithmetic: far cheaper on CPU than a bool mask)."""
    return torch.relu(x).sign_()


def dot(a: Tensor, b: Tensor) -> Tensor:
    """Σ a·b over all elements without materialising a·b (a, b same shape)."""
    return torch.dot(a.reshape(-1), b.reshape(-1))


# ---------------------------------------------------------------------------------------------- context


def check_policy_tensors(
    log_probs: Tensor, old_log_probs: Tensor, advantages: Tensor, response_mask: Tensor
) -> None:
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


class LossContext:
    """The quantities shared by the terms of one loss evaluation, each computed at most once (lazily).

    Detached (no graph): ``mask`` (float), ``lengths`` (B,), ``n_tokens``, ``masked_log_ratio`` = m·(log π_θ −
    log π_old) and its row sums and sign, ``ratio_detached`` = exp(clamp(log r, ±20)), ``token_advantages``
    ((B, 1) or (B, T)), ``row_advantages`` (B,), ``runs`` and ``block_runs()`` (turn layouts), ``weights`` (the
    aggregation weights of ``loss_agg_mode``: loss = Σ weights·loss_matrix). With graph, for user-registered
    terms that rely on autograd: ``log_ratio`` and ``ratio``. ``needs_grad`` says whether gradients are wanted.
    """

    def __init__(
        self,
        log_probs: Tensor,
        old_log_probs: Tensor,
        advantages: Tensor,
        response_mask: Tensor,
        *,
        loss_agg_mode: str = "token-mean",
        norm_constant: float | None = None,
    ) -> None:
        check_policy_tensors(log_probs, old_log_probs, advantages, response_mask)
        if loss_agg_mode not in AGGREGATION_MODES:
            raise ValueError(f"unknown loss aggregation mode {loss_agg_mode!r}; allowed: {list(AGGREGATION_MODES)}")
        self.log_probs = log_probs
        self.old_log_probs = old_log_probs.detach()
        self.advantages = advantages.detach()
        self.response_mask = response_mask
        self.loss_agg_mode = loss_agg_mode
        self.norm_constant = norm_constant
        # Grad-carrying values read lazily must keep their graph even when first read inside no_grad.
        self._grad_enabled = torch.is_grad_enabled()
        self.needs_grad = bool(log_probs.requires_grad and self._grad_enabled)

    # -- detached, shared ------------------------------------------------------------------------------------

    @cached_property
    def dtype(self) -> torch.dtype:
        """The compute dtype: log_probs' dtype, at least float32 (bf16 log-probs are upcast)."""
        return torch.promote_types(self.log_probs.dtype, torch.float32)

    @cached_property
    def mask(self) -> Tensor:
        return self.response_mask.to(self.dtype)  # (B, T)

    @cached_property
    def lengths(self) -> Tensor:
        return self.mask.sum(dim=-1)  # (B,) masked tokens per row

    @cached_property
    def n_tokens(self) -> Tensor:
        return self.lengths.sum()

    @cached_property
    def safe_n_tokens(self) -> Tensor:
        return self.n_tokens.clamp(min=1.0)

    @cached_property
    def ratio_detached(self) -> Tensor:
        """r = exp(clamp(log π_θ − log π_old, ±20)) (B, T); built with the masked log-ratio from one difference."""
        log_ratio = self.log_probs.detach().to(self.dtype) - self.old_log_probs.to(self.dtype)  # (B, T)
        ratio = log_ratio.clamp(-_LOG_RATIO_BOUND, _LOG_RATIO_BOUND).exp_()
        if "masked_log_ratio" not in self.__dict__:
            self.__dict__["masked_log_ratio"] = log_ratio.mul_(self.mask)  # reuse the buffer
        return ratio

    @cached_property
    def masked_log_ratio(self) -> Tensor:
        """m·(log π_θ − log π_old) (B, T), 0 off the mask."""
        return (self.log_probs.detach().to(self.dtype) - self.old_log_probs.to(self.dtype)).mul_(self.mask)

    @cached_property
    def masked_log_ratio_rows(self) -> Tensor:
        return self.masked_log_ratio.sum(dim=-1)  # (B,) Σ_t m·log r

    @cached_property
    def masked_log_ratio_sign(self) -> Tensor:
        """sign(log r) on the mask, 0 off it (B, T): +1 where r > 1, −1 where r < 1."""
        return torch.sign(self.masked_log_ratio)

    @cached_property
    def ratio_in_range(self) -> Tensor | None:
        """1 where |log r| ≤ 20 on the mask (the clamp passes the gradient), 0 beyond; None when all are in range.

        Off the mask the gradient is multiplied by 0 anyway, so only masked tokens are checked.
        """
        masked = self.masked_log_ratio
        if masked.numel() == 0:
            return None
        if max(float(masked.amax()), -float(masked.amin())) <= _LOG_RATIO_BOUND:  # the common case
            return None
        return _indicator_positive(masked.abs() - _LOG_RATIO_BOUND).neg_().add_(1.0)

    @cached_property
    def token_advantages(self) -> Tensor:
        """Advantages broadcastable to (B, T): (B, 1) for per-trajectory advantages, else (B, T)."""
        a = self.advantages.to(self.dtype)
        return a[:, None] if a.dim() == 1 else a

    @cached_property
    def row_advantages(self) -> Tensor:
        """One advantage per trajectory (B,): the given (B,) values, or the masked mean of a (B, T) matrix."""
        return self.row_advantages_using()

    def row_advantages_using(self, scratch: Tensor | None = None) -> Tensor:
        """``row_advantages``, computed once; on that first call a (B, T) matrix of advantages is masked into
        ``scratch`` (a contiguous tensor of ≥ B·T elements of the compute dtype, overwritten) rather than into a
        fresh (B, T) temporary (fresh buffers page-fault on CPU: they cost more than the arithmetic)."""
        if "row_advantages" in self.__dict__:
            return self.__dict__["row_advantages"]
        a = self.advantages.to(self.dtype)
        if a.dim() == 1:
            row = a
        else:
            batch, width = a.shape
            product = None if scratch is None else scratch.view(-1)[: batch * width].view(batch, width)
            row = torch.mul(a, self.mask, out=product).sum(dim=-1) / self.lengths.clamp(min=1.0)
        self.__dict__["row_advantages"] = row
        return row

    @cached_property
    def runs(self) -> RunLayout:
        """Where the turns (contiguous runs of the mask) are; see :func:`~searchrl.algorithms.masks.run_layout`."""
        return run_layout(self.mask, self.dtype)

    def block_runs(self, scratch: Tensor | None = None) -> BlockRunLayout:
        """Where the turns start, by blocks (see :func:`~searchrl.algorithms.masks.block_run_layout`), computed
        once per context; ``scratch`` (a flat buffer of ``padded_size(B, T)`` elements) is used, and overwritten,
        on that first call."""
        layout = self.__dict__.get("_block_runs")
        if layout is None:
            layout = block_run_layout(self.mask, dtype=self.dtype, scratch=scratch)
            self.__dict__["_block_runs"] = layout
        return layout

    @cached_property
    def weights(self) -> Tensor:
        """Aggregation weights (B, T) of ``loss_agg_mode``: aggregate(x) = Σ weights·x."""
        return aggregation_weights(self.mask, self.loss_agg_mode, norm_constant=self.norm_constant)

    # -- with graph, for user terms ---------------------------------------------------------------------------

    @cached_property
    def log_ratio(self) -> Tensor:
        with torch.set_grad_enabled(self._grad_enabled):
            return self.log_probs - self.old_log_probs  # (B, T), grad through log_probs

    @cached_property
    def ratio(self) -> Tensor:
        log_ratio = self.log_ratio
        with torch.set_grad_enabled(self._grad_enabled):
            return torch.exp(log_ratio.clamp(-_LOG_RATIO_BOUND, _LOG_RATIO_BOUND))  # (B, T)

    def masked_mean(self, values: Tensor) -> Tensor:
        """Σ m·x / Σ m over the batch; a finite 0 when nothing is masked in."""
        return (values * self.mask).sum() / self.safe_n_tokens


def _nan_like(ref: Tensor) -> Tensor:
    return torch.full((), float("nan"), dtype=ref.dtype, device=ref.device)


def _ratio_stats(ctx: LossContext) -> dict[str, Tensor]:
    """Masked mean, min and max of the token importance ratio r = π_θ/π_old (the ISDD signal, SAPO Fig. 1a)."""
    masked_ratio = ctx.ratio_detached * ctx.mask  # (B, T), 0 off the mask; r > 0 so the max is unaffected
    nan = _nan_like(masked_ratio)
    if masked_ratio.numel() == 0:
        return {"is_ratio_mean": nan, "is_ratio_min": nan, "is_ratio_max": nan}
    empty = ctx.n_tokens == 0  # no host sync: NaN is selected on the scalars
    mean = torch.where(empty, nan, masked_ratio.sum() / ctx.safe_n_tokens)
    high = torch.where(empty, nan, masked_ratio.amax())
    masked_ratio.add_(1.0 - ctx.mask, alpha=torch.finfo(masked_ratio.dtype).max)  # off-mask → huge, for the min
    return {"is_ratio_mean": mean, "is_ratio_min": torch.where(empty, nan, masked_ratio.amin()), "is_ratio_max": high}


def _clip_metrics(ctx: LossContext, clipped: Tensor, ratio_sign: Tensor) -> dict[str, Tensor]:
    """Fractions of masked tokens where the clip binds: overall, at the lower bound (A < 0), upper bound (A > 0).

    ``clipped`` (B, T) or (B, 1) is 1 where the clip binds (−A·clip(x) > −A·x for the clipped ratio x), else 0.
    The upper bound binds only where x > 1 (and A > 0), the lower only where x < 1 (and A < 0), so the split
    follows ``ratio_sign`` = sign(log x), (B, T) for the token ratio or (B, 1) for a sequence ratio:
    Σ m·clipped·sign(log x) = high − low.
    """
    denom = ctx.safe_n_tokens
    if clipped.shape[-1] == ratio_sign.shape[-1] == ctx.mask.shape[-1]:
        total = dot(clipped, ctx.mask)
        high_minus_low = dot(clipped, ratio_sign)
    else:
        rows = clipped[:, 0] * ctx.lengths if clipped.shape[-1] == 1 else torch.mul(clipped, ctx.mask).sum(dim=-1)
        total = rows.sum()
        high_minus_low = (rows * ratio_sign[:, 0]).sum()  # ratio_sign is per row here
    high = (total + high_minus_low) / 2
    return {"clip_frac": total / denom, "clip_frac_low": (total - high) / denom, "clip_frac_high": high / denom}


# ---------------------------------------------------------------------------------------------- PPO clip


def _ppo_clip(
    ctx: LossContext, clip_low: float, clip_high: float
) -> tuple[Tensor, Tensor | None, dict[str, Tensor]]:
    """Value, ∂value/∂log_probs (or None) and metrics of the PPO clipped surrogate."""
    advantages = ctx.token_advantages  # (B, 1) or (B, T)
    ratio = ctx.ratio_detached  # (B, T)
    surrogate = torch.mul(ratio, advantages).neg_()  # (B, T)  −A·r
    excess = ratio.clamp(1.0 - clip_low, 1.0 + clip_high).mul_(advantages).neg_().sub_(surrogate)  # −A·clip(r) + A·r
    excess.relu_()  # max(−A·r, −A·clip(r)) = −A·r + relu(−A·clip(r) + A·r)
    value = dot(surrogate, ctx.weights) + dot(excess, ctx.weights)
    clipped = excess.sign_()  # (B, T) 1 where the clip binds: there the max does not depend on r
    metrics = _clip_metrics(ctx, clipped, ctx.masked_log_ratio_sign)
    metrics["ppo_kl"] = -ctx.masked_log_ratio_rows.sum() / ctx.safe_n_tokens
    metrics.update(_ratio_stats(ctx))
    gradient = None
    if ctx.needs_grad:
        # ∂(−A·r)/∂log π = −A·r where the clip does not bind (ties count as unclipped: torch.maximum splits two
        # equal derivatives there), 0 where it binds.
        gradient = surrogate.mul_(clipped.neg_().add_(1.0)).mul_(ctx.weights)
        if ctx.ratio_in_range is not None:
            gradient.mul_(ctx.ratio_in_range)
    return value, gradient, metrics


def ppo_clip_loss(
    log_probs: Tensor,
    old_log_probs: Tensor,
    advantages: Tensor,
    response_mask: Tensor,
    *,
    clip_low: float = 0.2,
    clip_high: float = 0.2,
    loss_agg_mode: str = "token-mean",
    norm_constant: float | None = None,
) -> tuple[Tensor, dict[str, Tensor]]:
    """PPO clipped surrogate, token-mean by default: (scalar loss, metrics).

    L = agg_{b,t}( max(−A·r, −A·clip(r, 1 − ε_low, 1 + ε_high)) ),  r = exp(log π_θ − log π_old).
    ε_low = ε_high = 0.2 is PPO/GRPO (Search-R1); ε_high = 0.28 is DAPO's clip-higher (arXiv 2503.14476 §3.1).

    Source: PPO arXiv 1707.06347 Eq. 7; code PeterGriffinJin/Search-R1@a14dc3a: verl/trainer/ppo/core_algos.py
    ``compute_policy_loss``; verl HEAD ``compute_policy_loss_vanilla`` (log r clamped to ±20 before exp, as here).
    No dual clip. Metrics (detached): ``clip_frac`` (masked mean of 1[−A·clip(r) > −A·r]), ``clip_frac_low``
    (the part with A < 0, lower bound binding), ``clip_frac_high`` (A > 0, upper bound binding), ``ppo_kl``
    (masked mean of −log r), ``is_ratio_mean/min/max`` (masked mean/min/max of r; NaN when nothing is masked in).
    """
    ctx = LossContext(
        log_probs, old_log_probs, advantages, response_mask, loss_agg_mode=loss_agg_mode, norm_constant=norm_constant
    )
    value, gradient, metrics = _ppo_clip(ctx, clip_low, clip_high)
    return attach_gradient(log_probs, value, gradient), metrics


# ---------------------------------------------------------------------------------------------- GSPO


def _gspo(
    ctx: LossContext, clip_low: float, clip_high: float
) -> tuple[Tensor, Tensor | None, dict[str, Tensor]]:
    """Value, ∂value/∂log_probs (or None) and metrics of the GSPO sequence-ratio surrogate."""
    advantages = ctx.token_advantages  # (B, 1) or (B, T)
    seq_log_ratio = ctx.masked_log_ratio_rows / ctx.lengths.clamp(min=1.0)  # (B,) mean_t log r
    seq_ratio = torch.exp(seq_log_ratio.clamp(max=_GSPO_LOG_RATIO_MAX))[:, None]  # (B, 1) s_i
    surrogate = -advantages * seq_ratio  # (B, 1) or (B, T)  −A·s
    excess = torch.relu(-advantages * seq_ratio.clamp(1.0 - clip_low, 1.0 + clip_high) - surrogate)
    if surrogate.shape[-1] == 1:  # per-row values: Σ_t w·x = x·Σ_t w
        row_weights = ctx.weights.sum(dim=-1)  # (B,)
        value = ((surrogate[:, 0] + excess[:, 0]) * row_weights).sum()
    else:
        value = dot(surrogate, ctx.weights) + dot(excess, ctx.weights)
    clipped = excess.sign_()
    metrics = _clip_metrics(ctx, clipped, torch.sign(seq_log_ratio)[:, None])
    metrics["ppo_kl"] = -ctx.masked_log_ratio_rows.sum() / ctx.safe_n_tokens
    metrics.update(_ratio_stats(ctx))
    gradient = None
    if ctx.needs_grad:
        # s_{i,t} = sg[s_i]·π_θ(y_t)/sg[π_θ(y_t)] ⇒ ∂s_{i,t}/∂log π_θ(y_t) = s_i (0 where log s_i was clamped at 10)
        in_range = (seq_log_ratio <= _GSPO_LOG_RATIO_MAX).to(ctx.dtype)[:, None]  # (B, 1)
        gradient = ctx.weights * (surrogate * (1.0 - clipped) * in_range)
    return value, gradient, metrics


def gspo_loss(
    log_probs: Tensor,
    old_log_probs: Tensor,
    advantages: Tensor,
    response_mask: Tensor,
    *,
    clip_low: float = 3e-4,
    clip_high: float = 4e-4,
    loss_agg_mode: str = "seq-mean-token-mean",
    norm_constant: float | None = None,
) -> tuple[Tensor, dict[str, Tensor]]:
    """GSPO: PPO clipping on the sequence-level ratio: (scalar loss, metrics).

    s_i = exp( (1/|y_i|) Σ_t log r_{i,t} ) (geometric mean of the token ratios over the masked tokens);
    L = agg( max(−A·s_{i,t}, −A·clip(s_{i,t}, 1 − ε_low, 1 + ε_high)) ) with the token-level stop-gradient form
    s_{i,t} = sg[s_i] · π_θ(y_{i,t}) / sg[π_θ(y_{i,t})] (value s_i, gradient s_i·∇log π_θ(y_{i,t})), log s clamped
    at 10. Defaults ε_low = 3e-4, ε_high = 4e-4 and seq-mean-token-mean aggregation, as the GSPO paper.

    Source: GSPO arXiv 2507.18071 §4.1 Eq. 5–7 (GSPO-token Eq. 13); code volcengine/verl HEAD
    verl/trainer/ppo/core_algos.py ``compute_policy_loss_gspo``. Differs from verl in: the aggregation mode is
    honoured (verl forces seq-mean-token-mean whatever is configured). Metrics as :func:`ppo_clip_loss`;
    clip fractions refer to s, the ``is_ratio_*`` statistics to the token ratio r.
    """
    ctx = LossContext(
        log_probs, old_log_probs, advantages, response_mask, loss_agg_mode=loss_agg_mode, norm_constant=norm_constant
    )
    value, gradient, metrics = _gspo(ctx, clip_low, clip_high)
    return attach_gradient(log_probs, value, gradient), metrics


# ---------------------------------------------------------------------------------------------- SAPO


@dataclass(frozen=True)
class PenaltyTerms:
    """A penalty as a per-token matrix, for callers that aggregate it themselves (e.g. verl's ``agg_loss``).

    ``per_token`` (B, T): the penalty's contribution of each token, differentiable in ``log_probs``, zero off the
    mask and outside the selected rows; :func:`aggregate_penalty` with the penalty's row of ``PENALTY_AGGREGATION``
    gives its value (e.g. SAPO's official token mean over the selected rows' tokens). ``active_mask`` (B, T) bool:
    tokens the penalty acts on (its gradient is non-zero there). ``selection_mask`` (B, T) bool: masked tokens of
    the trajectories it may act on (A ≥ 0, or A > 0 with ``strict_positive``).
    """

    per_token: Tensor
    active_mask: Tensor
    selection_mask: Tensor


# How each penalty normalises its per-token matrix P, as (aggregation mode, the mask it is averaged over): the one
# table both engines follow. The trainer's fused terms (:func:`_sapo`, :func:`_llds`) compute exactly these values
# (tested against :func:`aggregate_penalty` as their oracle); the verl plugin aggregates with it, so verl's
# ``loss_agg_mode`` (which the surrogate follows) does not change a penalty's strength, as in the official code.
#   sapo/official: token-mean over the masked tokens of the A ≥ 0 rows (the code's masked_mean(kl[index], m[index]))
#   sapo/paper:    Eq. 9, (1/G) Σ_i (1/|o_i|) Σ_t over every trajectory with tokens
#   llds/official: token-mean over every masked token (LLDS code)
#   llds/paper:    Eq. 4, the mean over Y_pre (A ≥ 0 rows) of per-response token means
PENALTY_AGGREGATION: dict[tuple[str, str], tuple[str, str]] = {
    ("sapo", "official"): ("token-mean", "selected"),
    ("sapo", "paper"): ("seq-mean-token-mean", "response"),
    ("llds", "official"): ("token-mean", "response"),
    ("llds", "paper"): ("seq-mean-token-mean", "selected"),
}


def aggregate_penalty(terms: PenaltyTerms, response_mask: Tensor, mode: str, over: str) -> Tensor:
    """A penalty's scalar value from its per-token terms: aggregate(P, M, mode) with M the response mask
    (``over="response"``) or the masked tokens of the rows it may act on (``over="selected"``); see
    ``PENALTY_AGGREGATION`` for each penalty's (mode, over). Differentiable through ``terms.per_token``."""
    if over not in ("response", "selected"):
        raise ValueError(f"unknown penalty aggregation mask {over!r}; allowed: ['response', 'selected']")
    mask = terms.selection_mask if over == "selected" else response_mask.bool()
    return aggregate(terms.per_token, mask, mode)


def _with_derivative(log_probs: Tensor, values: Tensor, derivative: Tensor) -> Tensor:
    if not (log_probs.requires_grad and torch.is_grad_enabled()):
        return values
    return _ElementwiseWithDerivative.apply(log_probs, values, derivative)


def _row_selection(ctx: LossContext, strict_positive: bool, scratch: Tensor | None = None) -> Tensor:
    """Rows a penalty may act on (B,), 0/1: A ≥ 0, or A > 0 with ``strict_positive``; ``scratch`` as
    :meth:`LossContext.row_advantages_using`."""
    row = ctx.row_advantages_using(scratch)  # (B,)
    return ((row > 0) if strict_positive else (row >= 0)).to(ctx.dtype)  # (B,) 1 = selected


def _sapo_core(ctx: LossContext, tau: float, strict_positive: bool) -> tuple[Tensor, Tensor, Tensor]:
    """SAPO's shared pieces: kept (B, T) = m·1[r ≤ τ], Σ_t kept·log r (B,), selected rows (B,) as 0/1."""
    if tau <= 0:
        raise ValueError(f"tau must be > 0, got {tau}")
    masked_log_ratio = ctx.masked_log_ratio  # (B, T)
    above = torch.empty_like(masked_log_ratio)  # one fresh (B, T) buffer: the row selection's scratch, then kept
    selected = _row_selection(ctx, strict_positive, scratch=above)  # (B,)
    threshold = math.log(tau)
    if threshold == 0.0:  # τ = 1, the default: the excess over the threshold is log r itself
        torch.clamp_min(masked_log_ratio, 0.0, out=above)  # (B, T) m·log r where r > 1, else 0
        kept_sum = ctx.masked_log_ratio_rows - above.sum(dim=-1)  # (B,) Σ_t m·1[r ≤ 1]·log r
    else:
        torch.add(masked_log_ratio, ctx.mask, alpha=-threshold, out=above).relu_()  # > 0 where m = 1 and r > τ
    kept = above.sign_().neg_().add_(ctx.mask)  # (B, T) m·1[r ≤ τ] (r = τ kept, as the official code)
    if threshold != 0.0:
        kept_sum = torch.mul(masked_log_ratio, kept).sum(dim=-1)
    return kept, kept_sum, selected


def _sapo(
    ctx: LossContext, tau: float, strict_positive: bool, normalization: str
) -> tuple[Tensor, Tensor | None, Tensor | None, Tensor]:
    """SAPO: (value, gradient, gradient row scale, active share); ∂value/∂log_probs = gradient · scale."""
    if normalization not in PENALTY_NORMALIZATIONS:
        raise ValueError(f"unknown normalization {normalization!r}; allowed: {list(PENALTY_NORMALIZATIONS)}")
    kept, kept_sum, selected = _sapo_core(ctx, tau, strict_positive)
    if normalization == "official":
        denom = (ctx.lengths * selected).sum().clamp(min=1.0)  # masked tokens of the selected rows
        row_scale = -selected / denom  # (B,)
    else:
        n_rows = (ctx.lengths > 0).sum().clamp(min=1).to(ctx.dtype)  # G: every trajectory with tokens
        row_scale = -selected / (ctx.lengths.clamp(min=1.0) * n_rows)
    value = torch.dot(kept_sum, row_scale)  # −Σ sel·Σ_t 1[r ≤ τ]·log r / denominator
    active = torch.dot(kept.sum(dim=-1), selected) / ctx.safe_n_tokens
    if not ctx.needs_grad:
        return value, None, None, active
    return value, kept, row_scale[:, None], active  # ∂/∂log π_t = −sel_b·1[r ≤ τ]·m / denominator


def sapo_penalty(
    log_probs: Tensor,
    old_log_probs: Tensor,
    advantages: Tensor,
    response_mask: Tensor,
    *,
    tau: float = 1.0,
    strict_positive: bool = False,
    normalization: str = "official",
) -> Tensor:
    """SAPO (Search Agent Policy Optimization) penalty, without its coefficient γ: a scalar.

    Not Qwen's "Soft Adaptive Policy Optimization" (arXiv 2511.20347), which replaces clipping by a sigmoid gate.

    differs from GRPO in: adds a conditional KL-like term that restores the likelihood of non-negative-advantage
    tokens whose importance ratio fell to r ≤ τ; the total SAPO loss is ppo_clip + γ·penalty, γ = 0.1.

    penalty = Σ_{b: A_b ≥ 0} Σ_t m_{b,t} · 1[r_{b,t} ≤ τ] · (−log r_{b,t})  /  Σ_{b: A_b ≥ 0} Σ_t m_{b,t}

    The denominator counts all masked tokens of the selected trajectories, including the zeroed ones. Gradient on
    a selected token: −1/N · ∇log π_θ (constant weight, Eq. 12–13), also at r = 1 exactly, as the official code
    (``kl_term[ratio > threshold] = 0`` keeps r = τ) — so the gradient does not vanish when π_θ = π_old.

    Source: SAPO arXiv 2603.10069 §3.3 Eq. 9–11; code swordlidev/SAPO@d1d2d33: verl/trainer/ppo/core_algos.py
    ``compute_policy_loss`` (lines 185–208). We follow the official code rather than the paper in: rows with
    A ≥ 0 (the paper says A > 0; ``strict_positive=True`` gives the paper); r ≤ τ (paper r < τ); token-mean over
    the selected rows (``normalization="paper"`` gives Eq. 9's (1/G) Σ_i (1/|o_i|) Σ_t over all G trajectories).
    With (B, T) advantages a row's advantage is its masked mean (the official code reads ``advantages[:, 0]``).
    """
    ctx = LossContext(log_probs, old_log_probs, advantages, response_mask)
    value, kept, row_scale, _ = _sapo(ctx, tau, strict_positive, normalization)
    return attach_gradient(log_probs, value, None if kept is None else kept * row_scale)


def sapo_penalty_terms(
    log_probs: Tensor,
    old_log_probs: Tensor,
    advantages: Tensor,
    response_mask: Tensor,
    *,
    tau: float = 1.0,
    strict_positive: bool = False,
) -> PenaltyTerms:
    """The SAPO penalty per token: P = sel_b · m · 1[r ≤ τ] · (−log r), (B, T); see :func:`sapo_penalty`.

    Σ P / Σ_{selected rows} m is :func:`sapo_penalty` (the official normalisation); the caller aggregates.
    """
    return _sapo_terms(LossContext(log_probs, old_log_probs, advantages, response_mask), tau, strict_positive)


def _sapo_terms(ctx: LossContext, tau: float, strict_positive: bool) -> PenaltyTerms:
    kept, _, selected = _sapo_core(ctx, tau, strict_positive)
    kept.mul_(selected[:, None])  # (B, T) sel·m·1[r ≤ τ]
    values = torch.mul(ctx.masked_log_ratio, kept).neg_()  # −log r on the acting tokens
    per_token = _with_derivative(ctx.log_probs, values, torch.neg(kept))
    return PenaltyTerms(per_token, kept > 0, (ctx.mask * selected[:, None]) > 0)


# ---------------------------------------------------------------------------------------------- LLDS


def _llds_checks(ctx: LossContext, gate: str, answer_mask: Tensor | None) -> None:
    if gate not in LLDS_GATES:
        raise ValueError(f"unknown LLDS gate {gate!r}; allowed: {list(LLDS_GATES)}")
    if answer_mask is not None and answer_mask.shape != ctx.mask.shape:
        raise ValueError(f"answer_mask has shape {tuple(answer_mask.shape)}; expected {tuple(ctx.mask.shape)}")


def _gate_likelihood_decrease_(delta: Tensor, layout: BlockRunLayout) -> None:
    """Turn Δ into the action-gated decrease, in place: Δ ↦ max(0, Δ) · 1[Σ_action Δ > 0].

    ``delta``: the flat buffer of :func:`~searchrl.algorithms.masks.span_sums` holding m·Δ (B, T) row-major,
    0 in the padding. An action is a contiguous run of the mask; Δ is 0 in the gaps, so its sum over the run's
    span is its sum over the action. Passes over the buffer: the block sums, max(0, ·), the gate; no (B, T)
    temporary.
    """
    windows = run_windows(delta, layout)  # (R+1, c) Δ around each action's first token
    gate = _indicator_positive(span_sums(delta, layout, windows))  # (R+1,) 1 iff the action's Σ Δ > 0; [0] = 0
    delta.relu_()
    scale_run_spans_(delta, gate, layout, windows.relu_())


def _llds_buffer(ctx: LossContext, gate: str) -> Tensor:
    """A fresh flat buffer for :func:`_llds_decrease` (padded to whole blocks for the action gate). Fresh (B, T)
    buffers page-fault on CPU and cost more than the arithmetic, so LLDS allocates this one and uses it as the
    scratch of the row selection and of the turn layout before it holds the decrease."""
    batch, width = ctx.mask.shape
    return ctx.mask.new_empty(padded_size(batch, width) if gate == "action" else batch * width)


def _llds_decrease(ctx: LossContext, gate: str, buffer: Tensor) -> Tensor:
    """m·g·max(0, Δ) (B, T), Δ = log π_old − log π_θ, written into ``buffer`` (from :func:`_llds_buffer`)."""
    batch, width = ctx.mask.shape
    decrease = buffer[: batch * width].view(batch, width)
    if gate != "action":
        torch.neg(ctx.masked_log_ratio, out=decrease).relu_()  # (B, T) m·max(0, Δ)
        if gate == "response":
            decrease.mul_(_indicator_positive(-ctx.masked_log_ratio_rows)[:, None])  # Σ_t Δ > 0
        return decrease
    layout = ctx.block_runs(scratch=buffer)
    torch.neg(ctx.masked_log_ratio, out=decrease)
    buffer[batch * width :].zero_()
    _gate_likelihood_decrease_(buffer, layout)
    return decrease


def _token_weight(ctx: LossContext, answer_mask: Tensor | None, answer_weight: float) -> Tensor | None:
    """LLDS-MA weights w (B, T): β on the answer span, 1 elsewhere; None when they are all 1."""
    if answer_mask is None or answer_weight == 1.0:
        return None
    return answer_mask.to(ctx.dtype).mul(answer_weight - 1.0).add_(1.0)


def _llds_core(
    ctx: LossContext, gate: str, answer_mask: Tensor | None, answer_weight: float
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """LLDS's shared pieces: decrease (B, T) = m·g·max(0, Δ)·w, slope (B, T) = m·g·1[Δ > 0]·w, acting tokens per
    row (B,), selected rows (B,) as 0/1."""
    _llds_checks(ctx, gate, answer_mask)
    buffer = _llds_buffer(ctx, gate)
    selected = _row_selection(ctx, strict_positive=False, scratch=buffer)  # (B,) preserving set Y_pre: A ≥ 0
    decrease = _llds_decrease(ctx, gate, buffer)
    slope = torch.sign(decrease)  # (B, T) 1 where the term acts (Δ > 0, gate on); Δ = 0 gets subgradient 0
    acting_rows = slope.sum(dim=-1)  # (B,)
    token_weight = _token_weight(ctx, answer_mask, answer_weight)
    if token_weight is not None:
        decrease.mul_(token_weight)
        slope.mul_(token_weight)
    return decrease, slope, acting_rows, selected


def _llds(
    ctx: LossContext,
    gate: str,
    answer_mask: Tensor | None,
    answer_weight: float,
    normalization: str,
) -> tuple[Tensor, Tensor | None, Tensor | None, Tensor]:
    """LLDS: (value, gradient, gradient row scale, active share); ∂value/∂log_probs = gradient · scale."""
    if normalization not in PENALTY_NORMALIZATIONS:
        raise ValueError(f"unknown normalization {normalization!r}; allowed: {list(PENALTY_NORMALIZATIONS)}")
    _llds_checks(ctx, gate, answer_mask)
    token_weight = _token_weight(ctx, answer_mask, answer_weight)
    if token_weight is None and fused_available(ctx.masked_log_ratio):  # one fused pass on CPU (kernels.py)
        slope = torch.empty_like(ctx.masked_log_ratio)
        selected = _row_selection(ctx, strict_positive=False, scratch=slope)  # (B,) Y_pre: A ≥ 0
        slope, decrease_rows, acting_rows = llds_rows(ctx.masked_log_ratio, ctx.mask, gate, out=slope)
        return _llds_finish(ctx, normalization, selected, slope, decrease_rows, acting_rows)
    buffer = _llds_buffer(ctx, gate)
    selected = _row_selection(ctx, strict_positive=False, scratch=buffer)  # (B,) preserving set Y_pre: A ≥ 0
    decrease = _llds_decrease(ctx, gate, buffer)  # (B, T) m·g·max(0, Δ)
    if token_weight is None:
        decrease_rows = decrease.sum(dim=-1)  # (B,)
        slope = decrease.sign_()  # the decrease is no longer needed: its buffer becomes m·g·1[Δ > 0]
        acting_rows = slope.sum(dim=-1)
    else:
        slope = torch.sign(decrease)
        acting_rows = slope.sum(dim=-1)
        decrease_rows = decrease.mul_(token_weight).sum(dim=-1)
        slope.mul_(token_weight)
    return _llds_finish(ctx, normalization, selected, slope, decrease_rows, acting_rows)


def _llds_finish(
    ctx: LossContext, normalization: str, selected: Tensor, slope: Tensor, decrease_rows: Tensor, acting_rows: Tensor
) -> tuple[Tensor, Tensor | None, Tensor | None, Tensor]:
    """LLDS's value and gradient from its per-row sums (B,) and per-token slope m·g·1[Δ > 0]·w (B, T)."""
    if normalization == "official":
        row_scale = selected / ctx.safe_n_tokens  # (B,) every masked token of the batch
    else:
        n_pre = (selected * (ctx.lengths > 0)).sum().clamp(min=1.0)  # |Y_pre| (rows with tokens)
        row_scale = selected / (ctx.lengths.clamp(min=1.0) * n_pre)
    value = torch.dot(decrease_rows, row_scale)
    share = torch.dot(acting_rows, selected) / ctx.safe_n_tokens
    if not ctx.needs_grad:
        return value, None, None, share
    return value, slope, -row_scale[:, None], share  # ∂max(0, Δ)/∂log π = −1[Δ > 0]


def llds_penalty(
    log_probs: Tensor,
    old_log_probs: Tensor,
    advantages: Tensor,
    response_mask: Tensor,
    *,
    gate: str = "action",
    answer_mask: Tensor | None = None,
    answer_weight: float = 1.0,
    normalization: str = "official",
) -> Tensor:
    """LLDS (Lazy Likelihood-Displacement Suppression) penalty, without its coefficient λ: a scalar.

    differs from GRPO in: adds a likelihood-preserving term on non-negative-advantage trajectories whose token
    likelihood fell; the total is loss + λ·penalty, λ = 0.2 (applied by the loss configuration).

    Δ = log π_old − log π_θ;  penalty = Σ_{b: A_b ≥ 0} Σ_t m·g·max(0, Δ)·w  /  Σ_{b,t} m  (all masked tokens).

    Gate g: ``"action"`` — per contiguous run of the mask (one model turn), on iff the run's Σ_k Δ > 0 (Eq. 4);
    ``"response"`` — on iff the trajectory's Σ_t Δ > 0 (Eq. 10); ``"token"`` — always on (Eq. 9). LLDS-MA
    (Eq. 5): w = ``answer_weight`` on tokens where ``answer_mask`` = 1 (the final answer span), 1 elsewhere.

    Source: LLDS arXiv 2512.04220v2 §5 Eq. 4–6, App. B.3; code vengdeng/LLDS-On-Group-Relative-Policy-Optimization-
    Collapse-in-Search-R1@c19a094: verl/workers/actor/dp_actor.py ``update_policy`` (``chunk_sums_vectorized``,
    ``expand_chunk_mask``). We follow the official code rather than the paper in: the denominator is every masked
    token of the batch (``normalization="paper"`` gives Eq. 4's mean over Y_pre of per-response token means).
    Differs from the official code in: ``answer_mask`` = 1 marks answer tokens (the official mask uses the inverse
    convention); rows are selected by their advantage (masked mean for (B, T) advantages) rather than per token;
    at Δ = 0 exactly the subgradient is 0 (the official ``torch.maximum`` splits it 1/2), so the penalty and its
    gradient vanish when log_probs == old_log_probs; an action's Σ Δ is summed in float64 (vectorised) by the
    fused CPU kernel (:mod:`searchrl.algorithms.kernels`), or elsewhere as a difference of float64 running sums of
    32-token block sums (the official code sums by scatter), so a sum within float rounding of 0 may gate
    differently.
    """
    ctx = LossContext(log_probs, old_log_probs, advantages, response_mask)
    value, slope, row_scale, _ = _llds(ctx, gate, answer_mask, answer_weight, normalization)
    return attach_gradient(log_probs, value, None if slope is None else slope * row_scale)


def llds_penalty_terms(
    log_probs: Tensor,
    old_log_probs: Tensor,
    advantages: Tensor,
    response_mask: Tensor,
    *,
    gate: str = "action",
    answer_mask: Tensor | None = None,
    answer_weight: float = 1.0,
) -> PenaltyTerms:
    """The LLDS penalty per token: P = sel_b · m · g · max(0, Δ) · w, (B, T); see :func:`llds_penalty`.

    Token-mean of P over all masked tokens is :func:`llds_penalty` (the official normalisation).
    """
    ctx = LossContext(log_probs, old_log_probs, advantages, response_mask)
    return _llds_terms(ctx, gate, answer_mask, answer_weight)


def _llds_terms(ctx: LossContext, gate: str, answer_mask: Tensor | None, answer_weight: float) -> PenaltyTerms:
    decrease, slope, _, selected = _llds_core(ctx, gate, answer_mask, answer_weight)
    row = selected[:, None]
    decrease.mul_(row)
    slope.mul_(row)
    per_token = _with_derivative(ctx.log_probs, decrease, torch.neg(slope))
    return PenaltyTerms(per_token, slope > 0, (ctx.mask * row) > 0)


# ---------------------------------------------------------------------------------------------- KL, entropy


def kl_terms(
    log_probs: Tensor, ref_log_probs: Tensor, kind: str, *, with_derivative: bool = True
) -> tuple[Tensor, Tensor | None]:
    """Per-token KL estimate (B, T) and its derivative with respect to ``log_probs`` (or None); no autograd.

    With x = log π_θ − log π_ref: ``kl`` (k1) = x; ``abs`` = |x|; ``mse`` (k2) = x²/2;
    ``low_var_kl`` (k3) = exp(y) − y − 1 with y = clamp(−x, −20, 20), the result clamped to [−10, 10].
    """
    if kind not in KL_KINDS:
        raise ValueError(f"unknown KL estimator {kind!r}; allowed: {list(KL_KINDS)}")
    if log_probs.shape != ref_log_probs.shape:
        raise ValueError(f"ref_log_probs has shape {tuple(ref_log_probs.shape)}; expected {tuple(log_probs.shape)}")
    dtype = torch.promote_types(log_probs.dtype, torch.float32)  # bf16 log-probs are upcast
    diff = log_probs.detach().to(dtype) - ref_log_probs.detach().to(dtype)  # (B, T)
    if kind == "kl":
        return diff, (torch.ones_like(diff) if with_derivative else None)
    if kind == "abs":
        return diff.abs(), (torch.sign(diff) if with_derivative else None)
    if kind == "mse":
        return 0.5 * diff.square(), (diff if with_derivative else None)
    # low_var_kl, computed in place on fresh temporaries
    beyond = None
    if diff.numel() and max(float(diff.amax()), -float(diff.amin())) > 20.0:  # rare: the ±20 clamp binds
        beyond = _indicator_positive(diff.abs() - 20.0)
    reverse = diff.neg_().clamp_(-20.0, 20.0)  # log π_ref − log π_θ, clamped
    exp_reverse = torch.exp(reverse)
    k3 = torch.sub(exp_reverse, reverse).sub_(1.0)  # ≥ 0, so only the upper clamp can bind
    capped = None
    if k3.numel() and float(k3.amax()) > 10.0:
        capped = _indicator_positive(k3 - 10.0)
    values = k3.clamp_(max=10.0)
    if not with_derivative:
        return values, None
    # ∂k3/∂log π_θ = 1 − exp(reverse), zero where either clamp binds (strictly beyond its bound)
    derivative = exp_reverse.neg_().add_(1.0)
    for zeroed in (beyond, capped):
        if zeroed is not None:
            derivative.mul_(zeroed.neg_().add_(1.0))
    return values, derivative


def kl_penalty(log_probs: Tensor, ref_log_probs: Tensor, kind: str = "low_var_kl") -> Tensor:
    """Per-token KL estimator between π_θ and the reference policy: (B, T), differentiable in ``log_probs``.

    With x = log π_θ − log π_ref: ``kl`` (k1) = x; ``abs`` = |x|; ``mse`` (k2) = x²/2;
    ``low_var_kl`` (k3) = exp(−x) + x − 1 with −x clamped to [−20, 20] and the result to [−10, 10].
    Source: J. Schulman, "Approximating KL divergence" (2020); code volcengine/verl verl/trainer/ppo/core_algos.py
    ``kl_penalty`` (Search-R1 uses ``low_var_kl`` with coefficient 0.001).
    """
    needs_grad = log_probs.requires_grad and torch.is_grad_enabled()
    values, derivative = kl_terms(log_probs, ref_log_probs, kind, with_derivative=needs_grad)
    if not needs_grad:
        return values
    return _ElementwiseWithDerivative.apply(log_probs, values, derivative)


def _entropy_chunk(logits: Tensor) -> Tensor:
    z = logits.float() if logits.dtype in (torch.float16, torch.bfloat16) else logits
    z = z.clamp(min=torch.finfo(z.dtype).min)  # −inf logits (masked vocabulary) → finite, probability 0
    probs = torch.softmax(z, dim=-1)
    return torch.logsumexp(z, dim=-1) - (probs * z).sum(dim=-1)


def entropy_from_logits(logits: Tensor, *, chunk_size: int | None = None) -> Tensor:
    """Categorical entropy per position: (…, V) logits → (…) entropies, e.g. (B, T, V) → (B, T).

    H = logsumexp(z) − Σ_v softmax(z)_v · z_v (stable for large logits; −inf logits contribute 0).
    ``chunk_size`` rows of the flattened (N, V) input are processed at a time to bound the softmax memory;
    half-precision logits are upcast per chunk. Differentiable by autograd. Source: volcengine/verl
    verl/utils/torch_functional.py ``entropy_from_logits``.
    """
    if logits.dim() < 1:
        raise ValueError("logits must have a vocabulary dimension")
    if chunk_size is None:
        return _entropy_chunk(logits)
    if chunk_size <= 0:
        raise ValueError(f"chunk_size must be > 0, got {chunk_size}")
    flat = logits.reshape(-1, logits.shape[-1])  # (N, V)
    parts = [_entropy_chunk(flat[i : i + chunk_size]) for i in range(0, flat.shape[0], chunk_size)]
    out = torch.cat(parts) if parts else flat.new_zeros(0)
    return out.reshape(logits.shape[:-1])


__all__ = [
    "BASE_METRIC_KEYS",
    "KL_KINDS",
    "LLDS_GATES",
    "PENALTY_NORMALIZATIONS",
    "LossContext",
    "PENALTY_AGGREGATION",
    "PenaltyTerms",
    "aggregate_penalty",
    "attach_gradient",
    "dot",
    "entropy_from_logits",
    "gspo_loss",
    "kl_penalty",
    "kl_terms",
    "llds_penalty",
    "llds_penalty_terms",
    "ppo_clip_loss",
    "sapo_penalty",
    "sapo_penalty_terms",
]
