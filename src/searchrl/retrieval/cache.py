"""A bounded LRU query cache with in-batch deduplication, in front of any retriever.

GRPO samples G answers per question and those samples often issue the same query; the cache makes each
distinct (normalised query, topk) cost one search, both across calls and within one batch.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from searchrl.errors import ConfigError
from searchrl.retrieval.base import Hit, Retriever, check_search_args

# About 2 KB per entry with 3 wiki-18 passages, so the default cache stays near 32 MB when full.
DEFAULT_CACHE_SIZE = 16_384


def normalize_query(query: str) -> str:
    """The cache key of a query: lower-cased, runs of whitespace folded to one space, ends trimmed."""
    return " ".join(query.lower().split())


class CachedRetriever:
    """Wraps a retriever: each distinct (normalised query, topk) is searched once and kept in an LRU cache.

    ``hits`` counts queries answered without a search (from the cache or from an identical query earlier in
    the same batch); ``misses`` counts queries that were searched. Thread-safe; two threads that miss the same
    query at the same moment may both search it. Attributes of the wrapped retriever (``kind``, ``num_docs``,
    ...) are reachable through this object.
    """

    def __init__(self, retriever: Retriever, maxsize: int = DEFAULT_CACHE_SIZE) -> None:
        if isinstance(maxsize, bool) or not isinstance(maxsize, int) or maxsize < 1:
            raise ConfigError(f"cache maxsize must be an integer >= 1, got {maxsize!r}")
        self.retriever = retriever
        self.maxsize = maxsize
        self.hits = 0
        self.misses = 0
        self._cache: OrderedDict[tuple[str, int], list[Hit]] = OrderedDict()
        self._lock = threading.Lock()

    def search(self, queries: list[str], topk: int = 3) -> list[list[Hit]]:
        check_search_args(queries, topk)
        queries = list(queries)
        keys = [(normalize_query(q), topk) for q in queries]
        results: list[list[Hit] | None] = [None] * len(queries)
        to_search: dict[tuple[str, int], int] = {}  # key -> index of its first query in this batch
        with self._lock:
            for i, key in enumerate(keys):
                cached = self._cache.get(key)
                if cached is not None:
                    self._cache.move_to_end(key)
                    results[i] = cached
                    self.hits += 1
                elif key in to_search:
                    self.hits += 1  # a duplicate within the batch: answered by its first occurrence's search
                else:
                    to_search[key] = i
                    self.misses += 1
        if to_search:
            found = self.retriever.search([queries[i] for i in to_search.values()], topk)
            fresh = dict(zip(to_search, found))
            with self._lock:
                for key, hits in fresh.items():
                    self._cache[key] = hits
                    self._cache.move_to_end(key)
                while len(self._cache) > self.maxsize:
                    self._cache.popitem(last=False)
            for i, key in enumerate(keys):
                if results[i] is None:
                    results[i] = fresh[key]
        # Copies, so a caller that edits its lists cannot corrupt the cache (hits themselves are frozen).
        return [list(r) for r in results]  # type: ignore[arg-type]

    def stats(self) -> dict[str, int]:
        """{"hits", "misses", "size", "maxsize"}."""
        with self._lock:
            return {"hits": self.hits, "misses": self.misses, "size": len(self._cache), "maxsize": self.maxsize}

    def clear(self) -> None:
        with self._lock:
            self._cache.clear()
            self.hits = self.misses = 0

    def __repr__(self) -> str:
        return f"CachedRetriever({self.retriever!r}, maxsize={self.maxsize})"

    def __getattr__(self, name: str) -> Any:
        # Only called for attributes not found on the wrapper itself.
        if name == "retriever":
            raise AttributeError(name)
        return getattr(self.retriever, name)
