"""Packed rows as arrays: ``row_table`` + ``batch_rows`` against the per-row reference ``row_arrays``."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenloom.tokens.packing import batch_rows, pack_rows, row_arrays, row_table


@settings(max_examples=150, deadline=None)
@given(
    lengths=st.lists(st.integers(0, 40), min_size=1, max_size=30),
    seq_len=st.integers(1, 24),
    picks=st.lists(st.integers(0, 10_000), min_size=1, max_size=12),
)
def test_a_batch_of_planned_rows_equals_each_row_built_alone(
    lengths: list[int], seq_len: int, picks: list[int]
) -> None:
    rows = pack_rows(lengths, seq_len)
    if not rows:
        assert sum(lengths) == 0
        return
    starts = np.concatenate([[0], np.cumsum(lengths)])[:-1].astype(np.int64)  # each document's first token
    table = row_table(rows, starts)
    chosen = np.array([p % len(rows) for p in picks], dtype=np.int64)
    segments, positions, offsets = batch_rows(table, chosen, seq_len)
    for b, r in enumerate(chosen):
        seg, pos = row_arrays(rows[r], seq_len)
        assert np.array_equal(segments[b], seg) and np.array_equal(positions[b], pos)
        want = np.zeros(seq_len, dtype=np.int64)
        at = 0
        for doc, a, z in rows[r]:
            want[at : at + z - a] = starts[doc] + np.arange(a, z)
            at += z - a
        assert np.array_equal(offsets[b], want)
