"""CSV and TSV (``.csv``, ``.tsv``): the standard ``csv`` module over the decompressed lines.

RFC 4180 quoting, so fields may hold newlines; the first row is the header and must hold the text
column. Undecodable bytes are kept as surrogates while parsing and checked per row: the row is rejected
(or, with ``errors="replace"``, its text gets U+FFFD). A row with more fields than the header, or a
parse error (the rows before it read), is a reject. Such a file is one task (a quoted field may span
lines, so it is never cut into byte ranges).
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
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
from tokenloom.corpus.lines import complete_lines, decode_utf8
from tokenloom.corpus.records import (
    SURROGATE,
    Columns,
    Errors,
    Record,
    Reject,
    SourceStats,
    record_of,
    reject,
)
from tokenloom.errors import CorpusError

__all__ = ["CSV", "TSV", "DelimitedReader"]


@dataclass(frozen=True)
class DelimitedReader:
    """Comma- or tab-separated files (see the module docstring)."""

    name: Format
    suffixes: tuple[str, ...]
    delimiter: str
    fold_case: bool = True
    kind: Literal["table"] = "table"
    split: Literal["none"] = "none"
    opens_itself: bool = False

    def read(self, request: ReadRequest, handle: BinaryIO | None, at: Position) -> Iterator[Record]:
        assert handle is not None  # opened by read_file_records
        path, columns, errors, stats = request.path, request.columns, request.errors, request.stats
        csv.field_size_limit(max(csv.field_size_limit(), 1 << 30))

        def lines() -> Iterator[str]:  # undecodable bytes kept as surrogates, checked per row below
            for raw in complete_lines(handle):
                stats.bytes += len(raw)
                yield raw.decode("utf-8", "surrogateescape")

        reader = csv.reader(lines(), delimiter=self.delimiter)
        try:
            header = [name.removeprefix(BOM) if i == 0 else name for i, name in enumerate(next(reader))]
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
            why = no_text_column(path, columns, header)
            reject(Reject(str(path), why, "file", documents=None), errors, stats)
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
                result = _record(
                    dict(zip(header, fields, strict=False)), path, number, columns, errors, stats
                )
                record = keep_row(path, number, "line", result, errors, stats)
                if record is not None:
                    yield record
        except csv.Error as exc:
            why = f"cannot parse as CSV ({exc}); the rows before it were read"
            reject(Reject(str(path), why, "line", at.line, documents=None), errors, stats)
            return
        reject_empty(path, seen, errors, stats, True, "no rows; remove it or put rows in it")


def _record(
    cells: dict[str, Any], path: Path, number: int, columns: Columns, errors: Errors, stats: SourceStats
) -> Record | str:
    text = cells.get(columns.text)
    if isinstance(text, str) and SURROGATE.search(text):
        raw = text.encode("utf-8", "surrogateescape")
        if errors != "replace":
            try:
                decode_utf8(raw, path, line=number)
            except CorpusError as exc:
                return str(exc).split(": ", 2)[2]
        cells[columns.text] = decode_utf8(raw, path, errors="replace", stats=stats, line=number)
    for key, value in cells.items():
        if key != columns.text and isinstance(value, str) and SURROGATE.search(value):
            cells[key] = value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return record_of(cells, str(path), number, columns)


CSV = DelimitedReader("csv", (".csv",), ",")
TSV = DelimitedReader("tsv", (".tsv",), "\t")
