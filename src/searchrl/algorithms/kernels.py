"""Fused CPU kernels (numba) for the per-turn reductions that plain tensor operations do in many passes.

The LLDS action gate needs, per contiguous run of the mask (one model turn), the sum of Δ over the run, then a
per-token factor. With tensor operations that is a turn layout plus per-run sums and a broadcast: about 40 small
operations and several passes over the (B, T) batch, which cost LLDS 1.3× the clipped loss's time on a 2-core
CPU (docs/bench_losses.md). :func:`llds_rows` does the whole LLDS reduction in one pass per row instead.

Used by :mod:`searchrl.algorithms.losses` on contiguous CPU tensors when numba is importable; every other case
(GPU tensors inside verl, no numba) takes the tensor-operation path, which computes the same values. The two may
differ only where an action's Σ Δ is within float rounding of 0 (the sums are accumulated in a different order).
"""

from __future__ import annotations

import functools
import importlib.util
import os

import numpy as np
import torch
from torch import Tensor

GATE_CODES = {"token": 0, "response": 1, "action": 2}

_NUMBA = not os.environ.get("SEARCHRL_NO_NUMBA") and importlib.util.find_spec("numba") is not None

_CHUNK = 16  # mask tokens tested at once while skipping gaps and crossing long runs (vectorised sums)


@functools.cache
def _compiled():
    """The numba-compiled kernel, built (or read from numba's on-disk cache) on first use: importing numba took
    0.4–0.7 s here, which only LLDS runs on CPU pay."""
    from numba import njit

    return njit(cache=True, nogil=True, fastmath=True, boundscheck=False)(_llds_rows_kernel)


def _llds_rows_kernel(log_ratio, mask, gate, slope, decrease_rows, acting_rows):  # pragma: no cover - compiled
    # Runs are found from the mask's sums over chunks of _CHUNK tokens (0: in a gap, _CHUNK: inside a run), so
    # that only chunks holding a boundary are read token by token. The per-run loops run over slices: numba
    # vectorises those, not loops over range(start, stop) of a row.
    batch, width = log_ratio.shape
    n_chunks = width // _CHUNK
    chunk_sums = np.empty(n_chunks, dtype=mask.dtype)
    for b in range(batch):
        x = log_ratio[b]
        m = mask[b]
        s = slope[b]
        for c in range(n_chunks):
            seen = m.dtype.type(0.0)
            for k in range(_CHUNK):
                seen += m[c * _CHUNK + k]
            chunk_sums[c] = seen
        row_on = True
        if gate == 1:  # response gate: on iff the row's Σ Δ = −Σ m·log r > 0
            total = 0.0
            for k in range(width):
                total += x[k]
            row_on = total < 0.0
        decrease = 0.0
        acting = 0.0
        t = 0
        while t < width:
            # the span [start, t): a run of the mask (one model turn) or a gap (observations, padding)
            start = t
            inside = m[t] != 0.0
            uniform = float(_CHUNK) if inside else 0.0  # the mask's sum over a chunk wholly inside the span
            while t < width and (m[t] != 0.0) == inside:
                if t % _CHUNK == 0:
                    c = t // _CHUNK
                    while c < n_chunks and chunk_sums[c] == uniform:
                        c += 1
                    if c * _CHUNK > t:
                        t = c * _CHUNK
                        continue
                t += 1
            xs = x[start:t]
            ss = s[start:t]
            on = inside and row_on
            if inside and gate == 2:  # action gate: on iff Σ_run Δ > 0  ⟺  Σ_run log r < 0
                run_sum = 0.0
                for k in range(xs.shape[0]):
                    run_sum += xs[k]
                on = run_sum < 0.0
            if on:
                fell = 0.0
                for k in range(xs.shape[0]):
                    v = xs[k]
                    ss[k] = 1.0 if v < 0.0 else 0.0  # Δ = −log r > 0: the likelihood fell
                    fell += min(v, 0.0)
                count = 0.0
                for k in range(ss.shape[0]):
                    count += ss[k]
                decrease -= fell
                acting += count
            else:  # a gap, or a run whose gate is off: slope 0
                for k in range(ss.shape[0]):
                    ss[k] = 0.0
        decrease_rows[b] = decrease
        acting_rows[b] = acting


def fused_available(*tensors: Tensor) -> bool:
    """Whether :func:`llds_rows` can take these tensors: numba present, CPU, float32/float64, 2-D."""
    if not _NUMBA:
        return False
    return all(t.device.type == "cpu" and t.dtype in (torch.float32, torch.float64) and t.dim() == 2 for t in tensors)


def llds_rows(
    masked_log_ratio: Tensor, mask: Tensor, gate: str, *, out: Tensor | None = None
) -> tuple[Tensor, Tensor, Tensor]:
    """LLDS's per-token gate and per-row sums in one pass: (slope (B, T), decrease_rows (B,), acting_rows (B,)).

    With x = m·log(π_θ/π_old) = −m·Δ and g the gate (``"token"``: 1; ``"response"``: 1[Σ_t Δ > 0] per row;
    ``"action"``: 1[Σ_run Δ > 0] per contiguous run of the mask):

        slope[b, t] = m·g·1[Δ > 0],   decrease_rows[b] = Σ_t m·g·max(0, Δ),   acting_rows[b] = Σ_t slope[b, t].

    The same quantities as the tensor path of :func:`searchrl.algorithms.losses.llds_penalty` (see there for the
    equation and its source). ``masked_log_ratio`` must be 0 off the mask; both inputs are read, not written.
    ``out``: a contiguous tensor like ``masked_log_ratio`` to hold the slope (every element is written).
    """
    if gate not in GATE_CODES:
        raise ValueError(f"unknown LLDS gate {gate!r}; allowed: {list(GATE_CODES)}")
    x = masked_log_ratio.detach().contiguous()
    m = mask.detach().to(x.dtype).contiguous()
    batch = x.shape[0]
    if out is not None and (out.shape != x.shape or out.dtype != x.dtype or not out.is_contiguous()):
        raise ValueError(f"out must be a contiguous {x.dtype} tensor of shape {tuple(x.shape)}")
    slope = torch.empty_like(x) if out is None else out
    decrease_rows = torch.empty(batch, dtype=torch.float64)
    acting_rows = torch.empty(batch, dtype=x.dtype)
    _compiled()(x.numpy(), m.numpy(), GATE_CODES[gate], slope.numpy(), decrease_rows.numpy(), acting_rows.numpy())
    return slope, decrease_rows.to(x.dtype), acting_rows


__all__ = ["GATE_CODES", "fused_available", "llds_rows"]
