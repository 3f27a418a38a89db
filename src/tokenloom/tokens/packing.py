"""Document-aware packing: rows of ``seq_len`` tokens filled with whole documents (or pieces of long ones).

:func:`pack_rows` plans the rows from the documents' lengths, greedily in order: a document that fits
in the row's space left goes in whole; one longer than ``seq_len`` fills the space left and goes on in
the next rows (pieces); any other starts a new row, the old one padded. :func:`row_arrays` builds a
row's ``segment_ids`` (one id per document piece, ``-1`` on padding, as the encoder's packed batches
take them) and ``positions`` (0, 1, ... restarting at each document and at each piece of a split one: a
piece attends only to itself, so it is a document of its own to the encoder). :func:`plan_rows` gives the
same rows as arrays (:class:`RowPlan`), for reading whole batches (``gather.py``); :func:`pack_rows` and
:func:`row_arrays` are the per-row reference it is tested against. Shapes: ``N`` = ``seq_len``. What it
does not do: read tokens (``gather.py``, ``dataset.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["RowPlan", "Span", "pack_rows", "plan_rows", "row_arrays"]

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
class RowPlan:
    """:func:`pack_rows` as arrays, for one shard's documents. ``R`` rows, ``P`` pieces (by row, in order):

    - ``piece_doc [P]``, ``piece_start [P]`` (first token inside the document), ``piece_len [P]``,
      ``piece_col [P]`` (where the piece starts in its row);
    - ``row_pieces [R + 1]``: row ``r``'s pieces are ``row_pieces[r] : row_pieces[r + 1]``;
    - ``row_used [R]``: tokens in the row (the rest is padding).
    """

    piece_doc: np.ndarray
    piece_start: np.ndarray
    piece_len: np.ndarray
    piece_col: np.ndarray
    row_pieces: np.ndarray
    row_used: np.ndarray

    @property
    def rows(self) -> int:
        return len(self.row_used)


def _padded_starts(lengths: list[int], seq_len: int) -> list[int]:
    """Where each document starts in the stream of rows laid end to end (padding included): a document
    that fits a row but not the space left moves to the next row; any other goes on where the last ended."""
    starts, end = [], 0
    for n in lengths:
        used = end % seq_len
        if used and n <= seq_len and n > seq_len - used:  # pad to the next row
            end += seq_len - used
        starts.append(end)
        end += n
    return starts


def plan_rows(lengths: np.ndarray, seq_len: int) -> RowPlan:
    """The rows :func:`pack_rows` fills, as a :class:`RowPlan`: the one sequential pass is each document's
    start in the padded stream (:func:`_padded_starts`); its pieces (one per row it reaches) are cut from
    those starts with array arithmetic."""
    lengths = np.asarray(lengths, dtype=np.int64)  # [D]
    docs = np.flatnonzero(lengths > 0)  # [D'] documents with tokens
    n = lengths[docs]
    at = np.asarray(_padded_starts(n.tolist(), seq_len), dtype=np.int64)  # [D'] stream starts
    first, last = at // seq_len, (at + n - 1) // seq_len  # [D'] rows a document reaches
    count = last - first + 1  # [D'] pieces per document
    which = np.repeat(np.arange(len(docs)), count)  # [P] the piece's document (among docs)
    k = np.arange(len(which)) - np.repeat(np.cumsum(count) - count, count)  # [P] piece within document
    row = first[which] + k  # [P]
    begin = np.maximum(at[which], row * seq_len)  # [P] stream position of the piece's first token
    end = np.minimum(at[which] + n[which], (row + 1) * seq_len)  # [P]
    rows = int(row[-1]) + 1 if len(row) else 0
    row_pieces = np.searchsorted(row, np.arange(rows + 1))  # [R + 1]
    last_piece = row_pieces[1:] - 1  # [R]
    return RowPlan(
        piece_doc=docs[which],
        piece_start=begin - at[which],
        piece_len=end - begin,
        piece_col=begin - row * seq_len,
        row_pieces=row_pieces,
        row_used=(end[last_piece] - np.arange(rows) * seq_len) if rows else np.zeros(0, np.int64),
    )
