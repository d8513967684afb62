"""bf16 products in the decoder blocks only, on oneDNN-packed weights: a lever measured here, not offered by searchrl.

`searchrl.rollout.hf._PackedLinears` packs a model's float32 `nn.Linear` weights for oneDNN while a CPU session
generates. Inside `bf16_block_products()` it packs the decoder blocks' weights in bf16 instead (x and W rounded to
bf16, float32 accumulation, the product rounded to bf16 and returned in float32) and keeps the output head in
float32, as do the norms, attention, the residual stream and the KV cache. What `rollout.bf16=true` does on a CPU
is different: the whole forward under bf16 autocast, the logits themselves bf16, a bf16 KV cache.

Why it was measured: with native bf16 (avx512_bf16, AMX) the blocks' products take about half the float32 time,
and logits rounded to bf16 (spacing 0.06-0.25 at their magnitudes) were the suspected cause of bf16 sampling's
change in behaviour; this variant keeps them float32. Used by check_rollout_precision.py and
check_eval_precision.py (`--bf16 blocks`); tests/test_bench_bf16_blocks.py checks it against plain bf16 products.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

from searchrl.models import body_and_head
from searchrl.rollout import hf


def supported() -> bool:
    """Whether this CPU (as torch dispatches on it) packs bf16 weights for oneDNN: it needs avx512bw/vl/dq or
    avx_ne_convert, which an AVX2-only CPU (or `ONEDNN_MAX_CPU_ISA=AVX2`) lacks."""
    try:
        torch.ops.mkldnn._reorder_linear_weight(torch.zeros(16, 16, dtype=torch.bfloat16), None)
    except (RuntimeError, AttributeError):
        return False
    return True


def _linear(packed: torch.Tensor, bias: torch.Tensor | None):
    """`hf._onednn_linear` in the packed weight's precision: y = x W^T + b with x (and b) rounded to it, returned
    in x's dtype (a float32 pack computes exactly as the library's)."""
    bias = bias.to(packed.dtype) if bias is not None else None

    def forward(x: torch.Tensor) -> torch.Tensor:
        y = torch.ops.mkldnn._linear_pointwise(x.to(packed.dtype).contiguous(), packed, bias, "none", [], "")
        return y.to(x.dtype)

    return forward


def _pack_blocks_bf16(self: hf._PackedLinears) -> list[tuple[torch.nn.Linear, torch.Tensor]]:
    """`hf._PackedLinears._pack` with the blocks' weights in bf16 and the output head's in float32."""
    head = body_and_head(self.model)[1]
    packed = []
    for module in self.model.modules():
        if type(module) is not torch.nn.Linear or module.weight.dtype != torch.float32:
            continue
        weight = module.weight.detach().to(torch.float32 if module is head else torch.bfloat16)
        packed.append((module, torch.ops.mkldnn._reorder_linear_weight(weight, None)))
    return packed


@contextmanager
def bf16_block_products() -> Iterator[None]:
    """While open, sessions of an `HFBackend` with `pack_weights` (float32, on a CPU) compute the decoder blocks'
    products in bf16 on bf16-packed weights; the output head stays float32. A session opened inside must also
    generate inside (its packs are of this kind). Raises where this CPU cannot pack bf16 weights (`supported`)."""
    if not supported():
        raise RuntimeError("bf16_blocks: this CPU cannot pack bf16 weights for oneDNN (it needs avx512bw, avx512vl "
                           "and avx512dq, or avx_ne_convert); the bf16 variant does not exist here")
    # The library's own `active()` swaps the packs in and out; only what it packs and how a pack computes change.
    originals = hf._PackedLinears._pack, hf._onednn_linear
    hf._PackedLinears._pack, hf._onednn_linear = _pack_blocks_bf16, _linear
    try:
        yield
    finally:
        hf._PackedLinears._pack, hf._onednn_linear = originals
