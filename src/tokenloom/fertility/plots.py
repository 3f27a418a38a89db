"""Matplotlib charts of a fertility report, rendered to PNG bytes (headless, Agg backend).

- :func:`fertility_chart`: fertility per language with its bootstrap interval as a whisker;
- :func:`premium_chart`: premium against the pivot per language (a line at 1), with whiskers;
- :func:`byte_fallback_chart`: byte-fallback rate per language;
- :func:`strr_chart`: single-token retention rate (share of words kept as one token) per language;
- :func:`vocabulary_chart`: distinct token ids each language uses;
- :func:`comparison_chart`: with two or more tokenizers, each language's premium under the first tokenizer
  against its premium under each other one, with the diagonal of parity;
- :func:`lengths_chart`: the share of documents per log-spaced bin of tokens per document on the ``all``
  slice (``df.attrs["lengths"]``, :mod:`tokenloom.fertility.length_tables`), one line per tokenizer, the
  report's context lengths as dashed lines.

Bar charts have one panel per tokenizer, languages sorted by that tokenizer's value (highest on top) and
bars coloured by script (one colour per script across every chart of a report). Each function returns PNG
bytes or None when there is nothing to show; :func:`render_all` returns those that have data by name
(``fertility``, ``premium``, ``byte_fallback``, ``strr``, ``vocabulary``, ``comparison``, ``lengths``). What it does not do: compute anything (the
report does) or write files (``writers``). matplotlib is imported inside the functions.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from tokenloom._plot import png_bytes, pyplot
from tokenloom.fertility.length_tables import contexts_of

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "byte_fallback_chart",
    "comparison_chart",
    "fertility_chart",
    "lengths_chart",
    "premium_chart",
    "render_all",
    "script_colors",
    "strr_chart",
    "vocabulary_chart",
]

_PALETTE = (
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
    "#bab0ac", "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
)  # fmt: skip


def script_colors(df: pd.DataFrame) -> dict[str, str]:
    """One colour per script of the report's language slices (sorted scripts, cycling a 20-colour palette)."""
    scripts = sorted({str(s) for s in _language_rows(df)["script"].fillna("")})
    return {s: _PALETTE[i % len(_PALETTE)] for i, s in enumerate(scripts)}


def _language_rows(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["slice_kind"] == "language"]


def _panel(ax: Any, rows: pd.DataFrame, column: str, colors: dict[str, str], scale: float) -> None:
    """Horizontal bars of ``column`` sorted high to low, whiskers from ``column_lo``/``column_hi`` if present."""
    rows = rows.sort_values(column, ascending=False, kind="stable")
    ys = list(range(len(rows)))
    values = [scale * float(v) for v in rows[column]]
    fill = [colors.get(str(s), "#999999") for s in rows["script"].fillna("")]
    ax.barh(ys, values, color=fill, height=0.8)
    lo, hi = f"{column}_lo", f"{column}_hi"
    if column == "premium_mean":
        lo, hi = "premium_lo", "premium_hi"
    if lo in rows and hi in rows:
        los = [scale * float(v) for v in rows[lo]]
        his = [scale * float(v) for v in rows[hi]]
        err = [
            [max(0.0, v - a) if math.isfinite(a) else 0.0 for v, a in zip(values, los, strict=True)],
            [max(0.0, b - v) if math.isfinite(b) else 0.0 for v, b in zip(values, his, strict=True)],
        ]
        ax.errorbar(values, ys, xerr=err, fmt="none", ecolor="black", elinewidth=0.6, capsize=1.5)
    ax.set_yticks(ys)
    ax.set_yticklabels(list(rows["slice"]), fontsize=7)
    ax.set_ylim(len(rows) - 0.5, -0.5)  # highest on top, no empty margin


def _bars(
    df: pd.DataFrame, column: str, *, title: str, xlabel: str, ref: float | None = None, scale: float = 1.0
) -> bytes | None:
    if column not in df:
        return None
    sub = _language_rows(df)
    sub = sub[sub[column].notna()]
    if sub.empty:
        return None
    plt = pyplot()
    colors = script_colors(df)
    names = list(dict.fromkeys(sub["tokenizer"]))
    n = max(int((sub["tokenizer"] == name).sum()) for name in names)
    fig, axes = plt.subplots(1, len(names), figsize=(4.5 * len(names) + 1.5, max(3.0, 0.16 * n + 1.6)))
    axes = [axes] if len(names) == 1 else list(axes)
    for ax, name in zip(axes, names, strict=True):
        _panel(ax, sub[sub["tokenizer"] == name], column, colors, scale)
        if ref is not None:
            ax.axvline(ref, color="black", linewidth=0.8, linestyle="--")
        ax.set_title(str(name), fontsize=9)
        ax.set_xlabel(xlabel)
    used = sorted({str(s) for s in sub["script"].fillna("")})
    handles = [plt.Rectangle((0, 0), 1, 1, color=colors[s]) for s in used]
    fig.legend(handles, used, loc="lower center", ncol=min(10, len(used)), fontsize=7, frameon=False)
    fig.suptitle(title)
    return png_bytes(fig, bottom=min(0.2, 0.5 / fig.get_figheight()))


def fertility_chart(df: pd.DataFrame) -> bytes | None:
    """Fertility (tokens per word) per language, sorted, bootstrap interval as whiskers, coloured by script."""
    return _bars(
        df, "fertility", title="Fertility per language (bars coloured by script)", xlabel="tokens per word"
    )


def premium_chart(df: pd.DataFrame) -> bytes | None:
    """Premium against the pivot (mean tokens / pivot tokens on the same sentence) per language, sorted."""
    pivot = df.attrs.get("pivot") or (df["pivot"].iloc[0] if len(df) else "")
    return _bars(
        df, "premium_mean", title=f"Premium against {pivot}", xlabel="tokens / pivot tokens", ref=1.0
    )


def byte_fallback_chart(df: pd.DataFrame) -> bytes | None:
    """Share of tokens that are byte-fallback pieces, per language, sorted."""
    return _bars(df, "byte_fallback_rate", title="Byte-fallback rate", xlabel="% of tokens", scale=100.0)


def strr_chart(df: pd.DataFrame) -> bytes | None:
    """Single-token retention rate (share of words kept as one token) per language, sorted."""
    return _bars(df, "strr", title="Words kept as one token (STRR)", xlabel="% of words", scale=100.0)


def vocabulary_chart(df: pd.DataFrame) -> bytes | None:
    """Distinct token ids each language uses, sorted (few: the language lives on few pieces or bytes)."""
    return _bars(df, "distinct_ids", title="Vocabulary use: distinct token ids per language", xlabel="ids")


def comparison_chart(df: pd.DataFrame) -> bytes | None:
    """Premium under the first tokenizer (x) against each other tokenizer (y), per language, with parity line."""
    sub = _language_rows(df)
    sub = sub[sub["premium_mean"].notna()]
    names = list(dict.fromkeys(sub["tokenizer"]))
    if len(names) < 2:
        return None
    plt = pyplot()
    colors = script_colors(df)
    base = sub[sub["tokenizer"] == names[0]].set_index("slice")
    others = names[1:]
    fig, axes = plt.subplots(1, len(others), figsize=(5.5 * len(others), 5.5), squeeze=False)
    for ax, other in zip(axes[0], others, strict=True):
        theirs = sub[sub["tokenizer"] == other].set_index("slice")
        common = [s for s in base.index if s in theirs.index]
        xs = [float(base.at[s, "premium_mean"]) for s in common]
        ys = [float(theirs.at[s, "premium_mean"]) for s in common]
        fill = [colors.get(str(base.at[s, "script"]), "#999999") for s in common]
        ax.scatter(xs, ys, c=fill, s=18, edgecolors="black", linewidths=0.3)
        top = max([*xs, *ys, 1.0]) * 1.05
        ax.plot([0, top], [0, top], color="black", linewidth=0.8, linestyle="--")
        for s, x, y in sorted(zip(common, xs, ys, strict=True), key=lambda t: -abs(t[1] - t[2]))[:8]:
            ax.annotate(str(s), (x, y), fontsize=6, xytext=(3, 3), textcoords="offset points")
        ax.set_xlim(0, top)
        ax.set_ylim(0, top)
        ax.set_xlabel(f"premium, {names[0]}")
        ax.set_ylabel(f"premium, {other}")
        ax.set_title(f"below the diagonal: {other} is cheaper", fontsize=9)
    fig.suptitle("Per-language premium, tokenizer against tokenizer")
    return png_bytes(fig)


def lengths_chart(df: pd.DataFrame) -> bytes | None:
    """Share of documents per log-spaced bin of tokens per document (``all`` slice), one line per
    tokenizer; empty documents (the bin ``[0, 1)``) are left out of the log axis."""
    hist = df.attrs.get("lengths")
    if hist is None:
        return None
    sub = hist[(hist["slice_kind"] == "all") & (hist["bin_lo"] > 0)]
    if sub.empty or not sub["documents"].sum():
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 4.0))
    for i, (name, rows) in enumerate(sub.groupby("tokenizer", sort=False)):
        edges = [*rows["bin_lo"].tolist(), int(rows["bin_hi"].iloc[-1])]  # contiguous bins of one slice
        share = rows["documents"].to_numpy() / max(int(rows["documents"].sum()), 1)
        ax.stairs(share, edges, label=str(name), color=_PALETTE[i % len(_PALETTE)], linewidth=1.2)
    for c in contexts_of(df):
        ax.axvline(c, color="black", linewidth=0.7, linestyle="--")
        ax.annotate(f"{c}", (c, 1), xycoords=("data", "axes fraction"), fontsize=7, rotation=90, va="top")
    ax.set_xscale("log")
    ax.set_xlabel("tokens per document (log-spaced bins)")
    ax.set_ylabel("share of documents")
    ax.legend(fontsize=8, frameon=False)
    fig.suptitle("Tokens per document, all slice (dashed: context lengths)")
    return png_bytes(fig)


def render_all(df: pd.DataFrame) -> dict[str, bytes]:
    """The charts that have data, as ``{name: PNG bytes}``."""
    charts = {
        "fertility": fertility_chart,
        "premium": premium_chart,
        "byte_fallback": byte_fallback_chart,
        "strr": strr_chart,
        "vocabulary": vocabulary_chart,
        "comparison": comparison_chart,
        "lengths": lengths_chart,
    }
    out = {}
    for name, draw in charts.items():
        png = draw(df)
        if png is not None:
            out[name] = png
    return out
