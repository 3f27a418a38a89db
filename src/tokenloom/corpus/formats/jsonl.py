"""JSON Lines (``.jsonl``, ``.json`` — Dolma's naming —, ``.ndjson``): one JSON object per line.

Read line by line with the standard library's ``json`` (blank lines skipped); a byte range starts at a line
start. A file whose first line is no JSON value but ``[`` (a JSON array: bad input, its documents not read)
or ``{`` (one JSON document spread over lines, a configuration file: listed as not read) is not JSON Lines.
Invalid UTF-8 (or a UTF-16/32 file, rejected whole), a malformed line, a line that is no object or has
no string text is a reject of that line.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Literal

from tokenloom.corpus.formats.base import (
    BOM,
    Format,
    Position,
    ReadRequest,
    keep_row,
    no_text_column,
    reject_empty,
)
from tokenloom.corpus.lines import complete_lines, decode_utf8, error_reason
from tokenloom.corpus.records import LEFT_OUT, Errors, Record, Reject, SourceStats, record_of, reject
from tokenloom.errors import CorpusError

__all__ = ["JSON_LINES", "ORJSON_LOADS", "JsonLinesReader"]

try:  # a C JSON parser about 3x faster than ``json`` on corpus lines; optional (see _fast_object)
    from orjson import loads as _orjson_loads

    ORJSON_LOADS: Callable[[bytes], Any] | None = _orjson_loads
except ImportError:  # pragma: no cover - orjson is installed with the dev extras
    ORJSON_LOADS = None


@dataclass(frozen=True)
class JsonLinesReader:
    """JSON Lines files (see the module docstring)."""

    name: Format = "jsonl"
    suffixes: tuple[str, ...] = (".jsonl", ".json", ".ndjson")
    fold_case: bool = True
    kind: Literal["table"] = "table"
    split: Literal["bytes"] = "bytes"
    opens_itself: bool = False

    def read(self, request: ReadRequest, handle: BinaryIO | None, at: Position) -> Iterator[Record]:
        assert handle is not None  # opened by read_file_records
        path, columns, errors, stats = request.path, request.columns, request.errors, request.stats
        offset, end = request.start, request.end
        number, seen, whole = at.line - 1, request.seen, end is None
        decoding: Errors = "replace" if errors == "replace" else "strict"
        for raw in complete_lines(handle):
            if end is not None and offset >= end:
                break
            number, size = number + 1, len(raw)
            at.line, stats.bytes = number + 1, stats.bytes + size
            offset += size
            if not raw.strip():
                continue
            seen += 1
            row = _fast_object(raw) if offset != size else None  # the first line: BOM and encoding checks
            checked = row is not None
            if row is None:
                try:
                    line = decode_utf8(
                        raw, path, errors=decoding, stats=stats, line=number, offset=offset - size
                    )
                except CorpusError as exc:
                    if errors != "skip":
                        raise
                    wide = offset == size and str(exc).startswith(
                        f"{path}: the "
                    )  # UTF-16/32: the whole file
                    reason = error_reason(str(exc), f"{path}: line {number} ")
                    unit: Literal["line", "file"] = "file" if wide else "line"
                    reject(
                        Reject(str(path), reason, unit, number, documents=None if wide else 1), errors, stats
                    )
                    if wide:
                        return
                    continue
                try:
                    row = json.loads(line.removeprefix(BOM) if offset == size else line)
                except json.JSONDecodeError as exc:
                    if offset == size and _not_json_lines(line, path, errors, stats):
                        return
                    why = f"invalid JSON ({exc.msg} at column {exc.colno})"
                    reject(Reject(str(path), why, "line", number), errors, stats)
                    continue
            if not isinstance(row, dict):
                why = f"expected a JSON object with a {columns.text!r} key, got {row!r:.60}"
                reject(Reject(str(path), why, "line", number), errors, stats)
                continue
            if seen == 1 and columns.text not in row and errors != "skip":
                raise CorpusError(f"{path}: {no_text_column(path, columns, row)}")
            record = keep_row(
                path,
                number,
                "line",
                record_of(row, str(path), number, columns, checked=checked),
                errors,
                stats,
            )
            if record is not None:
                yield record
        reject_empty(path, seen, errors, stats, whole, "empty file (no rows); remove it or put rows in it")


def _fast_object(raw: bytes) -> dict[str, Any] | None:
    """``raw`` parsed by orjson when it is installed and the line is a JSON object it reads as ``json`` does
    (valid UTF-8, no lone surrogate, no NaN; no float cell, since orjson reads an integer beyond 64 bits as
    one); ``None``: read it with ``json``, whose errors say where."""
    if ORJSON_LOADS is None:
        return None
    try:
        row = ORJSON_LOADS(raw)
    except ValueError:
        return None
    if not isinstance(row, dict) or any(type(v) is float for v in row.values()):
        return None
    return row


def _not_json_lines(first: str, path: Path, errors: Errors, stats: SourceStats) -> bool:
    """Whether a file whose first line is no JSON value is one JSON document rather than JSON Lines: an
    object spread over lines (a configuration file, listed as not read) or an array (bad input: its
    documents are not read)."""
    head = first.strip().removeprefix(BOM)
    if head.startswith("["):
        why = "a JSON array, not JSON Lines (one object per line); convert it, e.g. `jq -c '.[]' FILE`"
        reject(Reject(str(path), why, "file", documents=None), errors, stats)
        return True
    if head == "{":
        why = f"{LEFT_OUT[0]}: one JSON document (a configuration file?), not JSON Lines; not read"
        stats.rejects.append(Reject(str(path), why, "file", documents=0))
        return True
    return False


JSON_LINES = JsonLinesReader()
