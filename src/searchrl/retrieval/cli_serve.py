"""`searchrl serve`: serve an index over HTTP with Search-R1's ``POST /retrieve`` API.

    searchrl serve --index DIR [--host 127.0.0.1] [--port 8000] [--topk 3] [--cache-size N | --no-cache]
                   [--header-timeout 15]
                   [--token TOKEN]   (or $SEARCHRL_SERVE_TOKEN: POST /retrieve then needs "Authorization: Bearer TOKEN")

Point Search-R1 (``retriever.url=http://127.0.0.1:8000/retrieve``) or searchrl (``load_retriever(URL)``) at it.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys

from searchrl.errors import ConfigError
from searchrl.retrieval.cache import DEFAULT_CACHE_SIZE
from searchrl.retrieval.client import TOKEN_ENV


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--index", required=True, help="index folder (or a .jsonl corpus: a cached BM25 index is built)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000; 0 picks a free port)")
    parser.add_argument("--topk", type=int, default=3, help="hits per query when a request has no topk (default 3)")
    parser.add_argument("--max-topk", type=int, default=100, help="largest topk a request may ask for (default 100)")
    parser.add_argument("--cache-size", type=int, default=DEFAULT_CACHE_SIZE,
                        help=f"query cache entries (default {DEFAULT_CACHE_SIZE})")
    parser.add_argument("--no-cache", action="store_true", help="no query cache")
    parser.add_argument("--workers", type=int, default=1, help="search threads (default 1; each batches the queue)")
    parser.add_argument("--token", default=None,
                        help="require 'Authorization: Bearer TOKEN' on POST /retrieve (default $SEARCHRL_SERVE_TOKEN, "
                             "which keeps the token out of the process list; GET /health stays open)")
    parser.add_argument("--header-timeout", type=float, default=15.0, metavar="SECONDS",
                        help="close a connection whose request line and headers take longer (default %(default)s)")
    parser.add_argument("--log-level", default="warning", choices=("critical", "error", "warning", "info", "debug"),
                        help="uvicorn log level (default warning)")


def main(args: argparse.Namespace) -> int:
    # local: the server imports fastapi (~0.5 s) and the index numpy (~0.13 s); `searchrl serve --help` must not
    # pay them
    from searchrl.retrieval.index import load_retriever
    from searchrl.retrieval.server import ServerLimits, serve

    if not 1 <= args.topk <= args.max_topk:
        raise ConfigError(f"--topk must be between 1 and --max-topk ({args.max_topk}), got {args.topk}")
    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port must be between 0 and 65535, got {args.port}")
    if not 0 < args.header_timeout < float("inf"):
        raise ConfigError(f"--header-timeout must be a positive number of seconds, got {args.header_timeout}")
    # An empty variable counts as unset; an empty --token is an error (create_app says so).
    token = args.token if args.token is not None else (os.environ.get(TOKEN_ENV) or None)
    retriever = load_retriever(args.index, cache=not args.no_cache, cache_size=args.cache_size)
    kind = getattr(retriever, "kind", "?")
    num_docs = getattr(retriever, "num_docs", "?")

    def ready(url: str) -> None:
        print(f"searchrl serve: {kind} index of {num_docs} passages from {args.index}", flush=True)
        print(f"searchrl serve: listening on {url} (POST {url}/retrieve, GET {url}/health)", flush=True)

    stopped = serve(retriever, args.host, args.port,
                    limits=ServerLimits(default_topk=args.topk, max_topk=args.max_topk), workers=args.workers,
                    token=token, on_ready=ready, log_level=args.log_level, header_timeout=args.header_timeout)
    if stopped is not None:
        print(f"searchrl serve: stopped ({signal.Signals(stopped).name})", file=sys.stderr, flush=True)
    return 0
