"""searchrl.retrieval: corpora, BM25, dense, hybrid, the query cache and index folders, on real files.

Indexes are built on the real NQ sample (`shared_data / "nq_oracle"`, 989 passages). Dense and hybrid indexes
are built on the first passages only (MiniLM encodes tens of passages per second on the shared 2-core CPU).
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from searchrl.errors import ConfigError, DataError
from searchrl.retrieval import (CachedRetriever, Hit, build_index, cached_bm25_index, load_index, load_retriever,
                                parse_contents, read_corpus, reciprocal_rank_fusion, render_hits)
from searchrl.retrieval.index import read_manifest
from searchrl.training.policy import bf16_native

# Measured share of nq_oracle questions whose gold passage is in BM25's top 3 (k1=0.9, b=0.4): 0.918.
BM25_GOLD_AT_3 = 0.90
DENSE_SUBSET = 64      # passages for the dense index
HYBRID_SUBSET = 32     # passages for the hybrid index
# truncated passages keep the test fast; bf16 autocast only where it is native (8x slower on AVX2-only CPUs)
FAST_DENSE = {"bf16": bf16_native(), "max_length": 96, "batch_size": 32}


def searchr1_passages2string(retrieval_result: list[dict]) -> str:
    """Search-R1's `generation.py::_passages2string`, verbatim (PeterGriffinJin/Search-R1@a14dc3a): the oracle."""
    format_reference = ''
    for idx, doc_item in enumerate(retrieval_result):
        content = doc_item['document']['contents']
        title = content.split("\n")[0]
        text = "\n".join(content.split("\n")[1:])
        format_reference += f"Doc {idx+1}(Title: {title}) {text}\n"
    return format_reference


def _questions(shared_data: Path) -> list[dict]:
    return [json.loads(line) for line in (shared_data / "nq_oracle" / "questions.jsonl").open()]


def _ids(results: list[list[Hit]]) -> list[list[str]]:
    return [[h.doc_id for h in hits] for hits in results]


@pytest.fixture(scope="module")
def nq_corpus(shared_data: Path) -> Path:
    return shared_data / "nq_oracle" / "corpus.jsonl"


@pytest.fixture(scope="module")
def bm25_dir(nq_corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_index(nq_corpus, "bm25", tmp_path_factory.mktemp("bm25") / "index", show_progress=False)


@pytest.fixture(scope="module")
def bm25(bm25_dir: Path):
    return load_index(bm25_dir)


def _head(corpus: Path, n: int, out: Path) -> Path:
    with corpus.open() as src, out.open("w") as dst:
        for _, line in zip(range(n), src):
            dst.write(line)
    return out


# ------------------------------------------------------------------------------------------ rendering


def test_parse_contents_strips_title_quotes_and_keeps_text() -> None:
    assert parse_contents('"Paris"\nParis is the capital.\nSecond line.') == ("Paris", "Paris is the capital.\nSecond line.")
    assert parse_contents("No quotes\ntext") == ("No quotes", "text")
    assert parse_contents('"Only title"') == ("Only title", "")
    assert parse_contents('"Say "hi""\nx') == ('Say "hi"', "x")


def test_render_hits_is_byte_identical_to_search_r1(bm25) -> None:
    hits = bm25.search(["who got the first nobel prize in physics"], topk=3)[0]
    assert len(hits) == 3
    items = [{"document": {"id": h.doc_id, "contents": h.contents}, "score": h.score} for h in hits]
    rendered = render_hits(hits)
    assert rendered == searchr1_passages2string(items)
    assert rendered.startswith('Doc 1(Title: "List of Nobel laureates in Physics") The first Nobel Prize')
    # A hit built without contents (e.g. by hand) renders from its title and text.
    assert render_hits([Hit("x", "T", "body", "")]) == "Doc 1(Title: T) body\n"


# ------------------------------------------------------------------------------------------ corpora


def test_read_corpus_accepts_both_formats_gzip_and_blank_lines(tmp_path: Path) -> None:
    lines = ['{"id": 7, "contents": "\\"A\\"\\nalpha"}', "", '{"id": "b", "title": "B", "text": "beta"}', "  "]
    plain = tmp_path / "c.jsonl"
    plain.write_text("\n".join(lines) + "\n")
    packed = tmp_path / "c.jsonl.gz"
    with gzip.open(packed, "wt") as fh:
        fh.write("\n".join(lines) + "\n")
    for path in (plain, packed):
        passages = list(read_corpus(path))
        assert [(p.doc_id, p.contents) for p in passages] == [("7", '"A"\nalpha'), ("b", '"B"\nbeta')]


@pytest.mark.parametrize(("line", "message"), [
    ('{"id": "1", "contents": "x"', "not valid JSON"),
    ('["id", "contents"]', "expected a JSON object"),
    ('{"contents": "x"}', "missing field 'id'"),
    ('{"id": [1], "contents": "x"}', "field 'id' must be a string or an integer"),
    ('{"id": "1", "contents": 5}', "field 'contents' must be a string"),
    ('{"id": "1", "title": "t"}', "needs either 'contents' or 'title' and 'text'"),
    ('{"id": "1", "title": 3, "text": "t"}', "field 'title' must be a string"),
])
def test_malformed_corpus_line_names_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "0", "contents": "\\"T\\"\\nok"}\n\n' + line + "\n")
    with pytest.raises(DataError) as err:
        list(read_corpus(path))
    assert f"{path}:3:" in str(err.value) and message in str(err.value)


def test_bad_utf8_empty_and_missing_corpora(tmp_path: Path) -> None:
    bad = tmp_path / "latin1.jsonl"
    bad.write_bytes(b'{"id": "0", "contents": "caf\xe9"}\n')
    with pytest.raises(DataError, match=rf"{bad}:1: not valid UTF-8"):
        list(read_corpus(bad))
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    with pytest.raises(DataError, match="holds no passages"):
        list(read_corpus(empty))
    with pytest.raises(DataError, match="corpus file not found"):
        list(read_corpus(tmp_path / "nope.jsonl"))


# ------------------------------------------------------------------------------------------ BM25


def test_bm25_finds_gold_passages(bm25, shared_data: Path) -> None:
    questions = _questions(shared_data)
    results = bm25.search([q["question"] for q in questions], topk=3)
    found = [q["metadata"]["gold_doc_id"] in [h.doc_id for h in hits] for q, hits in zip(questions, results)]
    share = sum(found) / len(found)
    assert share >= BM25_GOLD_AT_3, f"gold passage in BM25 top-3 for only {share:.3f} of questions"
    assert all(len(hits) == 3 for hits in results)
    assert all(hits[0].score >= hits[1].score >= hits[2].score > 0 for hits in results)


def test_bm25_hits_carry_the_stored_passage(bm25, nq_corpus: Path) -> None:
    rows = {json.loads(line)["id"]: json.loads(line) for line in nq_corpus.open()}
    for hit in bm25.search(["deadpool movie release"], topk=5)[0]:
        row = rows[hit.doc_id]
        assert hit.contents == row["contents"]
        assert (hit.title, hit.text) == (row["title"], row["text"])
        assert isinstance(hit.score, float)


def test_bm25_matches_bm25s_reference_scores(bm25, nq_corpus: Path, shared_data: Path) -> None:
    """Our batched sparse-product search gives bm25s' own scores (the reference implementation)."""
    import bm25s
    import Stemmer

    contents = [json.loads(line)["contents"] for line in nq_corpus.open()]
    tokenizer = bm25s.tokenization.Tokenizer(stopwords="en", stemmer=Stemmer.Stemmer("english"))
    reference = bm25s.BM25(k1=0.9, b=0.4)
    reference.index((tokenizer.tokenize(contents, show_progress=False), tokenizer.get_vocab_dict()),
                    show_progress=False)
    queries = [q["question"] for q in _questions(shared_data)[:100]]
    ref = reference.retrieve(tokenizer.tokenize(queries, update_vocab=False, show_progress=False), k=5,
                             show_progress=False)
    ours = bm25.search(queries, topk=5)
    row_of = {json.loads(line)["id"]: i for i, line in enumerate(nq_corpus.open())}
    query_tokens = tokenizer.tokenize(queries, update_vocab=False, show_progress=False, return_as="string")
    for hits, tokens, ref_rows, ref_scores in zip(ours, query_tokens, ref.documents, ref.scores):
        scores = [h.score for h in hits]
        np.testing.assert_allclose(scores, ref_scores, rtol=1e-5)
        full = reference.get_scores(tokens)  # bm25s' score of every document for this query
        np.testing.assert_allclose(scores, full[[row_of[h.doc_id] for h in hits]], rtol=1e-5)
        # Above the last score the documents are the same; at the boundary, tied documents may differ.
        cutoff = float(ref_scores[-1]) * (1 + 1e-5)
        assert ({row_of[h.doc_id] for h in hits if h.score > cutoff}
                == {int(r) for r, s in zip(ref_rows, ref_scores) if s > cutoff})


def test_bm25_save_load_and_engines_agree(bm25, bm25_dir: Path, tmp_path: Path, shared_data: Path) -> None:
    queries = [q["question"] for q in _questions(shared_data)[:200]]
    expected = bm25.search(queries, topk=4)
    moved = tmp_path / "copy"
    shutil.copytree(bm25_dir, moved)
    for retriever in (load_index(moved, mmap=False), load_index(moved, mmap=True)):
        assert retriever.search(queries, topk=4) == expected
    # bm25s' own per-query retrieve (used when scipy is missing) ranks the same documents with the same scores.
    fallback = load_index(moved, bm25_engine="bm25s").search(queries, topk=4)
    for ours, theirs in zip(expected, fallback):
        np.testing.assert_allclose([h.score for h in ours], [h.score for h in theirs], rtol=1e-5)
    assert sum(_ids([a]) == _ids([b]) for a, b in zip(expected, fallback)) >= 0.95 * len(queries)


def test_bm25_edge_queries(bm25) -> None:
    empty, stop, unknown, mixed = bm25.search(["", "the of and", "zzqxv wlkjq", "Nobel xyzzy"], topk=3)
    assert empty == [] and stop == [] and unknown == []
    assert mixed and all("nobel" in h.contents.lower() for h in mixed)
    assert len(bm25.search(["nobel"], topk=100)[0]) == sum(
        "nobel" in p.contents.lower() for p in bm25.docs)  # only matching documents, however large topk is
    assert bm25.search([], topk=3) == []
    with pytest.raises(ConfigError, match="list of queries"):
        bm25.search("nobel prize", topk=3)
    with pytest.raises(ConfigError, match="topk must be an integer >= 1"):
        bm25.search(["nobel"], topk=0)
    with pytest.raises(ConfigError, match=r"queries\[1\] must be a string"):
        bm25.search(["nobel", 3], topk=3)


# ------------------------------------------------------------------------------------------ index folders


def test_manifest_and_load_retriever_forms(bm25_dir: Path, nq_corpus: Path, tmp_path: Path) -> None:
    manifest = read_manifest(bm25_dir)
    assert manifest["kind"] == "bm25" and manifest["num_docs"] == 989
    assert manifest["bm25"]["k1"] == 0.9 and manifest["bm25"]["stemmer"] == "english"
    retriever = load_retriever(str(bm25_dir))
    assert isinstance(retriever, CachedRetriever) and retriever.kind == "bm25" and retriever.num_docs == 989
    plain = load_retriever(bm25_dir, cache=False)
    assert not isinstance(plain, CachedRetriever)
    with pytest.raises(ConfigError, match=r"unknown option\(s\) for loading an index: timeout"):
        load_retriever(bm25_dir, timeout=3)
    with pytest.raises(ConfigError, match="apply to dense and hybrid indexes only"):
        load_retriever(bm25_dir, bf16=True)
    with pytest.raises(DataError, match="no index, corpus or URL"):
        load_retriever(tmp_path / "missing")
    with pytest.raises(DataError, match="not a searchrl index"):
        load_retriever(tmp_path)


def test_build_index_errors_and_atomic_output(nq_corpus: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="index kind must be one of bm25, dense, hybrid"):
        build_index(nq_corpus, "splade", tmp_path / "x", show_progress=False)
    with pytest.raises(ConfigError, match=r"unknown option\(s\) for a bm25 index: model; valid: k1, b"):
        build_index(nq_corpus, "bm25", tmp_path / "x", show_progress=False, model="m")
    with pytest.raises(ConfigError, match="k1 must be a number"):
        build_index(nq_corpus, "bm25", tmp_path / "x", show_progress=False, k1=-1)
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("user file")
    with pytest.raises(ConfigError, match="already exists and is not empty"):
        build_index(nq_corpus, "bm25", out, show_progress=False)
    # A corpus that breaks near its end leaves neither the output nor a temporary folder behind.
    broken = tmp_path / "broken.jsonl"
    broken.write_text(nq_corpus.read_text() + '{"id": "x"}\n')
    with pytest.raises(DataError, match=rf"{broken}:990: needs either 'contents'"):
        build_index(broken, "bm25", tmp_path / "new", show_progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.jsonl", "out"]
    build_index(_head(nq_corpus, 50, tmp_path / "small.jsonl"), "bm25", out, overwrite=True, show_progress=False)
    assert read_manifest(out)["num_docs"] == 50 and not (out / "keep.txt").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_cached_bm25_index_builds_once_per_corpus_version(nq_corpus: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    corpus = _head(nq_corpus, 200, tmp_path / "corpus.jsonl")
    monkeypatch.setenv("SEARCHRL_CACHE", str(tmp_path / "cache"))
    first = cached_bm25_index(corpus, show_progress=False)
    assert first.parent == tmp_path / "cache" / "indexes"
    stamp = (first / "manifest.json").stat().st_mtime_ns
    assert cached_bm25_index(corpus, show_progress=False) == first
    assert (first / "manifest.json").stat().st_mtime_ns == stamp  # reused, not rebuilt
    with corpus.open("a") as fh:  # the corpus changes: a new index
        fh.write(json.dumps({"id": "new", "contents": '"Zebra"\nZebras are striped.'}) + "\n")
    second = cached_bm25_index(corpus, show_progress=False)
    assert second != first and read_manifest(second)["num_docs"] == 201
    assert load_index(second).search(["striped zebras"], topk=1)[0][0].doc_id == "new"
    explicit = cached_bm25_index(corpus, cache_dir=tmp_path / "elsewhere", show_progress=False)
    assert explicit.parent == tmp_path / "elsewhere"
    assert not [p for p in (tmp_path / "cache" / "indexes").iterdir() if p.name.startswith(".")]
    # A .jsonl path given to load_retriever goes through the same cache.
    assert load_retriever(corpus, cache=False).folder == second


# ------------------------------------------------------------------------------------------ cache


class CountingRetriever:
    """Records every batch that reaches the wrapped (real) retriever."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.calls: list[list[str]] = []

    def search(self, queries: list[str], topk: int = 3) -> list[list[Hit]]:
        self.calls.append(list(queries))
        return self.inner.search(queries, topk)


def test_cache_dedups_in_batch_and_across_calls(bm25) -> None:
    counting = CountingRetriever(bm25)
    cached = CachedRetriever(counting, maxsize=10)
    batch = ["Deadpool movie", "deadpool   MOVIE ", "nobel prize physics", "Deadpool movie"]
    results = cached.search(batch, topk=3)
    assert counting.calls == [["Deadpool movie", "nobel prize physics"]]
    assert (cached.hits, cached.misses) == (2, 2)
    assert results[0] == results[1] == results[3] == bm25.search(["Deadpool movie"], 3)[0]
    assert results[2] == bm25.search(["nobel prize physics"], 3)[0]
    again = cached.search(["NOBEL prize physics", "deadpool movie"], topk=3)
    assert len(counting.calls) == 1 and (cached.hits, cached.misses) == (4, 2)
    assert again == [results[2], results[0]]
    cached.search(["nobel prize physics"], topk=2)  # another topk is another key
    assert counting.calls[-1] == ["nobel prize physics"] and cached.misses == 3
    again[0].clear()  # callers get copies
    assert cached.search(["nobel prize physics"], topk=3)[0] == results[2]
    assert cached.stats() == {"hits": 5, "misses": 3, "size": 3, "maxsize": 10}


def test_cache_is_a_bounded_lru(bm25) -> None:
    counting = CountingRetriever(bm25)
    cached = CachedRetriever(counting, maxsize=2)
    cached.search(["alpha"], 3)
    cached.search(["beta"], 3)
    cached.search(["alpha"], 3)  # alpha becomes the most recent
    cached.search(["gamma"], 3)  # evicts beta
    assert cached.stats()["size"] == 2
    cached.search(["alpha"], 3)
    assert counting.calls[-1] == ["gamma"]
    cached.search(["beta"], 3)
    assert counting.calls[-1] == ["beta"]
    with pytest.raises(ConfigError, match="maxsize"):
        CachedRetriever(bm25, maxsize=0)
    with pytest.raises(ConfigError, match="list of queries"):
        cached.search("alpha", 3)
    assert cached.search([], 3) == []


# ------------------------------------------------------------------------------------------ fusion


def test_reciprocal_rank_fusion_by_hand() -> None:
    rows, scores = reciprocal_rank_fusion([[10, 20, 30], [20, 40]], k=60)
    # 20: 1/62 + 1/61; 10: 1/61; 40: 1/62; 30: 1/63
    assert rows.tolist() == [20, 10, 40, 30]
    np.testing.assert_allclose(scores, [1 / 62 + 1 / 61, 1 / 61, 1 / 62, 1 / 63], rtol=1e-6)
    rows, _ = reciprocal_rank_fusion([[1, 2], [2, 1]], k=0, topk=1)
    assert rows.tolist() == [1]  # a tie (1/1 + 1/2 each) goes to the lower row
    assert reciprocal_rank_fusion([[], []])[0].tolist() == []


# ------------------------------------------------------------------------------------------ dense and hybrid


@pytest.fixture(scope="module")
def dense_dir(nq_corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("dense")
    subset = _head(nq_corpus, DENSE_SUBSET, folder / "subset.jsonl")
    return build_index(subset, "dense", folder / "index", show_progress=False, **FAST_DENSE)


def test_dense_index_is_exact_inner_product_search(dense_dir: Path, shared_data: Path, tmp_path: Path) -> None:
    from searchrl.retrieval.dense import DenseSettings, Encoder

    manifest = read_manifest(dense_dir)
    assert manifest["kind"] == "dense" and manifest["num_docs"] == DENSE_SUBSET
    assert manifest["dense"]["dim"] == 384 and manifest["dense"]["faiss"] == "flat"
    questions = [q for q in _questions(shared_data) if int(q["metadata"]["gold_doc_id"]) < DENSE_SUBSET]
    queries = [q["question"] for q in questions]
    retriever = load_index(dense_dir)
    results = retriever.search(queries, topk=3)
    share = sum(q["metadata"]["gold_doc_id"] in ids for q, ids in zip(questions, _ids(results))) / len(questions)
    # Measured 0.98 (64 questions, passages truncated to 96 tokens); the subset has few distractors.
    assert share >= 0.95, f"dense gold@3 {share:.2f} on the {len(questions)} questions of the subset"
    # The stored vectors are the encoder's passage embeddings ...
    encoder = Encoder(DenseSettings(**FAST_DENSE))
    stored = retriever.searcher.index.reconstruct_n(0, DENSE_SUBSET)
    fresh = encoder.encode([retriever.docs.get(i).contents for i in range(3)], is_query=False)
    np.testing.assert_allclose(fresh, stored[:3], atol=2e-2)
    # ... and the search is exact: brute-force inner products with freshly encoded queries give the same top 3.
    sims = encoder.encode(queries[:12], is_query=True) @ stored.T
    for hits, row_sims in zip(results[:12], sims):
        best = np.argsort(-row_sims, kind="stable")[:3]
        assert [h.doc_id for h in hits] == [retriever.docs.get(int(i)).doc_id for i in best]
        np.testing.assert_allclose([h.score for h in hits], row_sims[best], rtol=2e-2, atol=2e-2)
    moved = tmp_path / "moved"
    shutil.copytree(dense_dir, moved)
    assert _ids(load_index(moved, mmap=False).search(queries[:12], topk=3)) == _ids(results[:12])


def test_encoder_conventions_are_settings() -> None:
    from searchrl.retrieval.dense import DenseSettings, Encoder

    auto = Encoder(DenseSettings())
    mean = Encoder(DenseSettings(pooling="mean"))  # all-MiniLM-L6-v2's own pooling is mean + L2
    texts = ["Paris is the capital of France", "What is the capital of France?"]
    np.testing.assert_allclose(auto.encode(texts, is_query=False), mean.encode(texts, is_query=False), atol=1e-5)
    e5 = Encoder(DenseSettings.from_options(preset="e5"))
    assert (e5.settings.query_prefix, e5.settings.passage_prefix, e5.settings.pooling) == ("query: ", "passage: ", "mean")
    q = e5.encode(texts[:1], is_query=True)
    p = e5.encode(texts[:1], is_query=False)
    assert np.linalg.norm(q) == pytest.approx(1.0, abs=1e-4)
    assert (q @ p.T).item() < 0.999  # the prefixes reach the encoder
    raw = Encoder(DenseSettings(normalize=False, pooling="mean"))
    assert abs(np.linalg.norm(raw.encode(texts[:1], is_query=False)) - 1.0) > 1e-3
    with pytest.raises(ConfigError, match="pooling must be one of"):
        DenseSettings(pooling="first")
    with pytest.raises(ConfigError, match="is not a folder"):
        DenseSettings(model="/no/such/model").model_path()


def test_hybrid_fuses_bm25_and_dense(nq_corpus: Path, tmp_path: Path, shared_data: Path) -> None:
    subset = _head(nq_corpus, HYBRID_SUBSET, tmp_path / "subset.jsonl")
    folder = build_index(subset, "hybrid", tmp_path / "hybrid", show_progress=False, faiss="hnsw", rrf_depth=10,
                         **FAST_DENSE)
    manifest = read_manifest(folder)
    assert manifest["kind"] == "hybrid" and manifest["dense"]["faiss"] == "hnsw" and manifest["hybrid"]["rrf_k"] == 60
    hybrid = load_index(folder)
    questions = [q for q in _questions(shared_data) if int(q["metadata"]["gold_doc_id"]) < HYBRID_SUBSET]
    queries = [q["question"] for q in questions]
    fused = hybrid.search(queries, topk=3)
    sparse = hybrid.searcher.sparse.search_rows(queries, 10)
    dense = hybrid.searcher.dense.search_rows(queries, 10)
    for hits, s, d in zip(fused, sparse, dense):
        rows, scores = reciprocal_rank_fusion([s[0], d[0]], k=60, topk=3)
        assert [h.doc_id for h in hits] == [hybrid.docs.get(int(r)).doc_id for r in rows]
        np.testing.assert_allclose([h.score for h in hits], scores, rtol=1e-6)
    share = sum(q["metadata"]["gold_doc_id"] in ids for q, ids in zip(questions, _ids(fused))) / len(questions)
    assert share >= 0.95, f"hybrid gold@3 {share:.2f}"  # measured 1.0 on the 32 questions


def test_importing_the_package_is_cheap() -> None:
    """The rollout imports render_hits from this package: that must not load numpy, bm25s, torch or httpx."""
    import subprocess
    import sys

    code = ("import sys, searchrl.retrieval as r; r.render_hits([]); "
            "print(','.join(m for m in ('numpy', 'bm25s', 'torch', 'faiss', 'httpx') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert out.stdout.strip() == ""
