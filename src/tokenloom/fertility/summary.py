"""A one-screen summary of a fertility report: how unequal each tokenizer is across languages.

Per tokenizer, over the report's language slices (the pivot itself excluded, its premium is 1 by
definition): the median and the worst premium, the share of languages above 1.5× and 2× the pivot, the Gini
coefficient of the premiums (Gini 1912; 0 = every language pays the same), and the five most expensive
languages and scripts; and the tokens per document of the ``all`` slice
(:func:`tokenloom.fertility.length_tables.headline`, the only line of a ``metrics="lengths"`` report).
Language slices flagged invalid (``valid`` False: more than ``ReportConfig.max_unk_chars`` of their
characters are unknown, Petrov et al. 2023) are left out of the premium statistics unless
``include_invalid``, and the summary says how many; the headline also gives the median single-token
retention rate (STRR) over languages and the vocabulary use of the ``all`` slice (distinct ids and their
share of the vocabulary).
:func:`format_summary` is what
``tokenloom fertility`` prints; the HTML page shows the same numbers.

What it does not do: compute premiums (``report``), write files (``writers``) or draw (``plots``).
Pure Python over the DataFrame's rows; pandas is only used through the DataFrame it is given.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tokenloom._tables import plural, set_aside
from tokenloom.corpus.records import Reject, is_left_out
from tokenloom.fertility.length_tables import headline

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["TokenizerSummary", "format_summary", "gini", "gini_reference", "summarize"]

TOP = 5  # how many of the most expensive languages and scripts a summary names


@dataclass(frozen=True)
class TokenizerSummary:
    """The language-level inequality of one tokenizer in a report (premiums against ``pivot``)."""

    tokenizer: str
    pivot: str
    languages: int  # language slices with a premium, the pivot excluded
    median_premium: float
    worst_premium: float
    worst_language: str
    share_above_1_5: float  # share of those languages whose premium is > 1.5
    share_above_2: float  # ... > 2
    gini: float  # Gini coefficient of the premiums
    median_fertility: float  # tokens per word, over all language slices
    expensive_languages: tuple[tuple[str, float], ...]  # the TOP highest premiums, highest first
    expensive_scripts: tuple[tuple[str, float], ...]  # script slices by premium, highest first
    left_out: tuple[str, ...] = ()  # invalid language slices left out of the premium statistics
    median_strr: float = math.nan  # single-token retention rate, median over language slices
    distinct_ids: float = math.nan  # distinct token ids of the all slice
    vocab_share: float = math.nan  # their share of the vocabulary


def gini(values: Sequence[float]) -> float:
    """Gini coefficient ``Σ_i Σ_j |x_i − x_j| / (2 n² μ)`` of non-negative values, in O(n log n).

    With the values sorted ascending, ``Σ_i Σ_j |x_i − x_j| = 2 Σ_i (2i − n + 1) x_i`` (0-based ``i``).
    NaN for no values or a zero mean. :func:`gini_reference` is the pairwise definition.
    """
    xs = sorted(float(v) for v in values)
    n, total = len(xs), sum(xs)
    if n == 0 or total == 0:
        return math.nan
    if xs[0] < 0:
        raise ValueError(f"gini needs non-negative values, got {xs[0]}")
    weighted = sum((2 * i - n + 1) * x for i, x in enumerate(xs))
    return weighted / (n * total)


def gini_reference(values: Sequence[float]) -> float:
    """The definition, pairwise in O(n²): mean absolute difference over twice the mean."""
    xs = [float(v) for v in values]
    n = len(xs)
    if n == 0 or sum(xs) == 0:
        return math.nan
    # 2·n²·mean written as 2·n·total: a mean of subnormal values can underflow to zero, their total cannot
    return sum(abs(a - b) for a in xs for b in xs) / (2 * n * sum(xs))


def _median(xs: Sequence[float]) -> float:
    s = sorted(xs)
    if not s:
        return math.nan
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def _finite(x: object) -> bool:
    return isinstance(x, int | float) and math.isfinite(float(x))


def _invalid(rows: pd.DataFrame) -> list[str]:
    if "valid" not in rows:
        return []
    return sorted(str(s) for s, v in zip(rows["slice"], rows["valid"], strict=True) if v == 0)


def _one(df: pd.DataFrame, name: str, pivot: str, *, include_invalid: bool = False) -> TokenizerSummary:
    rows = df[df["tokenizer"] == name]
    langs = rows[rows["slice_kind"] == "language"]
    left_out = [] if include_invalid else [s for s in _invalid(langs) if s != pivot]
    fert = [float(v) for v in langs["fertility"] if _finite(v)]
    prem = [
        (str(s), float(p)) for s, p in zip(langs["slice"], langs["premium_mean"], strict=True) if _finite(p)
    ]
    prem = [(s, p) for s, p in prem if s != pivot and s not in left_out]
    prem.sort(key=lambda sp: (-sp[1], sp[0]))
    values = [p for _, p in prem]
    scripts = rows[rows["slice_kind"] == "script"]
    by_script = [
        (str(s), float(p))
        for s, p in zip(scripts["slice"], scripts["premium_mean"], strict=True)
        if _finite(p)
    ]
    by_script.sort(key=lambda sp: (-sp[1], sp[0]))
    n = len(values)
    everything = rows[rows["slice_kind"] == "all"]
    vocab = {c: float(everything[c].iloc[0]) if c in everything and len(everything) else math.nan
             for c in ("distinct_ids", "vocab_share")}  # fmt: skip
    strr = [float(v) for v in langs["strr"] if _finite(v)] if "strr" in langs else []
    return TokenizerSummary(
        tokenizer=name,
        pivot=pivot,
        languages=n,
        median_premium=_median(values),
        worst_premium=values[0] if values else math.nan,
        worst_language=prem[0][0] if prem else "",
        share_above_1_5=sum(v > 1.5 for v in values) / n if n else math.nan,
        share_above_2=sum(v > 2.0 for v in values) / n if n else math.nan,
        gini=gini(values),
        median_fertility=_median(fert),
        expensive_languages=tuple(prem[:TOP]),
        expensive_scripts=tuple(by_script[:TOP]),
        left_out=tuple(left_out),
        median_strr=_median(strr),
        distinct_ids=vocab["distinct_ids"],
        vocab_share=vocab["vocab_share"],
    )


def summarize(df: pd.DataFrame, *, include_invalid: bool = False) -> list[TokenizerSummary]:
    """One :class:`TokenizerSummary` per tokenizer of a report, in the report's order; invalid language
    slices (``valid`` False) are left out of the premium statistics unless ``include_invalid``."""
    pivot = str(df.attrs.get("pivot") or (df["pivot"].iloc[0] if "pivot" in df and len(df) else ""))
    return [
        _one(df, str(name), pivot, include_invalid=include_invalid) for name in dict.fromkeys(df["tokenizer"])
    ]


def _num(x: float, spec: str = "{:.2f}") -> str:
    return "–" if not _finite(x) else spec.format(x)


def _ranked(pairs: Sequence[tuple[str, float]]) -> str:
    return ", ".join(f"{s} {p:.2f}" for s, p in pairs) or "–"


def _headline(s: TokenizerSummary) -> str:
    """Retention and vocabulary use of one tokenizer ('' when neither was measured)."""
    parts = []
    if _finite(s.median_strr):
        parts.append(f"STRR (words kept as one token) median {_num(100 * s.median_strr, '{:.0f}')}%")
    if _finite(s.distinct_ids):
        parts.append(f"vocabulary used {s.distinct_ids:.0f} ids ({_num(100 * s.vocab_share, '{:.1f}')}%)")
    return "; ".join(parts)


def format_summary(df: pd.DataFrame, *, include_invalid: bool = False) -> str:
    """The terminal summary: one block per tokenizer (premiums need a pivot; without one, fertility only)."""
    blocks = []
    full = df.attrs.get("metrics", "full") == "full"
    share = df.attrs.get("max_unk_chars", 0.1)
    for s in summarize(df, include_invalid=include_invalid):
        lengths = headline(df, s.tokenizer)
        if not full:
            blocks.append(f"{s.tokenizer}: {lengths or 'no documents'}")
            continue
        lines = [f"{s.tokenizer}: median fertility {_num(s.median_fertility)} tokens/word"]
        if lengths:
            lines.append(f"  {lengths}")
        if _headline(s):
            lines.append(f"  {_headline(s)}")
        if s.left_out:
            lines.append(
                f"  invalid pairs left out of the premium statistics: {len(s.left_out)} "
                f"(> {100 * share:.0f}% unknown characters: {', '.join(s.left_out[:TOP])}"
                f"{' ...' if len(s.left_out) > TOP else ''})"
            )
        if s.languages:
            lines.append(
                f"  premium vs {s.pivot} over {s.languages} languages: median {_num(s.median_premium)}, "
                f"worst {_num(s.worst_premium)} ({s.worst_language}); "
                f"> 1.5×: {_num(100 * s.share_above_1_5, '{:.0f}')}%, > 2×: {_num(100 * s.share_above_2, '{:.0f}')}%; "
                f"Gini {_num(s.gini, '{:.3f}')}"
            )
            lines.append(f"  most expensive languages: {_ranked(s.expensive_languages)}")
            lines.append(f"  most expensive scripts:   {_ranked(s.expensive_scripts)}")
        else:
            lines.append("  no premiums (no pivot language in the corpus, or the corpus is not parallel)")
        blocks.append("\n".join(lines))
    rejects = [r for r in (Reject(**row) for row in df.attrs.get("rejects") or []) if not is_left_out(r)]
    if rejects:  # bad input set aside under errors="skip": counted, never silently dropped
        documents = sum(1 if r.documents is None else r.documents for r in rejects)
        files = sum(r.unit == "file" for r in rejects)
        unknown = sum(r.documents is None for r in rejects)
        blocks.append(
            f"bad input: {set_aside(documents, files)}; rejects.csv"
            + (
                f" ({plural(unknown, 'reject')} of an unknown number of documents, counted as one each)"
                if unknown
                else ""
            )
            + f"; first: {rejects[0].message}"
        )
    blocks.extend(_unread_lines(df))
    return "\n".join(blocks)


def _unread_lines(df: pd.DataFrame) -> list[str]:
    """Lines naming the files a folder search left out and the text files read without a language."""
    lines = []
    left_out = [
        r["source"] for r in df.attrs.get("rejects") or [] if r["documents"] == 0 and r["unit"] == "file"
    ]
    if left_out:
        shown = ", ".join(left_out[:TOP]) + (" ..." if len(left_out) > TOP else "")
        lines.append(
            f"files not read: {len(left_out)} (not corpus files, hidden or empty; rejects.csv): {shown}"
        )
    unlabelled = df.attrs.get("unlabelled") or []
    if unlabelled:
        shown = ", ".join(unlabelled[:TOP]) + (" ..." if len(unlabelled) > TOP else "")
        lines.append(
            f"unlabelled: {len(unlabelled)} text files read as language und (name them <lang>_<Script>.txt "
            f"to label them): {shown}"
        )
    return lines
