"""Does an intrinsic metric predict the model? Spearman rank correlation with a cluster bootstrap interval.

``spearman(x, y)`` is Pearson's correlation of the average ranks of ``x`` and ``y`` (ties share the mean
of the ranks they span; Spearman 1904, as ``scipy.stats.spearmanr``); NaN when either side is constant.
``rank_correlation`` adds a percentile bootstrap interval. Points are resampled by *group* (a language:
its points, one per tokenizer, are drawn together, since the languages, not the points, are the
independent units), and resamples in which a side is constant are left out. numpy only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Correlation", "average_ranks", "rank_correlation", "spearman"]


@dataclass(frozen=True)
class Correlation:
    """Spearman's rho between one metric and bits per byte, with its bootstrap interval."""

    metric: str  # the intrinsic metric (a column of the comparison table)
    rho: float  # Spearman's rank correlation over every point
    lo: float  # lower end of the percentile bootstrap interval
    hi: float  # upper end
    points: int  # (tokenizer, language) points with both values
    groups: int  # independent units resampled (languages)


def average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1..n of ``values``, ties given the mean of the ranks they span ([3, 1, 3] -> [2.5, 1, 2.5])."""
    values = np.asarray(values, dtype=np.float64)
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(len(values), dtype=np.float64)
    sorted_values = values[order]
    start = 0
    while start < len(values):
        end = start + 1
        while end < len(values) and sorted_values[end] == sorted_values[start]:
            end += 1
        ranks[order[start:end]] = (start + end + 1) / 2  # mean of ranks start+1 .. end
        start = end
    return ranks


def spearman(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """Spearman's rank correlation of ``x`` and ``y`` (equal lengths); NaN when a side is constant."""
    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(
            f"spearman needs two 1-D sequences of one length, got shapes {a.shape} and {b.shape}"
        )
    if len(a) < 2:
        return math.nan
    ra, rb = average_ranks(a) - (len(a) + 1) / 2, average_ranks(b) - (len(b) + 1) / 2  # centred ranks
    denom = math.sqrt(float(ra @ ra) * float(rb @ rb))
    return float(ra @ rb) / denom if denom > 0 else math.nan


def rank_correlation(
    metric: str,
    x: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    groups: Sequence[str] | None = None,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> Correlation:
    """Spearman's rho of ``x`` and ``y`` over the points where both are finite, and a percentile bootstrap
    interval resampling ``groups`` (each point its own group when None) with replacement."""
    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    labels = np.asarray(list(groups) if groups is not None else range(len(a)), dtype=object)
    if not len(a) == len(b) == len(labels):
        raise ValueError(
            f"x, y and groups need one entry per point, got {len(a)}, {len(b)} and {len(labels)}"
        )
    keep = np.isfinite(a) & np.isfinite(b)
    a, b, labels = a[keep], b[keep], labels[keep]
    rho = spearman(a, b)
    units = list(dict.fromkeys(labels.tolist()))
    members = [np.flatnonzero(labels == u) for u in units]
    draws = []
    rng = np.random.default_rng(seed)
    for _ in range(n_boot if len(units) > 1 and math.isfinite(rho) else 0):
        idx = np.concatenate([members[i] for i in rng.integers(0, len(units), size=len(units))])
        value = spearman(a[idx], b[idx])
        if math.isfinite(value):
            draws.append(value)
    if draws:
        lo, hi = np.percentile(draws, [100 * (1 - level) / 2, 100 * (1 + level) / 2])
    else:
        lo = hi = rho
    return Correlation(metric, rho, float(lo), float(hi), len(a), len(units))
