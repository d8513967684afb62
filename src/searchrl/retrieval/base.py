"""The retrieval contract: `Hit`, the `Retriever` protocol, and Search-R1's rendering of hits."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from searchrl.retrieval.render import make_contents, parse_contents, render_hits

__all__ = ["Hit", "Retriever", "render_hits", "parse_contents", "make_contents"]


@dataclass(frozen=True)
class Hit:
    """One retrieved passage. `contents` follows the wiki-18 convention: '"Title"\\ntext'."""

    doc_id: str
    title: str
    text: str
    contents: str
    score: float | None = None

    @classmethod
    def from_contents(cls, doc_id: str, contents: str, score: float | None = None) -> Hit:
        """A hit whose title and text are parsed from ``contents`` as Search-R1 does (title without quotes)."""
        title, text = parse_contents(contents)
        return cls(doc_id=doc_id, title=title, text=text, contents=contents, score=score)


@runtime_checkable
class Retriever(Protocol):
    """Anything that answers a batch of queries with ranked hits (BM25, dense, hybrid, HTTP, cached).

    ``search`` returns one list per query, best first, with at most ``topk`` hits each (fewer when the index
    holds fewer matching documents, e.g. a BM25 query that shares no term with any passage).
    """

    def search(self, queries: list[str], topk: int = 3) -> list[list[Hit]]: ...
