"""Seeded percentile bootstrap intervals over texts: resampling weights, resampled sums, ratio intervals.

A slice's interval resamples its texts with replacement ``n_boot`` times: row ``r`` of the weights counts
how often each text was drawn in resample ``r``, so the resampled sums of any per-text column are one matrix
product, and a ratio's interval is the percentile interval of the resampled ratios (resamples whose
denominator is 0 left out). The draws are deterministic: they come from ``numpy.random.default_rng([seed,
n])`` and depend only on (number of texts, seed, n_boot), so parallel slices of equal size share them (a
paired bootstrap), and they do not depend on how they are chunked. The metrics that take intervals are in
:mod:`tokenloom.fertility.metrics` (which re-exports these functions). Imports numpy only.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator

import numpy as np

__all__ = [
    "bootstrap_ratio",
    "bootstrap_sums",
    "bootstrap_weights",
    "percentile_interval",
    "ratio_interval",
]

_CACHED = 1 << 22  # resample x item entries up to which the weights are drawn at once and cached (32 MB)
_CHUNK = 1 << 20  # resample x item entries drawn at once beyond that (~8 MB per array, ~25 MB in all)


def _draw_weights(rng: np.random.Generator, rows: int, n: int) -> np.ndarray:
    idx = rng.integers(0, n, size=(rows, n), dtype=np.int64)  # [rows, n] resampled item indices
    idx += np.arange(rows, dtype=np.int64)[:, None] * n  # [rows, n] flat positions in a [rows, n] table
    return np.bincount(idx.ravel(), minlength=rows * n).reshape(rows, n).astype(np.float64)  # [rows, n]


@functools.lru_cache(maxsize=8)
def _cached_weights(n: int, n_boot: int, seed: int) -> np.ndarray:
    weights = _draw_weights(np.random.default_rng([seed, n]), n_boot, n)
    weights.flags.writeable = False
    return weights


def bootstrap_weights(n: int, n_boot: int, seed: int) -> Iterator[np.ndarray]:
    """Bootstrap resamples as multiplicity weights, [rows, n] per chunk, n_boot rows in all.

    Row r counts how often each of the n items was drawn (with replacement) in resample r, so the resampled
    sums of a column x are ``weights @ x``. Deterministic in (n, n_boot, seed); cached for small n, where
    many slices of the same size (parallel languages) share them: a paired bootstrap. The draws are one
    stream, so the weights do not depend on how they are chunked.
    """
    if n * n_boot <= _CACHED:
        yield _cached_weights(n, n_boot, seed)
        return
    rng = np.random.default_rng([seed, n])
    rows = max(1, _CHUNK // n)
    for start in range(0, n_boot, rows):
        yield _draw_weights(rng, min(rows, n_boot - start), n)


def bootstrap_sums(values: np.ndarray, *, n_boot: int = 1000, seed: int = 0) -> np.ndarray:
    """[n_boot, k] column sums of ``values`` [n, k] over bootstrap resamples of its n rows. A column of
    zeros resamples to zeros, so only the other columns are multiplied (a report's reference-token column
    without a reference tokenizer, its premium columns on texts aligned with no pivot)."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]  # [n] -> [n, 1]
    n, k = values.shape
    live = np.flatnonzero(values.any(axis=0))  # [k'] the columns that are not all zero
    cols = slice(None) if live.size == k else live
    dense = values[:, cols]  # [n, k']
    out = np.zeros((n_boot, k), dtype=np.float64)
    row = 0
    for weights in bootstrap_weights(n, n_boot, seed):  # [rows, n]
        out[row : row + len(weights), cols] = weights @ dense  # [rows, n] @ [n, k'] -> [rows, k']
        row += len(weights)
    return out


def _percentiles(values: np.ndarray, level: float) -> tuple[float, float]:
    values = values[np.isfinite(values)]
    if values.size == 0:
        return math.nan, math.nan
    tail = (1.0 - level) / 2.0 * 100.0
    lo, hi = np.percentile(values, [tail, 100.0 - tail])
    return float(lo), float(hi)


def percentile_interval(samples: np.ndarray, *, level: float = 0.95) -> tuple[float, float]:
    """(lo, hi) percentile interval of bootstrap ``samples`` at ``level``; non-finite samples are left out."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return _percentiles(np.asarray(samples, dtype=np.float64), level)


def ratio_interval(
    num_sums: np.ndarray, den_sums: np.ndarray | float, *, level: float = 0.95
) -> tuple[float, float]:
    """(lo, hi) percentile interval of the resampled ratios ``num_sums / den_sums`` ([n_boot] each, or a
    constant denominator); resamples whose denominator is 0 are left out. The interval step of
    :func:`bootstrap_ratio`, :func:`premium_stats` and the report's stratified intervals."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return _percentiles(np.asarray(num_sums, dtype=np.float64) / den_sums, level)


def bootstrap_ratio(
    num: np.ndarray, den: np.ndarray, *, n_boot: int = 1000, seed: int = 0, level: float = 0.95
) -> tuple[float, float, float]:
    """(Σnum / Σden, lo, hi): a ratio of sums and its percentile bootstrap interval over items.

    Resamples of Σden = 0 are left out; NaN everywhere when Σden = 0.
    """
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    total = den.sum()
    if num.size == 0 or total == 0:
        return math.nan, math.nan, math.nan
    point = float(num.sum() / total)
    if n_boot <= 0 or num.size == 1:
        return point, point, point
    sums = bootstrap_sums(np.stack([num, den], axis=1), n_boot=n_boot, seed=seed)  # [n_boot, 2]
    lo, hi = ratio_interval(sums[:, 0], sums[:, 1], level=level)
    return point, lo, hi
