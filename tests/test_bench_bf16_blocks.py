"""benchmarks/bf16_blocks.py, the bf16 variant that check_rollout_precision.py and check_eval_precision.py measure:
inside it a float32 session computes the decoder blocks' products in bf16 and the output head in float32, and
nothing of it outlives the context."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch
from test_rollout_hf import _full_logprobs, _prompts, _run_session, tiny, tiny_path  # noqa: F401 (fixtures)

from searchrl.models import body_and_head
from searchrl.rollout import HFBackend, SamplingParams

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from bf16_blocks import bf16_block_products, supported  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_thread")  # conftest.py


@contextmanager
def plain_bf16_block_products(model):
    """The oracle: the blocks' linears as plain bf16 products (x and W rounded to bf16, the product rounded to bf16,
    returned in float32) in a full forward; the output head and everything else float32."""
    body, _ = body_and_head(model)
    linears = [m for m in body.modules() if isinstance(m, torch.nn.Linear)]
    for m in linears:
        m.forward = (lambda module: lambda x: torch.nn.functional.linear(
            x.to(torch.bfloat16), module.weight.to(torch.bfloat16),
            None if module.bias is None else module.bias.to(torch.bfloat16)).to(x.dtype))(m)
    try:
        yield
    finally:
        for m in linears:
            del m.forward


def test_bf16_blocks_round_the_blocks_products_only(tiny):
    model, tok = tiny
    if not HFBackend(model, tok).pack_weights:
        pytest.skip("this torch build has no oneDNN")
    if not supported():  # an AVX2-only CPU, or AVX2 dispatch: no bf16 packing, and the helper says so
        with pytest.raises(RuntimeError, match="cannot pack bf16 weights"), bf16_block_products():
            pass
        pytest.skip("this CPU cannot pack bf16 weights for oneDNN (no avx512bw/vl/dq or avx_ne_convert)")
    with bf16_block_products():
        session = HFBackend(model, tok).open_session(_prompts(tok), SamplingParams(greedy=True))
        session.generate([0], [2], [])
        assert session.cached[0].dtype == torch.float32  # the KV cache stays float32
        packs = {module: weight.dtype for module, weight in session.packed.packed}
        session.close()
        head = model.get_output_embeddings()
        assert packs[head] == torch.float32
        assert {dtype for module, dtype in packs.items() if module is not head} == {torch.bfloat16}
        seqs, sampled, gens = _run_session(model, tok, _prompts(tok), greedy=True, max_batch_size=3)
    assert all(g.finish == "length" for g in gens)
    # Against the oracle: oneDNN accumulates in another order, so a product can round to the neighbouring bf16
    # value; the log-probs agree to far less than their distance to float32's, the tokens wherever the argmax is
    # clear.
    checked, worst, worst_fp32 = 0, 0.0, 0.0
    for seq, row in zip(seqs, sampled):
        fp32 = _full_logprobs(model, seq)
        with plain_bf16_block_products(model):
            oracle = _full_logprobs(model, seq)
        for position, token, logprob in row:
            worst = max(worst, abs(float(oracle[position - 1, token]) - logprob))
            worst_fp32 = max(worst_fp32, abs(float(fp32[position - 1, token]) - logprob))
            top2 = oracle[position - 1].topk(2).values
            if float(top2[0] - top2[1]) > 0.5:
                assert int(oracle[position - 1].argmax()) == token
                checked += 1
    assert checked > len(sampled)  # not vacuous
    assert worst < 0.1 and worst < worst_fp32, (worst, worst_fp32)
    # Outside the context the library's float32 packs are back.
    session = HFBackend(model, tok).open_session(_prompts(tok)[:1], SamplingParams(greedy=True))
    session.generate([0], [1], [])
    assert all(weight.dtype == torch.float32 for _, weight in session.packed.packed)
    session.close()
    assert all("forward" not in vars(m) for m in model.modules() if isinstance(m, torch.nn.Linear))
