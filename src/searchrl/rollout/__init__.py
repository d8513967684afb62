"""Multi-turn rollouts: the engine, generation backends and trajectory records."""

from searchrl.rollout.types import FINISH_REASONS, Trajectory, Turn

__all__ = ["FINISH_REASONS", "Trajectory", "Turn"]
