"""The metric table of an evaluation: one row per model x class x slice, with intervals, flags and ranks.

Each row holds the slice's support (items), positives and predicted positives, every metric of
:mod:`tokenloom.evaluate.metrics` with its percentile bootstrap interval (``<metric>_lo``,
``<metric>_hi``; ``EvalConfig.n_boot`` resamples, seed and level in ``df.attrs``), the ``gap`` of the
ranking metric (``EvalConfig.rank_by``) to the model's ``all`` slice, and ``flag``: why the row is not
ranked — support below ``min_support``, no positives, no negatives, no predicted positives — so a NaN is
never unexplained. ``rank`` orders the unflagged slices of a model and class from the worst gap (1) on;
flagged slices have no rank. What it does not do: compute metrics (``samples``) or write files.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from tokenloom.evaluate.config import LOWER_IS_BETTER, EvalConfig
from tokenloom.evaluate.metrics import COUNT_METRICS, SCORE_METRICS
from tokenloom.evaluate.samples import SliceSamples
from tokenloom.fertility.bootstrap import percentile_interval

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ID_COLUMNS", "METRIC_COLUMNS", "flags", "metric_table"]

ID_COLUMNS: tuple[str, ...] = ("model", "class", "slice_kind", "slice")
METRIC_COLUMNS: tuple[str, ...] = tuple(
    f"{m}{suffix}" for m in (*COUNT_METRICS, *SCORE_METRICS) for suffix in ("", "_lo", "_hi")
)


def flags(point: dict[str, float], n: int, *, min_support: int) -> list[str]:
    """Why a slice's row is not ranked (empty when it is)."""
    out = []
    if n < min_support:
        out.append(f"support {n} < {min_support}")
    if point["tp"] + point["fn"] == 0:
        out.append("no positives")
    if point["fp"] + point["tn"] == 0:
        out.append("no negatives")
    if point["tp"] + point["fp"] == 0:
        out.append("no predicted positives")
    return out


def _row(s: SliceSamples, config: EvalConfig) -> dict[str, Any]:
    row: dict[str, Any] = {
        "model": s.model, "class": str(s.cls), "slice_kind": s.slice.kind, "slice": s.slice.name, "n": s.n,
        "positives": int(s.point["tp"] + s.point["fn"]), "predicted_positives": int(s.point["tp"] + s.point["fp"]),
    }  # fmt: skip
    for metric in (*COUNT_METRICS, *SCORE_METRICS):
        value = s.point.get(metric, math.nan)
        boot = s.boot.get(metric)
        lo, hi = (
            percentile_interval(boot, level=config.level)
            if boot is not None and boot.size and math.isfinite(value)
            else (math.nan, math.nan)
        )
        row[metric], row[f"{metric}_lo"], row[f"{metric}_hi"] = value, lo, hi
    row["flag"] = "; ".join(flags(s.point, s.n, min_support=config.min_support))
    return row


def metric_table(samples: list[SliceSamples], *, config: EvalConfig) -> pd.DataFrame:
    """The table of the module docstring from :func:`tokenloom.evaluate.samples.all_samples`."""
    import pandas as pd

    df = pd.DataFrame([_row(s, config) for s in samples])
    metric = config.rank_by
    overall = df[df["slice_kind"] == "all"].set_index(["model", "class"])[metric]
    df["gap"] = df[metric] - [
        overall.get((m, c), math.nan) for m, c in zip(df["model"], df["class"], strict=True)
    ]
    worse = -df["gap"] if metric not in LOWER_IS_BETTER else df["gap"]  # larger = worse
    rankable = (df["flag"] == "") & (df["slice_kind"] != "all") & df["gap"].notna()
    df["rank"] = np.nan
    ranks = worse[rankable].groupby([df["model"], df["class"]]).rank(ascending=False, method="min")
    df.loc[rankable, "rank"] = ranks
    df["rank"] = df["rank"].astype("Int64")
    df.attrs.update(
        n_boot=config.n_boot, seed=config.seed, level=config.level, min_support=config.min_support,
        rank_by=metric, ece_bins=config.ece_bins,
    )  # fmt: skip
    return df
