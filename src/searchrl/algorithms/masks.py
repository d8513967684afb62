"""Mask helpers shared by the losses and the advantage estimators: turn ids, group ids, loss aggregation.

Masks follow one convention everywhere: 1 = model-generated token (trained), 0 = retrieved observation or
padding. A model *turn* (the papers' "action") is one contiguous run of 1s, since observations separate turns.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

AGGREGATION_MODES: tuple[str, ...] = (
    "token-mean",
    "seq-mean-token-sum",
    "seq-mean-token-mean",
    "seq-mean-token-sum-norm",
)


@dataclass(frozen=True)
class RunLayout:
    """Where the contiguous runs of 1s of a (B, T) mask sit, for per-run sums and per-run broadcasts.

    ``counter`` (B, T) float: number of runs started at or before each position (the turn id on the mask, the
    previous run's id in the gaps after it, 0 before the first run). ``bounds`` (B, K+1) long: ``bounds[:, k]``
    is the first position of run k+1 (T when the row has fewer runs), so run k covers positions
    [bounds[:, k−1], bounds[:, k]) — its tokens and the gap after them. ``n_runs`` (B,) long.

    Built from float cumulative sums and a batched binary search: on CPU this is several times faster than
    scatter/gather over (B, T) int64 turn ids (which also need their own (B, T) index tensors).
    """

    counter: Tensor
    bounds: Tensor
    n_runs: Tensor

    @property
    def k_max(self) -> int:
        return self.bounds.shape[1] - 1


def run_layout(mask: Tensor, dtype: torch.dtype = torch.float32) -> RunLayout:
    """The :class:`RunLayout` of a (B, T) 0/1 mask."""
    if mask.dim() != 2:
        raise ValueError(f"mask must be (B, T), got shape {tuple(mask.shape)}")
    batch, width = mask.shape
    m = mask.to(dtype)
    counter = m.clone()
    if width > 1:
        counter[:, 1:] -= m[:, :-1]  # +1 at each run's first token, −1 after its last, 0 elsewhere
    counter.relu_().cumsum_(dim=1)  # (B, T)
    n_runs = counter[:, -1].long() if width else torch.zeros(batch, dtype=torch.long, device=mask.device)
    k_max = int(n_runs.max()) if batch else 0
    queries = torch.arange(k_max + 1, dtype=dtype, device=mask.device).add_(0.5).expand(batch, -1).contiguous()
    bounds = torch.searchsorted(counter, queries)  # (B, K+1) first position with counter > k
    return RunLayout(counter=counter, bounds=bounds, n_runs=n_runs)


def run_sums(values: Tensor, layout: RunLayout) -> Tensor:
    """Σ of ``values`` (B, T) over each run's span: (B, K), column k−1 for run k (0 for missing runs).

    ``values`` must be zero off the mask (gaps belong to the span of the run before them). Computed as
    differences of the running sum at the run bounds, so a sum that is exactly 0 stays 0.
    """
    if layout.k_max == 0:
        return values.new_zeros(values.shape[0], 0)
    running = torch.cumsum(values, dim=1)  # (B, T)
    before = (layout.bounds - 1).clamp_(min=0)  # (B, K+1) last position of run k's span
    totals = running.gather(1, before) * (layout.bounds > 0)  # (B, K+1) Σ through the end of run k's span
    return totals[:, 1:] - totals[:, :-1]


def expand_runs(table: Tensor, layout: RunLayout) -> Tensor:
    """Broadcast a per-run table (B, K) to tokens: (B, T) with ``table[b, k−1]`` on run k's span, 0 before run 1.

    Gaps carry the preceding run's value; multiply by the mask to zero them.
    """
    batch, width = layout.counter.shape
    out = torch.zeros(batch, width, dtype=table.dtype, device=table.device)
    if layout.k_max == 0 or width == 0:
        return out
    starts = layout.bounds[:, :-1]  # (B, K) first token of each run (T for missing runs)
    steps = table.clone()
    steps[:, 1:] -= table[:, :-1]  # change of value at each run's first token
    steps.mul_(starts < width)  # missing runs change nothing
    out.scatter_add_(1, starts.clamp(max=width - 1), steps)
    return out.cumsum_(dim=1)


def turn_ids(mask: Tensor) -> Tensor:
    """Number the contiguous runs of 1s in each row: 1..K on run tokens, 0 elsewhere.

    ``turn_ids[b, t] = Σ_{s ≤ t} 1[m_{b,s} = 1 ∧ m_{b,s-1} = 0] · m_{b,t}`` — (B, T) long.
    Same chunks as LLDS's ``chunk_sums_vectorized`` (vengdeng/LLDS…@c19a094:verl/workers/actor/dp_actor.py) and
    CalibAdv's ``segment`` (wujwyi/CalibAdv@6ae1c4e:verl/trainer/main_ppo_format.py).
    """
    layout = run_layout(mask)
    return layout.counter.mul_(mask.to(layout.counter.dtype)).long()  # (B, T)


def group_index(group_ids: Sequence[Hashable]) -> tuple[Tensor, int]:
    """Map hashable group ids to dense indices 0..G-1 in order of first appearance: ((B,) long, G)."""
    index: dict[Hashable, int] = {}
    try:
        dense = [index.setdefault(g, len(index)) for g in group_ids]
    except TypeError as exc:  # unhashable id
        raise ValueError(f"group_ids must be hashable (a question uid), got {exc}") from None
    return torch.tensor(dense, dtype=torch.long), len(index)


def aggregation_weights(mask: Tensor, mode: str = "token-mean", *, norm_constant: float | None = None) -> Tensor:
    """Per-token weights W (B, T) such that the aggregated loss is Σ_{b,t} W·x; zero off the mask.

    - ``token-mean``: W = m / Σ m (Search-R1, DAPO).
    - ``seq-mean-token-sum``: W = m / B'.
    - ``seq-mean-token-mean``: W = m / (B' · Σ_t m_b) (GSPO).
    - ``seq-mean-token-sum-norm``: W = m / (B' · C), C = ``norm_constant`` (Dr.GRPO's constant, e.g. the maximum
      response length); when None, C = T, the padded width, as verl does — then the value depends on padding,
      so set the constant for Dr.GRPO.

    B' is the number of rows with at least one masked token, so fully padded rows do not dilute the mean (as
    verl's pad-aware ``agg_loss``, volcengine/verl HEAD: verl/trainer/ppo/core_algos.py). Differs from verl in:
    an empty mask gives all-zero weights, hence a finite 0 loss (verl's ``masked_mean`` divides by zero there).
    """
    if mode not in AGGREGATION_MODES:
        raise ValueError(f"unknown loss aggregation mode {mode!r}; allowed: {list(AGGREGATION_MODES)}")
    m = mask if mask.is_floating_point() else mask.to(torch.float32)  # (B, T)
    if mode == "token-mean":
        return m / m.sum().clamp(min=1.0)
    row_tokens = m.sum(dim=-1)  # (B,)
    n_rows = (row_tokens > 0).sum().clamp(min=1).to(m.dtype)
    if mode == "seq-mean-token-sum":
        return m / n_rows
    if mode == "seq-mean-token-mean":
        return m * (1.0 / (row_tokens.clamp(min=1.0) * n_rows))[:, None]
    constant = float(m.shape[-1]) if norm_constant is None else float(norm_constant)
    if constant <= 0:
        raise ValueError(f"norm_constant must be > 0, got {norm_constant}")
    return m / (n_rows * constant)


def aggregate(
    loss_matrix: Tensor,
    mask: Tensor,
    mode: str = "token-mean",
    *,
    norm_constant: float | None = None,
) -> Tensor:
    """Reduce a per-token loss matrix (B, T) to a scalar over the masked tokens: Σ W·x with W from
    :func:`aggregation_weights` (one list of modes, ``AGGREGATION_MODES``). Differentiable by autograd; an empty
    mask gives a finite 0 that keeps the graph.
    """
    if loss_matrix.shape != mask.shape:
        raise ValueError(f"loss matrix {tuple(loss_matrix.shape)} and mask {tuple(mask.shape)} differ in shape")
    weights = aggregation_weights(mask.to(loss_matrix.dtype), mode, norm_constant=norm_constant)
    return (loss_matrix * weights).sum()
