"""Per-slice accumulation: what a report keeps of the texts of one slice under one tokenizer.

- :class:`ChunkCounts` — per-text counts of one chunk of a corpus part under one tokenizer (what
  :mod:`tokenloom.fertility.counting` measures); dropped once folded into the slices the chunk belongs to.
- :class:`SliceCounts` — a plain frozen dataclass of sums, a token-id histogram (``None`` when the chunks
  counted no token ids, as with ``metrics="lengths"``), a histogram of per-text
  premiums (for the exact median), the tokens per document
  (:class:`~tokenloom.fertility.lengths.LengthCounts`: percentiles and context shares), and, per corpus
  part not finished yet, the few per-text values the bootstrap needs (tokens, words, premium, aligned). Every method is pure and returns a new value:
  :meth:`SliceCounts.of` counts some texts, :meth:`SliceCounts.merge` combines two counts — any two
  partitions of a corpus counted anywhere merge into the one-pass result —, :func:`close_part` resamples
  a finished part (bootstrap over its texts, stratified by part) and folds its per-text values into sums,
  :meth:`SliceCounts.finish` gives the slice's counted report columns (what a premium costs — the
  ``rel_*`` columns — is added after counting, by :func:`tokenloom.costs.languages.premium_cost_columns`).

Memory: a slice holds per-text values only for the parts still open (one language file while it is
being counted), never for the whole corpus. Intervals: percentile bootstrap over texts **stratified by
part** — the resampled sums of each part (:func:`tokenloom.fertility.bootstrap.bootstrap_sums`, seeded, so
they depend only on the part's size) are added over the parts of a slice, and the interval is
:func:`tokenloom.fertility.bootstrap.ratio_interval` of them, the step
:func:`~tokenloom.fertility.bootstrap.bootstrap_ratio` and :func:`~tokenloom.fertility.metrics.premium_stats`
take on a single sample.
What it does not do: tokenize, segment, decide slices, or know about tokenizers beyond a vocabulary size.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from tokenloom.fertility import bootstrap, metrics
from tokenloom.fertility.lengths import DEFAULT_CONTEXTS, LengthCounts, distribution_columns, from_lengths

__all__ = ["MORE_SUMS", "ChunkCounts", "SliceCounts", "close_part", "more_columns"]

# per-text counts beyond the original ones, one column each of ChunkCounts.more (see metrics): words kept
# as one token, partial tokens, split and unknown characters, the place-value counts of digit runs, and
# the reference tokenizer's tokens
MORE_SUMS: tuple[str, ...] = (
    "single", "partial", "split_chars", "unk_chars", "numbers", "place_value", "multi_digit",
    "single_digits", "placed", "expected", "hits", "ref_tokens",
)  # fmt: skip
_REF = MORE_SUMS.index("ref_tokens")

_EMPTY_F = np.zeros(0, dtype=np.float64)
_EMPTY_I = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class ChunkCounts:
    """Per-text counts of ``n`` consecutive texts of one part under one tokenizer (int64 unless noted)."""

    start: int  # position in its part of the first text
    tokens: np.ndarray  # [n]
    words: np.ndarray  # [n]
    chars: np.ndarray  # [n] code points
    bytes: np.ndarray  # [n] UTF-8 bytes
    continued: np.ndarray  # [n] words overlapping two or more tokens
    byte_fallback: np.ndarray  # [n]
    unk: np.ndarray  # [n]
    roundtrip: np.ndarray  # [n] bool: decode(encode(text)) == text (all False when not decoded)
    norm_changed: np.ndarray  # [n] bool: normalize(text) != text
    premium: np.ndarray  # [n] float64 tokens / pivot tokens, 0 where not aligned
    aligned: np.ndarray  # [n] bool: the text has a pivot text with tokens
    flat_ids: np.ndarray  # [T] token ids, texts one after another
    token_text: np.ndarray  # [T] index (within the chunk) of the text each token belongs to
    id_counts: np.ndarray | None  # [>= V] histogram of flat_ids; None: token ids not counted
    more: np.ndarray | None = None  # [n, len(MORE_SUMS)] int64; None: not counted (all zero)

    def __len__(self) -> int:
        return len(self.tokens)


@dataclass(frozen=True)
class _Open:
    """Per-text values of some texts of a part not closed yet (waiting for the part's bootstrap)."""

    index: np.ndarray  # [m] position of each text in its part
    tokens: np.ndarray  # [m]
    words: np.ndarray  # [m]
    premium: np.ndarray  # [m] float64
    aligned: np.ndarray  # [m] bool
    ref_tokens: np.ndarray  # [m] tokens of the reference tokenizer (0 without one)


def _merge_hist(
    a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """Sum two (sorted distinct values, counts) histograms."""
    if not len(b[0]):
        return a
    if not len(a[0]):
        return b
    values, inverse = np.unique(np.concatenate([a[0], b[0]]), return_inverse=True)
    return values, np.bincount(inverse, weights=np.concatenate([a[1], b[1]])).astype(np.int64)


def _hist_median(values: np.ndarray, counts: np.ndarray) -> float:
    """``np.median`` of the multiset ``values`` repeated ``counts`` times (NaN when empty)."""
    total = int(counts.sum())
    if total == 0:
        return math.nan
    cum = np.cumsum(counts)
    lo, hi = (values[np.searchsorted(cum, k, side="right")] for k in ((total - 1) // 2, total // 2))
    return float(lo) if total % 2 else float(np.mean([lo, hi]))


def _add_arrays(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    if a is None or b is None:
        return b if a is None else a
    if len(a) < len(b):
        a, b = b, a
    out = a.copy()
    out[: len(b)] += b
    return out


def _merge_lengths(a: LengthCounts | None, b: LengthCounts | None) -> LengthCounts | None:
    if a is None or b is None:
        return b if a is None else a
    return a.merge(b)


def _label(counts: Mapping[str, int]) -> str:
    keys = [k for k, v in counts.items() if v > 0]
    return keys[0] if len(keys) == 1 else "mul" if keys else ""


@dataclass(frozen=True)
class SliceCounts:
    """Counts of the texts of one slice under one tokenizer (see the module docstring)."""

    texts: int = 0
    tokens: int = 0
    words: int = 0
    chars: int = 0
    bytes: int = 0
    continued: int = 0
    byte_fallback: int = 0
    unk: int = 0
    roundtrip_ok: int = 0
    norm_changed: int = 0
    pairs: int = 0  # texts aligned with a pivot text
    premium_sum: float = 0.0  # Σ premium over aligned texts of closed parts, summed part by part
    premium_values: np.ndarray = field(default_factory=lambda: _EMPTY_F)  # sorted distinct premiums
    premium_counts: np.ndarray = field(default_factory=lambda: _EMPTY_I)  # texts with each premium
    id_counts: np.ndarray | None = None  # token-id histogram; None: token ids not counted
    boot: np.ndarray | None = (
        None  # [n_boot, 5] resampled Σtokens, Σwords, Σpremium, Σaligned, Σreference tokens of closed parts
    )
    open: Mapping[str, tuple[_Open, ...]] = field(default_factory=dict)  # part -> per-text values
    langs: Counter[str] = field(default_factory=Counter)  # language -> texts
    scripts: Counter[str] = field(default_factory=Counter)  # script -> texts
    generated: bool = False
    lengths: LengthCounts | None = None  # tokens per document; None: no texts counted
    more: np.ndarray = field(default_factory=lambda: np.zeros(len(MORE_SUMS), dtype=np.int64))  # MORE_SUMS

    @classmethod
    def of(
        cls,
        counts: ChunkCounts,
        rows: Sequence[int] | None,
        *,
        part: str,
        vocab_size: int,
        langs: Mapping[str, int],
        scripts: Mapping[str, int],
        generated: bool = False,
        contexts: Sequence[int] = DEFAULT_CONTEXTS,
        keep_open: bool = True,
    ) -> SliceCounts:
        """Counts of the texts ``rows`` of a chunk (``None``: all of them) of part ``part``; ``contexts``:
        the context lengths of the length counts; ``keep_open=False``: keep no per-text values (nothing to
        resample and no premiums, as with ``metrics="lengths"``: the part needs no closing)."""
        mask = np.zeros(len(counts), dtype=bool)
        mask[rows if rows is not None else slice(None)] = True
        sel = counts.aligned & mask
        id_counts: np.ndarray | None
        if rows is None or counts.id_counts is None:  # None: no histogram to keep or to add
            id_counts = counts.id_counts
        else:
            id_counts = np.bincount(counts.flat_ids[mask[counts.token_text]], minlength=vocab_size)
        more = counts.more[mask] if counts.more is not None else None  # [m, len(MORE_SUMS)]
        pending = _Open(
            index=counts.start + np.flatnonzero(mask),
            tokens=counts.tokens[mask],
            words=counts.words[mask],
            premium=counts.premium[mask],
            aligned=sel[mask],
            ref_tokens=more[:, _REF] if more is not None else np.zeros(int(mask.sum()), dtype=np.int64),
        )
        return cls(
            texts=int(mask.sum()),
            tokens=int(counts.tokens[mask].sum()),
            words=int(counts.words[mask].sum()),
            chars=int(counts.chars[mask].sum()),
            bytes=int(counts.bytes[mask].sum()),
            continued=int(counts.continued[mask].sum()),
            byte_fallback=int(counts.byte_fallback[mask].sum()),
            unk=int(counts.unk[mask].sum()),
            roundtrip_ok=int(counts.roundtrip[mask].sum()),
            norm_changed=int(counts.norm_changed[mask].sum()),
            pairs=int(sel.sum()),
            id_counts=id_counts,
            open={part: (pending,)} if keep_open else {},
            langs=Counter(langs),
            scripts=Counter(scripts),
            generated=generated,
            lengths=from_lengths(
                counts.tokens[mask], counts.bytes[mask], counts.chars[mask], contexts=contexts
            ),
            more=more.sum(axis=0) if more is not None else np.zeros(len(MORE_SUMS), dtype=np.int64),
        )

    def merge(self, other: SliceCounts) -> SliceCounts:
        """The counts of both: sums add, histograms add, open parts' per-text values are pooled."""
        opened = dict(self.open)
        for part, chunks in other.open.items():
            opened[part] = opened.get(part, ()) + chunks
        values, counts = _merge_hist(
            (self.premium_values, self.premium_counts), (other.premium_values, other.premium_counts)
        )
        return SliceCounts(
            **{name: getattr(self, name) + getattr(other, name) for name in _SUMS},
            premium_sum=self.premium_sum + other.premium_sum,
            premium_values=values,
            premium_counts=counts,
            id_counts=_add_arrays(self.id_counts, other.id_counts),
            boot=_add_arrays(self.boot, other.boot),
            open=opened,
            langs=self.langs + other.langs,
            scripts=self.scripts + other.scripts,
            generated=self.generated or other.generated,
            lengths=_merge_lengths(self.lengths, other.lengths),
            more=self.more + other.more,
        )

    def moved(self, offsets: Mapping[str, int]) -> SliceCounts:
        """These counts with the positions of open parts' texts shifted by ``offsets[part]``: the counts of
        a later piece of a part whose earlier pieces held ``offsets[part]`` texts."""
        if not any(offsets.get(p) for p in self.open):
            return self
        shifted = {
            p: tuple(replace(c, index=c.index + offsets.get(p, 0)) for c in chunks)
            for p, chunks in self.open.items()
        }
        return replace(self, open=shifted)

    def close(self, part: str, size: int, *, n_boot: int, seed: int) -> SliceCounts:
        """:func:`close_part` of this slice alone."""
        return close_part([self], part, size, n_boot=n_boot, seed=seed)[0]

    def finish(
        self, *, vocab_size: int, level: float, renyi_alpha: float, roundtrip: bool, reference: bool = False
    ) -> dict[str, Any]:
        """The slice's report columns (every part must be closed); the length columns
        (:func:`~tokenloom.fertility.lengths.distribution_columns`) when texts were counted, and the
        :func:`more_columns` (``reference``: a reference tokenizer was counted)."""
        if self.open:
            raise ValueError(f"parts {sorted(self.open)} are still open; close_part() them before finish()")
        f_lo = f_hi = p_lo = p_hi = math.nan
        if self.boot is not None:
            if self.words:
                f_lo, f_hi = bootstrap.ratio_interval(self.boot[:, 0], self.boot[:, 1], level=level)
            if self.pairs:
                p_lo, p_hi = bootstrap.ratio_interval(self.boot[:, 2], self.boot[:, 3], level=level)
        counts = self.id_counts if self.id_counts is not None else np.zeros(1)
        pmean = self.premium_sum / self.pairs if self.pairs else math.nan
        return {
            "lang": _label(self.langs),
            "script": _label(self.scripts),
            "texts": self.texts,
            "tokens": self.tokens,
            "words": self.words,
            "chars": self.chars,
            "bytes": self.bytes,
            "fertility": self.tokens / self.words if self.words else math.nan,
            "fertility_lo": f_lo,
            "fertility_hi": f_hi,
            "continued_words": self.continued / self.words if self.words else math.nan,
            "chars_per_token": self.chars / self.tokens if self.tokens else math.nan,
            "bytes_per_token": self.bytes / self.tokens if self.tokens else math.nan,
            "byte_fallback_rate": self.byte_fallback / self.tokens if self.tokens else math.nan,
            "unk_rate": self.unk / self.tokens if self.tokens else math.nan,
            "roundtrip_exact_rate": self.roundtrip_ok / self.texts if roundtrip and self.texts else math.nan,
            "normalization_changed_rate": self.norm_changed / self.texts if self.texts else math.nan,
            "premium_mean": pmean,
            "premium_median": _hist_median(self.premium_values, self.premium_counts),
            "premium_lo": p_lo,
            "premium_hi": p_hi,
            "renyi_efficiency": metrics.renyi_efficiency(counts, vocab_size=vocab_size, alpha=renyi_alpha),
            "premium_pairs": self.pairs,
            "generated": self.generated,
            **self.length_columns(),
            **more_columns(self, vocab_size=vocab_size, level=level, reference=reference),
        }

    def finish_lengths(self) -> dict[str, Any]:
        """The columns ``metrics="lengths"`` counts: labels, totals and :meth:`length_columns`."""
        totals = {name: getattr(self, name) for name in ("texts", "tokens", "chars", "bytes")}
        labels = {"lang": _label(self.langs), "script": _label(self.scripts)}
        return {**labels, **totals, "generated": self.generated, **self.length_columns()}

    def length_columns(self) -> dict[str, Any]:
        """The distribution columns of the tokens per document (``{}`` when no texts were counted); the
        totals are the ``texts``, ``tokens``, ``chars`` and ``bytes`` columns."""
        if self.lengths is None:
            return {}
        row = self.lengths.row()
        return {name: row[name] for name in distribution_columns(self.lengths.contexts)}


_SUMS = (
    "texts", "tokens", "words", "chars", "bytes", "continued", "byte_fallback", "unk", "roundtrip_ok",
    "norm_changed", "pairs",
)  # fmt: skip


def _ratio(num: float, den: float) -> float:
    return num / den if den else math.nan


def more_columns(s: SliceCounts, *, vocab_size: int, level: float, reference: bool) -> dict[str, Any]:
    """Retention, integrity, unknown characters, vocabulary use, numbers and the normalized sequence
    length (``reference``: against a reference tokenizer, NaN otherwise) of a finished slice."""
    m = dict(zip(MORE_SUMS, s.more.tolist(), strict=True))
    distinct = int(np.count_nonzero(s.id_counts[:vocab_size])) if s.id_counts is not None else 0
    nsl = nsl_lo = nsl_hi = math.nan
    if reference and m["ref_tokens"]:
        nsl = s.tokens / m["ref_tokens"]
        if s.boot is not None:
            nsl_lo, nsl_hi = bootstrap.ratio_interval(s.boot[:, 0], s.boot[:, 4], level=level)
    numbers = m["numbers"]
    return {
        "strr": _ratio(m["single"], s.words),
        "partial_token_rate": _ratio(m["partial"], s.tokens),
        "split_char_rate": _ratio(m["split_chars"], s.chars),
        "unk_char_rate": _ratio(m["unk_chars"], s.chars),
        "distinct_ids": distinct,
        "vocab_share": _ratio(distinct, vocab_size),
        "nsl": nsl,
        "nsl_lo": nsl_lo,
        "nsl_hi": nsl_hi,
        "numbers": numbers,
        "number_place_value_rate": _ratio(m["place_value"], numbers),
        "number_single_digit_rate": _ratio(m["single_digits"], m["multi_digit"]),
        "number_boundary_f1": (
            metrics.boundary_f1(m["hits"], m["placed"], m["expected"]) if numbers else math.nan
        ),
    }


def _dense(chunks: tuple[_Open, ...], size: int) -> tuple[np.ndarray, np.ndarray]:
    """[size, 5] float64 tokens, words, premium, aligned, reference tokens of a part's texts (0 for texts
    not in the slice), and the premiums of the aligned texts in part order."""
    index = np.concatenate([c.index for c in chunks])
    if index.size and (index.max() >= size or len(np.unique(index)) != index.size):
        raise ValueError(f"a part of {size} texts was counted with positions up to {index.max()} or twice")
    values = np.zeros((size, 5), dtype=np.float64)  # [size, 5]
    for col, name in enumerate(("tokens", "words", "premium", "aligned", "ref_tokens")):
        values[index, col] = np.concatenate([getattr(c, name) for c in chunks])
    aligned = values[:, 3] > 0
    return values, values[aligned, 2]


def close_part(
    slices: Sequence[SliceCounts], part: str, size: int, *, n_boot: int, seed: int
) -> list[SliceCounts]:
    """Close ``part`` (``size`` texts in all) in each of ``slices``: one seeded bootstrap over the part's
    texts for all of them at once (texts not in a slice count as zeros, so the part's composition stays
    fixed), added to each slice's resampled sums; the part's per-text premiums are folded into the sum and
    the histogram. Slices without texts of ``part`` are returned unchanged. ``n_boot = 0``: no resampling."""
    dense = [_dense(s.open[part], size) if part in s.open else None for s in slices]
    columns = [d[0] for d in dense if d is not None]
    sums = None
    if n_boot > 0 and columns:
        values = np.concatenate(columns, axis=1)  # [size, 5 * slices with texts in the part]
        sums = bootstrap.bootstrap_sums(values, n_boot=n_boot, seed=seed)  # [n_boot, 5 * ...]
    out: list[SliceCounts] = []
    col = 0
    for s, d in zip(slices, dense, strict=True):
        if d is None:
            out.append(s)
            continue
        premiums = d[1]
        uniq, counts = np.unique(premiums, return_counts=True)
        values, hist = _merge_hist((s.premium_values, s.premium_counts), (uniq, counts))
        block = None if sums is None else sums[:, col : col + 5]  # [n_boot, 5]
        col += 5
        out.append(
            replace(
                s,
                premium_sum=s.premium_sum + float(premiums.sum()),
                premium_values=values,
                premium_counts=hist,
                boot=_add_arrays(s.boot, None if block is None else block.copy()),
                open={p: c for p, c in s.open.items() if p != part},
            )
        )
    return out
