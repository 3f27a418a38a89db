"""A corpus as tasks: pieces that can be read anywhere, in any order, into the parts ``load_corpus`` gives.

:func:`plan_corpus_tasks` labels the files of an input the way :func:`~tokenloom.corpus.load.load_corpus`
does (FLORES-style folders and their alignment, text files, code, tables) without reading the tables, and
cuts the work into :class:`CorpusTask` s of about ``chunk_bytes`` (``tasks.py``):

- a file part (a FLORES-style or text file, a programming language's files) is one task, read whole —
  unless it is an uncompressed text file larger than ``chunk_bytes``, which becomes byte ranges, or a
  compressed text file (of unknown size), which is one task read piece by piece;
- the table files of the input are one table (a slice spread over many shards is one part) cut into
  tasks: a file, a range of Parquet row groups or a byte range of a JSON Lines file. The table is
  *aligned* (its parts share keys across languages) only when ``columns.align`` declares its key column;
  the table is then read once before it is planned, for keys repeated across tasks
  (:func:`~tokenloom.corpus.table_parts.repeated_keys`), so every task rejects the same rows;
- an in-memory corpus (a :class:`~tokenloom.corpus.load.Corpus`, a DataFrame, a ``datasets`` dataset, an
  iterable of str or dict) is one task: it is read in this process, never sent to another.

"Is this input a path?" is decided here, once (``sources.is_paths``); every consumer — reports, training
(``stream.py``), the token-shard writer — plans its input with :func:`plan_corpus_tasks`.

:func:`read_corpus_task` reads one task into :class:`Piece` s: a whole file part, or up to ``chunk_size``
consecutive texts of one part — rows are grouped into parts as in a table read whole
(``table_parts.py``), so the pieces of every task, in plan order, hold exactly the texts and ids of
``load_corpus``'s parts. A task on files is plain data (it pickles) and its :attr:`CorpusTask.id` is stable across
runs over the same files. What it does not do: count or schedule (``tokenloom.fertility.runner``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tokenloom.corpus.columnar import read_part_range, read_table_task
from tokenloom.corpus.formats import read_file_records
from tokenloom.corpus.load import (
    MAX_TEXT_BYTES,
    Corpus,
    label_files,
    load_memory,
    read_code_part,
    read_text_part,
    table_source,
)
from tokenloom.corpus.parts import CorpusPart, no_texts
from tokenloom.corpus.records import DEFAULT_COLUMNS, Columns, Errors, Reject, SourceStats, reject
from tokenloom.corpus.sources import is_paths
from tokenloom.corpus.table_parts import RepeatedKeys, TableGroups, repeated_keys
from tokenloom.corpus.tasks import CHUNK_BYTES, Task, file_tasks, read_task
from tokenloom.errors import CorpusError

__all__ = ["CorpusTask", "Piece", "plan_corpus_tasks", "read_corpus_task", "task_parts"]


@dataclass(frozen=True)
class CorpusTask:
    """A file part read whole (``part``), a byte range of one (``part`` and ``piece``), or a piece of the
    input's table (``piece``; ``table`` names the table, ``aligned``: its rows carry declared keys,
    ``repeated``: the rows of this task's file whose key repeats an earlier row's)."""

    id: str  # stable across runs over the same files
    bytes: int  # bytes on disk the task reads (for progress)
    part: CorpusPart | None = None  # labels only (its load is no_texts)
    piece: Task | None = None
    table: str = ""
    aligned: bool = False
    repeated: tuple[tuple[tuple[str, int], str], ...] = ()
    rejects: tuple[Reject, ...] = ()  # what planning set aside or listed (files left out): read as rejects
    memory: Corpus | None = field(default=None, compare=False)  # an in-memory corpus, read in this process


@dataclass(frozen=True)
class Piece:
    """Texts of one part read by a task: all of them (``whole``), or consecutive ones of a part whose
    texts are spread over several tasks."""

    part: CorpusPart
    texts: list[str]
    ids: list[Any]
    whole: bool


def _size(paths: Iterable[Path]) -> int:
    total = 0
    for p in paths:
        with contextlib.suppress(OSError):  # unreadable: the reader rejects it
            total += p.stat().st_size
    return total


def _piece_bytes(task: Task) -> int:
    return task.stop - task.start if task.kind == "bytes" else _size([task.path])


def _repeated(tables: list[Path], columns: Columns, errors: Errors) -> RepeatedKeys:
    """Rows of an aligned table whose key repeats an earlier row's (one read of the table)."""
    if columns.align is None:
        return {}
    records = (
        r for f in tables for r in read_file_records(f, columns=columns, errors="skip", stats=SourceStats())
    )
    return repeated_keys(records, align=columns.align, errors=errors)


def plan_corpus_tasks(
    inputs: Corpus | str | os.PathLike[str] | Iterable[Any],
    *,
    errors: Errors = "strict",
    parallel: bool | None = None,
    columns: Columns = DEFAULT_COLUMNS,
    chunk_bytes: int = CHUNK_BYTES,
) -> list[CorpusTask]:
    """The tasks of ``inputs`` (see the module docstring). Paths, folders and globs: the files left out
    of a folder search (a task holding their rejects), the table's, then the file parts in ``load_corpus``
    order; bad labels (an empty file, a broken parallel folder) raise as there. A
    :class:`~tokenloom.corpus.load.Corpus` or an in-memory corpus (a DataFrame, a ``datasets`` dataset, an
    iterable of str or dict, read as by ``load_corpus``): one task holding it (:attr:`CorpusTask.memory`)."""
    if isinstance(inputs, Corpus) or not is_paths(inputs):  # the one test of "is this a path?" of a report
        corpus = inputs if isinstance(inputs, Corpus) else load_memory(inputs, errors=errors, columns=columns)
        return [CorpusTask("memory", 0, memory=corpus)]
    stats = SourceStats()
    labelled = label_files(inputs, errors=errors, parallel=parallel, stats=stats)
    if not labelled.parts and not labelled.tables:
        raise CorpusError(f"no texts found in {inputs!r}; pass .txt, .jsonl, .csv, .parquet or source files")
    tasks: list[CorpusTask] = []
    if stats.rejects:  # files a folder search left out: passed on to the report as rejects
        tasks.append(CorpusTask("left-out", 0, rejects=tuple(stats.rejects)))
    tables = list(labelled.tables)
    if tables:
        name, aligned = table_source(tables), columns.align is not None
        repeated = _repeated(tables, columns, errors)
        for t in file_tasks(tables, chunk_bytes=chunk_bytes):
            size = t.stop - t.start if t.kind == "bytes" else _size([t.path])
            mine = tuple((k, v) for k, v in repeated.items() if k[0] == str(t.path))
            tasks.append(CorpusTask(t.id, size, piece=t, table=name, aligned=aligned, repeated=mine))
    for part in labelled.parts:
        labels = replace(part, load=no_texts)
        ranges = file_tasks(part.paths, chunk_bytes=chunk_bytes) if part.slice_kind != "code" else []
        if len(ranges) > 1:  # a large uncompressed text file, or several text files
            tasks += [CorpusTask(t.id, _piece_bytes(t), part=labels, piece=t) for t in ranges]
        elif ranges and ranges[0].compressed:  # of unknown size: streamed
            tasks.append(CorpusTask(ranges[0].id, _size(part.paths), part=labels, piece=ranges[0]))
        else:
            tasks.append(CorpusTask(f"{part.slice_kind}:{part.slice}", _size(part.paths), part=labels))
    return tasks


def task_parts(tasks: Iterable[CorpusTask]) -> list[CorpusPart]:
    """The parts the tasks name before they are read (a table's parts are known once it is read)."""
    parts: list[CorpusPart] = []
    for task in tasks:
        parts += list(task.memory) if task.memory is not None else [task.part] if task.part else []
    return list(dict.fromkeys(parts))


def read_corpus_task(
    task: CorpusTask,
    *,
    columns: Columns = DEFAULT_COLUMNS,
    errors: Errors = "strict",
    stats: SourceStats | None = None,
    chunk_size: int = 1024,
    first: str | None = None,
    held_rows: int | None = None,
) -> Iterator[Piece]:
    """The pieces of one task (see the module docstring), its reading counted in ``stats``; the parts of an
    in-memory corpus are read whole, the language slice ``first`` (a report's pivot) before the others.
    ``held_rows``: a table that is not aligned also hands over every part's rows whenever that many are
    held (``columnar.read_table_task``: the same texts in each part, cut into other pieces)."""
    stats = SourceStats() if stats is None else stats
    for item in task.rejects:
        reject(item, "skip", stats)  # raised when planned, unless errors="skip"
    if task.memory is not None:
        yield from _read_memory(task.memory, stats, first)
        return
    part, piece = task.part, task.piece
    if part is None and piece is None:
        return
    if part is not None and piece is None:
        reader = read_code_part if part.slice_kind == "code" else None
        texts, ids = (
            reader(part.paths, errors, stats) if reader else read_text_part(part.paths[0], errors, stats)
        )
        yield Piece(part, texts, ids, whole=True)
        return
    assert piece is not None
    if part is not None:  # a byte range of a text file part, read a batch of lines at a time
        for texts, numbers in read_part_range(
            piece, columns=columns, errors=errors, stats=stats, chunk_size=chunk_size,
            max_line_bytes=MAX_TEXT_BYTES,
        ):  # fmt: skip
            yield Piece(part, texts, list(numbers), whole=False)
        return
    if not task.aligned:  # a table's rows, read column-wise and grouped as below
        for got in read_table_task(
            piece, task.table, columns=columns, errors=errors, stats=stats, chunk_size=chunk_size,
            max_line_bytes=MAX_TEXT_BYTES, held_rows=held_rows,
        ):  # fmt: skip
            yield Piece(*got, whole=False)
        return
    records = read_task(piece, columns=columns, errors=errors, stats=stats, max_line_bytes=MAX_TEXT_BYTES)
    align = columns.align if task.aligned else None
    groups = TableGroups(task.table, align=align, errors=errors, stats=stats, repeated=dict(task.repeated))
    for record in records:
        key = groups.add(record)
        if key is not None and groups.size(key) == chunk_size:
            yield Piece(*groups.take(key), whole=False)
    for key in list(groups.parts):
        if groups.size(key):
            yield Piece(*groups.take(key), whole=False)


def _read_memory(corpus: Corpus, stats: SourceStats, first: str | None) -> Iterator[Piece]:
    """The parts of an in-memory corpus, each whole (``first``'s language part first); what reading them
    found (the corpus's own statistics, which its parts' loads update) is added to ``stats`` at the end."""
    leading = [p for p in corpus if first is not None and p.slice == first and p.slice_kind == "language"]
    for part in leading + [p for p in corpus if p not in leading]:
        texts, ids = part.load()
        yield Piece(part, texts, ids, whole=True)
    stats.add(corpus.stats)
