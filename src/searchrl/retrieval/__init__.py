"""Retrieval: corpora, BM25, dense and hybrid indexes, a query cache, an HTTP server and client.

    from searchrl.retrieval import build_index, load_retriever, render_hits

    build_index("corpus.jsonl", "bm25", "index/")          # or: searchrl index build --corpus ... --kind bm25 --out ...
    retriever = load_retriever("index/")                   # an index folder, a .jsonl corpus, or http://host:port
    hits = retriever.search(["who wrote hamlet"], topk=3)  # list[list[Hit]]
    observation = render_hits(hits[0])                     # "Doc 1(Title: ...) ...\\n", as Search-R1

Importing this package is cheap: the index, server and client modules (numpy, bm25s, faiss, torch, httpx)
load on first use.
"""

from __future__ import annotations

from searchrl import lazy_exports

from searchrl.retrieval.base import Hit, Retriever
from searchrl.retrieval.cache import CachedRetriever, normalize_query
from searchrl.retrieval.render import make_contents, parse_contents, render_hits

_LAZY = {
    "build_index": "searchrl.retrieval.index",
    "load_index": "searchrl.retrieval.index",
    "load_retriever": "searchrl.retrieval.index",
    "cached_bm25_index": "searchrl.retrieval.index",
    "default_cache_dir": "searchrl.retrieval.index",
    "read_manifest": "searchrl.retrieval.index",
    "IndexRetriever": "searchrl.retrieval.index",
    "KINDS": "searchrl.retrieval.index",
    "read_corpus": "searchrl.retrieval.corpus",
    "Passage": "searchrl.retrieval.corpus",
    "DocStore": "searchrl.retrieval.corpus",
    "RemoteRetriever": "searchrl.retrieval.client",
    "reciprocal_rank_fusion": "searchrl.retrieval.hybrid",
    "create_app": "searchrl.retrieval.server",
    "serve": "searchrl.retrieval.server",
    "ServerLimits": "searchrl.retrieval.server",
}

__all__ = ["Hit", "Retriever", "render_hits", "parse_contents", "make_contents", "CachedRetriever",
           "normalize_query", *_LAZY]

__getattr__ = lazy_exports(__name__, _LAZY)


def __dir__() -> list[str]:
    return sorted(__all__)
