"""A file's records a batch at a time, as columns: texts and label cells in lists, no record per row.

:func:`read_file_batches` gives exactly what :func:`~tokenloom.corpus.formats.base.read_file_records`
gives — the same texts, labels, line or row numbers, rejects (file and line) and counts in
``SourceStats`` — cut into :class:`RowBatch` es of consecutive rows. Two formats are read column-wise:

- **JSON Lines** (compressed or not, whole or a byte range): lines are collected ``batch_rows`` at a time
  (the first batches smaller: :func:`ramped`) and parsed by
  orjson; a batch whose every line is a JSON object with a string text, string (or absent) label cells
  and no float cell becomes columns directly. The file's first line (byte-order mark, UTF-16
  and "not JSON Lines" checks) and any batch holding anything else (a malformed line, invalid UTF-8,
  another cell type) are read by the JSON Lines reader itself, line by line, so their records and rejects
  are its own;
- **text** (a line a text): lines as the text reader reads them, without a record each;
- **Parquet**: one row group at a time, its string columns taken whole (``to_pylist``); a row group
  with a null text or a column of another type is read by the Parquet reader row by row.

Every other format, and any table whose alignment key is declared (``Columns.align``), is read by its
reader and batched (:meth:`RowBatch.of_records`). What it does not do: group rows into parts
(``corpus/columnar.py``).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from itertools import accumulate
from pathlib import Path
from typing import Any

from tokenloom.corpus.formats.base import (
    STREAM_ERRORS,
    Position,
    ReadRequest,
    open_request,
    read_file_records,
    reader_for,
    reject_empty,
    stream_broken,
)
from tokenloom.corpus.formats.jsonl import JSON_LINES, ORJSON_LOADS
from tokenloom.corpus.formats.parquet import read_row_groups, row_group_records
from tokenloom.corpus.lines import complete_line_blocks, iter_handle_blocks
from tokenloom.corpus.records import DEFAULT_COLUMNS, Columns, Errors, Record, SourceStats

__all__ = ["BATCH_ROWS", "RowBatch", "ramped", "read_file_batches"]

BATCH_ROWS = 4096  # rows per batch: large enough that per-batch work is small, small for memory


def ramped(full: int, done: int) -> int:
    """The size of a read's batch (or handover, or engine call) after ``done`` of them: an eighth of
    ``full``, then a quarter, a half, then ``full`` — so whoever consumes them starts soon after a file
    opens, and the rest come at full size."""
    return max(1, full >> max(0, 3 - done))


@dataclass
class RowBatch:
    """Consecutive rows of one file as columns: ``numbers`` are line numbers (text, JSON Lines, CSV) or
    1-based row numbers (Parquet); ``records``: the rows as records when a reader gave them one by one."""

    source: str
    texts: list[str]
    langs: list[str | None]
    scripts: list[str | None]
    slices: list[str | None]
    numbers: list[int]
    records: list[Record] | None = None

    @classmethod
    def of_records(cls, source: str, records: list[Record]) -> RowBatch:
        return cls(
            source, [r.text for r in records], [r.lang for r in records], [r.script for r in records],
            [r.slice for r in records], [r.number for r in records], records,
        )  # fmt: skip

    def __len__(self) -> int:
        return len(self.texts)


def _batched(source: str, records: Iterable[Record], size: int) -> Iterator[RowBatch]:
    batch: list[Record] = []
    for record in records:
        batch.append(record)
        if len(batch) == size:
            yield RowBatch.of_records(source, batch)
            batch = []
    if batch:
        yield RowBatch.of_records(source, batch)


def read_file_batches(
    path: Path,
    *,
    columns: Columns = DEFAULT_COLUMNS,
    errors: Errors = "strict",
    stats: SourceStats,
    max_line_bytes: int | None = None,
    byte_range: tuple[int, int, int] | None = None,
    row_groups: range | None = None,
    batch_rows: int = BATCH_ROWS,
) -> Iterator[RowBatch]:
    """The rows of one file in batches (see the module docstring); arguments as ``read_file_records``."""
    name = reader_for(path).name
    if columns.align is None and name == "jsonl" and ORJSON_LOADS is not None:
        start, end, first = byte_range if byte_range is not None else (0, None, 1)
        request = ReadRequest(path, columns, errors, stats, max_line_bytes, start, end, first)
        yield from _jsonl_batches(request, batch_rows)
        return
    if columns.align is None and name == "parquet":
        request = ReadRequest(path, columns, errors, stats, max_line_bytes, row_groups=row_groups)
        yield from read_row_groups(request, _row_group_batch)
        return
    if name == "text":
        start, end, first = byte_range if byte_range is not None else (0, None, 1)
        request = ReadRequest(path, columns, errors, stats, max_line_bytes, start, end, first)
        yield from _text_batches(request, batch_rows)
        return
    records = read_file_records(
        path, columns=columns, errors=errors, stats=stats, max_line_bytes=max_line_bytes,
        byte_range=byte_range, row_groups=row_groups,
    )  # fmt: skip
    yield from _batched(str(path), records, batch_rows)


def _text_batches(request: ReadRequest, batch_rows: int) -> Iterator[RowBatch]:
    """A text file's lines (``lines.iter_handle_blocks``, as the text reader reads them), no record each."""
    opened = open_request(request)
    if opened is None:
        return
    handle, request = opened
    at, source = Position(request.first_line), str(request.path)
    texts: list[str] = []
    numbers: list[int] = []
    with handle:
        blocks = iter_handle_blocks(
            handle, request.path, errors=request.errors, stats=request.stats,
            max_line_bytes=request.max_line_bytes, first_line=request.first_line, offset=request.start,
            end=request.end, streamed=request.streamed,
        )  # fmt: skip
        try:
            for block_numbers, block in blocks:
                at.line = block_numbers[-1] + 1
                texts += block
                numbers += block_numbers
                while len(texts) >= batch_rows:
                    yield _plain(source, texts[:batch_rows], numbers[:batch_rows])
                    texts, numbers = texts[batch_rows:], numbers[batch_rows:]
        except STREAM_ERRORS as exc:
            if texts:
                yield _plain(source, texts, numbers)
            texts = []
            stream_broken(request, at, exc)
    if texts:
        yield _plain(source, texts, numbers)


def _plain(source: str, texts: list[str], numbers: list[int]) -> RowBatch:
    none: list[str | None] = [None] * len(texts)
    return RowBatch(source, texts, none, none, none, numbers)


def _jsonl_batches(request: ReadRequest, batch_rows: int) -> Iterator[RowBatch]:
    """JSON Lines a batch of lines at a time (see the module docstring)."""
    opened = open_request(request)
    if opened is None:
        return
    handle, request = opened
    lines = _JsonLines(request, batch_rows)
    with handle:
        try:
            for raws in complete_line_blocks(handle):
                if lines.offset == 0:  # the file's first line: the reader's own checks
                    lines.collect(raws[:1])
                    yield from lines.flush(slow=True)
                    if lines.stopped:
                        return
                    raws = raws[1:]
                ended = request.end is not None and _cut_at_end(raws, lines.offset, request.end)
                yield from lines.extend(raws)
                if ended:
                    break
        except STREAM_ERRORS as exc:
            yield from lines.flush()
            stream_broken(request, lines.at, exc)
            return
    yield from lines.flush()
    path, stats = request.path, request.stats
    why = "empty file (no rows); remove it or put rows in it"
    reject_empty(path, lines.seen, request.errors, stats, request.end is None, why)


def _cut_at_end(raws: list[bytes], offset: int, end: int) -> bool:
    """Drop the lines of ``raws`` (the first at byte ``offset``) that start at or after ``end``: a byte range
    reads the lines that start in it. ``True`` when the range ends here."""
    starts = list(accumulate(map(len, raws), initial=offset))  # [len(raws) + 1]
    first_out = bisect_left(starts, end)
    del raws[first_out:]
    return first_out < len(starts)


class _JsonLines:
    """The lines of a JSON Lines read collected into batches of ``batch_rows``, and where the read is."""

    def __init__(self, request: ReadRequest, batch_rows: int) -> None:
        self.request, self.batch_rows = request, batch_rows
        self.batches = 0  # batches collected by extend: the next one holds ramped(batch_rows, batches)
        self.raws: list[bytes] = []
        self.offset = request.start  # bytes read (the next line's offset)
        self.at = Position(request.first_line)  # the next line's number
        self.start, self.first = self.offset, self.at.line  # of the batch being collected
        self.seen = 0  # non-blank lines read
        self.stopped = False  # the reader rejected or listed the whole file

    def collect(self, raws: list[bytes]) -> None:
        self.raws += raws
        self.offset += sum(map(len, raws))
        self.at.line += len(raws)

    def extend(self, raws: list[bytes]) -> Iterator[RowBatch]:
        """Collect ``raws``; each batch that fills is read (:meth:`flush`)."""
        at = 0
        while at < len(raws):
            size = ramped(self.batch_rows, self.batches)
            take = raws[at : at + size - len(self.raws)]
            self.collect(take)
            at += len(take)
            if len(self.raws) == size:
                yield from self.flush()
                self.batches += 1

    def flush(self, *, slow: bool = False) -> Iterator[RowBatch]:
        """The batch collected so far, read column-wise, or line by line by the reader."""
        raws, self.raws = self.raws, []
        if not raws:
            return
        start, first = self.start, self.first
        self.start, self.first = self.offset, self.at.line
        req = self.request
        batch = None if slow else _columns(raws, req.columns, str(req.path), first)
        if batch is not None:
            req.stats.bytes += sum(map(len, raws))
            req.stats.lines += len(batch)
            req.stats.chars += sum(map(len, batch.texts))
            self.seen += len(batch)
            yield batch
            return
        sub = replace(req, start=start, end=self.offset, first_line=first, seen=self.seen)
        before = len(req.stats.rejects)
        records = list(JSON_LINES.read(sub, iter(raws), Position(first)))  # type: ignore[arg-type]
        self.seen += sum(1 for raw in raws if raw.strip())
        self.stopped = any(r.unit == "file" for r in req.stats.rejects[before:])
        if records:
            yield RowBatch.of_records(str(req.path), records)


def _columns(raws: list[bytes], columns: Columns, source: str, first: int) -> RowBatch | None:
    """The rows of ``raws`` (consecutive lines from line ``first``) as columns; ``None`` unless every
    non-blank line is an object orjson reads as the line-by-line reader would (see the module docstring)."""
    assert ORJSON_LOADS is not None
    loads = ORJSON_LOADS
    kept = [i for i, raw in enumerate(raws) if not raw.isspace()]  # blank lines (b"" is never read)
    try:
        rows = [loads(raws[i]) for i in kept]
    except ValueError:  # malformed, invalid UTF-8, a lone surrogate: the reader says where
        return None
    if not rows or not all(type(r) is dict for r in rows):
        return None
    names = rows[0].keys()
    if not all(r.keys() == names for r in rows) or any(type(v) is float for r in rows for v in r.values()):
        return None
    if columns.text not in names:
        return None
    texts = [r[columns.text] for r in rows]
    lang, script = columns.resolve(tuple(names))
    cells = [_cells(rows, key) for key in (lang, script, "slice" if "slice" in names else None)]
    if not all(type(t) is str for t in texts) or any(c is None for c in cells):
        return None
    langs, scripts, slices = cells
    assert langs is not None and scripts is not None and slices is not None
    return RowBatch(source, texts, langs, scripts, slices, [first + i for i in kept])


def _cells(rows: list[dict[str, Any]], key: str | None) -> list[str | None] | None:
    """A label column as the reader labels it (an empty cell is no label); ``None`` when a cell is not a
    string or null (read line by line instead)."""
    if key is None:
        return [None] * len(rows)
    values = [r.get(key) for r in rows]
    if not all(v is None or type(v) is str for v in values):
        return None
    return [v or None for v in values]


def _row_group_batch(
    pf: Any, g: int, read: Any, before: int, wanted: list[str], path: Path, columns: Columns,
    errors: Errors, stats: SourceStats,
) -> Iterator[RowBatch]:  # fmt: skip
    """One row group's rows as columns; read row by row by the Parquet reader (its rejects) unless its text
    column is strings without a null and its label columns strings (see the module docstring)."""
    import pyarrow as pa

    table = None if isinstance(read, Exception) else read  # a corrupt row group: the reader rejects it
    names = table.column_names if table is not None else []
    lang, script = columns.resolve(names)
    labels = [lang, script, "slice" if "slice" in names else None]
    strings = (pa.string(), pa.large_string())
    if (
        table is None
        or table.schema.field(columns.text).type not in strings
        or table.column(columns.text).null_count
        or any(key is not None and table.schema.field(key).type not in strings for key in labels)
    ):
        rows = row_group_records(pf, g, read, before, wanted, path, columns, errors, stats)
        yield from _batched(str(path), rows, max(pf.metadata.row_group(g).num_rows, 1))
        return
    # Arrow strings are decoded by Python's strict UTF-8 decoder: no lone surrogate can reach a text
    texts = table.column(columns.text).to_pylist()
    langs, scripts, slices = (_string_cells(table, key, len(texts)) for key in labels)
    stats.lines += len(texts)
    stats.chars += sum(map(len, texts))
    yield RowBatch(str(path), texts, langs, scripts, slices, list(range(before + 1, before + len(texts) + 1)))


def _string_cells(table: Any, key: str | None, n: int) -> list[str | None]:
    """A string label column as the reader labels it (an empty cell is no label)."""
    if key is None:
        return [None] * n
    return [v or None for v in table.column(key).to_pylist()]
