"""Data: the Question record, dataset loaders and the synthetic world."""

from searchrl.data.types import Question

__all__ = ["Question"]
