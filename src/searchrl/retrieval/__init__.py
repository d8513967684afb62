"""Retrieval: corpora, BM25, dense and hybrid indexes, a query cache, an HTTP server and client."""

from searchrl.retrieval.base import Hit, Retriever, render_hits

__all__ = ["Hit", "Retriever", "render_hits"]
