"""searchrl.training: the config, the RL loop, a run's lifecycle, the SFT warm start, checkpoints and logging.

    from searchrl.training import load_config, train
    cfg = load_config("demo", ["train.steps=10"])
    summary = train(cfg)

- `config.py`: the YAML config tree, loaded and validated by one function (`load_config`).
- `forward.py`: log π of these rows (the plain definition, and the opt-in fast path).
- `loop.py`: `build`, `rl_step`, `fit` — the algorithm, top to bottom.
- `state.py`: the run's typed components and state; validation, checkpoint, rollback, the time budget.
- `run.py`: `train` — creating, resuming, interrupting and finishing a run folder, and its summary.
- `metrics.py`: a step's metrics row; `logger.py`: where rows go; `checkpoint.py`: atomic checkpoints.
- `policy.py`: getting a model ready to train (LoRA, frozen layers), the optimiser and its learning-rate schedule.
- `sft.py`: the supervised warm start.

Names load lazily, so importing a sub-command module does not pull in torch and transformers.
"""

from __future__ import annotations

from searchrl import lazy_exports


_LAZY = {
    "Config": "searchrl.training.config",
    "load_config": "searchrl.training.config",
    "config_from_dict": "searchrl.training.config",
    "show_config": "searchrl.training.config",
    "packaged_config_names": "searchrl.training.config",
    "train": "searchrl.training.run",
    "build": "searchrl.training.loop",
    "fit": "searchrl.training.loop",
    "rl_step": "searchrl.training.loop",
    "Trainer": "searchrl.training.state",
    "TrainerState": "searchrl.training.state",
    "StopTraining": "searchrl.training.state",
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
    "collate": "searchrl.training.forward",
    "token_logprobs": "searchrl.training.forward",
}

__all__ = sorted(_LAZY)

__getattr__ = lazy_exports(__name__, _LAZY)


def __dir__() -> list[str]:
    return sorted(__all__)
