"""Token lengths per document: a frozen, mergeable length distribution with a stated percentile error.

:class:`LengthCounts` holds, for one tokenizer × slice: documents, tokens, bytes, characters, the longest
document, a fixed histogram of tokens per document, and, for each context length ``C``, the exact number of
documents longer than ``C`` and of tokens beyond ``C`` (what truncation to ``C`` would drop). Every field
is a sum or a max, so two halves counted anywhere merge into exactly the result of one pass.

The histogram's bins are fixed integer ranges ``[lo, hi)``, each with the largest ``hi`` such that
``hi − 1 < lo·γ`` (``[0, 1)`` for zero), ``γ = (1 + α) / (1 − α) = 101/99`` (``α = ALPHA = 1%``), in
integer arithmetic: lengths below 50 get a bin each (exact), above that a bin spans less than a factor γ.
:data:`NBINS` (1,220) bins cover lengths below :data:`MAX_LENGTH` (2**40). A percentile is the lower
nearest-rank one (the ``k = ⌈q·n/100⌉``-th smallest length, ``k ≥ 1``; numpy's ``method="inverted_cdf"``),
answered by its bin's value ``2·lo·b / (lo + b)`` (``b = hi − 1``) capped at the exact maximum: its
relative error against the exact percentile is below α (``(b − lo) / (b + lo) < α``).

This module only counts; reading corpora and encoding texts happen elsewhere.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from tokenloom.errors import ConfigError, ConfigTypeError

__all__ = [
    "ALPHA",
    "DEFAULT_CONTEXTS",
    "EDGES",
    "MAX_LENGTH",
    "NBINS",
    "QUANTILES",
    "TOTAL_COLUMNS",
    "LengthCounts",
    "distribution_columns",
    "empty",
    "from_lengths",
    "length_columns",
    "validate_contexts",
]

DEFAULT_CONTEXTS: tuple[int, ...] = (2048, 4096, 8192, 32768)
ALPHA = 0.01  # the stated relative error of every percentile: γ = (1 + α) / (1 − α) = 101 / 99
MAX_LENGTH = 2**40  # the longest document length counted (tokens), exclusive
QUANTILES = (50, 90, 99)  # the percentiles a row reports
TOTAL_COLUMNS = ("docs", "tokens", "bytes", "chars")  # the totals that open a row


def _edges() -> np.ndarray:
    edges = [0]
    while edges[-1] < MAX_LENGTH:
        lo = edges[-1]
        edges.append(max(lo, (101 * lo - 1) // 99) + 1)  # hi − 1 < lo·γ: [lo, hi) spans less than a factor γ
    return np.asarray(edges, dtype=np.int64)


EDGES: np.ndarray = _edges()  # bin i holds the lengths in [EDGES[i], EDGES[i + 1]); EDGES[-1] ≥ MAX_LENGTH
NBINS = len(EDGES) - 1
_LO, _LAST = EDGES[:-1].astype(np.float64), EDGES[1:].astype(np.float64) - 1  # (NBINS,) each bin's ends
_VALUE = np.divide(2 * _LO * _LAST, _LO + _LAST, out=np.zeros(NBINS), where=_LAST > 0)  # bin [0, 0] answers 0
EDGES.flags.writeable = False


def validate_contexts(contexts: Sequence[int]) -> tuple[int, ...]:
    """``contexts`` as a tuple, checked: positive ints in strictly increasing order."""
    if isinstance(contexts, int | np.integer | str):
        raise ConfigTypeError(f"contexts={contexts!r}: give a sequence of token counts, e.g. (4096,)")
    values = tuple(contexts)
    for c in values:
        if isinstance(c, bool) or not isinstance(c, int | np.integer):
            raise ConfigTypeError(
                f"contexts={contexts!r}: {c!r} is not an int; give lengths in tokens, e.g. 4096"
            )
        if c <= 0:
            raise ConfigError(
                f"contexts={contexts!r}: {c} is not positive; give lengths in tokens, e.g. 4096"
            )
    if any(a >= b for a, b in itertools.pairwise(values)):
        raise ConfigError(
            f"contexts={contexts!r}: not sorted and unique; give e.g. {tuple(sorted(set(values)))}"
        )
    return tuple(int(c) for c in values)


def distribution_columns(contexts: Sequence[int] = DEFAULT_CONTEXTS) -> tuple[str, ...]:
    """The names of a row's distribution columns for ``contexts``: tokens per document (mean, percentiles,
    max), then per context the share of documents longer and of tokens beyond it."""
    per_doc = ["mean", *(f"p{q}" for q in QUANTILES), "max"]
    shares = [f"share_{what}_over_{c}" for c in validate_contexts(contexts) for what in ("docs", "tokens")]
    return (*(f"tokens_per_doc_{s}" for s in per_doc), *shares)


def length_columns(contexts: Sequence[int] = DEFAULT_CONTEXTS) -> tuple[str, ...]:
    """The column names of :meth:`LengthCounts.row`, in order, for ``contexts``: :data:`TOTAL_COLUMNS`,
    then :func:`distribution_columns`."""
    return (*TOTAL_COLUMNS, *distribution_columns(contexts))


@dataclass(frozen=True, eq=False)
class LengthCounts:
    """Tokens per document of one slice; build with :func:`from_lengths` or :func:`empty`, combine with
    :meth:`merge`. ``bins[i]`` counts the documents whose length lies in ``[EDGES[i], EDGES[i + 1])``;
    ``docs_over[j]`` / ``tokens_over[j]``: documents longer than ``contexts[j]`` and their tokens beyond it."""

    contexts: tuple[int, ...]
    documents: int
    tokens: int
    bytes: int
    chars: int
    max: int  # the longest document's tokens (0 when there are none)
    bins: np.ndarray  # (NBINS,) int64, read-only: documents per histogram bin
    docs_over: tuple[int, ...]  # (len(contexts),)
    tokens_over: tuple[int, ...]  # (len(contexts),)

    def __post_init__(self) -> None:
        if validate_contexts(self.contexts) != self.contexts:
            raise ConfigError(f"contexts={self.contexts!r}: give a tuple of ints, e.g. {DEFAULT_CONTEXTS}")
        assert self.bins.shape == (NBINS,) and self.bins.dtype == np.int64
        assert len(self.docs_over) == len(self.tokens_over) == len(self.contexts)
        assert int(self.bins.sum()) == self.documents
        self.bins.flags.writeable = False

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LengthCounts):
            return NotImplemented
        scalars = ("contexts", "documents", "tokens", "bytes", "chars", "max", "docs_over", "tokens_over")
        same = all(getattr(self, f) == getattr(other, f) for f in scalars)
        return same and bool(np.array_equal(self.bins, other.bins))

    __hash__ = None  # type: ignore[assignment]  # holds an array: equal by value, not hashable

    def merge(self, other: LengthCounts) -> LengthCounts:
        """The counts of both inputs together: exact, associative and commutative."""
        if other.contexts != self.contexts:
            raise ConfigError(
                f"cannot merge length counts over contexts {self.contexts} and {other.contexts}; "
                "count every part with the same contexts="
            )
        return LengthCounts(
            contexts=self.contexts,
            documents=self.documents + other.documents,
            tokens=self.tokens + other.tokens,
            bytes=self.bytes + other.bytes,
            chars=self.chars + other.chars,
            max=max(self.max, other.max),
            bins=self.bins + other.bins,
            docs_over=tuple(a + b for a, b in zip(self.docs_over, other.docs_over, strict=True)),
            tokens_over=tuple(a + b for a, b in zip(self.tokens_over, other.tokens_over, strict=True)),
        )

    def mean(self) -> float:
        """Tokens per document (NaN without documents)."""
        return self.tokens / self.documents if self.documents else math.nan

    def percentile(self, q: float) -> float:
        """The lower nearest-rank ``q``-th percentile of tokens per document (``0 ≤ q ≤ 100``), within a
        relative error of :data:`ALPHA` (NaN without documents)."""
        if not 0 <= q <= 100:
            raise ConfigError(f"q={q!r}: a percentile lies in [0, 100], e.g. 99")
        if not self.documents:
            return math.nan
        rank = max(1, math.ceil(Fraction(q) * self.documents / 100))  # exact: no float rounding of q·n
        cumulative = np.cumsum(self.bins)
        i = int(np.searchsorted(cumulative, rank))  # the first bin holding `rank` documents
        return float(min(_VALUE[i], self.max))  # capping at the max only moves toward the exact value

    def share_docs_over(self, context: int) -> float:
        """Exact share of documents longer than ``context`` (one of :attr:`contexts`)."""
        return self.docs_over[self._index(context)] / self.documents if self.documents else math.nan

    def share_tokens_over(self, context: int) -> float:
        """Exact share of tokens beyond ``context`` in their document: what truncation to it would drop."""
        return self.tokens_over[self._index(context)] / self.tokens if self.tokens else math.nan

    def _index(self, context: int) -> int:
        if context not in self.contexts:
            raise ConfigError(f"context={context!r} was not counted; count with contexts= including it")
        return self.contexts.index(context)

    def histogram(self, bins_per_decade: int = 10) -> tuple[np.ndarray, np.ndarray]:
        """``(edges, counts)`` on about ``bins_per_decade`` log-spaced bins per factor 10: ``counts[i]``
        documents have a length in ``[edges[i], edges[i + 1])``. The first bin is ``[0, 1)``; the edges are
        histogram edges (each the first at or above ``10**(k / bins_per_decade)``), so the counts are exact;
        the last edge lies above :attr:`max`."""
        if isinstance(bins_per_decade, bool) or not isinstance(bins_per_decade, int) or bins_per_decade < 1:
            raise ConfigError(f"bins_per_decade={bins_per_decade!r}: give a positive int, e.g. 10")
        top = int(np.searchsorted(EDGES, self.max, side="right"))  # EDGES[top] > max
        steps = math.ceil(math.log10(max(int(EDGES[top]), 1)) * bins_per_decade) + 1
        targets = np.ceil(10.0 ** (np.arange(steps) / bins_per_decade))  # (steps,) ≥ 1
        at = np.unique(np.searchsorted(EDGES, targets))  # histogram edges at or above each target
        at = np.concatenate([[0], at[at < top], [top]])  # (m + 1,) indices into EDGES, increasing
        cumulative = np.concatenate([[0], np.cumsum(self.bins)])  # (NBINS + 1,)
        return EDGES[at].copy(), np.diff(cumulative[at])

    def row(self) -> dict[str, float | int]:
        """One flat row under :func:`length_columns`' names: totals, tokens per document, context shares."""
        values: list[float | int] = [self.documents, self.tokens, self.bytes, self.chars, self.mean()]
        values += [self.percentile(q) for q in QUANTILES] + [self.max]
        for c in self.contexts:
            values += [self.share_docs_over(c), self.share_tokens_over(c)]
        return dict(zip(length_columns(self.contexts), values, strict=True))


def empty(contexts: Sequence[int] = DEFAULT_CONTEXTS) -> LengthCounts:
    """The counts of no documents: the identity of :meth:`LengthCounts.merge`."""
    cs = validate_contexts(contexts)
    zeros = (0,) * len(cs)
    return LengthCounts(cs, 0, 0, 0, 0, 0, np.zeros(NBINS, dtype=np.int64), zeros, zeros)


def _counts(name: str, values: np.ndarray | Sequence[int], limit: int | None = None) -> np.ndarray:
    array = np.asarray(values)
    if array.ndim != 1 or not (np.issubdtype(array.dtype, np.integer) or array.size == 0):
        raise ConfigTypeError(f"{name}: got {array.dtype} of shape {array.shape}; give a 1-D integer array")
    if array.size and int(array.min()) < 0:
        raise ConfigError(f"{name}: {int(array.min())} is negative; give counts per document (≥ 0)")
    if limit is not None and array.size and int(array.max()) >= limit:
        raise ConfigError(f"{name}: {int(array.max())} tokens in one document, at or above {limit}; split it")
    return array.astype(np.int64)


def from_lengths(
    lengths: np.ndarray | Sequence[int],
    nbytes: np.ndarray | Sequence[int],
    nchars: np.ndarray | Sequence[int],
    *,
    contexts: Sequence[int] = DEFAULT_CONTEXTS,
) -> LengthCounts:
    """The counts of one chunk of documents: ``lengths[i]`` tokens, ``nbytes[i]`` UTF-8 bytes and
    ``nchars[i]`` characters of document ``i`` (1-D integer arrays of one size)."""
    cs = validate_contexts(contexts)
    n = _counts("lengths", lengths, MAX_LENGTH)
    b, c = _counts("nbytes", nbytes), _counts("nchars", nchars)
    if not n.shape == b.shape == c.shape:
        raise ConfigError(
            f"lengths, nbytes, nchars: sizes {n.size}, {b.size}, {c.size}; give one per document"
        )
    index = np.searchsorted(EDGES, n, side="right") - 1  # (docs,) the bin of each length
    bins = np.bincount(index, minlength=NBINS).astype(np.int64)  # (NBINS,)
    over = [n[n > ctx] - ctx for ctx in cs]  # per context: (docs longer,) tokens beyond it
    return LengthCounts(
        contexts=cs,
        documents=int(n.size),
        tokens=int(n.sum()),
        bytes=int(b.sum()),
        chars=int(c.sum()),
        max=int(n.max()) if n.size else 0,
        bins=bins,
        docs_over=tuple(int(o.size) for o in over),
        tokens_over=tuple(int(o.sum()) for o in over),
    )
