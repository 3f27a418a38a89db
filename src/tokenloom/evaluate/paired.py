"""Two or more models compared on the same items, slice by slice: paired bootstrap differences, Holm.

For every pair of models (in the order given), class and slice, and every metric of
``EvalConfig.compare``, the difference ``model_a - model_b`` with

- a percentile interval over the slice's resamples, the *same* resamples for both models (a paired
  bootstrap: the items drawn are the same, so what the two models share cancels);
- a two-sided bootstrap p-value of "no difference": the share of resampled differences at least as far
  from the observed one as the observed one is from 0, ``(1 + #{|d* - d| >= |d|}) / (1 + R)`` (the
  resampled differences, centred, stand for the null distribution);
- ``p_holm``: Holm's step-down correction over the family of every slice and metric of one model pair
  and class (:func:`holm`), so "B beats A on some slice" is not a pick of the luckiest of many tests.

:func:`dominance` lists where the ranking flips: the slices where the model better on the ``all`` slice
is the worse one, with the support behind each; :func:`dominance_summary` says it in one paragraph. What
it does not do: compute the metrics (``samples``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from tokenloom.evaluate.config import LOWER_IS_BETTER, EvalConfig
from tokenloom.evaluate.samples import SliceSamples
from tokenloom.evaluate.table import flags
from tokenloom.fertility.bootstrap import percentile_interval

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["PAIRED_COLUMNS", "bootstrap_p_value", "dominance", "dominance_summary", "holm", "paired_table"]

PAIRED_COLUMNS: tuple[str, ...] = (
    "model_a", "model_b", "class", "slice_kind", "slice", "n", "metric", "a", "b", "diff", "diff_lo",
    "diff_hi", "p_value", "p_holm", "flag",
)  # fmt: skip


def holm(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm-adjusted p-values (step-down): the k-th smallest p times (m - k + 1), made non-decreasing and
    capped at 1; NaN stays NaN and is not counted in m."""
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    live = np.flatnonzero(np.isfinite(p))
    m = live.size
    if m == 0:
        return out
    order = live[np.argsort(p[live], kind="stable")]
    scaled = p[order] * (m - np.arange(m))  # [m] p_(k) * (m - k + 1), k from 1
    out[order] = np.minimum(np.maximum.accumulate(scaled), 1.0)
    return out


def bootstrap_p_value(diff: float, boot: np.ndarray) -> float:
    """Two-sided p-value of a zero difference from resampled differences (module docstring)."""
    boot = boot[np.isfinite(boot)]
    if not math.isfinite(diff) or boot.size == 0:
        return math.nan
    return float((1 + np.count_nonzero(np.abs(boot - diff) >= abs(diff))) / (1 + boot.size))


def _pair_rows(a: SliceSamples, b: SliceSamples, config: EvalConfig) -> list[dict[str, Any]]:
    reason = "; ".join(dict.fromkeys(
        flags(a.point, a.n, min_support=config.min_support) + flags(b.point, b.n, min_support=config.min_support)
    ))  # fmt: skip
    rows = []
    for metric in config.compare:
        if metric not in a.point or metric not in b.point:
            continue  # a score metric of a model without scores
        diff = a.point[metric] - b.point[metric]
        boot = a.boot[metric] - b.boot[metric]  # the same resamples: paired
        lo, hi = (
            percentile_interval(boot, level=config.level)
            if boot.size and math.isfinite(diff)
            else (math.nan, math.nan)
        )
        rows.append({
            "model_a": a.model, "model_b": b.model, "class": str(a.cls), "slice_kind": a.slice.kind,
            "slice": a.slice.name, "n": a.n, "metric": metric, "a": a.point[metric], "b": b.point[metric],
            "diff": diff, "diff_lo": lo, "diff_hi": hi, "p_value": bootstrap_p_value(diff, boot), "flag": reason,
        })  # fmt: skip
    return rows


def paired_table(samples: list[SliceSamples], models: Sequence[str], *, config: EvalConfig) -> pd.DataFrame:
    """Paired differences of every two models (module docstring); empty with fewer than two models."""
    import pandas as pd

    by = {(s.model, str(s.cls), s.slice.key): s for s in samples}
    rows: list[dict[str, Any]] = []
    for ma, mb in itertools.combinations(models, 2):
        for (model, cls, key), a in by.items():
            if model == ma:
                rows += _pair_rows(a, by[(mb, cls, key)], config)
    df = pd.DataFrame(rows, columns=[c for c in PAIRED_COLUMNS if c != "p_holm"])
    df.insert(len(df.columns) - 1, "p_holm", np.nan)
    adjusted = np.full(len(df), np.nan)
    for _, group in df.groupby(["model_a", "model_b", "class"], sort=False):
        at = df.index.get_indexer(group.index)
        adjusted[at] = holm(group["p_value"].to_numpy(dtype=np.float64))
    df["p_holm"] = adjusted
    df.attrs.update(n_boot=config.n_boot, seed=config.seed, level=config.level)
    return df


def _better(diff: float, metric: str) -> int:
    """+1 when model a is better by ``diff``, -1 when b is, 0 on a tie or an undefined difference."""
    if not math.isfinite(diff):
        return 0
    sign = int(np.sign(diff))
    return -sign if metric in LOWER_IS_BETTER else sign


def dominance(paired: pd.DataFrame, *, alpha: float = 0.05) -> pd.DataFrame:
    """The slices where the ranking of two models flips against their ranking on ``all`` (unflagged slices
    only), with the support, difference, interval, Holm p-value, which model is better overall and on the
    slice, and whether the flip is significant (``p_holm < alpha``)."""
    keep: list[Any] = []
    overall_better: list[str] = []
    for (ma, mb, _, metric), group in paired.groupby(["model_a", "model_b", "class", "metric"], sort=False):
        overall = group[group["slice_kind"] == "all"]
        lead = _better(float(overall["diff"].iloc[0]), str(metric)) if len(overall) else 0
        if lead == 0:  # no overall ranking (a tie or an undefined metric): nothing flips
            continue
        flipped = group[
            (group["slice_kind"] != "all")
            & (group["flag"] == "")
            & np.array([_better(float(d), str(metric)) == -lead for d in group["diff"]], dtype=bool)
        ]
        keep += list(flipped.index)
        overall_better += [str(ma) if lead > 0 else str(mb)] * len(flipped)
    out = paired.loc[keep].copy()
    out["overall_better"] = overall_better
    out["slice_better"] = np.where(out["overall_better"] == out["model_a"], out["model_b"], out["model_a"])
    out["significant"] = out["p_holm"] < alpha
    return out.reset_index(drop=True)


def dominance_summary(paired: pd.DataFrame, *, alpha: float = 0.05, limit: int = 5) -> str:
    """One paragraph per model pair and metric: does one model win on every slice, or where does it not."""
    flips = dominance(paired, alpha=alpha)
    lines = []
    for (ma, mb, cls, metric), group in paired.groupby(["model_a", "model_b", "class", "metric"], sort=False):
        overall = group[group["slice_kind"] == "all"]
        if overall.empty or not math.isfinite(overall["diff"].iloc[0]):
            continue
        mine = flips[
            (flips.model_a == ma) & (flips.model_b == mb) & (flips["class"] == cls) & (flips.metric == metric)
        ]
        d = float(overall["diff"].iloc[0])
        head = f"{metric} (class {cls}): {ma} - {mb} = {d:+.3f} on all items"
        if mine.empty:
            lines.append(f"{head}; the ranking holds on every ranked slice.")
            continue
        shown = ", ".join(
            f"{r.slice_kind} {r.slice} (n={r.n}, {r['diff']:+.3f} [{r.diff_lo:+.3f}, {r.diff_hi:+.3f}], p_holm={r.p_holm:.3g}"
            f"{', significant' if r.significant else ''})"
            for _, r in mine.head(limit).iterrows()
        )
        more = f" and {len(mine) - limit} more" if len(mine) > limit else ""
        lines.append(f"{head}; no model dominates: {mine.slice_better.iloc[0]} is better on {shown}{more}.")
    return "\n".join(lines)
