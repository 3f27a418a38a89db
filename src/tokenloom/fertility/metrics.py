"""Pure fertility metrics: per-text counts, then per-slice aggregates with bootstrap intervals.

Per text, every text of a batch at once (:func:`count_flat`, what reports count with; its definition,
text by text, is :func:`tokenloom.fertility.reference.count_text`, and tests check they agree):

- tokens, byte-fallback tokens, unk tokens, and the histogram of token ids;
- continued words: words that overlap two or more tokens (token-to-word alignment by code-point offsets;
  a token ``[s, e)`` overlaps a word ``[ws, we)`` when ``s < we and e > ws``).

Per slice (pure functions over per-text arrays):

- fertility = Σ tokens / Σ words (Rust et al. 2021, "How Good is Your Tokenizer?", ACL), with a seeded
  percentile bootstrap 95% interval over texts (:func:`bootstrap_ratio`);
- proportion of continued words = Σ continued words / Σ words (Rust et al. 2021);
- characters per token = Σ chars / Σ tokens, bytes per token = Σ bytes / Σ tokens;
- byte-fallback rate = Σ byte-fallback tokens / Σ tokens; unk rate = Σ unk tokens / Σ tokens;
- premium against a pivot on parallel text (Petrov et al. 2023, "Language Model Tokenizers Introduce
  Unfairness Between Languages", NeurIPS): p_i = tokens(text_i in L) / tokens(text_i in pivot), mean and
  median over aligned texts, bootstrap interval of the mean (:func:`premium_stats`); the cost it implies for a
  sequence made of that text at fixed width: relative KV-cache bytes = premium (KV bytes grow linearly with
  length), relative attention score work ≈ premium² (QKᵀ and AV grow with N²);
- Rényi efficiency (Zouhar et al. 2023, "Tokenization and the Noiseless Channel", ACL):
  H_α(p) / log|V| with H_α(p) = log(Σ_i p_i^α) / (1 − α), α = 2.5, p the unigram distribution of token ids
  in the slice and |V| the vocabulary size (:func:`renyi_efficiency`).

The bootstrap is deterministic: resampling indices come from ``numpy.random.default_rng(seed)`` and depend
only on (number of texts, seed, n_boot), so parallel slices of equal size share them (a paired bootstrap).
This module imports numpy only; no tokenizer, no pandas, no torch.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Collection, Iterator
from dataclasses import dataclass

import numpy as np

__all__ = [
    "BatchCounts",
    "bootstrap_ratio",
    "bootstrap_sums",
    "bootstrap_weights",
    "count_flat",
    "percentile_interval",
    "premium_stats",
    "ratio_interval",
    "renyi_efficiency",
]


@dataclass(frozen=True)
class BatchCounts:
    """Per-text count arrays for a batch of texts under one tokenizer (int64, one entry per text)."""

    tokens: np.ndarray
    continued: np.ndarray
    byte_fallback: np.ndarray
    unk: np.ndarray
    id_counts: np.ndarray  # occurrences of each token id in the batch, length >= vocab size
    flat_ids: np.ndarray  # all token ids of the batch, concatenated
    token_text: np.ndarray  # index of the text each entry of flat_ids belongs to


def count_flat(
    tok_len: np.ndarray,
    flat_ids: np.ndarray,
    tok: np.ndarray,
    word_len: np.ndarray,
    words: np.ndarray,
    *,
    vocab_size: int,
    byte_fallback_ids: Collection[int] = frozenset(),
    unk_id: int | None = None,
) -> BatchCounts:
    """Per-text token / continued-word / fallback / unk counts and the id histogram of a batch of n texts.

    ``tok_len`` [n] tokens per text, ``flat_ids`` [T], ``tok`` [T, 2] token spans, ``word_len`` [n] words
    per text and ``words`` [W, 2] word spans, spans in the whole-batch coordinates of
    :mod:`tokenloom.text.flat` (text j starts at ``bases[j]``, one position after the end of text j - 1), so
    one ``searchsorted`` aligns every word with the tokens of its own text: the tokens overlapping
    ``[ws, we)`` are those with ``start < we`` minus those with ``end <= ws`` (``end >= start`` makes the
    second set a subset of the first). Equal to :func:`tokenloom.fertility.reference.count_text` per text.
    """
    n = len(tok_len)
    if int(tok_len.sum()) != flat_ids.size or len(word_len) != n:
        raise ValueError(
            f"tokens per text add up to {int(tok_len.sum())} but there are {flat_ids.size} ids "
            f"({n} texts, {len(word_len)} word counts); pass the lengths of the same batch"
        )
    if tok.shape != (flat_ids.size, 2):
        raise ValueError(
            f"{flat_ids.size} ids but {len(tok)} token spans; pass the spans of the same encoding"
        )
    if int(word_len.sum()) != len(words):
        raise ValueError(
            f"words per text add up to {int(word_len.sum())} but there are {len(words)} word spans"
        )
    tok_text = np.repeat(np.arange(n), tok_len)  # [T] text index of each token
    starts = np.sort(tok[:, 0], kind="stable")  # timsort: linear on the (almost) sorted offsets
    ends = np.sort(tok[:, 1], kind="stable")
    overlap = np.searchsorted(starts, words[:, 1], side="left") - np.searchsorted(
        ends, words[:, 0], side="right"
    )
    word_text = np.repeat(np.arange(n), word_len)  # [W] text index of each word
    continued = np.bincount(word_text, weights=overlap >= 2, minlength=n).astype(np.int64)
    if byte_fallback_ids:
        fb = np.isin(flat_ids, np.fromiter(byte_fallback_ids, dtype=np.int64))
        byte_fallback = np.bincount(tok_text, weights=fb, minlength=n).astype(np.int64)
    else:
        byte_fallback = np.zeros(n, dtype=np.int64)
    if unk_id is not None:
        unk = np.bincount(tok_text, weights=flat_ids == unk_id, minlength=n).astype(np.int64)
    else:
        unk = np.zeros(n, dtype=np.int64)
    id_counts = np.bincount(flat_ids, minlength=vocab_size)
    return BatchCounts(
        tokens=tok_len,
        continued=continued,
        byte_fallback=byte_fallback,
        unk=unk,
        id_counts=id_counts,
        flat_ids=flat_ids,
        token_text=tok_text,
    )


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
    """[n_boot, k] column sums of ``values`` [n, k] over bootstrap resamples of its n rows."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]  # [n] -> [n, 1]
    n, k = values.shape
    out = np.empty((n_boot, k), dtype=np.float64)
    row = 0
    for weights in bootstrap_weights(n, n_boot, seed):  # [rows, n]
        out[row : row + len(weights)] = weights @ values  # [rows, n] @ [n, k] -> [rows, k]
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


def premium_stats(
    tokens: np.ndarray, pivot_tokens: np.ndarray, *, n_boot: int = 1000, seed: int = 0, level: float = 0.95
) -> tuple[float, float, float, float, int]:
    """(mean, median, lo, hi, pairs) of the per-text premium tokens / pivot_tokens (Petrov et al. 2023).

    Pairs whose pivot has no tokens are left out (a premium is undefined there); ``pairs`` counts those
    used. The interval is a percentile bootstrap of the mean. The pivot against itself gives exactly 1.
    """
    tokens = np.asarray(tokens, dtype=np.float64)
    pivot_tokens = np.asarray(pivot_tokens, dtype=np.float64)
    keep = pivot_tokens > 0
    p = tokens[keep] / pivot_tokens[keep]
    if p.size == 0:
        return math.nan, math.nan, math.nan, math.nan, 0
    mean = float(p.mean())
    median = float(np.median(p))
    if n_boot <= 0 or p.size == 1:
        return mean, median, mean, mean, int(p.size)
    sums = bootstrap_sums(p, n_boot=n_boot, seed=seed)  # [n_boot, 1]
    lo, hi = ratio_interval(sums[:, 0], p.size, level=level)
    return mean, median, lo, hi, int(p.size)


def renyi_efficiency(id_counts: np.ndarray, *, vocab_size: int, alpha: float = 2.5) -> float:
    """Rényi efficiency H_α(p) / log|V| of a token-id histogram (Zouhar et al. 2023); NaN when empty.

    α = 1 is Shannon efficiency. A uniform distribution over the whole vocabulary gives 1.
    """
    counts = np.asarray(id_counts, dtype=np.float64)
    total = counts.sum()
    if total == 0 or vocab_size < 2:
        return math.nan
    p = counts[counts > 0] / total
    if alpha == 1.0:
        h = float(-(p * np.log(p)).sum())
    else:
        h = float(np.log(np.power(p, alpha).sum()) / (1.0 - alpha))
    return h / math.log(vocab_size)
