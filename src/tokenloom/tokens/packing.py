"""Document-aware packing: rows of ``seq_len`` tokens filled with whole documents (or pieces of long ones).

:func:`pack_rows` plans the rows from the documents' lengths, greedily in order: a document that fits
in the row's space left goes in whole; one longer than ``seq_len`` fills the space left and goes on in
the next rows (pieces); any other starts a new row, the old one padded. :func:`row_arrays` builds a
row's ``segment_ids`` (one id per document piece, ``-1`` on padding, as the encoder's packed batches
take them) and ``positions`` (0, 1, ... restarting at each document and at each piece of a split one: a
piece attends only to itself, so it is a document of its own to the encoder). Shapes: ``N`` = ``seq_len``.

The fast path: :func:`row_table` holds the planned rows as flat arrays (one entry per piece), and
:func:`batch_rows` builds a whole batch's ``segment_ids``, ``positions`` and token offsets with array
operations, no Python per token or per piece; :func:`row_arrays` is the per-row reference it is tested
against. What it does not do: read tokens (``dataset.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["RowTable", "Span", "batch_rows", "pack_rows", "row_arrays", "row_table"]

Span = tuple[int, int, int]  # (document, first token, end token) inside the document


def pack_rows(lengths: Sequence[int], seq_len: int) -> list[list[Span]]:
    """The rows' spans for documents of ``lengths`` (see the module docstring)."""
    rows: list[list[Span]] = []
    row: list[Span] = []
    free = seq_len
    for doc, n in enumerate(lengths):
        if n <= 0:
            continue
        if n > free and n <= seq_len and row:  # fits a fresh row: do not cut it
            rows.append(row)
            row, free = [], seq_len
        start = 0
        while start < n:
            take = min(free, n - start)
            row.append((doc, start, start + take))
            start += take
            free -= take
            if free == 0:
                rows.append(row)
                row, free = [], seq_len
    if row:
        rows.append(row)
    return rows


def row_arrays(row: Sequence[Span], seq_len: int) -> tuple[np.ndarray, np.ndarray]:
    """``segment_ids [N]`` (int64, -1 = padding) and ``positions [N]`` (int64, 0 on padding) of one row."""
    segments = np.full(seq_len, -1, dtype=np.int64)  # [N]
    positions = np.zeros(seq_len, dtype=np.int64)  # [N]
    at = 0
    for k, (_, start, stop) in enumerate(row):
        segments[at : at + stop - start] = k
        positions[at : at + stop - start] = np.arange(stop - start)
        at += stop - start
    return segments, positions


@dataclass(frozen=True)
class RowTable:
    """Planned rows as flat arrays, one entry per piece (a document or a piece of one), rows in order."""

    row_ptr: np.ndarray  # [R + 1] int64: row r's pieces are row_ptr[r]:row_ptr[r + 1]
    source: np.ndarray  # [P] int64: the piece's first token, an offset into its shard's tokens
    column: np.ndarray  # [P] int64: where the piece starts in its row
    length: np.ndarray  # [P] int64: tokens in the piece


def row_table(rows: Sequence[Sequence[Span]], doc_starts: np.ndarray) -> RowTable:
    """:class:`RowTable` of :func:`pack_rows`'s ``rows``; ``doc_starts [D]``: each document's first token."""
    counts = np.fromiter((len(row) for row in rows), dtype=np.int64, count=len(rows))
    spans = np.array([span for row in rows for span in row], dtype=np.int64).reshape(-1, 3)  # [P, 3]
    length = spans[:, 2] - spans[:, 1]  # [P]
    row_ptr = np.concatenate([[0], np.cumsum(counts)])  # [R + 1]
    ends = np.cumsum(length)  # [P]: piece ends, counted over all rows
    first = np.repeat(row_ptr[:-1], counts)  # [P]: each piece's row's first piece
    column = ends - length - (ends - length)[first]  # [P]
    return RowTable(row_ptr, doc_starts[spans[:, 0]] + spans[:, 1], column, length)


def batch_rows(table: RowTable, rows: np.ndarray, seq_len: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``segment_ids [B, N]``, ``positions [B, N]`` (as :func:`row_arrays`) and ``offsets [B, N]`` (each
    token's offset in its shard; 0 on padding) of the planned ``rows [B]``."""
    first, stop = table.row_ptr[rows], table.row_ptr[rows + 1]  # [B]
    counts = stop - first  # [B]
    piece = np.repeat(first - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())  # [P_batch]
    row_of = np.repeat(np.arange(len(rows)), counts)  # [P_batch]
    cols = np.arange(seq_len)  # [N]
    starts = np.zeros((len(rows), seq_len), dtype=bool)  # [B, N]: a piece begins here
    starts[row_of, table.column[piece]] = True
    segments = np.cumsum(starts, axis=1) - 1  # [B, N]
    positions = cols - np.maximum.accumulate(np.where(starts, cols, 0), axis=1)  # [B, N]
    used = (table.column[stop - 1] + table.length[stop - 1])[:, None]  # [B, 1]: the row's tokens
    padding = cols >= used  # [B, N]
    offsets = table.source[np.minimum(first[:, None] + segments, stop[:, None] - 1)] + positions  # [B, N]
    segments[padding], positions[padding], offsets[padding] = -1, 0, 0
    return segments, positions, offsets
