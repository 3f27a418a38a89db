"""Parquet (``.parquet``): ``pyarrow.parquet.ParquetFile``, one row group at a time, only the columns used.

A compressed Parquet file (``.parquet.zst``) is first decompressed to a temporary file, since Parquet
needs random access. A large file is cut into tasks of whole row groups; a corrupt row group is a reject
covering its rows, the others are read. The next row group is decoded on a thread (pyarrow releases the
GIL) while the caller works on this one's rows. ``pyarrow`` is imported when a file is read.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Literal, TypeVar

from tokenloom.corpus.compression import detect_compression, open_binary
from tokenloom.corpus.formats.base import Format, Position, ReadRequest, no_text_column
from tokenloom.corpus.records import Columns, Errors, Record, Reject, SourceStats, record_of, reject

__all__ = ["PARQUET", "ParquetReader", "RowGroupReader", "read_row_groups", "row_group_records"]

T = TypeVar("T")


@dataclass(frozen=True)
class ParquetReader:
    """Parquet files (see the module docstring)."""

    name: Format = "parquet"
    suffixes: tuple[str, ...] = (".parquet",)
    fold_case: bool = True
    kind: Literal["table"] = "table"
    split: Literal["row_groups"] = "row_groups"
    opens_itself: bool = True

    def read(self, request: ReadRequest, handle: BinaryIO | None, at: Position) -> Iterator[Record]:
        yield from read_row_groups(request, row_group_records)


# (file, group, its table or the error reading it raised, rows before it, columns read, path, columns,
# errors, stats) -> what is read of the group
RowGroupReader = Callable[[Any, int, Any, int, list[str], Path, Columns, Errors, SourceStats], Iterator[T]]


def read_row_groups(request: ReadRequest, each: RowGroupReader[T]) -> Iterator[T]:
    """Open the Parquet file of ``request`` (its checks and rejects) and give what ``each`` reads of every
    row group asked for, decoded one group ahead: ``each(file, group, table or error, rows before it,
    columns read, path, columns, errors, stats)``."""
    import pyarrow.parquet as pq

    path, columns, errors, stats = request.path, request.columns, request.errors, request.stats
    row_groups = request.row_groups
    with tempfile.TemporaryDirectory(prefix="tokenloom-") as tmp:
        try:
            source = _seekable(path, Path(tmp))
            pf = pq.ParquetFile(source)
        except Exception as exc:  # pyarrow raises several types for corrupt files; decompression others
            why = f"cannot read as Parquet ({exc}); check the file"
            reject(Reject(str(path), why, "file", documents=None), errors, stats)
            return
        stats.files += 1
        stats.bytes += path.stat().st_size
        meta, names = pf.metadata, pf.schema_arrow.names
        groups = range(meta.num_row_groups) if row_groups is None else row_groups
        if columns.text not in names:  # every row of the groups read is covered by this reject
            why, rows = (
                no_text_column(path, columns, names),
                sum(meta.row_group(g).num_rows for g in groups),
            )
            reject(Reject(str(path), why, "file", documents=rows), errors, stats)
            return
        if meta.num_rows == 0 and row_groups is None:
            why = "no rows; remove it or put rows in it"
            reject(Reject(str(path), why, "file", documents=0), errors, stats)
            return
        wanted = columns.used(names)
        before = sum(meta.row_group(g).num_rows for g in range(groups.start))
        for g, table in _ahead(groups, lambda g: _read_group(pf, g, wanted)):
            yield from each(pf, g, table.result(), before, wanted, path, columns, errors, stats)
            before += meta.row_group(g).num_rows


def _read_group(pf: Any, g: int, wanted: list[str]) -> Any:
    """Row group ``g``'s ``wanted`` columns as a table, or the error reading it raised."""
    try:
        return pf.read_row_group(g, columns=wanted, use_threads=False)  # a pool per row group costs more
    except Exception as exc:  # pyarrow raises several types for a corrupt row group
        return exc


def _ahead(items: Iterable[int], fn: Callable[[int], Any]) -> Iterator[tuple[int, Future[Any]]]:
    """``(item, future of fn(item))`` in order, the next item's ``fn`` running on a thread meanwhile."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="tokenloom-parquet") as pool:
        pending: tuple[int, Future[Any]] | None = None
        for item in items:
            current = (item, pool.submit(fn, item))
            if pending is not None:
                yield pending
            pending = current
        if pending is not None:
            yield pending


def row_group_records(
    pf: Any, g: int, table: Any, before: int, wanted: list[str], path: Path, columns: Columns,
    errors: Errors, stats: SourceStats,
) -> Iterator[Record]:  # fmt: skip
    if isinstance(table, Exception):  # a corrupt row group: its rows are rejected, the others read
        n = pf.metadata.row_group(g).num_rows
        reject(Reject(str(path), f"cannot read row group {g} ({table})", "file", None, g, n), errors, stats)
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


PARQUET = ParquetReader()
