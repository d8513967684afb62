"""Reading JSONL files with errors that name the file and line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from searchrl.errors import DataError


def iter_jsonl_objects(path: str | Path, *, missing: str = "cannot read (No such file or directory)") -> Iterator[tuple[str, dict]]:
    """Yield ``(where, row)`` for each non-blank line of a JSONL file, ``where`` being ``"FILE:LINE"``.

    A missing file, a line that is not UTF-8 or not JSON, or a line that is not a JSON object raises `DataError`
    naming the file and line; ``missing`` completes the message for a missing file (say how to get one).
    """
    path = Path(path)
    try:
        fh = open(path, "rb")  # decoded line by line, so a bad byte is reported with its line
    except FileNotFoundError:
        raise DataError(f"{path}: {missing}") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc.strerror})") from None
    with fh:
        for line_no, raw in enumerate(fh, start=1):
            where = f"{path}:{line_no}"
            try:
                # utf-8-sig on the first line: editors on Windows start files with a byte-order mark.
                line = raw.decode("utf-8-sig" if line_no == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise DataError(f"{where}: not valid UTF-8 ({exc.reason} at byte {exc.start}); "
                                "save the file as UTF-8") from None
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(f"{where}: invalid JSON ({exc.msg} at column {exc.colno})") from None
            if not isinstance(row, dict):
                raise DataError(f"{where}: expected a JSON object, got {type(row).__name__}")
            yield where, row
