"""The retrieval contract: `Hit`, the `Retriever` protocol, and Search-R1's rendering of hits."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from searchrl.errors import ConfigError
from searchrl.retrieval.render import make_contents, parse_contents, render_hits

__all__ = ["Hit", "Retriever", "render_hits", "parse_contents", "make_contents", "check_search_args"]


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


def check_search_args(queries: object, topk: object) -> None:
    """Reject what ``search`` cannot answer: a bare string instead of a list, a non-string query, topk < 1."""
    if isinstance(queries, (str, bytes)):
        raise ConfigError("search() takes a list of queries, got a single string; wrap it as [query]")
    if isinstance(topk, bool) or not isinstance(topk, int) or topk < 1:
        raise ConfigError(f"topk must be an integer >= 1, got {topk!r}")
    for i, q in enumerate(queries):  # type: ignore[arg-type]
        if not isinstance(q, str):
            raise ConfigError(f"queries[{i}] must be a string, got {type(q).__name__}")
