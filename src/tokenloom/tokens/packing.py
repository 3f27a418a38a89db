"""Document-aware packing: rows of ``seq_len`` tokens filled with whole documents (or pieces of long ones).

:func:`pack_rows` plans the rows from the documents' lengths, greedily in order: a document that fits
in the row's space left goes in whole; one longer than ``seq_len`` fills the space left and goes on in
the next rows (pieces); any other starts a new row, the old one padded. :func:`row_arrays` builds a
row's ``segment_ids`` (one id per document piece, ``-1`` on padding, as the encoder's packed batches
take them) and ``positions`` (0, 1, ... restarting at each document and at each piece of a split one: a
piece attends only to itself, so it is a document of its own to the encoder). Shapes: ``N`` = ``seq_len``. What it does not do: read tokens
(``dataset.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["Span", "pack_rows", "row_arrays"]

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
