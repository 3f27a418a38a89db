"""A corpus task read: its parts' texts, a batch of rows at a time, with no record built per row.

:func:`read_corpus_task` reads one :class:`~tokenloom.corpus.plan.CorpusTask` into :class:`Piece` s: a
whole file part, or up to ``chunk_size`` consecutive texts of one part — rows are grouped into parts as in
a table read whole (``parts.TableGroups``), so the pieces of every task, in plan order, hold exactly the
texts and ids of ``load_corpus``'s parts. It reads through the functions below:

:func:`read_task_batches` reads one :class:`~tokenloom.corpus.tasks.Task` into
:class:`~tokenloom.corpus.formats.batches.RowBatch` es (``formats/batches.py``: JSON Lines and Parquet
column-wise, text files line by line without records, anything else through its reader): the same texts,
labels, line or row numbers, rejects and counts as :func:`~tokenloom.corpus.tasks.read_task`, with no
record built per row. :func:`read_table_task` groups a table task's rows into parts exactly as
an aligned table's records are grouped (``parts.TableGroups``), and :func:`read_part_range` cuts a
byte range of a text file part into pieces of ``chunk_size`` texts. What it does not do: plan tasks
(``plan.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tokenloom.corpus.formats.batches import BATCH_ROWS, RowBatch, ramped, read_file_batches
from tokenloom.corpus.parts import Corpus, CorpusPart, TableGroups
from tokenloom.corpus.plan import CorpusTask
from tokenloom.corpus.records import DEFAULT_COLUMNS, Columns, Errors, SourceStats, reject
from tokenloom.corpus.tasks import MAX_TEXT_BYTES, Task, read_code_part, read_task, read_text_part

__all__ = ["Piece", "read_corpus_task", "read_part_range", "read_table_task", "read_task_batches"]


def read_task_batches(
    task: Task,
    *,
    columns: Columns = DEFAULT_COLUMNS,
    errors: Errors = "strict",
    stats: SourceStats | None = None,
    max_line_bytes: int | None = None,
    batch_rows: int = BATCH_ROWS,
) -> Iterator[RowBatch]:
    """The rows of one task in batches (``batch_rows`` lines at most; a Parquet row group each): what
    :func:`~tokenloom.corpus.tasks.read_task` gives, as columns."""
    stats = SourceStats() if stats is None else stats
    byte_range = (task.start, task.stop, task.first_line) if task.kind == "bytes" else None
    row_groups = range(task.start, task.stop) if task.kind == "row_groups" else None
    yield from read_file_batches(
        task.path, columns=columns, errors=errors, stats=stats, max_line_bytes=max_line_bytes,
        byte_range=byte_range, row_groups=row_groups, batch_rows=batch_rows,
    )  # fmt: skip


def read_table_task(
    task: Task,
    table: str,
    *,
    columns: Columns,
    errors: Errors,
    stats: SourceStats,
    chunk_size: int,
    max_line_bytes: int | None = None,
    held_rows: int | None = None,
) -> Iterator[tuple[CorpusPart, list[str], list[Any]]]:
    """(part, texts, row numbers) of a task of table ``table`` that is not aligned: each part's rows handed
    over when it holds ``chunk_size`` of them, then every part's rest in first-seen order — the pieces
    :func:`read_corpus_task` makes of its records; ``held_rows``: also every part's rows whenever that
    many are held in all (other pieces, the same texts of each part in the same order), the first
    handovers after fewer rows (:func:`~tokenloom.corpus.formats.batches.ramped`)."""
    groups = TableGroups(table, align=None, errors=errors, stats=stats)
    handed = 0
    for batch in read_task_batches(
        task, columns=columns, errors=errors, stats=stats, max_line_bytes=max_line_bytes
    ):
        cells = (batch.langs, batch.scripts, batch.slices)
        held = None if held_rows is None else ramped(held_rows, handed)
        pieces = list(groups.add_columns(batch.texts, cells, batch.numbers, chunk_size, held))
        handed += bool(pieces)  # batches that handed rows over
        yield from pieces
    for key in list(groups.parts):
        if groups.size(key):
            yield groups.take(key)


def read_part_range(
    task: Task,
    *,
    columns: Columns,
    errors: Errors,
    stats: SourceStats,
    chunk_size: int,
    max_line_bytes: int | None = None,
) -> Iterator[tuple[list[str], list[int]]]:
    """(texts, line numbers) of a byte range of a text file part, ``chunk_size`` texts at a time."""
    texts: list[str] = []
    numbers: list[int] = []
    batches = read_task_batches(
        task, columns=columns, errors=errors, stats=stats, max_line_bytes=max_line_bytes
    )
    for batch in batches:
        texts += batch.texts
        numbers += batch.numbers
        while len(texts) >= chunk_size:
            yield texts[:chunk_size], numbers[:chunk_size]
            texts, numbers = texts[chunk_size:], numbers[chunk_size:]
    if texts:
        yield texts, numbers


@dataclass(frozen=True)
class Piece:
    """Texts of one part read by a task: all of them (``whole``), or consecutive ones of a part whose
    texts are spread over several tasks."""

    part: CorpusPart
    texts: list[str]
    ids: list[Any]
    whole: bool


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
