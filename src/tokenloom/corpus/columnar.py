"""A corpus task read a batch of rows at a time: the texts and labels of ``tasks.read_task``, as columns.

:func:`read_task_batches` reads one :class:`~tokenloom.corpus.tasks.Task` into
:class:`~tokenloom.corpus.formats.batches.RowBatch` es (``formats/batches.py``: JSON Lines and Parquet
column-wise, text files line by line without records, anything else through its reader): the same texts,
labels, line or row numbers, rejects and counts as :func:`~tokenloom.corpus.tasks.read_task`, with no
record built per row. :func:`read_table_task` groups a table task's rows into parts exactly as
``plan.read_corpus_task`` groups records (``table_parts.TableGroups``), and :func:`read_part_range` cuts a
byte range of a text file part into pieces of ``chunk_size`` texts. The corpus plan (``plan.py``) reads
its tasks through these; they are not another way to read a corpus. What it does not do: plan tasks.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenloom.corpus.formats.batches import BATCH_ROWS, RowBatch, read_file_batches
from tokenloom.corpus.parts import CorpusPart
from tokenloom.corpus.records import DEFAULT_COLUMNS, Columns, Errors, SourceStats
from tokenloom.corpus.table_parts import TableGroups
from tokenloom.corpus.tasks import Task

__all__ = ["read_part_range", "read_table_task", "read_task_batches"]


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
    ``plan.read_corpus_task`` makes of its records; ``held_rows``: also every part's rows whenever that
    many are held in all (other pieces, the same texts of each part in the same order)."""
    groups = TableGroups(table, align=None, errors=errors, stats=stats)
    for batch in read_task_batches(
        task, columns=columns, errors=errors, stats=stats, max_line_bytes=max_line_bytes
    ):
        cells = (batch.langs, batch.scripts, batch.slices)
        yield from groups.add_columns(batch.texts, cells, batch.numbers, chunk_size, held_rows)
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
