"""The retrieval contract: `Hit`, the `Retriever` protocol, and Search-R1's rendering of hits."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class Hit:
    """One retrieved passage. `contents` follows the wiki-18 convention: '"Title"\\ntext'."""

    doc_id: str
    title: str
    text: str
    contents: str
    score: float | None = None


@runtime_checkable
class Retriever(Protocol):
    """Anything that answers a batch of queries with ranked hits (BM25, dense, hybrid, HTTP, cached)."""

    def search(self, queries: list[str], topk: int = 3) -> list[list[Hit]]: ...


def render_hits(hits: list[Hit]) -> str:
    """Render hits as Search-R1 does (`generation.py::_passages2string`).

    One line per hit, numbered from 1: ``Doc {i}(Title: {title}) {text}\\n``. The rollout wraps the result as
    ``\\n\\n<information>{...}</information>\\n\\n`` (see `searchrl.protocol`).
    """
    return "".join(f"Doc {i}(Title: {h.title}) {h.text}\n" for i, h in enumerate(hits, start=1))
