"""BM25 on `bm25s`: stemmed, stop-word-filtered tokens, an eager sparse score matrix, batched top-k.

bm25s precomputes each (term, document) BM25 contribution at indexing time into a term-major sparse matrix W
(one row per vocabulary term, one column per document), so the score of document d for a query q is

    score(q, d) = sum over query tokens t of W[t, d]        (a token repeated in q counts again)

with, for bm25s' default "lucene" variant (Lù 2024, bm25s; Lucene's BM25Similarity),

    W[t, d] = idf(t) * tf(t, d) / (tf(t, d) + k1 * (1 - b + b * |d| / avgdl)),
    idf(t)  = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5)).

Retrieval for a whole batch of queries is then one sparse product S = Q @ W, Q the (queries x terms) matrix of
query token counts, followed by a top-k selection over the non-zero scores of each row. This gives the same
scores as `bm25s.BM25.retrieve` (which scores one query at a time into a dense array of all N documents) at a
fraction of the cost, and returns only documents that share a term with the query. Ties are broken by corpus
row, so results are deterministic. Without scipy we fall back to `bm25s.BM25.retrieve` itself.

Defaults follow Anserini / pyserini (k1=0.9, b=0.4), the BM25 that Search-R1's retrieval server uses.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import Stemmer

from searchrl.errors import ConfigError, DataError

# bm25s (~0.7 s to import, scipy.sparse included) is imported by the functions that build or load an index
# (`import_bm25s`): this module comes with searchrl.retrieval.index, which `searchrl index --help`,
# `searchrl eval --help` and a server URL as retriever import without needing a BM25 index.

BM25_DIR = "bm25"
BM25_METHODS = ("lucene", "robertson", "atire", "bm25l", "bm25+")
ENGINES = ("auto", "scipy", "bm25s")
# Queries per sparse product. The product's output is memory-bound (a query often shares a term with half the
# corpus), so small blocks whose output stays in cache are fastest, and two threads then scale; measured on
# 100k passages: 8 was best with 2 threads (about 2x 64), and block sizes 4-64 were alike with one thread.
_QUERY_BLOCK = 8


def import_bm25s():  # -> the bm25s module
    """Import bm25s without starting JAX.

    bm25s imports JAX when it is installed and runs a top-k with it at import time. On a GPU machine that starts
    JAX's CUDA backend, which by default reserves 75% of the GPU's memory for itself (measured on an H200: 105 of
    140 GiB, leaving torch the rest), and which fails outright when another process holds that memory. searchrl
    never uses JAX (the scipy engine ranks; bm25s' own engine falls back to numpy), so JAX is hidden from bm25s'
    import. A program that imported JAX itself keeps it: bm25s is then imported as it is.
    """
    if "bm25s" in sys.modules or "jax" in sys.modules:
        import bm25s

        return bm25s
    sys.modules["jax"] = None  # type: ignore[assignment]  # `import jax` / `import jax.lax` raise ImportError
    try:
        import bm25s
    finally:
        if "jax" in sys.modules and sys.modules["jax"] is None:
            del sys.modules["jax"]
    return bm25s


@dataclass(frozen=True)
class BM25Settings:
    """How a BM25 index tokenizes and scores. Saved in the index manifest and reused at query time."""

    k1: float = 0.9
    b: float = 0.4
    method: str = "lucene"
    stopwords: str = "en"   # a bm25s stop-word list name ("en", "en_plus", ...) or "none"
    stemmer: str = "english"  # a PyStemmer language or "none"

    def __post_init__(self) -> None:
        if not (isinstance(self.k1, (int, float)) and self.k1 >= 0):
            raise ConfigError(f"bm25 option k1 must be a number >= 0, got {self.k1!r}")
        if not (isinstance(self.b, (int, float)) and 0 <= self.b <= 1):
            raise ConfigError(f"bm25 option b must be a number in [0, 1], got {self.b!r}")
        if self.method not in BM25_METHODS:
            raise ConfigError(f"bm25 option method must be one of {', '.join(BM25_METHODS)}; got {self.method!r}")

    def make_tokenizer(self):  # -> bm25s.tokenization.Tokenizer
        bm25s = import_bm25s()  # ~0.7 s, see above

        stemmer = None
        if self.stemmer.lower() != "none":
            try:
                stemmer = Stemmer.Stemmer(self.stemmer)
            except KeyError:
                raise ConfigError(f"bm25 option stemmer: unknown language {self.stemmer!r}; use one of "
                                  f"{', '.join(Stemmer.algorithms())} or 'none'") from None
        stopwords = None if self.stopwords.lower() == "none" else self.stopwords
        try:
            return bm25s.tokenization.Tokenizer(lower=True, stopwords=stopwords, stemmer=stemmer)
        except ValueError as exc:
            raise ConfigError(f"bm25 option stopwords: {exc}") from None


class BM25Builder:
    """Tokenizes passages as they stream by, then builds and saves the bm25s index."""

    def __init__(self, settings: BM25Settings) -> None:
        self.settings = settings
        self.tokenizer = settings.make_tokenizer()
        self.token_ids: list[list[int]] = []

    def add(self, contents: Sequence[str]) -> None:
        self.token_ids.extend(self.tokenizer.streaming_tokenize(list(contents), update_vocab=True))

    def finish(self, folder: Path) -> dict:
        """Build the score matrix and save it with the tokenizer's vocabulary under ``folder``."""
        bm25s = import_bm25s()  # ~0.7 s, see above

        folder.mkdir(parents=True, exist_ok=True)
        model = bm25s.BM25(k1=self.settings.k1, b=self.settings.b, method=self.settings.method)
        model.index((self.token_ids, self.tokenizer.get_vocab_dict()), show_progress=False)
        model.save(folder, show_progress=False)
        self.tokenizer.save_vocab(folder)
        self.tokenizer.save_stopwords(folder)
        self.token_ids = []
        return asdict(self.settings)


def _select_topk(scores: np.ndarray, rows: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best (rows, scores), best first, ties broken by lower row; inputs are one query's non-zeros."""
    if len(scores) > k:
        # Every entry at least as large as the k-th largest, so ties at the boundary are kept and ordered below.
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]
        keep = scores >= kth
        scores, rows = scores[keep], rows[keep]
    order = np.lexsort((rows, -scores))[:k]
    return rows[order].astype(np.int64), scores[order].astype(np.float32)


class BM25Searcher:
    """Batched BM25 top-k over a saved index folder (memory-mapped by default)."""

    def __init__(self, folder: Path, settings: BM25Settings, mmap: bool = True, engine: str = "auto",
                 threads: int | None = None) -> None:
        bm25s = import_bm25s()  # ~0.7 s, see above

        if engine not in ENGINES:
            raise ConfigError(f"bm25 engine must be one of {', '.join(ENGINES)}; got {engine!r}")
        if threads is None:
            threads = min(2, os.cpu_count() or 1)
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise ConfigError(f"bm25 threads must be an integer >= 1, got {threads!r}")
        self.threads = threads
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        try:
            self.model = bm25s.BM25.load(folder, mmap=mmap, load_corpus=False, show_progress=False)
        except (OSError, ValueError, json.JSONDecodeError) as exc:
            raise DataError(f"cannot load the BM25 index in {folder} ({exc}); rebuild it with "
                            "`searchrl index build`") from None
        self.settings = settings
        self.tokenizer = settings.make_tokenizer()
        self.tokenizer.load_vocab(folder)
        self.tokenizer.load_stopwords(folder)
        self.num_docs = int(self.model.scores["num_docs"])
        self._empty_id = self.tokenizer.word_to_id.get("")
        self.engine = self._pick_engine(engine)
        self._matrix = None
        if self.engine == "scipy":
            import scipy.sparse as sp  # local: ~0.3 s cold, see above (loaded with bm25s by now)

            s = self.model.scores
            num_terms = len(s["indptr"]) - 1
            # bm25s stores a (docs x terms) CSC matrix: the same arrays read as a (terms x docs) CSR matrix W.
            self._matrix = sp.csr_matrix((s["data"], s["indices"], s["indptr"]), shape=(num_terms, self.num_docs),
                                         copy=False)

    @staticmethod
    def _pick_engine(engine: str) -> str:
        if engine in ("auto", "scipy"):
            try:
                import scipy.sparse  # noqa: F401  # local: whether scipy is installed decides the engine
            except ImportError:
                if engine == "scipy":
                    raise ConfigError("bm25 engine 'scipy' needs scipy: pip install scipy") from None
                return "bm25s"
            return "scipy"
        return engine

    def query_token_ids(self, queries: Sequence[str]) -> list[list[int]]:
        """Token ids of each query under the index's vocabulary; unknown words and stop words are dropped."""
        ids = self.tokenizer.streaming_tokenize(list(queries), update_vocab=False, allow_empty=True)
        # The empty token stands for "no token" in bm25s; a query made only of it matches nothing here.
        return [[t for t in q if t != self._empty_id] for q in ids]

    def search_rows(self, queries: Sequence[str], k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """For each query, (corpus rows, scores) of its best ``k`` documents with a positive score, best first."""
        token_ids = self.query_token_ids(queries)
        if self.engine == "scipy":
            return self._search_scipy(token_ids, k)
        return self._search_bm25s(token_ids, k)

    def _search_scipy(self, token_ids: list[list[int]], k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        blocks = [token_ids[i:i + _QUERY_BLOCK] for i in range(0, len(token_ids), _QUERY_BLOCK)]
        if self.threads == 1 or len(blocks) == 1:
            parts = [self._search_block(block, k) for block in blocks]
        else:
            # scipy's sparse product releases the GIL, so blocks of queries run in parallel on several cores.
            parts = list(self._executor().map(lambda block: self._search_block(block, k), blocks))
        return [result for part in parts for result in part]

    def _executor(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="searchrl-bm25")
            return self._pool

    def _search_block(self, block: list[list[int]], k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        import scipy.sparse as sp  # local: see __init__ (already loaded: a dictionary look-up)

        num_terms = self._matrix.shape[0]
        lengths = np.fromiter((len(q) for q in block), dtype=np.int64, count=len(block))
        cols = np.fromiter((t for q in block for t in q), dtype=np.int32, count=int(lengths.sum()))
        indptr = np.concatenate(([0], np.cumsum(lengths)))
        # Q: (block, terms), one entry per query token; duplicates are summed into counts by the product.
        query_matrix = sp.csr_matrix((np.ones(len(cols), np.float32), cols, indptr), shape=(len(block), num_terms))
        scores = (query_matrix @ self._matrix).tocsr()  # (block, docs), only co-occurring documents stored
        out = []
        for i in range(len(block)):
            lo, hi = scores.indptr[i], scores.indptr[i + 1]
            out.append(_select_topk(scores.data[lo:hi], scores.indices[lo:hi], k))
        return out

    def _search_bm25s(self, token_ids: list[list[int]], k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        empty = (np.zeros(0, np.int64), np.zeros(0, np.float32))
        out: list[tuple[np.ndarray, np.ndarray]] = [empty] * len(token_ids)
        todo = [i for i, q in enumerate(token_ids) if q]
        if not todo:
            return out
        result = self.model.retrieve([token_ids[i] for i in todo], k=min(k, self.num_docs), show_progress=False,
                                     n_threads=0)
        for i, rows, scores in zip(todo, result.documents, result.scores):
            keep = scores > 0
            out[i] = _select_topk(scores[keep], rows[keep], k)
        return out
