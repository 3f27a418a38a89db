"""A corpus as tasks: pieces that can be read anywhere, in any order, into the parts ``load_corpus`` gives.

:func:`plan_corpus_tasks` labels the files of an input the way :func:`~tokenloom.text.corpus.load_corpus`
does (FLORES-style folders and their alignment, text files, code, tables) without reading the tables, and
cuts the work into :class:`CorpusTask` s of about ``chunk_bytes`` (``tasks.py``):

- a file part (a FLORES-style or text file, a programming language's files) is one task, read whole —
  unless it is an uncompressed text file larger than ``chunk_bytes``, which becomes byte ranges;
- the table files of the input are one table (a slice spread over many shards is one part) cut into
  tasks: a file, a range of Parquet row groups or a byte range of a JSON Lines file. The table is
  *aligned* (its parts share ids across languages) when its first row has an ``id``.

:func:`read_corpus_task` reads one task into :class:`Piece` s: a whole file part, or up to ``chunk_size``
consecutive texts of one part — rows are grouped into parts as in a table read whole
(``table_parts.py``), so the pieces of every task, in plan order, hold exactly the texts and ids of
``load_corpus``'s parts. A task is plain data (it pickles) and its :attr:`CorpusTask.id` is stable across
runs over the same files. What it does not do: count or schedule (``tokenloom.fertility.runner``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tokenloom.text.corpus import MAX_TEXT_BYTES, load_corpus, read_code_part, read_text_part, table_source
from tokenloom.text.formats import read_file_records
from tokenloom.text.parts import CorpusPart, no_texts
from tokenloom.text.records import DEFAULT_COLUMNS, Columns, Errors, SourceStats
from tokenloom.text.table_parts import TableGroups
from tokenloom.text.tasks import CHUNK_BYTES, Task, plan_tasks, read_task

__all__ = ["CorpusTask", "Piece", "plan_corpus_tasks", "read_corpus_task"]


@dataclass(frozen=True)
class CorpusTask:
    """A file part read whole (``part``), a byte range of one (``part`` and ``piece``), or a piece of the
    input's table (``piece``; ``table`` names the table, ``aligned``: its rows carry ids)."""

    id: str  # stable across runs over the same files
    bytes: int  # bytes on disk the task reads (for progress)
    part: CorpusPart | None = None  # labels only (its load is no_texts)
    piece: Task | None = None
    table: str = ""
    aligned: bool = False


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


def _first_has_id(tables: list[Path], columns: Columns) -> bool:
    """Whether the first row of the table (its first readable record) has an ``id``."""
    for path in tables:
        records = read_file_records(path, columns=columns, errors="skip", stats=SourceStats())
        with contextlib.closing(records):  # type: ignore[type-var]  # a generator: stop it reading
            first = next(records, None)
        if first is not None:
            return first.id is not None
    return False


def plan_corpus_tasks(
    inputs: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    errors: Errors = "strict",
    parallel: bool | None = None,
    columns: Columns = DEFAULT_COLUMNS,
    chunk_bytes: int = CHUNK_BYTES,
) -> list[CorpusTask]:
    """The tasks of ``inputs`` (see the module docstring): the table's first, then the file parts in
    ``load_corpus`` order. Bad labels (an empty file, a broken parallel folder) raise as there."""
    corpus = load_corpus(
        inputs, errors=errors, parallel=parallel, read_tables=False,
        text_column=columns.text, lang_column=columns.lang, script_column=columns.script,
    )  # fmt: skip
    tasks: list[CorpusTask] = []
    tables = list(corpus.tables)
    if tables:
        name, aligned = table_source(tables), _first_has_id(tables, columns)
        for t in plan_tasks(tables, chunk_bytes=chunk_bytes):
            size = t.stop - t.start if t.kind == "bytes" else _size([t.path])
            tasks.append(CorpusTask(t.id, size, piece=t, table=name, aligned=aligned))
    for part in corpus:
        labels = replace(part, load=no_texts)
        ranges = plan_tasks(part.paths, chunk_bytes=chunk_bytes) if part.slice_kind != "code" else []
        if len(ranges) > 1:  # a large uncompressed text file
            tasks += [CorpusTask(t.id, t.stop - t.start, part=labels, piece=t) for t in ranges]
        else:
            tasks.append(CorpusTask(f"{part.slice_kind}:{part.slice}", _size(part.paths), part=labels))
    return tasks


def read_corpus_task(
    task: CorpusTask,
    *,
    columns: Columns = DEFAULT_COLUMNS,
    errors: Errors = "strict",
    stats: SourceStats | None = None,
    chunk_size: int = 1024,
) -> Iterator[Piece]:
    """The pieces of one task (see the module docstring), its reading counted in ``stats``."""
    stats = SourceStats() if stats is None else stats
    part, piece = task.part, task.piece
    if part is not None and piece is None:
        reader = read_code_part if part.slice_kind == "code" else None
        texts, ids = (
            reader(part.paths, errors, stats) if reader else read_text_part(part.paths[0], errors, stats)
        )
        yield Piece(part, texts, ids, whole=True)
        return
    assert piece is not None
    records = read_task(piece, columns=columns, errors=errors, stats=stats, max_line_bytes=MAX_TEXT_BYTES)
    if part is not None:  # a byte range of a text file part
        texts, ids = [], []
        for record in records:
            texts.append(record.text)
            ids.append(record.number)
            if len(texts) == chunk_size:
                yield Piece(part, texts, ids, whole=False)
                texts, ids = [], []
        if texts:
            yield Piece(part, texts, ids, whole=False)
        return
    groups = TableGroups(task.table, aligned=task.aligned, errors=errors, stats=stats)
    for record in records:
        key = groups.add(record)
        if key is not None and groups.size(key) == chunk_size:
            yield Piece(*groups.take(key), whole=False)
    for key in list(groups.parts):
        if groups.size(key):
            yield Piece(*groups.take(key), whole=False)
