"""Multi-turn rollouts: the engine, generation backends and trajectory records.

`RolloutEngine(backend, tokenizer, retriever, protocol_cfg, rollout_cfg).run(questions, group_size)` returns
token-exact `Trajectory` records. Backends: `HFBackend` (transformers, KV cache across turns; imported lazily,
it pulls in torch and transformers) and `ScriptedBackend` (a scripted fake policy for tests).
"""

from __future__ import annotations

from typing import Any

from searchrl.rollout.backend import (
    Generation,
    GenerationBackend,
    GenerationSession,
    SamplingParams,
    StopChecker,
    sample_tokens,
)
from searchrl.rollout.engine import RolloutConfig, RolloutEngine
from searchrl.rollout.scripted import ScriptedBackend
from searchrl.rollout.types import FINISH_REASONS, Trajectory, Turn

__all__ = [
    "FINISH_REASONS",
    "Generation",
    "GenerationBackend",
    "GenerationSession",
    "HFBackend",
    "RolloutConfig",
    "RolloutEngine",
    "SamplingParams",
    "ScriptedBackend",
    "StopChecker",
    "Trajectory",
    "Turn",
    "full_forward_logprobs",
    "sample_tokens",
]


def __getattr__(name: str) -> Any:
    if name in ("HFBackend", "full_forward_logprobs"):
        from searchrl.rollout import hf  # local: hf imports torch and transformers (~3.3 s); see the docstring

        return getattr(hf, name)
    raise AttributeError(f"module 'searchrl.rollout' has no attribute {name!r}")
