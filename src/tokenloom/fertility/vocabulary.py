"""Vocabulary use of a slice: the ids it uses as a packed bitset, the ids no other language uses, and the
overlap of every two languages' id sets (Limisiewicz et al. 2023).

An id set is a packed bitset of ``ceil(V / 8)`` bytes (:func:`id_set`), merged across chunks by ``|``;
:func:`unique_ids` and :func:`id_overlaps` take the sets of many slices of one vocabulary at once. This
module imports numpy only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

__all__ = ["id_overlaps", "id_set", "unique_ids"]


def id_set(id_counts: np.ndarray, vocab_size: int) -> np.ndarray:
    """The ids with a count, as a packed bitset of ``ceil(vocab_size / 8)`` uint8 (merge two with ``|``)."""
    used = np.zeros(vocab_size, dtype=bool)
    counts = np.asarray(id_counts)[:vocab_size]
    used[: len(counts)] = counts > 0
    return np.packbits(used)


def unique_ids(sets: Mapping[str, np.ndarray]) -> dict[str, int]:
    """Per key, the ids of its bitset (:func:`id_set`, all of one vocabulary) that no other key's has."""
    keys = list(sets)
    if not keys:
        return {}
    stack = np.stack([sets[k] for k in keys])  # [K, ceil(V / 8)]
    bits = np.unpackbits(stack, axis=1)  # [K, 8 * ceil(V / 8)]
    users = bits.sum(axis=0)  # [8 * ceil(V / 8)] keys using each id
    only = bits.astype(bool) & (users == 1)[None, :]  # [K, ...]
    return {k: int(only[i].sum()) for i, k in enumerate(keys)}


_OVERLAP_IDS = 1 << 16  # ids of the bitsets unpacked at once (float32 counts up to this are exact)


def id_overlaps(sets: Mapping[str, np.ndarray]) -> dict[tuple[str, str], tuple[int, float]]:
    """(shared ids, Jaccard |A ∩ B| / |A ∪ B|, NaN when both are empty) of every two keys' bitsets
    (:func:`id_set`, all of one vocabulary), keys in sorted order, ``a < b``: the shared ids of all pairs
    are one product of the unpacked bitsets, a block of ids at a time."""
    keys = sorted(sets)
    if len(keys) < 2:
        return {}
    stack = np.stack([sets[k] for k in keys])  # [K, ceil(V / 8)]
    shared = np.zeros((len(keys), len(keys)), dtype=np.int64)  # [K, K]
    for lo in range(0, stack.shape[1], _OVERLAP_IDS // 8):
        bits = np.unpackbits(stack[:, lo : lo + _OVERLAP_IDS // 8], axis=1).astype(np.float32)  # [K, ids]
        shared += np.rint(bits @ bits.T).astype(np.int64)  # [K, K]
    size = np.diag(shared).tolist()  # ids of each key
    out = {}
    for i, a in enumerate(keys):
        for j in range(i + 1, len(keys)):
            both = int(shared[i, j])
            union = size[i] + size[j] - both
            out[(a, keys[j])] = (both, both / union if union else math.nan)
    return out
