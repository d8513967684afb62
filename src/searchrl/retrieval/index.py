"""Index folders: build (streaming, atomic), load (memory-mapped), cache, and the one entry point `load_retriever`.

An index folder holds::

    manifest.json        {"format": "searchrl-index", "version": 1, "kind": "bm25"|"dense"|"hybrid", "num_docs", ...}
    docs.jsonl           the passages, normalised to {"id", "contents"} (one per line, in corpus order)
    docs.offsets.npy     byte offset of each line (memory-mapped: O(1) lookup by row)
    bm25/                the bm25s index and tokenizer vocabulary      (bm25, hybrid)
    dense/faiss.index    the FAISS index                               (dense, hybrid)

Folders are built into a temporary sibling (``.NAME.tmp-HOST-PID-*``) and renamed into place when complete,
so a folder with a manifest is always whole; the next build of the same NAME removes the temporary folders of
builds on this host whose process is gone (killed or crashed). Folders and files get the usual umask modes.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import socket
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from searchrl.errors import ConfigError, DataError, SearchRLError
from searchrl.fileio import atomic_write_json, check_output_path, current_umask, read_small_json
from searchrl.retrieval.base import Hit, Retriever, check_search_args
from searchrl.retrieval.bm25 import BM25_DIR, BM25Builder, BM25Searcher, BM25Settings
from searchrl.retrieval.cache import DEFAULT_CACHE_SIZE, CachedRetriever
from searchrl.retrieval.client import RemoteRetriever
from searchrl.retrieval.corpus import DocStore, DocStoreWriter, Passage, read_corpus
from searchrl.retrieval.dense import (
    DENSE_DIR,
    DENSE_OPTION_NAMES,
    DenseBuilder,
    DenseSearcher,
    DenseSettings,
    with_overrides,
)
from searchrl.retrieval.hybrid import HYBRID_OPTION_NAMES, HybridSearcher, HybridSettings

MANIFEST_FILE = "manifest.json"
INDEX_FORMAT = "searchrl-index"
INDEX_VERSION = 1
KINDS = ("bm25", "dense", "hybrid")
BM25_OPTION_NAMES = tuple(f.name for f in fields(BM25Settings))


def _dense_option_names() -> tuple[str, ...]:
    return DENSE_OPTION_NAMES + ("preset",)


def valid_options(kind: str) -> tuple[str, ...]:
    """The ``build_index`` options that an index of ``kind`` accepts."""
    if kind == "bm25":
        return BM25_OPTION_NAMES
    if kind == "dense":
        return _dense_option_names()
    if kind == "hybrid":
        return BM25_OPTION_NAMES + _dense_option_names() + HYBRID_OPTION_NAMES
    raise ConfigError(f"index kind must be one of {', '.join(KINDS)}; got {kind!r}")


# --------------------------------------------------------------------------------------------- files


def is_index_folder(folder: Path) -> bool:
    """Whether ``folder`` holds a searchrl index (a manifest of its format): the only folders a build replaces."""
    manifest = read_small_json(Path(folder) / MANIFEST_FILE)
    return isinstance(manifest, dict) and manifest.get("format") == INDEX_FORMAT


def read_manifest(folder: str | Path) -> dict:
    """The manifest of an index folder; `DataError` if the folder is not a searchrl index."""
    folder = Path(folder)
    path = folder / MANIFEST_FILE
    if not path.is_file():
        raise DataError(f"{folder} is not a searchrl index (no {MANIFEST_FILE}); build one with "
                        "`searchrl index build --corpus FILE --kind bm25 --out DIR`")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: not valid JSON ({exc}); rebuild the index") from None
    if not isinstance(manifest, dict) or manifest.get("format") != INDEX_FORMAT:
        raise DataError(f"{path}: field 'format' must be {INDEX_FORMAT!r}; this is not a searchrl index manifest")
    if manifest.get("version") != INDEX_VERSION:
        raise DataError(f"{path}: index format version {manifest.get('version')!r} is not supported (this searchrl "
                        f"reads version {INDEX_VERSION}); rebuild the index")
    if manifest.get("kind") not in KINDS:
        raise DataError(f"{path}: field 'kind' must be one of {', '.join(KINDS)}, got {manifest.get('kind')!r}")
    return manifest


# --------------------------------------------------------------------------------------------- progress


class _Progress:
    """A rich progress bar over the corpus file's bytes (with ETA), or nothing."""

    def __init__(self, enabled: bool, total_bytes: int, description: str) -> None:
        self._progress = None
        if enabled:
            self._progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(), DownloadColumn(),
                                      TextColumn("{task.fields[docs]} docs"), TimeElapsedColumn(),
                                      TextColumn("ETA"), TimeRemainingColumn(), console=Console(stderr=True),
                                      transient=False)
            self._task = self._progress.add_task(description, total=max(total_bytes, 1), docs=0)
        self.docs = 0

    def __enter__(self) -> _Progress:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def bytes_read(self, position: int) -> None:
        if self._progress is not None:
            self._progress.update(self._task, completed=position, docs=self.docs)

    def describe(self, text: str) -> None:
        if self._progress is not None:
            self._progress.update(self._task, description=text)


def _chunks(passages: Iterator[Passage], size: int) -> Iterator[list[Passage]]:
    chunk: list[Passage] = []
    for passage in passages:
        chunk.append(passage)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


# --------------------------------------------------------------------------------------------- build


def _split_options(kind: str, options: dict) -> tuple[BM25Settings | None, Any, HybridSettings | None]:
    allowed = valid_options(kind)
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise ConfigError(f"unknown option(s) for a {kind} index: {', '.join(unknown)}; valid: {', '.join(allowed)}")
    bm25 = dense = hybrid = None
    if kind in ("bm25", "hybrid"):
        bm25 = BM25Settings(**{k: v for k, v in options.items() if k in BM25_OPTION_NAMES})
    if kind in ("dense", "hybrid"):
        dense_names = _dense_option_names()
        dense = DenseSettings.from_options(**{k: v for k, v in options.items() if k in dense_names})
    if kind == "hybrid":
        hybrid = HybridSettings(**{k: v for k, v in options.items() if k in HYBRID_OPTION_NAMES})
    return bm25, dense, hybrid


def _build_into(folder: Path, corpus_path: Path, kind: str, options: dict, show_progress: bool) -> dict:
    """Build a complete index in ``folder`` (which exists and is empty); returns the manifest."""
    bm25_settings, dense_settings, hybrid_settings = _split_options(kind, options)
    builders: dict[str, Any] = {}
    if bm25_settings is not None:
        builders[BM25_DIR] = BM25Builder(bm25_settings)
    if dense_settings is not None:
        builders[DENSE_DIR] = DenseBuilder(dense_settings)
    # Dense encoding is slow, so the bar advances every few encoder batches; tokenizing alone takes big steps.
    chunk_size = 2 * dense_settings.batch_size if dense_settings is not None else 4096
    started = time.time()
    writer = DocStoreWriter(folder)
    total = corpus_path.stat().st_size
    with _Progress(show_progress, total, f"indexing {corpus_path.name} ({kind})") as progress:
        try:
            for chunk in _chunks(read_corpus(corpus_path, progress=progress.bytes_read), chunk_size):
                contents = [p.contents for p in chunk]
                for passage in chunk:
                    writer.add(passage)
                for builder in builders.values():
                    builder.add(contents)
                progress.docs = len(writer)
        finally:
            num_docs = writer.close()
        progress.describe(f"saving {kind} index")
        component_settings = {name: builder.finish(folder / name) for name, builder in builders.items()}
        progress.describe(f"indexed {corpus_path.name} ({kind})")
        progress.bytes_read(total)
    corpus_stat = corpus_path.stat()
    manifest: dict[str, Any] = {
        "format": INDEX_FORMAT,
        "version": INDEX_VERSION,
        "kind": kind,
        "num_docs": num_docs,
        "corpus": {"path": str(corpus_path.resolve()), "size": corpus_stat.st_size,
                   "mtime_ns": corpus_stat.st_mtime_ns},
        "build_seconds": round(time.time() - started, 3),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    if bm25_settings is not None:
        manifest["bm25"] = component_settings[BM25_DIR]
    if dense_settings is not None:
        manifest["dense"] = component_settings["dense"]
    if hybrid_settings is not None:
        manifest["hybrid"] = asdict(hybrid_settings)
    atomic_write_json(folder / MANIFEST_FILE, manifest)  # in the umask's mode, as every file of the folder
    return manifest


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9.]", "_", socket.gethostname()) or "host"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def _remove_stale_siblings(out_dir: Path) -> None:
    """Remove the ``.NAME.tmp-*`` / ``.NAME.old-*`` folders that builds of ``out_dir`` on this host left when
    killed (their process is gone). Folders of live builds and of other hosts are left alone (a pid means
    nothing on another host of a shared filesystem)."""
    pattern = re.compile(rf"\.{re.escape(out_dir.name)}\.(?:tmp|old)-{re.escape(_host())}-(\d+)-")
    for entry in out_dir.parent.iterdir():
        match = pattern.match(entry.name)
        if match and int(match.group(1)) != os.getpid() and not _pid_alive(int(match.group(1))) and entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)


def _temp_sibling(out_dir: Path) -> Path:
    """An empty folder beside ``out_dir`` to build into (named after this host and process), after removing
    the stale ones of killed builds. `ConfigError` if the folder cannot be written, before any indexing work."""
    parent = out_dir.parent
    blocking = next((p for p in (parent, *parent.parents) if p.exists() and not p.is_dir()), None)
    if blocking is not None:
        raise ConfigError(f"cannot build {out_dir}: {blocking} is a file, not a folder; choose another --out")
    try:
        parent.mkdir(parents=True, exist_ok=True)
        _remove_stale_siblings(out_dir)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-{_host()}-{os.getpid()}-", dir=parent))
    except OSError as exc:
        raise ConfigError(f"cannot write the index into {parent} ({exc.strerror}); choose a writable --out") from None
    tmp.chmod(0o777 & ~current_umask())  # mkdtemp makes 0700; give the mode a plain mkdir would
    return tmp


def build_index(corpus_path: str | Path, kind: str, out_dir: str | Path, *, overwrite: bool = False,
                show_progress: bool = True, **options: Any) -> Path:
    """Build a ``kind`` index ("bm25", "dense" or "hybrid") over a JSONL corpus into ``out_dir``; returns it.

    The corpus is streamed once. Options: BM25 ``k1``, ``b``, ``method``, ``stopwords``, ``stemmer``; dense
    ``model`` (a local folder; default the bundled all-MiniLM-L6-v2), ``preset`` (minilm, e5, bge),
    ``query_prefix``, ``passage_prefix``, ``pooling``, ``normalize``, ``max_length``, ``batch_size``, ``bf16``,
    ``faiss`` ("flat" or "hnsw"), ``hnsw_m``, ``hnsw_ef_construction``, ``hnsw_ef_search``; hybrid ``rrf_k``,
    ``rrf_depth`` plus both sets. The folder is built beside ``out_dir`` and renamed into place when complete;
    an existing non-empty ``out_dir`` is replaced only with ``overwrite=True``, and only when it is a searchrl
    index that holds neither the corpus nor the encoder (`ConfigError` otherwise, before any work).
    """
    corpus_path, out_dir = Path(corpus_path), Path(out_dir)
    _split_options(kind, options)  # reject a bad kind or option before touching the disk
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError(f"--out {out_dir}: is a file, not a folder; choose another --out (--overwrite replaces "
                          "index folders only)")
    if not corpus_path.is_file():
        raise DataError(f"corpus file not found: {corpus_path}")
    # Only an index folder is ever replaced, and never one that holds the corpus or the encoder it is built from.
    check_output_path(out_dir, "--out", inputs=[corpus_path, options.get("model")], overwrite=overwrite,
                      ours=is_index_folder, kind="searchrl index folder", folder=True, writable=False)
    tmp = _temp_sibling(out_dir)
    try:
        _build_into(tmp, corpus_path, kind, options, show_progress)
        _install(tmp, out_dir, overwrite=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out_dir


def _install(tmp: Path, out_dir: Path, overwrite: bool) -> bool:
    """Rename a finished temp folder to ``out_dir``; False (and tmp removed) if ``out_dir`` won a race."""
    old = None
    if out_dir.exists():
        if not overwrite:
            shutil.rmtree(tmp, ignore_errors=True)
            return False
        if out_dir.is_dir() and not any(out_dir.iterdir()):
            out_dir.rmdir()
        else:
            old = out_dir.parent / f".{out_dir.name}.old-{_host()}-{os.getpid()}-{time.time_ns()}"
            os.replace(out_dir, old)
    try:
        os.rename(tmp, out_dir)
    except OSError:
        if out_dir.exists() and (out_dir / MANIFEST_FILE).is_file():  # another process installed it first
            shutil.rmtree(tmp, ignore_errors=True)
            return False
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return True


def default_cache_dir() -> Path:
    """Where `cached_bm25_index` keeps its indexes: ``$SEARCHRL_CACHE/indexes``, else ``~/.cache/searchrl/indexes``."""
    root = os.environ.get("SEARCHRL_CACHE") or Path.home() / ".cache" / "searchrl"
    return Path(root).expanduser() / "indexes"


def cached_bm25_index(corpus_path: str | Path, cache_dir: str | Path | None = None, *,
                      show_progress: bool = True) -> Path:
    """A BM25 index over ``corpus_path``, built once and reused; returns its folder.

    The cache key is the corpus file's resolved path, size and modification time plus the index format
    version, so an edited corpus gets a fresh index. The index is built into a temporary folder and renamed
    into place, so concurrent callers never see a partial index (a loser of the race uses the winner's).
    """
    corpus_path = Path(corpus_path)
    if not corpus_path.is_file():
        raise DataError(f"corpus file not found: {corpus_path}")
    stat = corpus_path.stat()
    key_text = json.dumps([str(corpus_path.resolve()), stat.st_size, stat.st_mtime_ns, INDEX_VERSION,
                           asdict(BM25Settings())])
    key = hashlib.sha256(key_text.encode("utf-8")).hexdigest()[:16]
    name = corpus_path.name.split(".")[0] or "corpus"
    folder = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    out_dir = folder / f"{name}-bm25-{key}"
    if (out_dir / MANIFEST_FILE).is_file():
        return out_dir
    tmp = _temp_sibling(out_dir)
    try:
        _build_into(tmp, corpus_path, "bm25", {}, show_progress)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if out_dir.exists() and not (out_dir / MANIFEST_FILE).is_file():
        shutil.rmtree(out_dir, ignore_errors=True)  # a stale, incomplete folder from an older crash
    _install(tmp, out_dir, overwrite=False)
    return out_dir


# --------------------------------------------------------------------------------------------- load and search


class IndexRetriever:
    """A loaded index folder: ``search(queries, topk)`` returns ranked `Hit`s for every query."""

    def __init__(self, folder: Path, manifest: dict, searcher: Any, docs: DocStore) -> None:
        self.folder = folder
        self.manifest = manifest
        self.kind: str = manifest["kind"]
        self.searcher = searcher
        self.docs = docs
        self.num_docs = len(docs)

    def search(self, queries: list[str], topk: int = 3) -> list[list[Hit]]:
        check_search_args(queries, topk)
        queries = list(queries)
        if not queries:
            return []
        ranked = self.searcher.search_rows(queries, topk)
        return [self.docs.hits(rows, scores) for rows, scores in ranked]

    def __repr__(self) -> str:
        return f"IndexRetriever(kind={self.kind!r}, num_docs={self.num_docs}, folder={str(self.folder)!r})"


def load_index(folder: str | Path, *, mmap: bool = True, bm25_engine: str = "auto", bm25_threads: int | None = None,
               **dense_overrides: Any) -> IndexRetriever:
    """Load an index folder written by `build_index` (memory-mapped by default).

    ``bm25_engine``: "auto" (scipy's sparse product when scipy is installed), "scipy" or "bm25s" (bm25s' own
    per-query retrieve). ``bm25_threads``: threads for large BM25 batches (default: up to 2 cores).
    ``dense_overrides`` change query-time dense settings, e.g. ``bf16=True`` or ``hnsw_ef_search=256``.
    """
    folder = Path(folder)
    manifest = read_manifest(folder)
    kind = manifest["kind"]
    if dense_overrides:
        unknown = sorted(set(dense_overrides) - set(DENSE_OPTION_NAMES))
        if unknown:
            raise ConfigError(f"unknown option(s) for loading an index: {', '.join(unknown)}; valid: mmap, "
                              f"bm25_engine, bm25_threads, and for dense indexes {', '.join(DENSE_OPTION_NAMES)}")
    docs = DocStore(folder)
    sparse = dense = None
    if kind in ("bm25", "hybrid"):
        sparse = BM25Searcher(folder / BM25_DIR, _settings(BM25Settings, manifest, "bm25", folder), mmap=mmap,
                              engine=bm25_engine, threads=bm25_threads)
    if kind in ("dense", "hybrid"):
        settings = with_overrides(_settings(DenseSettings, manifest, "dense", folder), **dense_overrides)
        dense = DenseSearcher(folder / DENSE_DIR, settings, mmap=mmap)
    elif dense_overrides:
        raise ConfigError(f"options {', '.join(sorted(dense_overrides))} apply to dense and hybrid indexes only; "
                          f"{folder} is a {kind} index")
    if kind == "hybrid":
        searcher: Any = HybridSearcher(sparse, dense, _settings(HybridSettings, manifest, "hybrid", folder))
    else:
        searcher = sparse if sparse is not None else dense
    if searcher.num_docs != len(docs) or (dense is not None and dense.num_docs != len(docs)):
        raise DataError(f"{folder}: the index holds {searcher.num_docs} documents but docs.jsonl holds {len(docs)}; "
                        "the folder is damaged, rebuild it")
    return IndexRetriever(folder, manifest, searcher, docs)


def _settings(cls: type, manifest: dict, key: str, folder: Path) -> Any:
    names = {f.name for f in fields(cls)}
    section = manifest.get(key)
    if not isinstance(section, dict):
        raise DataError(f"{folder / MANIFEST_FILE}: missing section '{key}'; rebuild the index")
    try:
        return cls(**{k: v for k, v in section.items() if k in names})
    except (TypeError, SearchRLError) as exc:
        raise DataError(f"{folder / MANIFEST_FILE}: section '{key}' is invalid ({exc}); rebuild the index") from None


def is_url(path_or_url: str | Path) -> bool:
    return isinstance(path_or_url, str) and path_or_url.lower().startswith(("http://", "https://"))


def load_retriever(path_or_url: str | Path, *, cache: bool = True, cache_size: int = DEFAULT_CACHE_SIZE,
                   **options: Any) -> Retriever:
    """The one way to get a retriever: an index folder, a JSONL corpus, or an ``http(s)://`` server URL.

    - an index folder (from `build_index` / ``searchrl index build``) is loaded memory-mapped;
    - a ``.jsonl`` / ``.jsonl.gz`` corpus file gets a cached BM25 index (`cached_bm25_index`) built once;
    - a URL (``http://host:port`` or ``http://host:port/retrieve``) gives a `RemoteRetriever` speaking
      Search-R1's ``/retrieve`` API; ``options`` go to it (``timeout``, ``retries``, ``backoff``, ``token``, ...).

    With ``cache=True`` (default) the result is wrapped in a `CachedRetriever` of ``cache_size`` entries.
    Other ``options`` go to `load_index` (``mmap``, ``bm25_engine``, dense overrides).
    """
    retriever: Retriever
    if is_url(path_or_url):
        retriever = RemoteRetriever(str(path_or_url), **options)
    else:
        path = Path(path_or_url).expanduser()
        if path.is_file() and (path.name.endswith(".jsonl") or path.name.endswith(".jsonl.gz")):
            retriever = load_index(cached_bm25_index(path), **options)
        elif path.is_dir():
            retriever = load_index(path, **options)
        elif not path.exists():
            raise DataError(f"no index, corpus or URL at {path_or_url!r}; give an index folder, a .jsonl corpus "
                            "or an http:// URL of a retrieval server")
        else:
            raise DataError(f"{path} is neither an index folder nor a .jsonl corpus")
    if cache:
        retriever = CachedRetriever(retriever, maxsize=cache_size)
    return retriever

