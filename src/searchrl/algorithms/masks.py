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


RUN_BLOCK = 32  # tokens per block of a BlockRunLayout: R + 1 windows of 32 tokens, (B·T)/32 blocks


@dataclass(frozen=True)
class BlockRunLayout:
    """Where the contiguous runs of 1s of a (B, T) mask start, for per-run sums and per-run factors with a few
    passes over the data, a few dozen small operations and no (B, T) index tensor.

    The mask is read as one flat sequence of B·T tokens (row-major) cut into blocks of ``block`` tokens, the last
    block padded. Runs are numbered 1..R in that order; 0 stands for "before the first run". Run r's *span* is
    its tokens and the tokens after it up to run r+1's first token: the gap after a row's last run continues into
    the next row's leading gap, so values that are zero off the mask sum over a span to their sum over the run,
    and a factor may be spread over the whole span.

    A block in which no run starts lies inside one span, so per-token work is needed only in the *windows*: the
    blocks holding a run's first token (several runs may share one), plus the last block, which closes run R.

    - ``block_run`` (NB,) long: the run in force at each block's first token (runs started before the block).
    - ``window_block`` (R+1,) long: the block of run r's first token for r = 1..R, then the last block.
    - ``window_run`` (R+1, block) long: the run in force at each token of those windows.
    - ``window_before`` (R+1, block) float: 1 on the window's tokens before run r's first token (the whole last
      block for the closing window), else 0.
    """

    batch: int
    width: int
    block: int
    n_runs: int
    block_run: Tensor
    window_block: Tensor
    window_run: Tensor
    window_before: Tensor

    @property
    def n_blocks(self) -> int:
        return self.block_run.shape[0]

    @property
    def padded_size(self) -> int:
        """Flat length of a buffer for the B·T values and the last block's padding."""
        return self.n_blocks * self.block


def padded_size(batch: int, width: int, block: int = RUN_BLOCK) -> int:
    """The flat length, a multiple of ``block``, of a buffer that holds a (``batch``, ``width``) matrix by blocks."""
    return -(-batch * width // block) * block


def block_run_layout(
    mask: Tensor,
    *,
    block: int = RUN_BLOCK,
    dtype: torch.dtype = torch.float32,
    scratch: Tensor | None = None,
) -> BlockRunLayout:
    """The :class:`BlockRunLayout` of a (B, T) 0/1 mask.

    Two passes over the (B, T) data (run-start flags m_t·(1 − m_{t−1}), then their sum per block), the rest on
    the (B·T)/``block`` blocks and the R + 1 windows; one host sync reads R, the tables' size. ``scratch``, a
    contiguous 1-D tensor of ``dtype`` with at least ``padded_size(B, T, block)`` elements, holds the flags and is
    left overwritten, so that a caller can reuse its buffer; without it one is allocated.
    """
    if mask.dim() != 2:
        raise ValueError(f"mask must be (B, T), got shape {tuple(mask.shape)}")
    if block < 1:
        raise ValueError(f"block must be ≥ 1, got {block}")
    batch, width = mask.shape
    size = padded_size(batch, width, block)
    device = mask.device
    if size == 0:
        empty = torch.zeros(0, dtype=torch.long, device=device)
        return BlockRunLayout(batch, width, block, 0, empty, empty, empty.view(0, block),
                              torch.zeros(0, block, dtype=dtype, device=device))
    if scratch is None:
        scratch = torch.empty(size, dtype=dtype, device=device)
    elif scratch.dtype != dtype or scratch.dim() != 1 or scratch.numel() < size or not scratch.is_contiguous():
        raise ValueError(f"scratch must be a contiguous 1-D {dtype} tensor of ≥ {size} elements")
    m = mask if mask.dtype == dtype else mask.to(dtype)
    starts = scratch[:size]
    rows = starts[: batch * width].view(batch, width)
    rows[:, :1] = m[:, :1]
    # m_t·(1 − m_{t−1}) in one pass: 1 at each run's first token, 0 elsewhere (exact on 0/1)
    torch.addcmul(m[:, 1:], m[:, 1:], m[:, :-1], value=-1.0, out=rows[:, 1:])
    starts[batch * width :].zero_()
    blocks = starts.view(-1, block)  # (NB, c)
    count = _block_sums(blocks)  # (NB,) runs starting in each block
    started = count.cumsum(dim=0)  # (NB,) runs started up to each block's end
    n_runs = int(started[-1])  # host sync: the tables' size
    block_run = started - count  # (NB,) runs started before each block
    run = torch.arange(1, n_runs + 2, dtype=dtype, device=device)  # (R+1,) 1..R, then R+1: the closing window
    # first block with ≥ r starts up to its end; none for R+1, clamped to the last block
    window_block = torch.searchsorted(started, run - 0.5).clamp_(max=blocks.shape[0] - 1)  # (R+1,)
    window_run = blocks.index_select(0, window_block).cumsum_(dim=1)  # (R+1, c) starts at or before, in the window
    window_run.add_(block_run.index_select(0, window_block)[:, None])  # + runs started before the window
    # window_run < r, on whole numbers (float arithmetic: cheaper than a bool mask)
    window_before = run[:, None].sub(window_run).clamp_(0.0, 1.0)  # (R+1, c)
    return BlockRunLayout(
        batch=batch,
        width=width,
        block=block,
        n_runs=n_runs,
        block_run=block_run.long(),
        window_block=window_block,
        window_run=window_run.long(),
        window_before=window_before,
    )


def _block_sums(blocks: Tensor) -> Tensor:
    """Row sums of (NB, c) blocks as a matrix-vector product (on CPU faster than a sum over a short last dim)."""
    return torch.mv(blocks, blocks.new_ones(blocks.shape[1]))


def _blocks(values: Tensor, layout: BlockRunLayout) -> Tensor:
    if values.dim() != 1 or values.numel() < layout.padded_size or not values.is_contiguous():
        raise ValueError(f"values must be a contiguous 1-D buffer of ≥ {layout.padded_size} elements "
                         f"(the (B, T) values row-major, then zeros), got shape {tuple(values.shape)}")
    return values[: layout.padded_size].view(-1, layout.block)  # (NB, c)


def run_windows(values: Tensor, layout: BlockRunLayout) -> Tensor:
    """A copy of the R + 1 windows of a flat buffer (see :func:`span_sums`): (R+1, block)."""
    return _blocks(values, layout).index_select(0, layout.window_block)


def span_sums(values: Tensor, layout: BlockRunLayout, windows: Tensor | None = None) -> Tensor:
    """Σ of ``values`` over each run's span, as a table indexed by run: (R+1,) float64, entry 0 = 0, entry r = run r.

    ``values``: a contiguous 1-D buffer of at least ``layout.padded_size`` elements holding the (B, T) values
    row-major, zero off the mask and in the padding. ``windows``: :func:`run_windows` of it, if already taken.

    Σ_span(r) = P(r+1) − P(r), P(r) being the sum of every value before run r's first token (P(R+1): all of them):
    whole blocks through a float64 running sum of the block sums, plus the window's part before the start (float64
    so that the difference of two running sums stays precise on long batches).
    """
    if layout.padded_size == 0:
        return torch.zeros(1, dtype=torch.float64, device=values.device)
    blocks = _blocks(values, layout)
    if windows is None:
        windows = blocks.index_select(0, layout.window_block)
    block_sums = _block_sums(blocks)  # (NB,)
    before_block = torch.cumsum(block_sums, dim=0, dtype=torch.float64).sub_(block_sums)  # (NB,) exclusive
    before_run = before_block.index_select(0, layout.window_block)  # (R+1,) whole blocks before each window
    before_run.add_(torch.linalg.vecdot(windows, layout.window_before))  # + the window's part: P(1..R+1)
    return torch.diff(before_run, prepend=before_run[:1])  # [0, P(2) − P(1), …, P(R+1) − P(R)]


def block_run_sums(values: Tensor, layout: BlockRunLayout) -> Tensor:
    """Σ of ``values`` (the flat buffer of :func:`span_sums`) over each run's span: (R,) float64, run r at r−1."""
    return span_sums(values, layout)[1:]


def scale_run_spans_(values: Tensor, table: Tensor, layout: BlockRunLayout, windows: Tensor | None = None) -> None:
    """Multiply, in place, each token of run r's span by ``table[r]`` and each token before the first run by
    ``table[0]``: ``table`` (R+1,) is indexed by run, as :func:`span_sums` returns. ``values``: that flat buffer.

    One pass over the buffer (each block by the factor of the run in force at its first token), then the windows
    are rewritten token by token. ``windows``, when given, are :func:`run_windows` of the current ``values`` (a
    copy); they are scaled in place. Runs that start in one block share its window, so their writes agree.
    """
    if layout.padded_size == 0:
        return
    blocks = _blocks(values, layout)
    if windows is None:
        windows = blocks.index_select(0, layout.window_block)
    table = table.to(values.dtype)  # mixed-dtype products take a slow path
    windows.mul_(table.index_select(0, layout.window_run.view(-1)).view_as(windows))  # exact per-token factors
    blocks.mul_(table.index_select(0, layout.block_run)[:, None])  # right except after a start inside a block
    blocks.index_copy_(0, layout.window_block, windows)


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
