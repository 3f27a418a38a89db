"""The protocol every format reader keeps, the registry, and the one entry: :func:`read_file_records`.

A format is a :class:`FormatReader`: its name, the file suffixes it takes, the kind of corpus file it
holds (``"text"``, ``"table"`` or ``"code"``), how a large uncompressed file of it is cut into tasks
(``"bytes"``: at line starts, ``"row_groups"``, or ``"none"``) and ``read``, which turns one
:class:`ReadRequest` — a whole file, a byte range or some row groups — into records. :func:`register`
adds one (the package ``__init__`` registers the built-in ones); :func:`reader_for` finds the reader of a
path by its suffix, a compression suffix removed; :func:`read_file_records` opens the file (decompressing
it, ``compression.py``), counts it, and hands the stream to the reader — a reader that needs random access
(Parquet) opens the path itself.

Shared by the readers of tables: :func:`record_of` (one row's cells → a :class:`Record`, or why it is
rejected), :func:`keep_row` (count it or reject it), :func:`reject_empty`, :func:`no_text_column`. Bad
input is a :class:`~tokenloom.corpus.records.Reject` handled by ``errors`` (``records.reject``).
What it does not do: find files (``sources.py``), label records (``parts.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO, Literal, Protocol, TypeAlias

from tokenloom.corpus.compression import STREAM_ERRORS, detect_compression, inner_name, open_binary
from tokenloom.corpus.records import DEFAULT_COLUMNS, Columns, Errors, Record, Reject, SourceStats, reject

__all__ = [
    "BOM",
    "STREAM_ERRORS",
    "Format",
    "FormatReader",
    "Position",
    "ReadRequest",
    "file_format",
    "keep_row",
    "no_text_column",
    "open_request",
    "read_file_records",
    "reader_for",
    "readers",
    "register",
    "reject_empty",
    "stream_broken",
]

Format: TypeAlias = str  # a registered reader's name: "text", "code", "jsonl", "csv", "tsv", "parquet"
BOM = "\ufeff"


class Position:
    """The line the next record of a stream starts at, for a reject when the stream breaks."""

    def __init__(self, line: int) -> None:
        self.line = line


@dataclass(frozen=True)
class ReadRequest:
    """One read of one file: all of it, the lines starting in ``[start, end)`` (``first_line`` the number
    of the line at ``start``) or the Parquet row groups ``row_groups``."""

    path: Path
    columns: Columns
    errors: Errors
    stats: SourceStats  # updated as the file is read
    max_line_bytes: int | None = None  # a text file's longest line (longer: rejected)
    start: int = 0
    end: int | None = None
    first_line: int = 1
    row_groups: range | None = None
    streamed: bool = True  # a decompressing stream (its cut-off last line is held back); False: a plain file
    seen: int = 0  # rows the same read gave before this request (its first row is checked only when 0)


class FormatReader(Protocol):
    """A file format: what it is called, which files it takes, how it is read (see the module docstring)."""

    @property
    def name(self) -> Format: ...  # "jsonl"

    @property
    def suffixes(self) -> tuple[str, ...]: ...  # ".jsonl"; matched after a compression suffix is removed

    @property
    def fold_case(self) -> bool: ...  # ".JSONL" is ".jsonl" (tables); False: as written (".R" is R code)

    @property
    def kind(self) -> Literal["text", "table", "code"]: ...

    @property
    def split(self) -> Literal["none", "bytes", "row_groups"]: ...  # how tasks cut a large uncompressed file

    @property
    def opens_itself(self) -> bool: ...  # reads ``request.path`` itself (random access), gets no stream

    def read(self, request: ReadRequest, handle: BinaryIO | None, at: Position) -> Iterator[Record]:
        """The records of the request; ``at.line`` kept at the line the next record starts at."""
        ...


_READERS: list[FormatReader] = []
_DEFAULT = "text"  # the format of a file no reader claims


def register(reader: FormatReader) -> None:
    """Add a format (a later reader claiming a suffix already taken is an error)."""
    taken = {s.lower() if r.fold_case else s for r in _READERS for s in r.suffixes}
    clash = sorted(s for s in reader.suffixes if (s.lower() if reader.fold_case else s) in taken)
    if clash or any(r.name == reader.name for r in _READERS):
        raise ValueError(f"format {reader.name!r}: the name or suffixes {clash} are registered already")
    _READERS.append(reader)


def readers() -> tuple[FormatReader, ...]:
    """The registered formats, in the order they were registered."""
    return tuple(_READERS)


def reader_for(path: Path) -> FormatReader:
    """The reader of ``path`` by its suffix, a compression suffix removed (the text reader by default)."""
    suffix = Path(inner_name(path.name)).suffix
    for reader in _READERS:
        if (suffix.lower() if reader.fold_case else suffix) in reader.suffixes:
            return reader
    return next(r for r in _READERS if r.name == _DEFAULT)


def file_format(path: Path) -> Format:
    """The name of the format of ``path`` (:func:`reader_for`)."""
    return reader_for(path).name


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
    """The records of one file (its reader's), counted in ``stats``. ``byte_range`` (start, end, first
    line) reads the lines starting in ``[start, end)``; ``row_groups`` some row groups of a Parquet file."""
    reader = reader_for(path)
    start, end, first = byte_range if byte_range is not None else (0, None, 1)
    request = ReadRequest(path, columns, errors, stats, max_line_bytes, start, end, first, row_groups)
    at = Position(first)
    if reader.opens_itself:
        yield from reader.read(request, None, at)
        return
    opened = open_request(request)
    if opened is None:
        return
    handle, request = opened
    with handle:
        try:
            yield from reader.read(request, handle, at)
        except STREAM_ERRORS as exc:
            stream_broken(request, at, exc)


def open_request(request: ReadRequest) -> tuple[BinaryIO, ReadRequest] | None:
    """The decompressed stream of ``request.path`` at ``request.start`` (the file counted), and the request
    saying whether it is streamed; ``None`` when the file cannot be opened (a reject)."""
    path = request.path
    try:
        codec = detect_compression(path)
        handle = open_binary(path, codec)
    except OSError as exc:
        why = f"cannot open ({exc.strerror or exc})"
        reject(Reject(str(path), why, "file", documents=None), request.errors, request.stats)
        return None
    request.stats.files += 1
    if request.start:
        handle.seek(request.start)
    return handle, replace(request, streamed=codec != "none")


def stream_broken(request: ReadRequest, at: Position, exc: BaseException) -> None:
    """The reject of a truncated or corrupt compressed stream, at the line it broke."""
    why = f"cannot read further: {exc} (a truncated or corrupt file); the lines before it were read"
    reject(Reject(str(request.path), why, "line", at.line, documents=None), request.errors, request.stats)


def no_text_column(path: Path, columns: Columns, names: Iterable[str]) -> str:
    """Why a table without the text column is rejected, and the fix."""
    hint = "rename the text column to 'text'" if columns.text == "text" else "check text_column"
    return f"no {columns.text!r} column (columns: {list(names)}); {hint} or pass text_column= (--text-column)"


def keep_row(
    path: Path,
    number: int,
    unit: Literal["line", "row"],
    result: Record | str,
    errors: Errors,
    stats: SourceStats,
) -> Record | None:
    """The record of a row, counted in ``stats``; ``None`` when ``result`` is why it is rejected."""
    if isinstance(result, str):
        reject(Reject(str(path), result, unit, number), errors, stats)
        return None
    stats.lines += 1
    stats.chars += len(result.text)
    return result


def reject_empty(path: Path, seen: int, errors: Errors, stats: SourceStats, whole: bool, why: str) -> None:
    """A whole file with no rows is bad input."""
    if whole and seen == 0:
        reject(Reject(str(path), why, "file", documents=0), errors, stats)
