"""`searchrl index`: build, inspect and query retrieval indexes.

    searchrl index build --corpus FILE --kind bm25|dense|hybrid --out DIR [options]
    searchrl index info DIR
    searchrl index search DIR "query" [more queries] [--topk 3]
"""

from __future__ import annotations

import argparse
import json
import time

from searchrl.retrieval.index import KINDS, build_index, load_retriever, read_manifest
from searchrl.retrieval.render import render_hits


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="index_command", metavar="ACTION", required=True)

    build = sub.add_parser("build", help="build an index over a JSONL corpus",
                           description="Build a BM25, dense or hybrid index over a JSONL corpus (wiki-18 / FlashRAG "
                                       'lines: {"id", "contents"} or {"id", "title", "text"}).')
    build.add_argument("--corpus", required=True, help="corpus file (.jsonl or .jsonl.gz)")
    build.add_argument("--kind", required=True, choices=KINDS, help="index kind")
    build.add_argument("--out", required=True, help="output folder (built beside it, then renamed into place)")
    build.add_argument("--overwrite", action="store_true", help="replace --out if it already holds files")
    build.add_argument("--quiet", action="store_true", help="no progress bar")

    bm25 = build.add_argument_group("BM25 (bm25, hybrid)")
    bm25.add_argument("--k1", type=float, default=None, help="BM25 k1 (default 0.9, as Anserini/pyserini)")
    bm25.add_argument("--b", type=float, default=None, help="BM25 b (default 0.4, as Anserini/pyserini)")
    bm25.add_argument("--method", default=None, help="bm25s scoring variant: lucene (default), robertson, atire, "
                                                     "bm25l, bm25+")
    bm25.add_argument("--stopwords", default=None, help="stop-word list: en (default), en_plus, ..., or none")
    bm25.add_argument("--stemmer", default=None, help="PyStemmer language: english (default), ..., or none")

    dense = build.add_argument_group("dense (dense, hybrid)")
    dense.add_argument("--model", default=None, help="local encoder folder (default: the bundled all-MiniLM-L6-v2)")
    dense.add_argument("--preset", default=None, choices=("minilm", "e5", "bge"),
                       help="prefixes/pooling of a model family (e5: 'query: '/'passage: ', mean pooling)")
    dense.add_argument("--query-prefix", default=None, help="text put before every query")
    dense.add_argument("--passage-prefix", default=None, help="text put before every passage")
    dense.add_argument("--pooling", default=None, choices=("auto", "mean", "cls", "max", "lasttoken"),
                       help="pooling (auto: the model folder's own)")
    dense.add_argument("--no-normalize", action="store_true", help="do not L2-normalise embeddings")
    dense.add_argument("--max-length", type=int, default=None, help="max tokens per text (default 256)")
    dense.add_argument("--batch-size", type=int, default=None, help="encoding batch size (default 64)")
    dense.add_argument("--bf16", action="store_true", help="bf16 autocast while encoding (about 2x faster on CPUs with avx512_bf16; about 8x slower on AVX2-only CPUs)")
    dense.add_argument("--faiss", default=None, choices=("flat", "hnsw"), help="exact (flat, default) or HNSW")
    dense.add_argument("--hnsw-m", type=int, default=None, help="HNSW links per node (default 32)")

    hybrid = build.add_argument_group("hybrid")
    hybrid.add_argument("--rrf-k", type=int, default=None, help="reciprocal rank fusion constant (default 60)")
    hybrid.add_argument("--rrf-depth", type=int, default=None, help="candidates per retriever before fusion (default 50)")

    info = sub.add_parser("info", help="print an index folder's manifest", description="Print an index's manifest.")
    info.add_argument("index", help="index folder")

    search = sub.add_parser("search", help="search an index from the command line",
                            description="Search an index folder, a .jsonl corpus or a server URL and print the "
                                        "hits as the agent sees them.")
    search.add_argument("index", help="index folder, .jsonl corpus or http:// URL")
    search.add_argument("queries", nargs="+", help="one or more queries")
    search.add_argument("--topk", type=int, default=3, help="hits per query (default 3)")


_BUILD_OPTIONS = ("k1", "b", "method", "stopwords", "stemmer", "model", "preset", "query_prefix", "passage_prefix",
                  "pooling", "max_length", "batch_size", "faiss", "hnsw_m", "rrf_k", "rrf_depth")


def main(args: argparse.Namespace) -> int:
    if args.index_command == "info":
        print(json.dumps(read_manifest(args.index), indent=2, sort_keys=True))
        return 0
    if args.index_command == "search":
        return _search(args)
    options = {name: getattr(args, name) for name in _BUILD_OPTIONS if getattr(args, name) is not None}
    if args.no_normalize:
        options["normalize"] = False
    if args.bf16:
        options["bf16"] = True
    start = time.perf_counter()
    out = build_index(args.corpus, args.kind, args.out, overwrite=args.overwrite, show_progress=not args.quiet,
                      **options)
    manifest = read_manifest(out)
    print(f"built a {args.kind} index of {manifest['num_docs']} passages in {time.perf_counter() - start:.1f} s: {out}")
    return 0


def _search(args: argparse.Namespace) -> int:
    retriever = load_retriever(args.index, cache=False)
    for query, hits in zip(args.queries, retriever.search(args.queries, topk=args.topk)):
        print(f"# {query}")
        for hit in hits:
            score = "" if hit.score is None else f"{hit.score:.4f}  "
            print(f"  {score}[{hit.doc_id}] {hit.title}")
        print(render_hits(hits))
    return 0
