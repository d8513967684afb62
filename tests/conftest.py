"""Shared fixtures. Real QA samples ship in tests/fixtures/qa, so no test depends on anything beside the clone."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    import torch

REPO = Path(__file__).resolve().parents[1]
QA_SAMPLES = Path(os.environ.get("SEARCHRL_TEST_DATA", REPO / "tests" / "fixtures" / "qa"))

# Two cores: keep torch from oversubscribing when several tests run in one process.
os.environ.setdefault("OMP_NUM_THREADS", "2")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session")
def qa_samples() -> Path:
    """The folder of real QA samples shipped with the tests (nq_oracle, hotpotqa_distractor; see its README).

    Never skips: a missing folder is a broken checkout, and fails loudly.
    """
    corpus = QA_SAMPLES / "nq_oracle" / "corpus.jsonl"
    assert corpus.is_file(), f"test data missing: {corpus} (tests/fixtures/qa ships with the repository)"
    return QA_SAMPLES


@pytest.fixture
def one_thread():
    """One intra-op torch thread for the test (restored after): with two cores shared by many processes it is
    faster, and it makes the tiny-model training tests deterministic. Modules opt in with
    ``pytestmark = pytest.mark.usefixtures("one_thread")``."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


# Packaged configs that need a value from the user (`data.train=DIR` of real data), with what the tests give them.
REQUIRED_OVERRIDES: dict[str, list[str]] = {
    "nq_cpu": [f"data.train={Path(__file__).parent / 'fixtures' / 'qa' / 'nq_oracle'}"],
}


@pytest.fixture
def weight_casts():
    """``with weight_casts(model) as casts: ...`` then ``casts.count``: how many times the code inside cast one of
    ``model``'s parameters to another dtype (autocast's bf16 copies of the weights)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    cast_ops = (torch.ops.aten._to_copy.default, torch.ops.aten.to.dtype)  # inference mode dispatches `to`

    class ParameterCasts(TorchDispatchMode):
        def __init__(self, model: torch.nn.Module) -> None:
            super().__init__()
            self.pointers = {p.data_ptr() for p in model.parameters()}
            self.count = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func in cast_ops and isinstance(args[0], torch.Tensor) and args[0].data_ptr() in self.pointers:
                self.count += 1
            return func(*args, **(kwargs or {}))

    return ParameterCasts


# ---------------------------------------------------------------------------------------------- float comparisons
# The rule (tests/README.md): a test that checks "the same math through two code paths" either runs in float64 and
# compares with the float64 tolerances below, or, where the point is a float32 (or bf16) kernel itself, derives its
# tolerance from the magnitudes involved; bit-identity only where the same kernels run the same shapes. A fixed
# float32 tolerance tuned on one CPU kind turned CI red on another twice (AVX-512/AMX Xeon vs AVX2-only EPYC).

EPS32 = 2.0**-23  # float32 machine epsilon (1.2e-7): one rounding moves a value by at most EPS32/2 of its size
EPS_BF16 = 2.0**-7  # bfloat16 machine epsilon (7.8e-3)

# Float64 "same math" tolerances. Float64 rounds at ~1e-16 relative; a value summed in another order moves by about
# 1e-16 · Σ|terms| (~1e-14 for these tiny models' log-probs and gradients). rtol 1e-6 is far above that (and above
# float32 rounding, should a float32 step remain inside a float64 model) and far below what a real bug (a wrong
# position, a missing mask, a dropped term: >= 1e-3) changes; atol 1e-9 covers elements that cancel to ~0.
# Use it with the `float64_norms` fixture (transformers' RMSNorm otherwise rounds every hidden state to float32).
SAME_MATH_RTOL = 1e-6
SAME_MATH_ATOL = 1e-9


def assert_same_math(got, want, msg: str | None = None) -> None:
    """`got` and `want` are the same math through two code paths, both computed in float64 (see above)."""
    import torch

    assert got.dtype == want.dtype == torch.float64, f"compare the same math in float64, not {got.dtype}/{want.dtype}"
    torch.testing.assert_close(got, want, rtol=SAME_MATH_RTOL, atol=SAME_MATH_ATOL, msg=msg)


def same_math(got: float, want: float) -> bool:
    """Scalar form of :func:`assert_same_math`, for values read out of float64 tensors."""
    return abs(got - want) <= SAME_MATH_ATOL + SAME_MATH_RTOL * abs(want)


@pytest.fixture
def float64_norms(monkeypatch):
    """Llama's RMSNorm (transformers) computes in float32 whatever its input, a guard for half precision: in a
    float64 model it rounds every hidden state (and, backward, every gradient through it) to float32, so two code
    paths of the same math differ by float32 rounding where they sum before or after a norm (seen: elements of the
    embedding's gradient off by 2e-7, relative 1e-4, when a shared prompt's gradient is summed before the norm
    instead of after). While this fixture is active it computes in float64 for float64 inputs; float32 and bf16
    inputs take exactly the original computation. Modules opt in with
    ``pytestmark = pytest.mark.usefixtures("float64_norms")``."""
    import torch
    from transformers.models.llama import modeling_llama

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.promote_types(input_dtype, torch.float32))
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)

    monkeypatch.setattr(modeling_llama.LlamaRMSNorm, "forward", forward)


def float32_logprob_tolerance(model, ids) -> torch.Tensor:
    """(T,) how far a float32 log-prob at each position of `ids` (a list of token ids) may move when the forward's
    sums run in another order (another kernel, batch shape or CPU kind): 128 · EPS32 · S, where S is the largest
    Σ_i |W_vi h_i| over the vocabulary (the magnitude the head's dot products sum; h the final hidden state).
    Why 128: a sum of n terms re-associated moves by ~sqrt(n)·EPS32·Σ|terms| (sqrt(n) <= 40 for these models'
    widths), and a log-prob is a difference of two logits (the token's and the logsumexp); measured differences are
    at most 11 · EPS32 · S (the tiny model) and 2.6 · EPS32 · S (SmolLM2-135M) on AVX-512/AMX, AVX2 and scalar
    dispatch, so 128 leaves ~10x. For the tiny initializer_range=0.5 model S is ~30 (about 5e-4), for SmolLM2
    ~150-200 (about 3e-3): far below what a wrong position, mask or stale weight changes (> 0.1)."""
    import torch

    from searchrl.models import body_and_head

    body, head = body_and_head(model)
    device = next(model.parameters()).device
    with torch.no_grad():
        hidden = body(input_ids=torch.tensor([list(ids)], device=device)).last_hidden_state[0]  # (T, H)
        scale = (hidden.abs() @ head.weight.abs().T).amax(-1)  # (T,)
    return (128 * EPS32 * scale).cpu()
