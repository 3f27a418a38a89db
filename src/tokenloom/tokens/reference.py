"""The plain reading of a :class:`~tokenloom.tokens.dataset.TokenShardDataset`: one sample at a time.

Samples planned as Python lists (:func:`~tokenloom.tokens.packing.pack_rows`), each read by slicing the
memory map and stacked into batches one by one. It is the oracle the dataset's batched reading
(``gather.py``) is tested against, sample for sample and state for state; it is too slow to train from.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from tokenloom.tokens.packing import Span, pack_rows, row_arrays

if TYPE_CHECKING:
    from tokenloom.tokens.dataset import TokenShardDataset

__all__ = ["reference_batches", "reference_plan", "reference_sample"]


def reference_plan(ds: TokenShardDataset) -> list[Any]:
    """Windows: (shard, first token) per sample; rows: (shard, spans) per sample."""
    if ds.packing == "windows":
        w = ds.seq_len + 1
        return [(s, k * w) for s, t in enumerate(ds._tokens) for k in range(len(t) // w)]
    rows: list[Any] = []
    for s, starts in enumerate(ds._starts):
        keep = np.arange(len(starts) - 1)
        if ds.language is not None:
            keep = keep[ds._docs[s]["lang"] == ds.language]
        lengths = (starts[1:] - starts[:-1])[keep]
        rows += [
            (s, [(int(keep[d]), a, b) for d, a, b in row]) for row in pack_rows(lengths.tolist(), ds.seq_len)
        ]
    return rows


def reference_sample(ds: TokenShardDataset, plan: list[Any], i: int) -> dict[str, np.ndarray]:
    """Sample ``i`` of ``plan`` (:func:`reference_plan`), sliced from the memory map."""
    shard, where = plan[i]
    tokens = ds._tokens[shard]
    if ds.packing == "windows":
        return {"input_ids": np.asarray(tokens[where : where + ds.seq_len + 1], dtype=np.int64)}
    spans: list[Span] = where
    ids = np.zeros(ds.seq_len, dtype=np.int64)  # [N]
    at, starts = 0, ds._starts[shard]
    for doc, a, b in spans:
        ids[at : at + b - a] = tokens[starts[doc] + a : starts[doc] + b]
        at += b - a
    segments, positions = row_arrays(spans, ds.seq_len)
    return {"input_ids": ids, "segment_ids": segments, "positions": positions}


def _samples(ds: TokenShardDataset, plan: list[Any]) -> Iterator[dict[str, np.ndarray]]:
    mine = ds.order(ds.epoch)
    while ds.position < len(mine):
        i = int(mine[ds.position])
        ds.position += 1
        yield reference_sample(ds, plan, i)
    ds.epoch, ds.position = ds.epoch + 1, 0


def reference_batches(ds: TokenShardDataset, batch_size: int) -> Iterator[dict[str, np.ndarray]]:
    """What :meth:`TokenShardDataset.batches` yields, sample by sample; moves ``ds``'s state the same way."""
    plan = reference_plan(ds)
    batch: list[dict[str, np.ndarray]] = []
    for sample in _samples(ds, plan):
        batch.append(sample)
        if len(batch) == batch_size:
            yield {k: np.stack([b[k] for b in batch]) for k in batch[0]}
            batch = []
    if batch:
        yield {k: np.stack([b[k] for b in batch]) for k in batch[0]}
