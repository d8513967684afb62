"""The `Question` record every loader produces and every consumer reads."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Question:
    """One QA item. The GRPO group id of its samples is `uid` (source + id), never a per-source row index."""

    id: str
    question: str
    golden_answers: list[str]
    data_source: str
    metadata: dict = field(default_factory=dict)

    @property
    def uid(self) -> str:
        return f"{self.data_source}:{self.id}"
