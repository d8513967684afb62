"""Corpora in the wiki-18 / FlashRAG convention, read as a stream, and an on-disk document store.

A corpus is a JSONL file (optionally gzip-compressed, ``.jsonl.gz``) with one passage per line, either
``{"id": "0", "contents": "\\"Title\\"\\ntext"}`` or ``{"id": "0", "title": "Title", "text": "text"}``
(``contents`` wins when both are present). Blank lines are skipped. A corpus can hold 21M passages, so it is
never loaded into a Python list: `read_corpus` yields one record at a time, and `DocStore` keeps a normalised
copy of the passages in the index folder (``docs.jsonl``) plus a memory-mapped array of line offsets
(``docs.offsets.npy``), so looking a document up by row is O(1) from disk.

Ids must be unique: a second passage with an earlier id is an error naming both lines, unless it is the same
passage again (same id and contents), which is dropped with a warning. Passages without text are kept (their
ids stay valid) with a warning, and so are passages whose ``contents`` do not open with a ``"Title"`` line
(Search-R1 shows a passage's first line as its title, so one without a line break is all title): one warning per
corpus counts them.
"""

from __future__ import annotations

import gzip
import json
import logging
import mmap
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np

from searchrl.errors import DataError
from searchrl.retrieval.base import Hit
from searchrl.retrieval.render import make_contents

log = logging.getLogger(__name__)

DOCS_FILE = "docs.jsonl"
OFFSETS_FILE = "docs.offsets.npy"
_ID_CHECK_BATCH = 4096  # passages checked for duplicate ids at once
_EXAMPLE = '{"id": "0", "contents": "\\"Title\\"\\ntext"} or {"id": "0", "title": "Title", "text": "text"}'


@dataclass(frozen=True)
class Passage:
    """One corpus record: its id (as a string) and its wiki-18 ``contents``."""

    doc_id: str
    contents: str


def _open_binary(path: Path) -> tuple[IO[bytes], IO[bytes]]:
    """(line reader, raw file) for a corpus; the raw file's position measures progress through gzip too."""
    raw = open(path, "rb")  # noqa: SIM115 - closed by the caller
    if path.suffix == ".gz":
        return gzip.open(raw, "rb"), raw  # type: ignore[return-value]
    return raw, raw


def parse_corpus_line(line: bytes | str, where: str) -> Passage | None:
    """Parse one corpus line into a `Passage` (None for a blank line); errors name ``where`` (file:line)."""
    if isinstance(line, bytes):
        try:
            line = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DataError(f"{where}: not valid UTF-8 ({exc.reason} at byte {exc.start}); "
                            "save the corpus as UTF-8") from None
    if not line.strip():
        return None
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise DataError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno}); each line must be one "
                        f"JSON object such as {_EXAMPLE}") from None
    if not isinstance(row, dict):
        raise DataError(f"{where}: expected a JSON object, got {type(row).__name__}; each line must look like "
                        f"{_EXAMPLE}")
    if "id" not in row:
        raise DataError(f"{where}: missing field 'id'; each line must look like {_EXAMPLE}")
    doc_id = row["id"]
    if isinstance(doc_id, bool) or not isinstance(doc_id, (str, int)):
        raise DataError(f"{where}: field 'id' must be a string or an integer, got {type(doc_id).__name__}")
    contents = row.get("contents")
    if contents is not None:
        if not isinstance(contents, str):
            raise DataError(f"{where}: field 'contents' must be a string, got {type(contents).__name__}")
        return Passage(str(doc_id), contents)
    if "text" not in row:
        raise DataError(f"{where}: needs either 'contents' or 'title' and 'text'; each line must look like "
                        f"{_EXAMPLE}")
    text, title = row["text"], row.get("title", "")
    for name, value in (("text", text), ("title", title)):
        if not isinstance(value, str):
            raise DataError(f"{where}: field '{name}' must be a string, got {type(value).__name__}")
    return Passage(str(doc_id), make_contents(title, text))


class _SeenIds:
    """The ids read so far, as 64-bit hashes, each with a 64-bit hash of its passage's contents.

    16 bytes per passage (a set of wiki-18's 21M id strings would take gigabytes): sorted runs merged like a
    binary counter, so a batch is looked up with one ``searchsorted`` per run. Hashes are Python's (this
    process only); an id hash that collides is resolved by the caller, which reads the file again.
    """

    def __init__(self) -> None:
        self._runs: list[tuple[np.ndarray, np.ndarray]] = []  # (sorted id hashes, contents hashes), largest first

    def find(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(found, contents hash of the earlier passage) for each id hash in ``keys``."""
        found = np.zeros(len(keys), dtype=bool)
        values = np.zeros(len(keys), dtype=np.int64)
        for run_keys, run_values in self._runs:
            pos = np.minimum(np.searchsorted(run_keys, keys), len(run_keys) - 1)
            hit = run_keys[pos] == keys
            found |= hit
            values[hit] = run_values[pos[hit]]
        return found, values

    def add(self, keys: np.ndarray, values: np.ndarray) -> None:
        """Add new (not yet seen, distinct) id hashes with their contents hashes."""
        if not len(keys):
            return
        order = np.argsort(keys, kind="stable")
        run_keys, run_values = keys[order], values[order]
        while self._runs and len(self._runs[-1][0]) <= len(run_keys):
            last_keys, last_values = self._runs.pop()
            run_keys, run_values = np.concatenate([last_keys, run_keys]), np.concatenate([last_values, run_values])
            order = np.argsort(run_keys, kind="stable")  # timsort: a linear merge of two sorted runs
            run_keys, run_values = run_keys[order], run_values[order]
        self._runs.append((run_keys, run_values))


def _first_line_with_id(path: Path, doc_id: str, before: int) -> int | None:
    """The first line (1-based, < ``before``) of ``path`` whose passage has id ``doc_id``; None if none has."""
    reader, raw = _open_binary(path)
    try:
        for line_no, line in enumerate(reader, start=1):
            if line_no >= before:
                return None
            passage = parse_corpus_line(line, f"{path}:{line_no}")
            if passage is not None and passage.doc_id == doc_id:
                return line_no
    finally:
        reader.close()
        raw.close()
    return None


class _CorpusChecks:
    """Duplicate ids and empty passages of one corpus stream: `keep` drops exact repeats and raises on clashes;
    `warn` reports the counts at the end."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seen = _SeenIds()
        self.repeat_count = 0
        self.first_repeat: tuple[str, int, int] | None = None  # (id, its first line, the repeating line)
        self.empty_count = 0
        self.first_empty = 0
        self.untitled_count = 0
        self.first_untitled = 0

    def keep(self, batch: list[tuple[int, Passage]]) -> list[Passage]:
        """The passages of ``batch`` ((line, passage) pairs in file order) to index; `DataError` on a clash."""
        keys = np.fromiter((hash(p.doc_id) for _, p in batch), dtype=np.int64, count=len(batch))
        values = np.fromiter((hash(p.contents) for _, p in batch), dtype=np.int64, count=len(batch))
        found, earlier = self.seen.find(keys)
        key_list, value_list = keys.tolist(), values.tolist()
        found_list, earlier_list = found.tolist(), earlier.tolist()
        in_batch: dict[int, int] = {}  # id hash -> index in batch of its first passage
        kept: list[int] = []
        for i, (line_no, passage) in enumerate(batch):
            key = key_list[i]
            if found_list[i]:
                same = earlier_list[i] == value_list[i]
            elif key in in_batch:
                same = value_list[in_batch[key]] == value_list[i]
            else:
                in_batch[key] = i
                kept.append(i)
                if not passage.contents.replace('"', "").strip():  # nothing but the quotes of an empty title
                    self.empty_count += 1
                    self.first_empty = self.first_empty or line_no
                elif not _has_title_line(passage.contents):
                    self.untitled_count += 1
                    self.first_untitled = self.first_untitled or line_no
                continue
            first = _first_line_with_id(self.path, passage.doc_id, line_no)
            if first is None:  # two ids with one 64-bit hash: not a duplicate
                kept.append(i)
                continue
            if not same:
                raise DataError(f"{self.path}:{line_no}: duplicate id {passage.doc_id!r}, first used on line {first} "
                                "with other contents; give every passage its own id")
            self.repeat_count += 1
            self.first_repeat = self.first_repeat or (passage.doc_id, first, line_no)
        self.seen.add(keys[kept], values[kept])
        return [batch[i][1] for i in kept]

    def warn(self) -> None:
        if self.first_repeat is not None:
            log.warning("%s: %d line(s) repeat an earlier passage exactly (same id and contents; the first: id %r "
                        "on lines %d and %d); each passage is kept once", self.path, self.repeat_count,
                        *self.first_repeat)
        if self.empty_count:
            log.warning("%s: %d passage(s) have no text (the first on line %d); they are kept, so their ids stay "
                        "valid, but no search can find them", self.path, self.empty_count, self.first_empty)
        if self.untitled_count:
            log.warning("%s: %d passage(s) do not open with a '\"Title\"' line (the first on line %d); they are "
                        "indexed, but the agent sees their first line (or all of a passage without a line break) as "
                        "its title: write contents as '\"Title\"\\ntext', or give 'title' and 'text' fields",
                        self.path, self.untitled_count, self.first_untitled)


def _has_title_line(contents: str) -> bool:
    """Whether wiki-18 ``contents`` open with a quoted title line: ``"Title"\\n...``."""
    end = contents.find("\n")
    return end >= 2 and contents[0] == '"' and contents[end - 1] == '"'


def read_corpus(path: str | Path, progress: object | None = None) -> Iterator[Passage]:
    """Stream the passages of a JSONL corpus file, one at a time, checking every line.

    Raises `DataError` naming the file and line for a malformed line, for an id used twice with different
    contents (naming both lines), and for a missing or empty corpus. A line that repeats an earlier passage
    exactly is skipped; skipped repeats and passages without text are counted in one warning each at the end.
    ``progress`` is an optional callable ``progress(bytes_read_so_far)`` (compressed bytes for ``.gz``).
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"corpus file not found: {path} (expected a JSONL file with lines like {_EXAMPLE})")
    reader, raw = _open_binary(path)
    checks = _CorpusChecks(path)
    batch: list[tuple[int, Passage]] = []
    count = 0
    try:
        for line_no, line in enumerate(reader, start=1):
            try:
                passage = parse_corpus_line(line, f"{path}:{line_no}")
            except (OSError, EOFError) as exc:  # pragma: no cover - gzip stream errors surface on read
                raise DataError(f"{path}:{line_no}: cannot read the file ({exc})") from None
            if passage is None:
                continue
            batch.append((line_no, passage))
            if len(batch) >= _ID_CHECK_BATCH:
                if progress is not None:
                    progress(raw.tell())  # type: ignore[operator]
                for kept in checks.keep(batch):
                    count += 1
                    yield kept
                batch = []
        for kept in checks.keep(batch):
            count += 1
            yield kept
    except (OSError, EOFError) as exc:
        raise DataError(f"{path}: cannot read the corpus ({exc}); is it a valid JSONL or .jsonl.gz file?") from None
    finally:
        if progress is not None:
            progress(raw.tell())  # type: ignore[operator]
        reader.close()
        raw.close()
    if count == 0:
        raise DataError(f"{path}: the corpus holds no passages; add lines like {_EXAMPLE}")
    checks.warn()


class DocStoreWriter:
    """Writes the normalised passages (``{"id", "contents"}`` per line) and their byte offsets."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._file = open(folder / DOCS_FILE, "wb")  # noqa: SIM115 - closed in close()
        self._offsets: list[int] = [0]
        self._position = 0

    def add(self, passage: Passage) -> None:
        line = (json.dumps({"id": passage.doc_id, "contents": passage.contents}, ensure_ascii=False) + "\n")
        data = line.encode("utf-8")
        self._file.write(data)
        self._position += len(data)
        self._offsets.append(self._position)

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def close(self) -> int:
        """Flush both files; returns the number of documents."""
        self._file.close()
        np.save(self.folder / OFFSETS_FILE, np.asarray(self._offsets, dtype=np.int64))
        return len(self)


class DocStore:
    """Read-only, memory-mapped access to an index folder's passages by row (0-based, in corpus order)."""

    def __init__(self, folder: str | Path) -> None:
        folder = Path(folder)
        docs_path, offsets_path = folder / DOCS_FILE, folder / OFFSETS_FILE
        for p in (docs_path, offsets_path):
            if not p.is_file():
                raise DataError(f"index folder {folder} lacks {p.name}; rebuild it with `searchrl index build`")
        self.offsets = np.load(offsets_path, mmap_mode="r")
        self._file = open(docs_path, "rb")  # noqa: SIM115 - closed in close()
        size = os.fstat(self._file.fileno()).st_size
        if size != int(self.offsets[-1]):
            raise DataError(f"{docs_path} has {size} bytes but {offsets_path.name} expects {int(self.offsets[-1])}; "
                            "the index folder is damaged, rebuild it with `searchrl index build`")
        self._map = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ) if size else b""

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def get(self, row: int) -> Passage:
        """The passage at ``row``."""
        start, end = int(self.offsets[row]), int(self.offsets[row + 1])
        record = json.loads(self._map[start:end])
        return Passage(record["id"], record["contents"])

    def hits(self, rows: Sequence[int], scores: Sequence[float | None]) -> list[Hit]:
        """Hits for ``rows`` (best first) carrying ``scores``."""
        out = []
        for row, score in zip(rows, scores):
            passage = self.get(int(row))
            out.append(Hit.from_contents(passage.doc_id, passage.contents,
                                         None if score is None else float(score)))
        return out

    def __iter__(self) -> Iterator[Passage]:
        for row in range(len(self)):
            yield self.get(row)

    def close(self) -> None:
        if isinstance(self._map, mmap.mmap):
            self._map.close()
        self._file.close()
