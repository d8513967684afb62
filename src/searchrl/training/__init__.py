"""searchrl.training: the config, the RL loop, the SFT warm start, checkpoints and metrics logging.

    from searchrl.training import load_config, train
    cfg = load_config("demo", ["train.steps=10"])
    summary = train(cfg)

Names load lazily, so importing a sub-command module (`searchrl.training.cli_report`, ...) does not pull in
torch and transformers.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "Config": "searchrl.training.config",
    "load_config": "searchrl.training.config",
    "config_from_dict": "searchrl.training.config",
    "show_config": "searchrl.training.config",
    "packaged_config_names": "searchrl.training.config",
    "train": "searchrl.training.loop",
    "rl_step": "searchrl.training.loop",
    "Trainer": "searchrl.training.trainer",
    "TrainerState": "searchrl.training.trainer",
    "StopTraining": "searchrl.training.trainer",
    "run_sft": "searchrl.training.sft",
    "SFTResult": "searchrl.training.sft",
    "oracle_trajectories": "searchrl.training.sft",
    "read_trajectories": "searchrl.training.sft",
    "trajectory_to_record": "searchrl.training.sft",
    "save_checkpoint": "searchrl.training.checkpoint",
    "load_checkpoint": "searchrl.training.checkpoint",
    "latest_checkpoint": "searchrl.training.checkpoint",
    "best_checkpoint": "searchrl.training.checkpoint",
    "RunLogger": "searchrl.training.logger",
    "collate": "searchrl.training.batching",
    "token_logprobs": "searchrl.training.batching",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'searchrl.training' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
