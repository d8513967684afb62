"""A client for any server that speaks Search-R1's ``POST /retrieve`` API (searchrl's own or Search-R1's).

Pooled HTTP connections (httpx), a timeout per request, and retries with exponential backoff on connection
errors, timeouts and 5xx answers. After its retries it raises `RetrievalError` naming the URL and the cause;
a 4xx answer (a request the server rejects) is not retried. A server started with a token (``searchrl serve
--token``) gets it as ``Authorization: Bearer TOKEN``: from the ``token`` argument, else ``$SEARCHRL_SERVE_TOKEN``.
"""

from __future__ import annotations

import os
import time
from typing import Any

from searchrl.errors import ConfigError, RetrievalError
from searchrl.retrieval.base import Hit, check_search_args

MAX_QUERIES_PER_REQUEST = 1024  # the searchrl server's limit; larger batches are sent in several requests
TOKEN_ENV = "SEARCHRL_SERVE_TOKEN"  # the bearer token of `searchrl serve --token`, read by the server and the client


def base_url(url: str) -> str:
    """``http://host:port`` from ``http://host:port``, ``http://host:port/`` or ``http://host:port/retrieve``."""
    url = url.strip().rstrip("/")
    if url.endswith("/retrieve"):
        url = url[: -len("/retrieve")]
    return url


def backoff_delay(attempt: int, backoff: float, max_backoff: float) -> float:
    """Seconds to wait before retry number ``attempt`` (1-based): ``min(max_backoff, backoff * 2**(attempt-1))``."""
    return min(max_backoff, backoff * (2 ** (attempt - 1)))


class RemoteRetriever:
    """`Retriever` over HTTP: ``search`` posts ``{"queries", "topk", "return_scores": true}`` to ``/retrieve``.

    ``token``: the server's bearer token (default ``$SEARCHRL_SERVE_TOKEN``; none when unset or empty).
    """

    def __init__(self, url: str, *, timeout: float = 60.0, connect_timeout: float = 5.0, retries: int = 3,
                 backoff: float = 0.5, max_backoff: float = 8.0, max_connections: int = 16,
                 token: str | None = None) -> None:
        # local: httpx costs ~0.2 s to import; searchrl.retrieval.index imports this module, and `searchrl index`,
        # `searchrl eval` with a local index and the trainer must not pay it
        import httpx

        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ConfigError(f"retries must be an integer >= 0, got {retries!r}")
        if not (timeout > 0 and connect_timeout > 0 and backoff >= 0 and max_backoff >= 0):
            raise ConfigError("timeout and connect_timeout must be > 0, backoff and max_backoff >= 0")
        self.url = base_url(url)
        self.retrieve_url = self.url + "/retrieve"
        self.retries, self.backoff, self.max_backoff = retries, backoff, max_backoff
        token = token if token is not None else (os.environ.get(TOKEN_ENV) or None)
        self._client = httpx.Client(
            headers={"Authorization": f"Bearer {token}"} if token else None,
            timeout=httpx.Timeout(timeout, connect=connect_timeout),
            limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections),
        )
        self.kind = "remote"

    # -- HTTP with retries

    def _request(self, method: str, url: str, payload: dict | None = None) -> Any:
        import httpx  # local: see __init__ (loaded by then: a dictionary look-up)

        last_error = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(backoff_delay(attempt, self.backoff, self.max_backoff))
            try:
                response = self._client.request(method, url, json=payload)
            except httpx.TimeoutException as exc:
                last_error = f"timed out ({type(exc).__name__})"
                continue
            except httpx.TransportError as exc:
                last_error = f"connection failed ({type(exc).__name__}: {exc})"
                continue
            if response.status_code >= 500:
                last_error = f"server error {response.status_code}: {_detail(response)}"
                continue
            if response.status_code >= 400:
                raise RetrievalError(f"{url} rejected the request with {response.status_code}: {_detail(response)}")
            try:
                return response.json()
            except ValueError:
                raise RetrievalError(f"{url} answered {response.status_code} with a body that is not JSON: "
                                     f"{response.text[:200]!r}") from None
        raise RetrievalError(f"{url} failed after {self.retries + 1} attempt(s): {last_error}")

    # -- the Retriever protocol

    def search(self, queries: list[str], topk: int = 3) -> list[list[Hit]]:
        check_search_args(queries, topk)
        queries = list(queries)
        out: list[list[Hit]] = []
        for start in range(0, len(queries), MAX_QUERIES_PER_REQUEST):
            batch = queries[start:start + MAX_QUERIES_PER_REQUEST]
            body = self._request("POST", self.retrieve_url, {"queries": batch, "topk": topk, "return_scores": True})
            out.extend(self._parse(body, len(batch)))
        return out

    def _parse(self, body: Any, expected: int) -> list[list[Hit]]:
        result = body.get("result") if isinstance(body, dict) else None
        if not isinstance(result, list) or len(result) != expected:
            raise RetrievalError(f"{self.retrieve_url} answered without a 'result' list of {expected} entries: "
                                 f"{str(body)[:200]!r}")
        parsed = []
        for per_query in result:
            hits = []
            for item in per_query:
                try:
                    # {"document": {...}, "score": s}; a bare document is accepted too (Search-R1's servers
                    # answer that way when return_scores is false).
                    doc = item["document"] if "document" in item else item
                    hits.append(Hit.from_contents(str(doc.get("id", "")), doc["contents"], item.get("score")))
                except (KeyError, TypeError, AttributeError):
                    raise RetrievalError(f"{self.retrieve_url} answered a result item without "
                                         f"document.contents: {str(item)[:200]!r}") from None
            parsed.append(hits)
        return parsed

    def health(self) -> dict:
        """The server's ``GET /health`` answer."""
        return self._request("GET", self.url + "/health")

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> RemoteRetriever:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RemoteRetriever({self.retrieve_url!r})"


def _detail(response: Any) -> str:
    try:
        body = response.json()
        if isinstance(body, dict) and "detail" in body:
            return str(body["detail"])[:500]
    except ValueError:
        pass
    return response.text[:500]
