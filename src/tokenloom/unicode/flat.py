"""The whole-batch coordinates of many texts, and per-text spans laid out in them.

A batch of n texts is laid end to end as ``"\\n".join(texts)``: text j starts at ``bases[j]``
(:func:`text_bases`), one position after the end of text j - 1. Token offsets
(:meth:`tokenloom.text.tokenizer.Tokenizer.encode_flat`) and word spans
(:meth:`tokenloom.unicode.BatchSegmenter.flat_word_spans`) of a batch are ``[S, 2]`` arrays in these
coordinates, so one ``searchsorted`` aligns the words and tokens of every text at once. What this module
does not do: encode, segment or count.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain

import numpy as np

__all__ = ["Span", "flat_spans", "text_bases"]

Span = tuple[int, int]


def text_bases(texts: Sequence[str]) -> np.ndarray:
    """[n] start of each text in ``"\\n".join(texts)``."""
    chars = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))  # [n]
    bases = np.zeros(len(texts), dtype=np.int64)
    if len(texts) > 1:
        bases[1:] = np.cumsum(chars + 1)[:-1]
    return bases


def flat_spans(spans: Sequence[Sequence[Span]], bases: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """([n] spans per text, [S, 2] the spans of text j shifted by ``bases[j]``): per-text ``[start, end)``
    lists in whole-batch coordinates."""
    n = len(spans)
    lengths = np.fromiter(map(len, spans), dtype=np.int64, count=n)  # [n]
    total = int(lengths.sum())
    flat = np.fromiter(chain.from_iterable(chain.from_iterable(spans)), dtype=np.int64, count=2 * total)
    flat = flat.reshape(total, 2)  # [S, 2]
    flat += np.repeat(bases, lengths)[:, None]  # [S, 1] broadcast over (start, end)
    return lengths, flat
