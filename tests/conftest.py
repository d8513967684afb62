"""Shared fixtures. Real QA samples ship in tests/fixtures/qa, so no test depends on anything beside the clone."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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
