"""searchrl.retrieval: corpora, BM25, dense, hybrid, the query cache and index folders, on real files.

Indexes are built on the real NQ sample shipped in tests/fixtures/qa (`qa_samples / "nq_oracle"`, 989 passages). Dense and hybrid indexes
are built on the first passages only (MiniLM encodes tens of passages per second on the shared 2-core CPU).
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
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


def _questions(qa_samples: Path) -> list[dict]:
    return [json.loads(line) for line in (qa_samples / "nq_oracle" / "questions.jsonl").open()]


def _ids(results: list[list[Hit]]) -> list[list[str]]:
    return [[h.doc_id for h in hits] for hits in results]


@pytest.fixture(scope="module")
def nq_corpus(qa_samples: Path) -> Path:
    return qa_samples / "nq_oracle" / "corpus.jsonl"


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


def _line(doc_id: str, contents: str) -> str:
    return json.dumps({"id": doc_id, "contents": contents})


@pytest.mark.parametrize("batch", [4096, 2])  # duplicates within one checked batch, and across batches
def test_duplicate_id_with_other_contents_names_both_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          batch: int) -> None:
    monkeypatch.setattr("searchrl.retrieval.corpus._ID_CHECK_BATCH", batch)
    path = tmp_path / "dup.jsonl"
    lines = [_line(str(i), f'"T{i}"\ntext {i}') for i in range(6)]
    path.write_text("\n".join(lines[:3] + ["", _line("1", '"Other"\nother text')] + lines[3:]) + "\n")
    with pytest.raises(DataError) as err:
        list(read_corpus(path))
    assert str(err.value) == (f"{path}:5: duplicate id '1', first used on line 2 with other contents; give every "
                              "passage its own id")
    # An integer id and its string form are the same id (ids are compared as strings, as they are stored).
    path.write_text(json.dumps({"id": 7, "contents": "a"}) + "\n" + _line("7", "b") + "\n")
    with pytest.raises(DataError, match=rf"{path}:2: duplicate id '7', first used on line 1"):
        list(read_corpus(path))


def test_exact_repeats_are_indexed_once_and_empty_passages_warned(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # 3000 passages, every 7th line repeating an earlier passage exactly; a small batch exercises the merged runs.
    monkeypatch.setattr("searchrl.retrieval.corpus._ID_CHECK_BATCH", 64)
    rows, expected = [], []
    for i in range(3000):
        if i % 7 == 6:
            j = (i * 37 + 11) % i
            while j % 7 == 6 or j in (10, 12):  # an original passage, and one that has text
                j -= 1
            rows.append(json.dumps({"id": str(j), "title": f"T{j}", "text": f"text {j}"}))  # the same passage
        else:
            rows.append(_line(str(i), f'"T{i}"\ntext {i}'))
            expected.append(str(i))
    rows[10] = _line("10", "")  # no text at all
    rows[12] = json.dumps({"id": "12", "title": "", "text": "  "})
    path = tmp_path / "repeats.jsonl"
    path.write_text("\n".join(rows) + "\n")
    with caplog.at_level("WARNING", logger="searchrl.retrieval.corpus"):
        passages = list(read_corpus(path))
    assert [p.doc_id for p in passages] == expected
    repeats = 3000 // 7
    assert caplog.messages == [
        f"{path}: {repeats} line(s) repeat an earlier passage exactly (same id and contents; the first: id '5' on "
        f"lines 6 and 7); each passage is kept once",
        f"{path}: 2 passage(s) have no text (the first on line 11); they are kept, so their ids stay valid, but no "
        "search can find them",
    ]
    caplog.clear()
    folder = build_index(path, "bm25", tmp_path / "index", show_progress=False)
    assert read_manifest(folder)["num_docs"] == len(expected)
    assert len([r for r in caplog.records if r.name == "searchrl.retrieval.corpus"]) == 2
    assert [h.doc_id for h in load_index(folder).search(["text 15"], topk=1)[0]] == ["15"]


# ------------------------------------------------------------------------------------------ BM25


def test_bm25_finds_gold_passages(bm25, qa_samples: Path) -> None:
    questions = _questions(qa_samples)
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


def test_bm25_matches_bm25s_reference_scores(bm25, nq_corpus: Path, qa_samples: Path) -> None:
    """Our batched sparse-product search gives bm25s' own scores (the reference implementation)."""
    import bm25s
    import Stemmer

    contents = [json.loads(line)["contents"] for line in nq_corpus.open()]
    tokenizer = bm25s.tokenization.Tokenizer(stopwords="en", stemmer=Stemmer.Stemmer("english"))
    reference = bm25s.BM25(k1=0.9, b=0.4)
    reference.index((tokenizer.tokenize(contents, show_progress=False), tokenizer.get_vocab_dict()),
                    show_progress=False)
    queries = [q["question"] for q in _questions(qa_samples)[:100]]
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


def test_bm25_save_load_and_engines_agree(bm25, bm25_dir: Path, tmp_path: Path, qa_samples: Path) -> None:
    queries = [q["question"] for q in _questions(qa_samples)[:200]]
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
    for overwrite in (False, True):  # not an index folder: never replaced, --overwrite or not
        with pytest.raises(ConfigError, match=f"--out {out}: exists and is not a searchrl index folder"):
            build_index(nq_corpus, "bm25", out, overwrite=overwrite, show_progress=False)
    assert (out / "keep.txt").read_text() == "user file"
    (out / "keep.txt").unlink()
    # A corpus that breaks near its end leaves neither the output nor a temporary folder behind.
    broken = tmp_path / "broken.jsonl"
    broken.write_text(nq_corpus.read_text() + '{"id": "x"}\n')
    with pytest.raises(DataError, match=rf"{broken}:990: needs either 'contents'"):
        build_index(broken, "bm25", tmp_path / "new", show_progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.jsonl", "out"]
    build_index(_head(nq_corpus, 60, tmp_path / "small.jsonl"), "bm25", out, show_progress=False)
    with pytest.raises(ConfigError, match=f"--out {out}: already exists .*; pass --overwrite to replace it"):
        build_index(_head(nq_corpus, 50, tmp_path / "small.jsonl"), "bm25", out, show_progress=False)
    build_index(_head(nq_corpus, 50, tmp_path / "small.jsonl"), "bm25", out, overwrite=True, show_progress=False)
    assert read_manifest(out)["num_docs"] == 50
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_index_folders_get_umask_modes(nq_corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Folders and files as a plain mkdir / open would make them (mkdtemp alone gave 0700, mkstemp 0600)."""
    small = _head(nq_corpus, 50, tmp_path / "small.jsonl")
    monkeypatch.setenv("SEARCHRL_CACHE", str(tmp_path / "cache"))
    for umask in (0o022, 0o027):
        old = os.umask(umask)
        try:
            folders = [build_index(small, "bm25", tmp_path / f"index-{umask:o}", show_progress=False),
                       cached_bm25_index(small, show_progress=False)]
        finally:
            os.umask(old)
        for folder in folders:
            for path in [folder, *folder.rglob("*")]:
                want = (0o777 if path.is_dir() else 0o666) & ~umask
                assert path.stat().st_mode & 0o777 == want, f"{path}: {path.stat().st_mode & 0o777:o}, not {want:o}"
        shutil.rmtree(tmp_path / "cache")


def test_a_killed_build_leaves_temp_folders_that_the_next_build_removes(nq_corpus: Path, tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys

    from searchrl.cli import main as cli_main
    from searchrl.retrieval.index import _host

    out = tmp_path / "idx"
    # A build killed (SIGKILL: no cleanup runs) after it created its temporary folder and wrote into it.
    code = ("import os, signal, sys; from pathlib import Path; from searchrl.retrieval.index import _temp_sibling; "
            "tmp = _temp_sibling(Path(sys.argv[1])); (tmp / 'docs.jsonl').write_text('partial'); "
            "os.kill(os.getpid(), signal.SIGKILL)")
    killed = subprocess.run([sys.executable, "-c", code, str(out)],
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert killed.returncode == -signal.SIGKILL
    stale = [p for p in tmp_path.iterdir() if p.name.startswith(".idx.tmp-")]
    assert len(stale) == 1 and (stale[0] / "docs.jsonl").is_file()
    dead = stale[0].name.split("-")[-2]  # .idx.tmp-HOST-PID-random
    (tmp_path / f".idx.old-{_host()}-{dead}-123").mkdir()  # killed between moving an old index aside and removing it
    # Left alone: a live build (this test's parent process), another host's build, another target's build.
    keep = [tmp_path / f".idx.tmp-{_host()}-{os.getppid()}-live", tmp_path / f".idx.tmp-otherhost-{dead}-x",
            tmp_path / f".other.tmp-{_host()}-{dead}-x"]
    for folder in keep:
        folder.mkdir()
    small = _head(nq_corpus, 20, tmp_path / "small.jsonl")
    assert cli_main(["index", "build", "--corpus", str(small), "--kind", "bm25", "--out", str(out), "--quiet"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == sorted(p.name for p in keep)


def test_build_into_an_unwritable_out_fails_before_reading_the_corpus(nq_corpus: Path, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch,
                                                                     capsys: pytest.CaptureFixture) -> None:
    import subprocess
    import sys

    from searchrl.cli import main as cli_main

    def no_reading(*args: object, **kwargs: object) -> None:
        raise AssertionError("the corpus was read before the output folder was checked")

    monkeypatch.setattr("searchrl.retrieval.index.read_corpus", no_reading)
    blocker = tmp_path / "file.txt"
    blocker.write_text("a file")
    for out, extra, message in (
            (blocker / "idx", [], f"cannot build {blocker / 'idx'}: {blocker} is a file, not a folder"),
            (blocker / "a" / "idx", [], f"{blocker} is a file, not a folder"),
            (blocker, ["--overwrite"], f"--out {blocker}: is a file, not a folder; choose another --out")):
        assert cli_main(["index", "build", "--corpus", str(nq_corpus), "--kind", "dense", "--out", str(out),
                         "--quiet", *extra]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
    assert blocker.read_text() == "a file"
    # A read-only folder. Root ignores permissions, so as root the build runs without the capability to.
    prefix = []
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv(1): file permissions cannot be enforced")
        prefix = [shutil.which("setpriv"), "--bounding-set=-dac_override,-dac_read_search", "--"]
    readonly = tmp_path / "ro"
    readonly.mkdir()
    readonly.chmod(0o555)
    try:
        done = subprocess.run([*prefix, str(Path(sys.executable).parent / "searchrl"), "index", "build", "--corpus",
                               str(nq_corpus), "--kind", "dense", "--out", str(readonly / "idx"), "--quiet"],
                              capture_output=True, text=True, timeout=120)
    finally:
        readonly.chmod(0o755)
    assert done.returncode == 2, done.stderr
    assert done.stderr == (f"searchrl index: error: cannot write the index into {readonly} (Permission denied); "
                           "choose a writable --out\n")
    assert list(readonly.iterdir()) == []


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


def test_dense_index_is_exact_inner_product_search(dense_dir: Path, qa_samples: Path, tmp_path: Path) -> None:
    from searchrl.retrieval.dense import DenseSettings, Encoder

    manifest = read_manifest(dense_dir)
    assert manifest["kind"] == "dense" and manifest["num_docs"] == DENSE_SUBSET
    assert manifest["dense"]["dim"] == 384 and manifest["dense"]["faiss"] == "flat"
    questions = [q for q in _questions(qa_samples) if int(q["metadata"]["gold_doc_id"]) < DENSE_SUBSET]
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
    # ... and the search is exact: brute-force inner products with freshly encoded queries give the same top-3
    # scores. Compared as scores within a tolerance, not as ids: under bf16 autocast the encoder rounds differently
    # at another batch size (and on another CPU kind: AMX, AVX-512, AVX2), so a near-tie at rank 3 may flip.
    row = {retriever.docs.get(i).doc_id: i for i in range(DENSE_SUBSET)}
    sims = encoder.encode(queries[:12], is_query=True) @ stored.T
    tol = 2e-2 if FAST_DENSE["bf16"] else 1e-4
    for hits, row_sims in zip(results[:12], sims):
        best = np.sort(row_sims)[::-1][:3]
        np.testing.assert_allclose([h.score for h in hits], best, atol=tol)  # no better passage was missed
        np.testing.assert_allclose([h.score for h in hits], row_sims[[row[h.doc_id] for h in hits]], atol=tol)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    moved = tmp_path / "moved"
    shutil.copytree(dense_dir, moved)
    # The same queries in the same batch give the same bits, so the moved copy must agree exactly.
    assert _ids(load_index(moved, mmap=False).search(queries[:12], topk=3)) == _ids(retriever.search(queries[:12], topk=3))


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


def test_hybrid_fuses_bm25_and_dense(nq_corpus: Path, tmp_path: Path, qa_samples: Path) -> None:
    subset = _head(nq_corpus, HYBRID_SUBSET, tmp_path / "subset.jsonl")
    folder = build_index(subset, "hybrid", tmp_path / "hybrid", show_progress=False, faiss="hnsw", rrf_depth=10,
                         **FAST_DENSE)
    manifest = read_manifest(folder)
    assert manifest["kind"] == "hybrid" and manifest["dense"]["faiss"] == "hnsw" and manifest["hybrid"]["rrf_k"] == 60
    hybrid = load_index(folder)
    questions = [q for q in _questions(qa_samples) if int(q["metadata"]["gold_doc_id"]) < HYBRID_SUBSET]
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


def test_bm25s_is_imported_without_starting_jax(tmp_path: Path) -> None:
    """bm25s runs a JAX top-k at import when JAX is installed, which on a GPU machine reserves 75% of the GPU's
    memory; searchrl imports it with JAX hidden. A stand-in `jax` package records whether it was imported."""
    fake = tmp_path / "site" / "jax"
    fake.mkdir(parents=True)
    marker = tmp_path / "jax-was-imported"
    (fake / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (fake / "lax.py").write_text("def top_k(x, k):\n    return x[:k], list(range(k))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), *sys.path])}
    ours = ("import sys; from searchrl.retrieval.bm25 import import_bm25s; bm25s = import_bm25s(); "
            "assert 'jax' not in sys.modules, 'jax left in sys.modules'; "
            "assert bm25s.selection.JAX_IS_AVAILABLE is False; import bm25s as again; assert again is bm25s")
    subprocess.run([sys.executable, "-c", ours], env=env, check=True, timeout=120)
    assert not marker.exists()
    # The control: a plain import does start the stand-in JAX, so the check above can fail.
    subprocess.run([sys.executable, "-c", "import bm25s"], env=env, check=True, timeout=120)
    assert marker.exists()


def test_passages_without_a_title_line_are_counted_in_one_warning(tmp_path: Path,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    rows = [_line(str(i), f'"T{i}"\ntext {i}') for i in range(10)]
    rows[3] = _line("3", "a whole passage on one line")  # all of it would be shown as the title
    rows[7] = _line("7", "Unquoted title\ntext 7")
    rows.append(json.dumps({"id": "10", "title": "T10", "text": "from fields"}))  # fields: always titled
    path = tmp_path / "untitled.jsonl"
    path.write_text("\n".join(rows) + "\n")
    with caplog.at_level("WARNING", logger="searchrl.retrieval.corpus"):
        folder = build_index(path, "bm25", tmp_path / "index", show_progress=False)
    assert read_manifest(folder)["num_docs"] == 11  # indexed all the same
    assert caplog.messages == [
        f"{path}: 2 passage(s) do not open with a '\"Title\"' line (the first on line 4); they are indexed, but the "
        "agent sees their first line (or all of a passage without a line break) as its title: write contents as "
        "'\"Title\"\\ntext', or give 'title' and 'text' fields"]


def test_merge_corpora_pools_datasets_keeping_the_first_ids_and_refusing_bad_input(tmp_path, qa_samples):
    """examples/merge_corpora.py: the first corpus keeps its ids (gold ids still match), later ones are prefixed
    with their folder's name; duplicates are dropped; a bad passage is named by file and line, nothing written."""
    script = Path(__file__).parents[1] / "examples" / "merge_corpora.py"
    nq, hotpot = qa_samples / "nq_oracle" / "corpus.jsonl", qa_samples / "hotpotqa_distractor" / "corpus.jsonl"
    out = tmp_path / "pool.jsonl"
    done = subprocess.run([sys.executable, str(script), str(out), str(nq), str(hotpot)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    pooled = [json.loads(line) for line in out.read_text().splitlines()]
    nq_rows = [json.loads(line) for line in nq.read_text().splitlines()]
    assert pooled[: len(nq_rows)] == [{"id": r["id"], "contents": r["contents"]} for r in nq_rows]
    rest = pooled[len(nq_rows):]
    assert rest and all(p["id"].startswith("hotpotqa_distractor:") for p in rest)
    assert len({p["contents"] for p in pooled}) == len(pooled)
    assert len(list(read_corpus(out))) == len(pooled)

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "1", "contents": "fine"}\n{"id": "2"}\n')
    refused = tmp_path / "refused.jsonl"
    done = subprocess.run([sys.executable, str(script), str(refused), str(nq), str(bad)], capture_output=True, text=True)
    assert done.returncode == 2 and f"{bad}:2" in done.stderr and not refused.exists()
    again = subprocess.run([sys.executable, str(script), str(out), str(nq)], capture_output=True, text=True)
    assert again.returncode == 2 and "--overwrite" in again.stderr
