"""The retrieval server: Search-R1's ``POST /retrieve`` API on FastAPI + uvicorn, with request batching.

Request (exactly Search-R1's ``QueryRequest``)::

    {"queries": ["q1", "q2"], "topk": 3, "return_scores": true}

``topk`` may be null or absent (the server's default, 3); ``return_scores`` defaults to false, as in Search-R1's
``QueryRequest``. Response: ``{"result": [[{"document": {"id", "contents"}, "score": 0.83}, ...], ...]}``, one
list per query. With ``return_scores: false`` the items carry no ``"score"`` and keep their ``"document"``
wrapper, so one parser reads both forms (Search-R1's server meant to return bare documents there, but crashes
on that request).

``GET /health`` reports the index kind, the number of documents, cache statistics and request counters.

Requests are not searched one by one: every request's queries go to a queue, and one search thread takes all
queued requests at once and answers them with a single batched ``search`` call (then a per-request JSON
encoding), so concurrent clients share one BM25 sparse product and one cache lookup. A failing search answers
500 with the error message and the server keeps serving.
"""

from __future__ import annotations

import asyncio
import json
import logging
import queue
import socket
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from searchrl.errors import ConfigError
from searchrl.retrieval.base import Hit, Retriever

log = logging.getLogger("searchrl.serve")


@dataclass(frozen=True)
class ServerLimits:
    """What one request may ask for; anything beyond is answered with a 4xx and a message."""

    default_topk: int = 3
    max_topk: int = 100
    max_queries: int = 1024
    max_query_chars: int = 4096
    max_body_bytes: int = 32 * 1024 * 1024


class RequestError(Exception):
    """A request the server rejects: HTTP ``status`` and a message that says what to change."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def parse_retrieve_request(body: bytes, limits: ServerLimits) -> tuple[list[str], int, bool]:
    """Validate a ``/retrieve`` body; returns (queries, topk, return_scores) or raises `RequestError`."""
    if len(body) > limits.max_body_bytes:
        raise RequestError(413, f"request body has {len(body)} bytes; at most {limits.max_body_bytes}")
    try:
        payload = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RequestError(400, f"request body is not valid JSON ({exc}); send "
                                '{"queries": ["..."], "topk": 3, "return_scores": true}') from None
    if not isinstance(payload, dict):
        raise RequestError(422, f"request body must be a JSON object, got {type(payload).__name__}")
    if "queries" not in payload:
        raise RequestError(422, "field 'queries' is required: a list of query strings")
    queries = payload["queries"]
    if not isinstance(queries, list):
        raise RequestError(422, f"field 'queries' must be a list of strings, got {type(queries).__name__}")
    if len(queries) > limits.max_queries:
        raise RequestError(422, f"field 'queries' has {len(queries)} queries; at most {limits.max_queries} per "
                                "request, split the batch")
    for i, q in enumerate(queries):
        if not isinstance(q, str):
            raise RequestError(422, f"queries[{i}] must be a string, got {type(q).__name__}")
        if len(q) > limits.max_query_chars:
            raise RequestError(422, f"queries[{i}] has {len(q)} characters; at most {limits.max_query_chars}")
    topk = payload.get("topk")
    if topk is None:
        topk = limits.default_topk
    elif isinstance(topk, bool) or not isinstance(topk, int):
        raise RequestError(422, f"field 'topk' must be an integer or null, got {type(topk).__name__}")
    elif not 1 <= topk <= limits.max_topk:
        raise RequestError(422, f"field 'topk' must be between 1 and {limits.max_topk}, got {topk}")
    return_scores = payload.get("return_scores", False)
    if return_scores is None:
        return_scores = False
    if not isinstance(return_scores, bool):
        raise RequestError(422, f"field 'return_scores' must be true or false, got {type(return_scores).__name__}")
    return queries, topk, return_scores


def encode_result(results: list[list[Hit]], return_scores: bool) -> bytes:
    """The ``/retrieve`` response body for ``results``."""
    if return_scores:
        body = [[{"document": {"id": h.doc_id, "contents": h.contents}, "score": h.score} for h in hits]
                for hits in results]
    else:
        body = [[{"document": {"id": h.doc_id, "contents": h.contents}} for h in hits] for hits in results]
    return json.dumps({"result": body}, ensure_ascii=False).encode("utf-8")


@dataclass
class _Job:
    queries: list[str]
    topk: int
    return_scores: bool
    future: Future


class BatchingSearcher:
    """Merges the queries of concurrently queued requests into one ``search`` call per ``topk``.

    ``workers`` threads take jobs from one queue; each takes every job waiting at that moment (up to
    ``max_batch_queries`` queries), so under load requests are batched and when idle a request is served at
    once. Futures resolve to the encoded JSON response body.
    """

    def __init__(self, retriever: Retriever, workers: int = 1, max_batch_queries: int = 4096) -> None:
        if workers < 1:
            raise ConfigError(f"search workers must be >= 1, got {workers}")
        self.retriever = retriever
        self.max_batch_queries = max_batch_queries
        self._queue: queue.Queue[_Job | None] = queue.Queue()
        self.requests = 0
        self.queries = 0
        self.errors = 0
        self.batches = 0
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._run, name=f"searchrl-search-{i}", daemon=True)
                         for i in range(workers)]
        for t in self._threads:
            t.start()

    def submit(self, queries: list[str], topk: int, return_scores: bool) -> Future:
        future: Future = Future()
        self._queue.put(_Job(queries, topk, return_scores, future))
        return future

    def close(self) -> None:
        for _ in self._threads:
            self._queue.put(None)
        for t in self._threads:
            t.join(timeout=5)

    def _run(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            jobs, count = [job], len(job.queries)
            while count < self.max_batch_queries:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:  # shutting down: finish this batch, then stop
                    self._queue.put(None)
                    break
                jobs.append(nxt)
                count += len(nxt.queries)
            by_topk: dict[int, list[_Job]] = {}
            for j in jobs:
                by_topk.setdefault(j.topk, []).append(j)
            for topk, group in by_topk.items():
                self._serve(group, topk)

    def _serve(self, jobs: list[_Job], topk: int) -> None:
        merged = [q for j in jobs for q in j.queries]
        with self._lock:
            self.requests += len(jobs)
            self.queries += len(merged)
            self.batches += 1
        try:
            results = self.retriever.search(merged, topk) if merged else []
        except Exception as exc:  # any retriever failure becomes a 500 for these requests only
            with self._lock:
                self.errors += len(jobs)
            log.exception("search failed for a batch of %d queries", len(merged))
            for j in jobs:
                j.future.set_exception(exc)
            return
        start = 0
        for j in jobs:
            part = results[start:start + len(j.queries)]
            start += len(j.queries)
            try:
                j.future.set_result(encode_result(part, j.return_scores))
            except Exception as exc:  # pragma: no cover - e.g. a non-finite score from a custom retriever
                j.future.set_exception(exc)

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {"requests": self.requests, "queries": self.queries, "batches": self.batches,
                    "errors": self.errors}


def create_app(retriever: Retriever, limits: ServerLimits | None = None, workers: int = 1) -> FastAPI:
    """A FastAPI app serving ``retriever`` (call ``app.state.batcher.close()`` when done, or use `serve`).

    (FastAPI resolves the endpoints' annotations from this module's globals, hence the module-level imports.)
    """
    limits = limits or ServerLimits()
    batcher = BatchingSearcher(retriever, workers=workers)
    started = time.time()
    # No interactive docs: they would load assets from a CDN, and this API is two endpoints.
    app = FastAPI(title="searchrl retrieval server", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.batcher = batcher
    app.state.retriever = retriever
    app.state.limits = limits

    @app.post("/retrieve")
    async def retrieve(request: Request) -> Response:
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limits.max_body_bytes:
            return JSONResponse({"detail": f"request body has {declared} bytes; at most {limits.max_body_bytes}"},
                                status_code=413)
        try:
            queries, topk, return_scores = parse_retrieve_request(await request.body(), limits)
        except RequestError as exc:
            return JSONResponse({"detail": exc.message}, status_code=exc.status)
        if not queries:
            return Response(b'{"result": []}', media_type="application/json")
        try:
            body = await asyncio.wrap_future(batcher.submit(queries, topk, return_scores))
        except Exception as exc:
            return JSONResponse({"detail": f"retriever failed: {type(exc).__name__}: {exc}"}, status_code=500)
        return Response(body, media_type="application/json")

    @app.get("/health")
    async def health() -> Response:
        stats = getattr(retriever, "stats", None)
        payload = {
            "status": "ok",
            "kind": getattr(retriever, "kind", type(retriever).__name__),
            "num_docs": getattr(retriever, "num_docs", None),
            "cache": stats() if callable(stats) else None,
            "default_topk": limits.default_topk,
            "uptime_s": round(time.time() - started, 1),
            **batcher.stats(),
        }
        return JSONResponse(payload)

    return app


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on (host, port); port 0 picks a free port. Errors name the address."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto must be IPPROTO_TCP (not 0): asyncio only sets TCP_NODELAY on such sockets' connections, and
    # without it every response waits ~40 ms for a delayed ACK (Nagle). Accepted sockets inherit NODELAY.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port} ({exc.strerror}); choose another --port or --host") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def serve(retriever: Retriever, host: str = "127.0.0.1", port: int = 8000, *, limits: ServerLimits | None = None,
          workers: int = 1, on_ready: Callable[[str], None] | None = None, log_level: str = "warning") -> None:
    """Serve ``retriever`` until interrupted. ``on_ready(url)`` is called once the socket is listening."""
    import uvicorn

    app = create_app(retriever, limits, workers=workers)
    # The event loop (HTTP) and the search thread share the GIL; a short switch interval keeps the loop
    # responsive while a batch is being ranked (Python's default is 5 ms).
    sys.setswitchinterval(0.001)
    sock = bind_socket(host, port)
    actual_port = sock.getsockname()[1]
    shown_host = f"[{host}]" if ":" in host else host
    url = f"http://{shown_host}:{actual_port}"
    config = uvicorn.Config(app, log_level=log_level, access_log=False, timeout_keep_alive=30)
    server = uvicorn.Server(config)
    if on_ready is not None:
        on_ready(url)
    try:
        server.run(sockets=[sock])
    finally:
        app.state.batcher.close()
        sock.close()
