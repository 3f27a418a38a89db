"""Corpus files as record streams, one reader per format, each streaming (no file is ever read whole).

The format comes from the file name with its compression suffix removed (``a.jsonl.zst`` is JSON Lines),
the compression from the file's magic bytes (``compression.py``):

- **text** (``.txt`` and anything unknown): one record per line (``sources.iter_handle_lines``);
- **code** (a programming language's extension): the whole file is one record;
- **JSON Lines** (``.jsonl``, ``.json``, ``.ndjson``): one JSON object per line, read line by line, blank lines skipped;
- **CSV / TSV** (``.csv``, ``.tsv``): the standard ``csv`` module (RFC 4180 quoting, so fields may hold
  newlines) over the decompressed lines; the first row is the header;
- **Parquet** (``.parquet``): ``pyarrow.parquet.ParquetFile``, one row group at a time, only the columns
  used. A compressed Parquet file (``.parquet.zst``) is first decompressed to a temporary file, since
  Parquet needs random access.

What round-trips: a table (JSON Lines, CSV/TSV with RFC 4180 quoting, Parquet) gives back every string
written to it, newlines and carriage returns included; a text file cannot hold a text with ``\\n`` or
``\\r`` (a line is a text; CR LF reads as LF) and drops a byte-order mark opening the file.

Why these libraries and not parsers of our own: ``json`` and ``csv`` are the standard library's C
parsers, exact to their specifications, with errors that say where; ``pyarrow`` is the reference Parquet
implementation and reads one row group's columns without touching the rest; none of them needs pandas.

Bad input — a malformed JSON line, a row without a string text, invalid UTF-8, a file with no text column,
a truncated or corrupt compressed stream, a file that cannot be opened — is a
:class:`~tokenloom.corpus.records.Reject` handled by ``errors`` (``records.reject``): raised under
``"strict"``, set aside and counted under ``"skip"``. ``byte_range`` (start, end, first line) reads the
lines of an uncompressed text or JSONL file that start in ``[start, end)``; ``row_groups`` reads some row
groups of a Parquet file (``tasks.py`` makes both).
"""

from __future__ import annotations

import csv
import json
import lzma
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any, BinaryIO, Literal

from tokenloom.corpus.compression import detect_compression, inner_name, open_binary
from tokenloom.corpus.records import (
    DEFAULT_COLUMNS,
    LEFT_OUT,
    Columns,
    Errors,
    Record,
    Reject,
    SourceStats,
    reject,
)  # fmt: skip
from tokenloom.corpus.sources import complete_lines, decode_utf8, error_reason, iter_handle_lines
from tokenloom.errors import CorpusError

__all__ = ["CODE_EXTENSIONS", "Format", "file_format", "read_file_records", "record_of"]

Format = Literal["text", "code", "jsonl", "csv", "tsv", "parquet"]

# file extension -> programming language of a code slice
CODE_EXTENSIONS: dict[str, str] = {
    ".py": "python", ".pyi": "python", ".js": "javascript", ".mjs": "javascript", ".ts": "typescript",
    ".tsx": "typescript", ".java": "java", ".kt": "kotlin", ".scala": "scala", ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".cs": "csharp", ".go": "go", ".rs": "rust",
    ".rb": "ruby", ".php": "php", ".swift": "swift", ".sh": "shell", ".bash": "shell", ".sql": "sql",
    ".r": "r", ".R": "r", ".jl": "julia", ".lua": "lua", ".pl": "perl", ".hs": "haskell", ".ml": "ocaml",
    ".html": "html", ".css": "css", ".toml": "toml", ".yaml": "yaml", ".yml": "yaml",
}  # fmt: skip
_TABLE_FORMATS: dict[str, Format] = {
    ".jsonl": "jsonl", ".json": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".tsv": "tsv", ".parquet": "parquet",
}  # fmt: skip
# what a truncated or corrupt compressed stream raises while it is read
_STREAM_ERRORS = (EOFError, OSError, lzma.LZMAError)
_SURROGATE = re.compile("[\ud800-\udfff]")

try:  # a C JSON parser about 3x faster than ``json`` on corpus lines; optional (see _fast_object)
    from orjson import loads as _orjson_loads

    _ORJSON_LOADS: Callable[[bytes], Any] | None = _orjson_loads
except ImportError:  # pragma: no cover - orjson is installed with the dev extras
    _ORJSON_LOADS = None
_BOM = "\ufeff"


def file_format(path: Path) -> Format:
    """The format of ``path`` by its suffix, a compression suffix removed (see the module docstring)."""
    suffix = Path(inner_name(path.name)).suffix
    if suffix.lower() in _TABLE_FORMATS:
        return _TABLE_FORMATS[suffix.lower()]
    return "code" if suffix in CODE_EXTENSIONS else "text"


def read_file_records(
    path: Path,
    *,
    columns: Columns = DEFAULT_COLUMNS,
    errors: Errors = "strict",
    stats: SourceStats,
    max_line_bytes: int | None = None,
    byte_range: tuple[int, int, int] | None = None,
    row_groups: range | None = None,
) -> Iterator[Record]:
    """The records of one file (see the module docstring), counted in ``stats``."""
    fmt = file_format(path)
    if fmt == "parquet":
        yield from _parquet(path, columns, errors, stats, row_groups)
        return
    try:
        handle = open_binary(path)
    except OSError as exc:
        reject(
            Reject(str(path), f"cannot open ({exc.strerror or exc})", "file", documents=None), errors, stats
        )
        return
    stats.files += 1
    start, end, first = byte_range if byte_range is not None else (0, None, 1)
    if start:
        handle.seek(start)
    at = _Position(first)
    with handle:
        try:
            if fmt == "jsonl":
                yield from _jsonl(handle, path, columns, errors, stats, at, start, end)
            elif fmt in ("csv", "tsv"):
                yield from _csv(handle, path, columns, errors, stats, at, "\t" if fmt == "tsv" else ",")
            else:
                lines = iter_handle_lines(
                    handle, path, errors=errors, stats=stats, max_line_bytes=max_line_bytes,
                    first_line=first, offset=start, end=end, streamed=True,
                )  # fmt: skip
                if fmt == "code":
                    yield Record("\n".join(line for _, line in lines), None, None, str(path), 1)
                    return
                for number, line in lines:
                    at.line = number + 1
                    yield Record(line, None, None, str(path), number)
        except _STREAM_ERRORS as exc:
            why = f"cannot read further: {exc} (a truncated or corrupt file); the lines before it were read"
            reject(Reject(str(path), why, "line", at.line, documents=None), errors, stats)


class _Position:
    """The line the next record of a stream starts at, for a reject when the stream breaks."""

    def __init__(self, line: int) -> None:
        self.line = line


def record_of(
    cells: dict[str, Any], source: str, number: int, columns: Columns, *, checked: bool = False, **where: Any
) -> Record | str:
    """The record of one row's ``cells``, or the reason it is rejected (no string text); ``checked``: the
    parser refused lone surrogates already (orjson), so the text is not searched for one."""
    text = cells.get(columns.text)
    if not isinstance(text, str):
        if columns.text not in cells:
            return (
                f"{columns.text!r} must be a string, got no such cell (cells: {sorted(cells)[:8]}); "
                "fill or remove the row, or pass text_column= (--text-column)"
            )
        return f"{columns.text!r} must be a string, got {text!r:.60}; fill or remove the row"
    if not checked and _SURROGATE.search(text):
        return f"{columns.text!r} holds a lone surrogate (invalid UTF-8 or a bad JSON escape)"
    lang_col, script_col = _label_columns(columns, tuple(cells))
    return Record(
        text, _label(cells, lang_col), _label(cells, script_col), source, number,
        slice=_label(cells, "slice"), id=cells.get(columns.align) if columns.align else None, **where,
    )  # fmt: skip


@lru_cache(maxsize=256)
def _label_columns(columns: Columns, names: tuple[str, ...]) -> tuple[str | None, str | None]:
    """``columns.resolve(names)``, once per distinct set of cell names (a table has one or a few)."""
    return columns.resolve(names)


def _label(cells: dict[str, Any], key: str | None) -> str | None:
    value = cells.get(key) if key is not None else None
    if value is None or (isinstance(value, float) and value != value) or value == "":
        return None
    return str(value)


def _no_text_column(path: Path, columns: Columns, names: Iterable[str]) -> str:
    hint = "rename the text column to 'text'" if columns.text == "text" else "check text_column"
    return f"no {columns.text!r} column (columns: {list(names)}); {hint} or pass text_column= (--text-column)"


def _row(
    path: Path,
    number: int,
    unit: Literal["line", "row"],
    result: Record | str,
    errors: Errors,
    stats: SourceStats,
) -> Record | None:
    if isinstance(result, str):
        reject(Reject(str(path), result, unit, number), errors, stats)
        return None
    stats.lines += 1
    stats.chars += len(result.text)
    return result


def _empty(path: Path, seen: int, errors: Errors, stats: SourceStats, whole: bool, why: str) -> None:
    if whole and seen == 0:
        reject(Reject(str(path), why, "file", documents=0), errors, stats)


def _jsonl(
    handle: BinaryIO, path: Path, columns: Columns, errors: Errors, stats: SourceStats,
    at: _Position, offset: int, end: int | None,
) -> Iterator[Record]:  # fmt: skip
    number, seen, whole = at.line - 1, 0, end is None
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
        fast = _fast_object(raw) if offset != size else None  # the first line: BOM and encoding checks
        if fast is not None:
            record = _row(
                path, number, "line", record_of(fast, str(path), number, columns, checked=True), errors, stats
            )
            if record is not None:
                yield record
            continue
        try:
            line = decode_utf8(raw, path, errors=decoding, stats=stats, line=number, offset=offset - size)
        except CorpusError as exc:
            if errors != "skip":
                raise
            wide = offset == size and str(exc).startswith(f"{path}: the ")  # UTF-16/32: the whole file
            reason = error_reason(str(exc), f"{path}: line {number} ")
            unit: Literal["line", "file"] = "file" if wide else "line"
            reject(Reject(str(path), reason, unit, number, documents=None if wide else 1), errors, stats)
            if wide:
                return
            continue
        try:
            row = json.loads(line.removeprefix(_BOM) if offset == size else line)
        except json.JSONDecodeError as exc:
            if offset == size and _not_json_lines(line, path, errors, stats):
                return
            reject(
                Reject(str(path), f"invalid JSON ({exc.msg} at column {exc.colno})", "line", number),
                errors,
                stats,
            )
            continue
        if not isinstance(row, dict):
            why = f"expected a JSON object with a {columns.text!r} key, got {row!r:.60}"
            reject(Reject(str(path), why, "line", number), errors, stats)
            continue
        if seen == 1 and columns.text not in row and errors != "skip":
            raise CorpusError(f"{path}: {_no_text_column(path, columns, row)}")
        record = _row(path, number, "line", record_of(row, str(path), number, columns), errors, stats)
        if record is not None:
            yield record
    _empty(path, seen, errors, stats, whole, "empty file (no rows); remove it or put rows in it")


def _fast_object(raw: bytes) -> dict[str, Any] | None:
    """``raw`` parsed by orjson when it is installed and the line is a JSON object it reads as ``json`` does
    (valid UTF-8, no lone surrogate, no NaN; no float cell, since orjson reads an integer beyond 64 bits as
    one); ``None``: read it with ``json``, whose errors say where."""
    if _ORJSON_LOADS is None:
        return None
    try:
        row = _ORJSON_LOADS(raw)
    except ValueError:
        return None
    if not isinstance(row, dict) or any(type(v) is float for v in row.values()):
        return None
    return row


def _not_json_lines(first: str, path: Path, errors: Errors, stats: SourceStats) -> bool:
    """Whether a file whose first line is no JSON value is one JSON document rather than JSON Lines: an
    object spread over lines (a configuration file, listed as not read) or an array (bad input: its
    documents are not read)."""
    head = first.strip().removeprefix(_BOM)
    if head.startswith("["):
        why = "a JSON array, not JSON Lines (one object per line); convert it, e.g. `jq -c '.[]' FILE`"
        reject(Reject(str(path), why, "file", documents=None), errors, stats)
        return True
    if head == "{":
        why = f"{LEFT_OUT[0]}: one JSON document (a configuration file?), not JSON Lines; not read"
        stats.rejects.append(Reject(str(path), why, "file", documents=0))
        return True
    return False


def _csv(
    handle: BinaryIO, path: Path, columns: Columns, errors: Errors, stats: SourceStats,
    at: _Position, delimiter: str,
) -> Iterator[Record]:  # fmt: skip
    csv.field_size_limit(max(csv.field_size_limit(), 1 << 30))

    def lines() -> Iterator[str]:  # undecodable bytes kept as surrogates, checked per row below
        for raw in complete_lines(handle):
            stats.bytes += len(raw)
            yield raw.decode("utf-8", "surrogateescape")

    reader = csv.reader(lines(), delimiter=delimiter)
    try:
        header = [name.removeprefix(_BOM) if i == 0 else name for i, name in enumerate(next(reader))]
    except StopIteration:
        reject(
            Reject(str(path), "empty file (no rows); remove it or put rows in it", "file", documents=0),
            errors,
            stats,
        )
        return
    except csv.Error as exc:
        reject(Reject(str(path), f"cannot parse as CSV ({exc})", "file", documents=None), errors, stats)
        return
    if columns.text not in header:
        reject(
            Reject(str(path), _no_text_column(path, columns, header), "file", documents=None), errors, stats
        )
        return
    seen, last = 0, reader.line_num
    at.line = last + 1
    try:
        for fields in reader:
            number, last = last + 1, reader.line_num
            at.line = last + 1
            if not fields:
                continue
            seen += 1
            if len(fields) > len(header):
                why = f"cannot parse as CSV (expected {len(header)} fields, saw {len(fields)})"
                reject(Reject(str(path), why, "line", number), errors, stats)
                continue
            result = _csv_record(
                dict(zip(header, fields, strict=False)), path, number, columns, errors, stats
            )
            record = _row(path, number, "line", result, errors, stats)
            if record is not None:
                yield record
    except csv.Error as exc:
        why = f"cannot parse as CSV ({exc}); the rows before it were read"
        reject(Reject(str(path), why, "line", at.line, documents=None), errors, stats)
        return
    _empty(path, seen, errors, stats, True, "no rows; remove it or put rows in it")


def _csv_record(
    cells: dict[str, Any], path: Path, number: int, columns: Columns, errors: Errors, stats: SourceStats
) -> Record | str:
    text = cells.get(columns.text)
    if isinstance(text, str) and _SURROGATE.search(text):
        raw = text.encode("utf-8", "surrogateescape")
        if errors != "replace":
            try:
                decode_utf8(raw, path, line=number)
            except CorpusError as exc:
                return str(exc).split(": ", 2)[2]
        cells[columns.text] = decode_utf8(raw, path, errors="replace", stats=stats, line=number)
    for key, value in cells.items():
        if key != columns.text and isinstance(value, str) and _SURROGATE.search(value):
            cells[key] = value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return record_of(cells, str(path), number, columns)


def _parquet(
    path: Path, columns: Columns, errors: Errors, stats: SourceStats, row_groups: range | None
) -> Iterator[Record]:
    import pyarrow.parquet as pq

    with tempfile.TemporaryDirectory(prefix="tokenloom-") as tmp:
        try:
            source = _seekable(path, Path(tmp))
            pf = pq.ParquetFile(source)
        except Exception as exc:  # pyarrow raises several types for corrupt files; decompression others
            reject(
                Reject(str(path), f"cannot read as Parquet ({exc}); check the file", "file", documents=None),
                errors,
                stats,
            )
            return
        stats.files += 1
        stats.bytes += path.stat().st_size
        meta, names = pf.metadata, pf.schema_arrow.names
        groups = range(meta.num_row_groups) if row_groups is None else row_groups
        if columns.text not in names:  # every row of the groups read is covered by this reject
            why, rows = _no_text_column(path, columns, names), sum(meta.row_group(g).num_rows for g in groups)
            reject(Reject(str(path), why, "file", documents=rows), errors, stats)
            return
        if meta.num_rows == 0 and row_groups is None:
            reject(
                Reject(str(path), "no rows; remove it or put rows in it", "file", documents=0), errors, stats
            )
            return
        wanted = columns.used(names)
        before = sum(meta.row_group(g).num_rows for g in range(groups.start))
        for g in groups:
            yield from _row_group(pf, g, before, wanted, path, columns, errors, stats)
            before += meta.row_group(g).num_rows


def _row_group(
    pf: Any, g: int, before: int, wanted: list[str], path: Path, columns: Columns, errors: Errors,
    stats: SourceStats,
) -> Iterator[Record]:  # fmt: skip
    try:
        table = pf.read_row_group(g, columns=wanted)
    except Exception as exc:  # a corrupt row group: its rows are rejected, the others read
        n = pf.metadata.row_group(g).num_rows
        reject(Reject(str(path), f"cannot read row group {g} ({exc})", "file", None, g, n), errors, stats)
        return
    names = table.column_names
    columns_ = [table.column(name).to_pylist() for name in names]  # one row group in memory
    rows = zip(*columns_, strict=True) if columns_ else [()] * table.num_rows
    for r, values in enumerate(rows):
        cells = dict(zip(names, values, strict=True))
        number = before + r + 1
        result = record_of(cells, str(path), number, columns, row_group=g, row=r)
        if isinstance(result, str):
            reject(Reject(str(path), result, "row", number, g), errors, stats)
            continue
        stats.lines += 1
        stats.chars += len(result.text)
        yield result


def _seekable(path: Path, tmp: Path) -> Path:
    """``path`` itself, or its decompressed copy in ``tmp`` when it is compressed (Parquet needs seeks)."""
    if detect_compression(path) == "none":
        return path
    copy = tmp / "decompressed.parquet"
    with open_binary(path) as src, copy.open("wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
    return copy
