"""Corpora in the wiki-18 / FlashRAG convention, read as a stream, and an on-disk document store.

A corpus is a JSONL file (optionally gzip-compressed, ``.jsonl.gz``) with one passage per line, either
``{"id": "0", "contents": "\\"Title\\"\\ntext"}`` or ``{"id": "0", "title": "Title", "text": "text"}``
(``contents`` wins when both are present). Blank lines are skipped. A corpus can hold 21M passages, so it is
never loaded into a Python list: `read_corpus` yields one record at a time, and `DocStore` keeps a normalised
copy of the passages in the index folder (``docs.jsonl``) plus a memory-mapped array of line offsets
(``docs.offsets.npy``), so looking a document up by row is O(1) from disk.
"""

from __future__ import annotations

import gzip
import json
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

DOCS_FILE = "docs.jsonl"
OFFSETS_FILE = "docs.offsets.npy"
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


def read_corpus(path: str | Path, progress: object | None = None) -> Iterator[Passage]:
    """Stream the passages of a JSONL corpus file, one at a time, checking every line.

    Raises `DataError` naming the file and line for a malformed line, and for a missing or empty corpus.
    ``progress`` is an optional callable ``progress(bytes_read_so_far)`` (compressed bytes for ``.gz``).
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"corpus file not found: {path} (expected a JSONL file with lines like {_EXAMPLE})")
    reader, raw = _open_binary(path)
    count = 0
    try:
        for line_no, line in enumerate(reader, start=1):
            try:
                passage = parse_corpus_line(line, f"{path}:{line_no}")
            except (OSError, EOFError) as exc:  # pragma: no cover - gzip stream errors surface on read
                raise DataError(f"{path}:{line_no}: cannot read the file ({exc})") from None
            if passage is None:
                continue
            count += 1
            if progress is not None and count % 256 == 0:
                progress(raw.tell())  # type: ignore[operator]
            yield passage
    except (OSError, EOFError) as exc:
        raise DataError(f"{path}: cannot read the corpus ({exc}); is it a valid JSONL or .jsonl.gz file?") from None
    finally:
        if progress is not None:
            progress(raw.tell())  # type: ignore[operator]
        reader.close()
        raw.close()
    if count == 0:
        raise DataError(f"{path}: the corpus holds no passages; add lines like {_EXAMPLE}")


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
