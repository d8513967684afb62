"""Hybrid retrieval: BM25 and dense rankings fused by reciprocal rank fusion (RRF)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from searchrl.errors import ConfigError

HYBRID_OPTION_NAMES = ("rrf_k", "rrf_depth")


@dataclass(frozen=True)
class HybridSettings:
    rrf_k: int = 60       # Cormack et al.'s constant
    rrf_depth: int = 50   # how many candidates each retriever contributes before fusion

    def __post_init__(self) -> None:
        for name in HYBRID_OPTION_NAMES:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"hybrid option {name} must be an integer >= 1, got {value!r}")


def reciprocal_rank_fusion(rankings: Sequence[Sequence[int]], k: int = 60,
                           topk: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Fuse ranked lists of document rows by reciprocal rank fusion.

        RRF(d) = sum over rankings r that contain d of 1 / (k + rank_r(d)),   rank_r(d) = 1 for r's best document

    Source: Cormack, Clarke and Buettcher, "Reciprocal Rank Fusion outperforms Condorcet and individual Rank
    Learning Methods", SIGIR 2009 (k = 60). Returns (rows, fused scores), best first; ties are broken by the
    best single rank of the document, then by lower row, so the result is deterministic.
    """
    if k < 0:
        raise ConfigError(f"rrf k must be >= 0, got {k}")
    fused: dict[int, float] = {}
    best_rank: dict[int, int] = {}
    for ranking in rankings:
        for rank, row in enumerate(ranking, start=1):
            row = int(row)
            fused[row] = fused.get(row, 0.0) + 1.0 / (k + rank)
            best_rank[row] = min(best_rank.get(row, rank), rank)
    order = sorted(fused, key=lambda row: (-fused[row], best_rank[row], row))
    if topk is not None:
        order = order[:topk]
    return np.asarray(order, dtype=np.int64), np.asarray([fused[r] for r in order], dtype=np.float32)


class HybridSearcher:
    """Runs a BM25 and a dense searcher over the same rows and fuses their rankings with RRF."""

    def __init__(self, sparse, dense, settings: HybridSettings) -> None:
        self.sparse, self.dense, self.settings = sparse, dense, settings
        self.num_docs = sparse.num_docs

    def search_rows(self, queries: Sequence[str], k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        depth = max(k, self.settings.rrf_depth)
        sparse = self.sparse.search_rows(queries, depth)
        dense = self.dense.search_rows(queries, depth)
        return [reciprocal_rank_fusion([s[0], d[0]], k=self.settings.rrf_k, topk=k) for s, d in zip(sparse, dense)]
