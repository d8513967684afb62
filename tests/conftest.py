"""Shared fixtures. Tests may read the real QA samples in ../shared/data; the product never needs them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("SEARCHRL_SHARED_DATA", REPO.parent / "shared" / "data"))

# Two cores: keep torch from oversubscribing when several tests run in one process.
os.environ.setdefault("OMP_NUM_THREADS", "2")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The folder of real QA samples (nq_oracle, hotpotqa_distractor, musique)."""
    if not (SHARED_DATA / "nq_oracle" / "corpus.jsonl").exists():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA
