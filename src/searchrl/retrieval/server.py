"""The retrieval server: Search-R1's ``POST /retrieve`` API on FastAPI + uvicorn, with request batching.

Request (exactly Search-R1's ``QueryRequest``)::

    {"queries": ["q1", "q2"], "topk": 3, "return_scores": true}

``topk`` may be null or absent (the server's default, 3); ``return_scores`` defaults to false, as in Search-R1's
``QueryRequest``. Any other field is answered 422 naming it (a client's ``top_k`` would otherwise get 3 hits). Response: ``{"result": [[{"document": {"id", "contents"}, "score": 0.83}, ...], ...]}``, one
list per query. With ``return_scores: false`` the items carry no ``"score"`` and keep their ``"document"``
wrapper, so one parser reads both forms (Search-R1's server meant to return bare documents there, but crashes
on that request).

``GET /health`` reports the index kind, the number of documents, cache statistics and request counters.

With a token (``searchrl serve --token`` or ``$SEARCHRL_SERVE_TOKEN``) ``POST /retrieve`` requires
``Authorization: Bearer TOKEN`` and answers 401 without it; ``GET /health`` stays open (it shows no passage
and no query) so that liveness probes need no secret. A body is read as a stream and counted: one that passes
``max_body_bytes`` (declared in Content-Length or sent chunked) is answered 413 at once, and the connection
is closed rather than drained. A connection whose request line and headers have not all arrived within
``header_timeout`` seconds of its first byte (or of its opening) is closed, so slow clients cannot hold
connections open forever (slowloris); SIGTERM stops the server gracefully (`serve` returns the signal).

Requests are not searched one by one: every request's queries go to a queue, and one search thread takes all
queued requests at once and answers them with a single batched ``search`` call (then a per-request JSON
encoding), so concurrent clients share one BM25 sparse product and one cache lookup. A failing search answers
500 with the error message and the server keeps serving.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import logging
import queue
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass

import h11
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.requests import ClientDisconnect
from uvicorn.protocols.http.h11_impl import H11Protocol

from searchrl.errors import ConfigError
from searchrl.retrieval.base import Hit, Retriever

log = logging.getLogger("searchrl.serve")
REQUEST_FIELDS = ("queries", "topk", "return_scores")  # Search-R1's QueryRequest
DEFAULT_HEADER_TIMEOUT = 15.0  # seconds for a request's line and headers to arrive


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


def _too_large(size: int | str, limits: ServerLimits, so_far: bool = False) -> RequestError:
    has = f"more than {size}" if so_far else str(size)
    return RequestError(413, f"request body has {has} bytes; at most {limits.max_body_bytes}: send fewer or "
                             "shorter queries per request")


async def read_body(request: Request, limits: ServerLimits) -> bytes:
    """The request body, counted as it arrives: `RequestError` 413 as soon as it passes ``max_body_bytes``.

    A declared Content-Length over the limit is refused before reading a byte; a chunked body (no length) is
    refused at the first chunk past the limit, so a client cannot make the server buffer more than the limit.
    """
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limits.max_body_bytes:
        raise _too_large(declared, limits)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limits.max_body_bytes:
            raise _too_large(limits.max_body_bytes, limits, so_far=True)
        chunks.append(chunk)
    return b"".join(chunks)


def parse_retrieve_request(body: bytes, limits: ServerLimits) -> tuple[list[str], int, bool]:
    """Validate a ``/retrieve`` body; returns (queries, topk, return_scores) or raises `RequestError`."""
    if len(body) > limits.max_body_bytes:
        raise _too_large(len(body), limits)
    try:
        payload = json.loads(body)
    except RecursionError:
        raise RequestError(400, "request body nests JSON too deeply to parse; send a flat object "
                                '{"queries": ["..."], "topk": 3, "return_scores": true}') from None
    except ValueError as exc:  # also bad UTF-8, and integers of more than 4300 digits
        raise RequestError(400, f"request body is not valid JSON ({exc}); send "
                                '{"queries": ["..."], "topk": 3, "return_scores": true}') from None
    if not isinstance(payload, dict):
        raise RequestError(422, f"request body must be a JSON object, got {type(payload).__name__}")
    unknown = [key for key in payload if key not in REQUEST_FIELDS]
    if unknown:
        raise RequestError(422, f"unknown field {unknown[0]!r}; a request has only the fields "
                                f"{', '.join(REQUEST_FIELDS)}")
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


def _error(exc: RequestError, close: bool = False) -> JSONResponse:
    # close: the request body was not read to its end; closing stops the server from draining the rest of it
    # (uvicorn would otherwise read and discard it to keep the connection alive).
    headers = {"connection": "close"} if close else {}
    if exc.status == 401:
        headers["www-authenticate"] = "Bearer"
    return JSONResponse({"detail": exc.message}, status_code=exc.status, headers=headers)


def check_token(request: Request, token: str | None) -> None:
    """`RequestError` 401 unless ``token`` is None or the request carries ``Authorization: Bearer <token>``."""
    if token is None:
        return
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not given:
        raise RequestError(401, "this server requires a token: send the header 'Authorization: Bearer TOKEN' "
                                "(searchrl's client sends $SEARCHRL_SERVE_TOKEN)")
    if not hmac.compare_digest(given.strip().encode("utf-8"), token.encode("utf-8")):
        raise RequestError(401, "wrong bearer token in the Authorization header; use the server's --token "
                                "(searchrl's client sends $SEARCHRL_SERVE_TOKEN)")


def create_app(retriever: Retriever, limits: ServerLimits | None = None, workers: int = 1,
               token: str | None = None) -> FastAPI:
    """A FastAPI app serving ``retriever`` (call ``app.state.batcher.close()`` when done, or use `serve`).

    With ``token``, ``POST /retrieve`` requires ``Authorization: Bearer <token>`` (``GET /health`` stays open).
    (FastAPI resolves the endpoints' annotations from this module's globals, hence the module-level imports.)
    """
    limits = limits or ServerLimits()
    if token is not None:
        token = token.strip()  # as the header's value is read
        if not token:
            raise ConfigError("the server token is empty; give a non-empty --token / $SEARCHRL_SERVE_TOKEN, or none")
    batcher = BatchingSearcher(retriever, workers=workers)
    started = time.time()
    # No interactive docs: they would load assets from a CDN, and this API is two endpoints.
    app = FastAPI(title="searchrl retrieval server", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.batcher = batcher
    app.state.retriever = retriever
    app.state.limits = limits
    rejected = {"401": 0, "413": 0, "4xx": 0}  # rejected requests, for /health (event loop only: no lock)

    def reject(exc: RequestError, close: bool = False) -> JSONResponse:
        key = str(exc.status) if str(exc.status) in rejected else "4xx"
        rejected[key] += 1
        return _error(exc, close)

    @app.post("/retrieve")
    async def retrieve(request: Request) -> Response:
        try:  # the token first: a client without it makes the server read nothing
            check_token(request, token)
            body = await read_body(request, limits)
        except RequestError as exc:
            return reject(exc, close=True)
        except ClientDisconnect:  # the client left mid-body: nobody reads this answer
            return Response(status_code=400, headers={"connection": "close"})
        try:
            queries, topk, return_scores = parse_retrieve_request(body, limits)
        except RequestError as exc:
            return reject(exc)
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
            "token_required": token is not None,
            "rejected": dict(rejected),
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


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or a name) reaches this machine only; a name that does not resolve: False."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(info[4][0].split("%")[0]).is_loopback for info in infos)


class _HeaderTimeoutProtocol(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request line and headers take more than
    `header_timeout` seconds: counted from the connection's opening, and on a kept-alive connection from the
    first byte of its next request (an idle kept-alive connection is uvicorn's `timeout_keep_alive`'s)."""

    header_timeout = DEFAULT_HEADER_TIMEOUT
    _header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._header_timer = self.loop.call_later(self.header_timeout, self._headers_too_slow)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        waiting = self.conn.their_state is h11.IDLE  # still reading a request's line and headers
        if waiting and self._header_timer is None and not self.transport.is_closing():
            self._header_timer = self.loop.call_later(self.header_timeout, self._headers_too_slow)
        elif not waiting:
            self._cancel_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_timer()
        super().connection_lost(exc)

    def _cancel_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_too_slow(self) -> None:
        self._header_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            log.info("closed a connection from %s: no complete request headers within %.0f s", self.client,
                     self.header_timeout)
            self.transport.close()


def uvicorn_config(app: FastAPI, *, header_timeout: float = DEFAULT_HEADER_TIMEOUT,
                   log_level: str = "warning") -> uvicorn.Config:
    """The uvicorn configuration `serve` runs ``app`` with (h11, with the header timeout)."""
    if not header_timeout > 0:
        raise ConfigError(f"the header timeout must be a positive number of seconds, got {header_timeout}")
    protocol = type("HeaderTimeoutProtocol", (_HeaderTimeoutProtocol,), {"header_timeout": float(header_timeout)})
    return uvicorn.Config(app, http=protocol, log_level=log_level, access_log=False, timeout_keep_alive=30)


def serve(retriever: Retriever, host: str = "127.0.0.1", port: int = 8000, *, limits: ServerLimits | None = None,
          workers: int = 1, token: str | None = None, on_ready: Callable[[str], None] | None = None,
          log_level: str = "warning", header_timeout: float = DEFAULT_HEADER_TIMEOUT) -> int | None:
    """Serve ``retriever`` until interrupted. ``on_ready(url)`` is called once the socket is listening.

    SIGTERM stops the server gracefully (requests in flight are answered) and `serve` returns it; Ctrl-C raises
    KeyboardInterrupt after the same shutdown. Connections whose request headers take longer than
    ``header_timeout`` seconds are closed. Logs a warning when ``host`` is not a loopback address and no
    ``token`` is set: anyone who reaches the port can then search the index.
    """
    app = create_app(retriever, limits, workers=workers, token=token)
    if token is None and not is_loopback(host):
        log.warning("searchrl serve: warning: listening on %s, which other machines can reach, without a token; "
                    "set --token or $SEARCHRL_SERVE_TOKEN (clients send it as 'Authorization: Bearer TOKEN')", host)
    # The event loop (HTTP) and the search thread share the GIL; a short switch interval keeps the loop
    # responsive while a batch is being ranked (Python's default is 5 ms).
    sys.setswitchinterval(0.001)
    sock = bind_socket(host, port)
    actual_port = sock.getsockname()[1]
    shown_host = f"[{host}]" if ":" in host else host
    url = f"http://{shown_host}:{actual_port}"
    server = uvicorn.Server(uvicorn_config(app, header_timeout=header_timeout, log_level=log_level))
    stopped: list[int] = []

    def on_term(signum: int, frame: object) -> None:
        # Before uvicorn's own handler is in place (and when it re-raises the signal after its shutdown).
        stopped.append(signum)
        server.should_exit = True

    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, on_term) if main_thread else None
    try:
        if on_ready is not None:
            on_ready(url)
        server.run(sockets=[sock])
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)
        app.state.batcher.close()
        sock.close()
    return stopped[0] if stopped else None
