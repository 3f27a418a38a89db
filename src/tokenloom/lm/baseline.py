"""The order-0 byte baseline: what a model that knows only byte frequencies pays per byte.

``byte_entropy(texts)`` is the Shannon entropy ``H = -Σ_b p(b) log2 p(b)`` of the UTF-8 byte distribution of
``texts`` (bits per byte): the cost of the best order-0 byte model *fitted on that very text*, so a
language model whose bits per byte on held-out text are below it has learned more than byte frequencies.
``byte_cross_entropy(texts, fit)`` is the honest held-out version: the bytes of ``texts`` coded with the
frequencies of ``fit``, add-``alpha`` smoothed over all 256 byte values. Counting only; no model, no torch.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable

__all__ = ["byte_counts", "byte_cross_entropy", "byte_entropy"]


def byte_counts(texts: Iterable[str]) -> Counter[int]:
    """How often each byte value 0..255 occurs in the UTF-8 encoding of ``texts``."""
    counts: Counter[int] = Counter()
    for text in texts:
        counts.update(text.encode("utf-8"))
    return counts


def byte_entropy(texts: Iterable[str]) -> float:
    """Entropy in bits per byte of the byte distribution of ``texts`` (0 for a single repeated byte).

    Raises ``ValueError`` when the texts hold no bytes.
    """
    counts = byte_counts(texts)
    total = sum(counts.values())
    if total == 0:
        raise ValueError("byte_entropy needs at least one byte of text; got only empty texts")
    return -sum(c / total * math.log2(c / total) for c in counts.values())


def byte_cross_entropy(texts: Iterable[str], fit: Iterable[str], *, alpha: float = 1.0) -> float:
    """Bits per byte of ``texts`` under the byte frequencies of ``fit``, add-``alpha`` smoothed:
    ``p(b) = (count_fit(b) + alpha) / (N_fit + 256·alpha)``; ``alpha > 0`` keeps unseen bytes finite."""
    if not alpha > 0:
        raise ValueError(f"alpha must be positive (add-alpha smoothing over 256 byte values), got {alpha!r}")
    model = byte_counts(fit)
    norm = sum(model.values()) + 256 * alpha
    counts = byte_counts(texts)
    total = sum(counts.values())
    if total == 0:
        raise ValueError("byte_cross_entropy needs at least one byte of text to score; got only empty texts")
    bits = -sum(c * math.log2((model.get(b, 0) + alpha) / norm) for b, c in counts.items())
    return bits / total
