"""Matplotlib charts of a classifier evaluation, rendered to PNG bytes (headless, Agg backend).

- :func:`forest_chart`: the paired differences of one metric between two models, one line per slice
  with its bootstrap interval, a line at 0; flagged slices in grey, ranking flips in red;
- :func:`frontier_chart`: a cascade's thresholds as points of cost per 1,000 items against F1, the Pareto
  frontier joined.

Each returns PNG bytes, or None when there is nothing to draw. What it does not do: compute anything.
matplotlib is imported inside the functions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tokenloom._plot import png_bytes, pyplot

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["forest_chart", "frontier_chart"]


def forest_chart(paired: pd.DataFrame, metric: str, *, flips: pd.DataFrame | None = None) -> bytes | None:
    """Paired differences of ``metric`` for the first model pair and class, one row per slice."""
    rows = paired[(paired["metric"] == metric) & paired["diff"].notna()]
    if rows.empty:
        return None
    first = rows.iloc[0]
    rows = rows[
        (rows["model_a"] == first["model_a"])
        & (rows["model_b"] == first["model_b"])
        & (rows["class"] == first["class"])
    ]
    flipped = (
        set()
        if flips is None
        else {(r.slice_kind, r.slice) for r in flips[flips["metric"] == metric].itertuples()}
    )
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 0.3 * len(rows) + 1.4))
    for y, r in enumerate(rows.itertuples()):
        color = "#d62728" if (r.slice_kind, r.slice) in flipped else ("#999999" if r.flag else "#1f77b4")
        lo = r.diff - r.diff_lo if r.diff_lo == r.diff_lo else 0.0
        hi = r.diff_hi - r.diff if r.diff_hi == r.diff_hi else 0.0
        ax.errorbar(r.diff, y, xerr=[[lo], [hi]], fmt="o", color=color, capsize=2, markersize=4)
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_yticks(
        range(len(rows)), [f"{r.slice_kind}: {r.slice} (n={r.n})" for r in rows.itertuples()], fontsize=7
    )
    ax.invert_yaxis()
    ax.set_xlabel(f"{metric}: {first['model_a']} − {first['model_b']} (paired bootstrap interval)")
    ax.set_title(
        f"{first['model_a']} vs {first['model_b']}, class {first['class']}: red = ranking flips, grey = flagged",
        fontsize=9,
    )
    return png_bytes(fig)


def frontier_chart(frontier: pd.DataFrame) -> bytes | None:
    """Cost per 1,000 items against F1 of every threshold pair, the Pareto frontier joined."""
    rows = frontier[frontier["f1"].notna()]
    if rows.empty:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    ax.scatter(rows["cost_per_1k"], rows["f1"], s=10, color="#bbbbbb", label="threshold pairs")
    best = rows[rows["pareto"]].sort_values("cost_per_1k")
    ax.plot(best["cost_per_1k"], best["f1"], "o-", color="#1f77b4", markersize=4, label="Pareto frontier")
    ax.set_xlabel("cost per 1,000 items")
    ax.set_ylabel("end-to-end F1")
    ax.legend(fontsize=8)
    ax.set_title("cascade: quality against cost", fontsize=10)
    return png_bytes(fig)
