"""Pure fertility metrics: per-text counts, then per-slice aggregates with bootstrap intervals.

Per text, every text of a batch at once (:func:`count_flat`, what reports count with; its definition,
text by text, is :func:`tokenloom.fertility.reference.count_text`, and tests check they agree):

- tokens, byte-fallback tokens, unk tokens, and the histogram of token ids;
- continued words: words that overlap two or more tokens (token-to-word alignment by code-point offsets;
  a token ``[s, e)`` overlaps a word ``[ws, we)`` when ``s < we and e > ws``);
- single-token words: words that overlap exactly one token (their share is the single-token retention
  rate, STRR, arXiv 2510.09947);
- UTF-8 integrity (the tokenizer-analysis suite's two shares): split characters, those overlapped by two
  or more tokens (a character's bytes spread over several tokens: byte pieces and byte-level tokens carry
  the span of the character their bytes belong to), and partial tokens, those overlapping a split
  character (a token holding part of a character's bytes; tokens partition the bytes, so such a token is
  not whole characters);
- unknown characters: characters overlapped by an unknown token (Petrov et al. 2023 leave a pair out of
  premium comparisons when more than 10% of its characters are unknown);
- numbers (:func:`count_numbers`): digit runs, and the token boundaries inside each run against its
  place-value boundaries (every third digit from the right: ``12|345``).

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
- single-token retention rate = Σ single-token words / Σ words; partial-token rate = Σ partial tokens /
  Σ tokens; split-character rate = Σ split characters / Σ characters; unknown-character rate = Σ unknown
  characters / Σ characters;
- vocabulary use (Limisiewicz et al. 2023): the distinct ids of a slice and their share of the vocabulary
  (from its id histogram), the ids no other language uses and the overlap of two languages' id sets
  (:func:`id_set`, :func:`unique_ids`, :func:`id_overlaps`: packed bitsets of ``ceil(V / 8)`` bytes, merged
  by ``|``);
- normalized sequence length against a reference tokenizer (Dagan et al. 2024) = Σ tokens / Σ reference
  tokens, with the same bootstrap as fertility;
- place-value numbers: the share of numbers whose inner token boundaries are exactly their place-value
  boundaries, the share of numbers of two or more digits split into single digits, and the boundary
  F1 = 2·TP / (placed + expected) over all numbers (1 when no boundary is placed or expected);
- Rényi efficiency (Zouhar et al. 2023, "Tokenization and the Noiseless Channel", ACL):
  H_α(p) / log|V| with H_α(p) = log(Σ_i p_i^α) / (1 − α), α = 2.5, p the unigram distribution of token ids
  in the slice and |V| the vocabulary size (:func:`renyi_efficiency`).

Intervals are seeded percentile bootstraps over texts (:mod:`tokenloom.fertility.bootstrap`), and the id
sets are :mod:`tokenloom.fertility.vocabulary`'s; their functions are also importable from here. This
module imports numpy only; no tokenizer, no pandas, no torch.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Collection
from dataclasses import dataclass

import numpy as np

from tokenloom.fertility.bootstrap import (
    bootstrap_ratio,
    bootstrap_sums,
    bootstrap_weights,
    percentile_interval,
    ratio_interval,
)
from tokenloom.fertility.vocabulary import id_overlaps, id_set, unique_ids

__all__ = [
    "BatchCounts",
    "NumberCounts",
    "bootstrap_ratio",
    "bootstrap_sums",
    "bootstrap_weights",
    "boundary_f1",
    "count_flat",
    "count_numbers",
    "digit_runs",
    "id_overlaps",
    "id_set",
    "percentile_interval",
    "premium_stats",
    "ratio_interval",
    "renyi_efficiency",
    "unique_ids",
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
    single: np.ndarray  # words overlapping exactly one token
    partial: np.ndarray  # tokens overlapping a split character (not whole characters)
    split_chars: np.ndarray  # characters overlapped by two or more tokens
    unk_chars: np.ndarray  # characters overlapped by an unknown token


def _nondecreasing(values: np.ndarray) -> bool:
    return len(values) < 2 or bool(np.all(values[1:] >= values[:-1]))


def _coverage(spans: np.ndarray, size: int) -> np.ndarray:
    """[size] how many of the ``[S, 2]`` spans cover each position (empty spans cover none)."""
    keep = spans[:, 1] > spans[:, 0]
    delta = np.bincount(spans[keep, 0], minlength=size + 1)[: size + 1]
    delta = delta - np.bincount(spans[keep, 1], minlength=size + 1)[: size + 1]
    return np.cumsum(delta)[:size]  # [size]


def _integrity(
    tok: np.ndarray, tok_text: np.ndarray, n: int, unk: np.ndarray, *, in_order: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """[n] partial tokens, [n] split characters and [n] unknown characters per text (module docstring);
    ``unk`` [T] bool marks the unknown tokens; ``in_order``: the starts and the ends of ``tok`` are both in
    order. Positions are whole-batch coordinates. Non-empty spans in order (every engine with monotone
    offsets) take :func:`_integrity_in_order`, linear in the tokens; any other spans
    :func:`_integrity_by_position`, linear in the characters. Both give the same counts (tests compare)."""
    keep = tok[:, 1] > tok[:, 0]  # empty spans cover no character and hold no part of one
    if keep.all():
        if in_order:
            return _integrity_in_order(tok[:, 0], tok[:, 1], tok_text, n, unk)
    else:
        starts, ends = tok[keep, 0], tok[keep, 1]  # in order when all spans are, maybe only then
        if in_order or (_nondecreasing(starts) and _nondecreasing(ends)):
            return _integrity_in_order(starts, ends, tok_text[keep], n, unk[keep])
    return _integrity_by_position(tok, tok_text, n, unk)


def _union_sizes(lo: np.ndarray, hi: np.ndarray, owner: np.ndarray, n: int) -> np.ndarray:
    """[n] per text, the positions in the union of the intervals ``[lo, hi)`` of that text, for non-empty
    intervals whose ``lo`` and ``hi`` are both in order: each adds ``hi - max(lo, previous hi)``."""
    if lo.size == 0:
        return np.zeros(n, dtype=np.int64)
    previous = np.concatenate((lo[:1], hi[:-1]))  # [K] the end of the interval before (none: its own start)
    new = hi - np.maximum(lo, previous)  # [K] >= 0, since hi is in order and hi > lo
    return np.bincount(owner, weights=new, minlength=n).astype(np.int64)


def _integrity_in_order(
    starts: np.ndarray, ends: np.ndarray, owner: np.ndarray, n: int, unk: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_integrity` of non-empty spans with ``starts`` and ``ends`` in order. Two spans overlap only
    where two neighbours do (``i < j`` overlap on ``[s_j, e_i)``, inside ``[s_{i+1}, e_i)``), so the split
    characters are the union of the neighbours' overlaps ``[s_{k+1}, e_k)``, and a token is partial when
    it overlaps its previous or next neighbour."""
    over = starts[1:] < ends[:-1]  # [K - 1] tokens k and k + 1 share characters [s_{k+1}, e_k)
    partial_tok = np.zeros(len(starts), dtype=bool)  # [K]
    partial_tok[:-1] |= over
    partial_tok[1:] |= over
    partial = np.bincount(owner, weights=partial_tok, minlength=n).astype(np.int64)
    split_chars = _union_sizes(starts[1:][over], ends[:-1][over], owner[1:][over], n)
    unk_chars = _union_sizes(starts[unk], ends[unk], owner[unk], n)
    return partial, split_chars, unk_chars


def _integrity_by_position(
    tok: np.ndarray, tok_text: np.ndarray, n: int, unk: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_integrity` of any spans, from the coverage of every position; a text is found for a position
    as the text of the last token starting at or before it (no token covers the separators)."""
    size = int(tok[:, 1].max()) if tok.size else 0
    cover = _coverage(tok, size)  # [L]
    split = cover >= 2  # [L]
    cum = np.concatenate([[0], np.cumsum(split)])  # [L + 1]
    partial_tok = (cum[tok[:, 1]] - cum[tok[:, 0]]) > 0  # [T]
    partial = np.bincount(tok_text, weights=partial_tok, minlength=n).astype(np.int64)
    order = np.argsort(tok[:, 0], kind="stable")
    starts = tok[order, 0]

    def per_text(positions: np.ndarray) -> np.ndarray:
        owner = tok_text[order[np.searchsorted(starts, positions, side="right") - 1]]  # [P]
        return np.bincount(owner, minlength=n).astype(np.int64)

    split_chars = per_text(np.flatnonzero(split))
    if unk.any():
        unk_chars = per_text(np.flatnonzero(_coverage(tok[unk], size) > 0))
    else:
        unk_chars = np.zeros(n, dtype=np.int64)
    return partial, split_chars, unk_chars


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
    :mod:`tokenloom.unicode.flat` (text j starts at ``bases[j]``, one position after the end of text j - 1), so
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
    starts, ends = tok[:, 0], tok[:, 1]  # [T] each
    in_order = _nondecreasing(starts) and _nondecreasing(ends)
    if not in_order:
        starts, ends = np.sort(starts, kind="stable"), np.sort(ends, kind="stable")
    overlap = np.searchsorted(starts, words[:, 1], side="left") - np.searchsorted(
        ends, words[:, 0], side="right"
    )
    word_text = np.repeat(np.arange(n), word_len)  # [W] text index of each word
    continued = np.bincount(word_text, weights=overlap >= 2, minlength=n).astype(np.int64)
    single = np.bincount(word_text, weights=overlap == 1, minlength=n).astype(np.int64)
    if byte_fallback_ids:
        fb = np.isin(flat_ids, np.fromiter(byte_fallback_ids, dtype=np.int64))
        byte_fallback = np.bincount(tok_text, weights=fb, minlength=n).astype(np.int64)
    else:
        byte_fallback = np.zeros(n, dtype=np.int64)
    is_unk = flat_ids == unk_id if unk_id is not None else np.zeros(flat_ids.size, dtype=bool)
    unk = np.bincount(tok_text, weights=is_unk, minlength=n).astype(np.int64)
    partial, split_chars, unk_chars = _integrity(tok, tok_text, n, is_unk, in_order=in_order)
    id_counts = np.bincount(flat_ids, minlength=vocab_size)
    return BatchCounts(
        tokens=tok_len,
        continued=continued,
        byte_fallback=byte_fallback,
        unk=unk,
        id_counts=id_counts,
        flat_ids=flat_ids,
        token_text=tok_text,
        single=single,
        partial=partial,
        split_chars=split_chars,
        unk_chars=unk_chars,
    )


_DIGITS = re.compile(r"\d+")  # a run of Unicode decimal digits (Nd: 0-9, ०-९, ๐-๙, ...)


@functools.lru_cache(maxsize=1)
def _digit_table() -> np.ndarray:
    """[0x110000] bool: the code points :data:`_DIGITS` matches (found by the pattern itself, once)."""
    every = np.arange(0x110000, dtype=np.uint32).tobytes().decode("utf-32-le", "surrogatepass")  # each once
    table = np.zeros(0x110000, dtype=bool)
    for m in _DIGITS.finditer(every):
        table[m.start() : m.end()] = True
    return table


def digit_runs(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """([n] digit runs per text, [R, 2] their spans) in the whole-batch coordinates of
    :mod:`tokenloom.unicode.flat` (``"\\n".join(texts)``; a line feed is no digit, so no run crosses texts):
    the runs ``_DIGITS`` finds, from a table of its code points (a few times faster than the pattern)."""
    joined = "\n".join(texts)
    points = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)  # [L]
    digit = _digit_table()[points].view(np.int8)  # [L] 1 on a digit
    edges = np.flatnonzero(np.diff(digit, prepend=np.int8(0), append=np.int8(0)))  # run starts, ends
    spans = edges.astype(np.int64).reshape(-1, 2)  # [R, 2]
    bases = np.zeros(len(texts), dtype=np.int64)
    if len(texts) > 1:
        bases[1:] = np.cumsum(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)) + 1)[:-1]
    text_of = np.searchsorted(bases, spans[:, 0], side="right") - 1  # [R]
    return np.bincount(text_of, minlength=len(texts)).astype(np.int64), spans


@dataclass(frozen=True)
class NumberCounts:
    """Per-text counts of the digit runs of a batch (int64, one entry per text)."""

    numbers: np.ndarray  # digit runs
    place_value: np.ndarray  # runs whose inner token boundaries are exactly their place-value boundaries
    multi_digit: np.ndarray  # runs of two or more digits
    single_digits: np.ndarray  # runs of two or more digits split into one token per digit
    placed: np.ndarray  # inner token boundaries, over all runs
    expected: np.ndarray  # place-value boundaries, over all runs: (digits - 1) // 3 per run
    hits: np.ndarray  # inner token boundaries that are place-value boundaries


def _sorted_distinct(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)``; without a sort when ``values`` are already in order (token starts of every
    engine that gives monotone offsets are)."""
    if not _nondecreasing(values):
        values = np.sort(values)
    return values[np.concatenate(([True], values[1:] != values[:-1]))] if len(values) else values


def count_numbers(tok: np.ndarray, run_len: np.ndarray, runs: np.ndarray) -> NumberCounts:
    """:class:`NumberCounts` of a batch: ``tok`` [T, 2] token spans, ``run_len`` [n] digit runs per text
    and ``runs`` [R, 2] their spans (:func:`digit_runs`), all in whole-batch coordinates. A run ``[a, b)``
    has an inner token boundary at ``p`` (``a < p < b``) when a non-empty token starts there; ``p`` is a
    place-value boundary when ``b - p`` is a multiple of 3."""
    n = len(run_len)
    bounds = _sorted_distinct(tok[tok[:, 1] > tok[:, 0], 0])  # starts of non-empty tokens
    lo = np.searchsorted(bounds, runs[:, 0], side="right")  # [R] first boundary > a
    hi = np.searchsorted(bounds, runs[:, 1], side="left")  # [R] first boundary >= b
    placed = hi - lo  # [R]
    which = np.repeat(np.arange(len(runs)), placed)  # [P] run of each inner boundary
    first = np.repeat(np.cumsum(placed) - placed, placed)  # [P] where each run's boundaries begin
    pos = bounds[np.repeat(lo, placed) + np.arange(int(placed.sum())) - first]  # [P] the boundaries
    hit = np.bincount(which, weights=(runs[which, 1] - pos) % 3 == 0, minlength=len(runs)).astype(np.int64)
    digits = runs[:, 1] - runs[:, 0]  # [R]
    expected = (digits - 1) // 3
    text_of = np.repeat(np.arange(n), run_len)  # [R] text of each run

    def per_text(values: np.ndarray) -> np.ndarray:
        return np.bincount(text_of, weights=values, minlength=n).astype(np.int64)

    return NumberCounts(
        numbers=run_len.astype(np.int64),
        place_value=per_text((hit == placed) & (placed == expected)),
        multi_digit=per_text(digits >= 2),
        single_digits=per_text((digits >= 2) & (placed == digits - 1)),
        placed=per_text(placed),
        expected=per_text(expected),
        hits=per_text(hit),
    )


def boundary_f1(hits: int, placed: int, expected: int) -> float:
    """Place-value boundary F1 = 2·hits / (placed + expected); 1 when none is placed or expected."""
    return 1.0 if placed + expected == 0 else 2.0 * hits / (placed + expected)


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
