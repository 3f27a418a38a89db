"""Matplotlib charts of bits per byte, rendered to PNG bytes (headless, Agg backend).

- :func:`bpb_chart`: per language, each model's bits per byte (bars, bootstrap interval as whiskers) and
  the order-0 byte baseline of the same text (a black tick): a model is useful where its bar ends left of
  the tick;
- :func:`correlation_chart`: one panel per intrinsic metric (fertility, premium, STRR...), a point per
  tokenizer and language, the metric against bits per byte, with the Spearman correlation in the title.

Each returns PNG bytes, or None when there is nothing to draw. What it does not do: compute anything.
matplotlib is imported inside the functions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tokenloom._plot import png_bytes, pyplot

if TYPE_CHECKING:
    import pandas as pd

    from tokenloom.lm.correlation import Correlation

__all__ = ["bpb_chart", "correlation_chart"]

_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")


def _models(df: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(map(str, df["tokenizer"]))) if "tokenizer" in df else [""]


def bpb_chart(df: pd.DataFrame) -> bytes | None:
    """Bits per byte per language slice (one bar per model when ``df`` has a ``tokenizer`` column)."""
    rows = df[(df["slice_kind"] == "language") & df["bpb"].notna()]
    if rows.empty:
        return None
    models = _models(rows)
    slices = list(dict.fromkeys(map(str, rows["slice"])))
    plt = pyplot()
    height = 0.8 / len(models)
    fig, ax = plt.subplots(figsize=(7.5, 0.22 * len(slices) * max(1, len(models) * 0.7) + 1.6))
    for k, model in enumerate(models):
        sub = rows if model == "" else rows[rows["tokenizer"] == model]
        at = {str(s): i for i, s in enumerate(slices)}
        ys = [at[str(s)] - 0.4 + height * (k + 0.5) for s in sub["slice"]]
        values = [float(v) for v in sub["bpb"]]
        err = [
            [max(0.0, v - float(a)) if math.isfinite(float(a)) else 0.0 for v, a in zip(values, sub["bpb_lo"], strict=True)],
            [max(0.0, float(b) - v) if math.isfinite(float(b)) else 0.0 for v, b in zip(values, sub["bpb_hi"], strict=True)],
        ]  # fmt: skip
        ax.barh(ys, values, height=height, color=_COLORS[k % len(_COLORS)], label=model or "model")
        ax.errorbar(values, ys, xerr=err, fmt="none", ecolor="black", elinewidth=0.6, capsize=1.5)
    base = rows.drop_duplicates("slice")
    ax.scatter(
        [float(v) for v in base["order0"]], [slices.index(str(s)) for s in base["slice"]],
        marker="|", s=120, color="black", label="order-0 byte baseline", zorder=3,
    )  # fmt: skip
    ax.set_yticks(range(len(slices)))
    ax.set_yticklabels(slices, fontsize=7)
    ax.set_ylim(len(slices) - 0.5, -0.5)
    ax.set_xlabel("bits per byte (held out; lower is better)")
    ax.legend(fontsize=7, loc="lower right")
    return png_bytes(fig)


def correlation_chart(table: pd.DataFrame, correlations: Sequence[Correlation]) -> bytes | None:
    """Each intrinsic metric against bits per byte, a point per tokenizer and language."""
    shown = [c for c in correlations if c.metric in table and table[c.metric].notna().any()]
    if not shown:
        return None
    models = _models(table)
    plt = pyplot()
    fig, axes = plt.subplots(1, len(shown), figsize=(3.6 * len(shown) + 0.6, 3.6), squeeze=False)
    for ax, corr in zip(axes[0], shown, strict=True):
        for k, model in enumerate(models):
            sub = table if model == "" else table[table["tokenizer"] == model]
            ax.scatter(
                sub[corr.metric], sub["bpb"], s=12, color=_COLORS[k % len(_COLORS)], label=model or None
            )
        ax.set_xlabel(corr.metric)
        ax.set_ylabel("bits per byte")
        ax.set_title(f"ρ = {corr.rho:+.2f} [{corr.lo:+.2f}, {corr.hi:+.2f}]", fontsize=9)
        ax.grid(alpha=0.3)
    if models != [""]:
        axes[0][0].legend(fontsize=7)
    return png_bytes(fig)
