"""Corpus inputs split into tasks: pieces that can be read independently, anywhere, into the same records.

:func:`plan_files` turns the files an input names into :class:`Task` s of roughly ``chunk_bytes`` each
(a :class:`FilePlan`, with the files a folder search left out); it is the plan every consumer reads —
training (``stream.py``) one task per file, reports (``plan.py``) labelled and cut:

- a Parquet file (uncompressed on disk; Parquet compresses inside) larger than ``chunk_bytes`` becomes
  ranges of consecutive row groups, cut where their compressed size passes ``chunk_bytes`` (a row group is
  never split);
- an uncompressed JSON Lines or text file larger than ``chunk_bytes`` becomes byte ranges cut at line
  starts, each knowing the line number it starts at (one pass over the file counts the newlines before
  every cut);
- any other file — compressed (a stream cannot be entered in the middle), CSV/TSV (a quoted field may hold
  a newline), code, small — is one task.

:func:`read_task` reads one task into :class:`~tokenloom.corpus.records.Record` s (``formats/``), exactly
the records — texts, labels, positions — that reading the whole file yields for that range, so reading every
task in plan order gives the records of reading the files whole, and rejects are counted once. A task's
:attr:`Task.id` names the file and range; it does not change between runs over the same files, so work
keyed by it (a finished task's counts) can be found again.

Whole files are read the same way: :func:`iter_records` streams the records of paths or of an in-memory
corpus (``records.iter_object_records``), :func:`iter_texts` the texts of one file by its kind (:func:`file_kind`: JSON
Lines / CSV / TSV / Parquet files are **tables**, files with a programming language's extension are
**code**, everything else is **text**; the kind of ``a.jsonl.gz`` is the kind of ``a.jsonl``) — a text
file's lines without building records (``formats.read_file_texts``). The texts of a file part of the plan:
:func:`read_text_part` (a text file's lines, at most :data:`MAX_TEXT_BYTES` each, with their line numbers),
:func:`read_text_files` (several, one after another), :func:`read_code_part` (source files, each whole).
Bad input is a
:class:`~tokenloom.corpus.records.Reject`: raised as ``CorpusError`` naming file and line under
``errors="strict"`` (the default) or ``"replace"``, set aside in ``stats.rejects`` under ``errors="skip"``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from tokenloom.corpus.compression import detect_compression
from tokenloom.corpus.formats import read_file_records, read_file_texts, reader_for
from tokenloom.corpus.records import (
    DEFAULT_COLUMNS,
    Columns,
    Errors,
    Record,
    Reject,
    SourceStats,
    iter_object_records,
    reject,
)
from tokenloom.corpus.sources import LeftOut, corpus_files, is_paths, record_left_out, scan_files

__all__ = [
    "CHUNK_BYTES", "MAX_TEXT_BYTES", "FileKind", "FilePlan", "Task", "file_kind", "file_tasks",
    "iter_numbered_texts", "iter_records", "iter_texts", "plan_files", "plan_tasks", "read_code_part",
    "read_task", "read_text_files", "read_text_part",
]  # fmt: skip

CHUNK_BYTES = 64 << 20  # default task size: large enough to amortise a process start, small for balance
_SCAN = 1 << 20  # bytes read at a time while counting newlines


@dataclass(frozen=True)
class Task:
    """A file, a range of its Parquet row groups (``start:stop``) or of its bytes (cut at line starts)."""

    path: Path
    kind: Literal["file", "row_groups", "bytes"] = "file"
    start: int = 0  # first row group, or first byte
    stop: int = 0  # row group / byte after the last (unused for "file")
    first_line: int = 1  # "bytes": the line number at ``start``
    compressed: bool = False  # a compressed file (one task, read as a stream of unknown size)

    @property
    def id(self) -> str:
        """``FILE``, ``FILE#row_groups=A-B`` or ``FILE#bytes=A-B`` (stable across runs)."""
        return str(self.path) if self.kind == "file" else f"{self.path}#{self.kind}={self.start}-{self.stop}"


@dataclass(frozen=True)
class FilePlan:
    """The tasks of the files an input names, in sorted file order, and the files a folder search left out
    (recorded as rejects by whoever reads the plan, ``sources.record_left_out``)."""

    tasks: tuple[Task, ...]
    left_out: tuple[LeftOut, ...] = ()

    @property
    def files(self) -> tuple[Path, ...]:
        """The files of the plan, each once, in plan order."""
        return tuple(dict.fromkeys(t.path for t in self.tasks))


def plan_files(
    inputs: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    chunk_bytes: int | None = CHUNK_BYTES,
) -> FilePlan:
    """The plan of ``inputs`` (files, folders, globs; ``sources.scan_files``): file by file in sorted order,
    each file's tasks in file order (see the module docstring); ``chunk_bytes=None``: one task per file."""
    if chunk_bytes is not None and (not isinstance(chunk_bytes, int) or chunk_bytes < 1):
        raise ValueError(f"chunk_bytes must be a positive int or None, got {chunk_bytes!r}")
    files, left_out = scan_files(inputs)
    tasks = (
        [Task(path) for path in files] if chunk_bytes is None else file_tasks(files, chunk_bytes=chunk_bytes)
    )
    return FilePlan(tuple(tasks), tuple(left_out))


def file_tasks(files: Iterable[Path], *, chunk_bytes: int = CHUNK_BYTES) -> list[Task]:
    """The tasks of files already found, in the order given, each file's tasks in file order."""
    if not isinstance(chunk_bytes, int) or chunk_bytes < 1:
        raise ValueError(f"chunk_bytes must be a positive int, got {chunk_bytes!r}")
    return [task for path in files for task in _file_tasks(path, chunk_bytes)]


def plan_tasks(
    inputs: str | os.PathLike[str] | Iterable[str | os.PathLike[str]], *, chunk_bytes: int = CHUNK_BYTES
) -> list[Task]:
    """The tasks of :func:`plan_files`; a link to a missing target in a folder raises."""
    if not isinstance(chunk_bytes, int) or chunk_bytes < 1:
        raise ValueError(f"chunk_bytes must be a positive int, got {chunk_bytes!r}")
    plan = plan_files(inputs, chunk_bytes=chunk_bytes)
    record_left_out(plan.left_out, "strict", SourceStats())
    return list(plan.tasks)


def _file_tasks(path: Path, chunk_bytes: int) -> list[Task]:
    try:
        size, codec = path.stat().st_size, detect_compression(path)
    except OSError:
        return [Task(path)]  # the reader rejects it
    split = reader_for(path).split  # how the file's format is cut: by line starts, by row groups or not
    if size <= chunk_bytes or codec != "none" or split == "none":
        return [Task(path, compressed=codec != "none")]
    return (
        _row_group_tasks(path, chunk_bytes) if split == "row_groups" else _byte_tasks(path, size, chunk_bytes)
    )


def _row_group_tasks(path: Path, chunk_bytes: int) -> list[Task]:
    import pyarrow.parquet as pq

    try:
        meta = pq.ParquetFile(path).metadata
    except Exception:  # pyarrow raises several types for corrupt files: the reader rejects it
        return [Task(path)]
    tasks, start, size = [], 0, 0
    for g in range(meta.num_row_groups):
        size += meta.row_group(g).total_byte_size
        if size >= chunk_bytes or g == meta.num_row_groups - 1:
            tasks.append(Task(path, "row_groups", start, g + 1))
            start, size = g + 1, 0
    return tasks or [Task(path)]


def _byte_tasks(path: Path, size: int, chunk_bytes: int) -> list[Task]:
    """Byte ranges cut at the first line start at or after each multiple of ``chunk_bytes``."""
    tasks: list[Task] = []
    start, line = 0, 1
    with path.open("rb") as f:
        while start < size:
            f.seek(start + chunk_bytes)
            f.readline()  # to the next line start
            stop = min(f.tell(), size)
            tasks.append(Task(path, "bytes", start, stop, line))
            f.seek(start)
            left = stop - start
            while left > 0:
                block = f.read(min(_SCAN, left))
                line += block.count(b"\n")
                left -= len(block)
            start = stop
    return tasks


def read_task(
    task: Task,
    *,
    columns: Columns = DEFAULT_COLUMNS,
    errors: Errors = "strict",
    stats: SourceStats | None = None,
    max_line_bytes: int | None = None,
) -> Iterator[Record]:
    """The records of one task, counted in ``stats`` (see the module docstring)."""
    stats = SourceStats() if stats is None else stats
    byte_range = (task.start, task.stop, task.first_line) if task.kind == "bytes" else None
    row_groups = range(task.start, task.stop) if task.kind == "row_groups" else None
    yield from read_file_records(
        task.path, columns=columns, errors=errors, stats=stats, max_line_bytes=max_line_bytes,
        byte_range=byte_range, row_groups=row_groups,
    )  # fmt: skip


FileKind = Literal["text", "table", "code"]


def file_kind(path: Path) -> FileKind:
    """``"table"``, ``"code"`` or ``"text"``, by the file's suffix (see the module docstring)."""
    return reader_for(path).kind


def iter_records(
    inputs: Any,
    *,
    columns: Columns = DEFAULT_COLUMNS,
    errors: Errors = "strict",
    stats: SourceStats | None = None,
    max_line_bytes: int | None = None,
) -> Iterator[Record]:
    """The records of ``inputs``: paths, folders and globs (:func:`corpus_files`, read file by file in
    sorted order), or an in-memory corpus (a DataFrame, a ``datasets`` dataset, an iterable of str or dict)."""
    stats = SourceStats() if stats is None else stats
    if not is_paths(inputs):
        yield from iter_object_records(inputs, columns=columns, errors=errors, stats=stats)
        return
    for path in corpus_files(inputs, errors=errors, stats=stats):
        yield from read_file_records(
            path, columns=columns, errors=errors, stats=stats, max_line_bytes=max_line_bytes
        )


def iter_texts(
    path: Path,
    *,
    errors: Errors = "strict",
    stats: SourceStats | None = None,
    max_line_bytes: int | None = None,
    columns: Columns = DEFAULT_COLUMNS,
) -> Iterator[str]:
    """The texts of one file, by its kind: a text file's lines, a table's text column, a code file whole;
    ``max_line_bytes`` limits a text file's lines (``lines.iter_handle_lines``)."""
    for _, text in iter_numbered_texts(
        path, errors=errors, stats=stats, max_line_bytes=max_line_bytes, columns=columns
    ):
        yield text


def iter_numbered_texts(
    path: Path,
    *,
    errors: Errors = "strict",
    stats: SourceStats | None = None,
    max_line_bytes: int | None = None,
    columns: Columns = DEFAULT_COLUMNS,
) -> Iterator[tuple[int, str]]:
    """(line or row number, text) of one file, as :func:`iter_texts` (``formats.read_file_texts``: a text
    file's lines are read without building records)."""
    stats = SourceStats() if stats is None else stats
    yield from read_file_texts(
        path, columns=columns, errors=errors, stats=stats, max_line_bytes=max_line_bytes
    )


MAX_TEXT_BYTES = 1 << 20  # one line of a text file is one text (a sentence, a paragraph): 1 MiB at most


def read_text_part(path: Path, errors: Errors, stats: SourceStats) -> tuple[list[str], list[Any]]:
    """A text file's lines and their line numbers (rejected lines, under ``errors="skip"``, left out):
    the texts of a FLORES-style or plain text file part."""
    numbered = list(iter_numbered_texts(path, errors=errors, stats=stats, max_line_bytes=MAX_TEXT_BYTES))
    if not numbered:
        why = "empty file (no lines); remove it or put text in it"
        if errors != "skip" or not stats.rejects or stats.rejects[-1].source != str(path):
            reject(Reject(str(path), why, "file", documents=0), errors, stats)
    return [text for _, text in numbered], [number for number, _ in numbered]


def read_text_files(paths: Iterable[Path], errors: Errors, stats: SourceStats) -> tuple[list[str], list[Any]]:
    """The lines of text files, one after another, with their line numbers (the texts of a part made of
    several files)."""
    texts: list[str] = []
    ids: list[Any] = []
    for path in paths:
        more, numbers = read_text_part(path, errors, stats)
        texts += more
        ids += numbers
    return texts, ids


def read_code_part(paths: Iterable[Path], errors: Errors, stats: SourceStats) -> tuple[list[str], list[Any]]:
    """The texts of a code part: each file whole, its path as its id."""
    paths = list(paths)
    texts = [text for p in paths for text in iter_texts(p, errors=errors, stats=stats)]
    return texts, [str(p) for p in paths]
