"""Population metrics from human-reviewed feedback, corrected for how items were chosen for review.

Reviewed items are rarely a random sample: a model's most confident flags, user reports and escalations
are reviewed first, so metrics on them (the **naive** estimate) describe the reviewed items, not the
traffic. Given each item's probability of having been chosen for review (``propensity``: known from the
sampling design) or a random **holdout** flag, :func:`selection_estimates` estimates, per slice, the
population value of each metric written as a ratio of population totals ``R = sum f / sum g``:

=============  ==================  =================
metric         f (per item)        g (per item)
=============  ==================  =================
prevalence     y                   1
accuracy       y == prediction     1
precision      y x prediction      prediction
recall         y x prediction      y
fpr            (1 - y) x pred.     1 - y
=============  ==================  =================

with the estimators

- ``naive``: sum f / sum g over reviewed items; Wald interval as for a simple random sample;
- ``horvitz_thompson``: sum f / pi over reviewed items, divided by the population total of g when g needs
  no label (prevalence, accuracy, precision: the count of items or of predicted positives is known),
  else by its Horvitz-Thompson estimate; variance of the Poisson-sampling Horvitz-Thompson total,
  sum (1 - pi) / pi^2 x f^2, linearized for a ratio;
- ``self_normalized`` (Hájek): sum f / pi over sum g / pi, both over reviewed items; linearized variance
  sum (1 - pi) / pi^2 x (f - R g)^2 / (sum g / pi)^2;
- ``holdout``: the naive estimate on the random holdout alone (unbiased, wider).

Intervals are Wald intervals at ``EvalConfig.level``. Propensities must be in (0, 1] (else a one-line
error naming the row); propensities below ``min_propensity`` are clipped up to it (weights capped at
1 / min_propensity) and a warning says how many. A reviewed item without a propensity is left out of the
corrected estimates, with a warning. When the naive and self-normalized intervals do not overlap, a warning
says the reviewed items are not representative. Warnings go to ``SelectionResult.warnings`` and the log.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

import numpy as np

from tokenloom.errors import ConfigError, CorpusError
from tokenloom.evaluate.config import EvalConfig
from tokenloom.evaluate.items import Column, as_table, column_values, prepare_items, table_length
from tokenloom.evaluate.slices import item_slices

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ESTIMATORS", "SELECTION_METRICS", "SelectionResult", "ratio_estimate", "selection_estimates"]

log = logging.getLogger(__name__)

SELECTION_METRICS: tuple[str, ...] = ("prevalence", "accuracy", "precision", "recall", "fpr")
ESTIMATORS: tuple[str, ...] = ("naive", "horvitz_thompson", "self_normalized", "holdout")
_KNOWN_DENOMINATOR = frozenset({"prevalence", "accuracy", "precision"})  # g needs no label


@dataclass(frozen=True)
class SelectionResult:
    """Estimates per slice x metric x estimator, and the warnings raised on the way."""

    table: pd.DataFrame  # slice_kind, slice, metric, estimator, estimate, lo, hi, n_used
    warnings: list[str]


def _parts(metric: str, y: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(f, g) per item of ``metric`` (module docstring), as floats."""
    yf, pf = y.astype(np.float64), p.astype(np.float64)
    return {
        "prevalence": (yf, np.ones_like(yf)),
        "accuracy": ((y == p).astype(np.float64), np.ones_like(yf)),
        "precision": (yf * pf, pf),
        "recall": (yf * pf, yf),
        "fpr": ((1 - yf) * pf, 1 - yf),
    }[metric]


def ratio_estimate(
    f: np.ndarray, g: np.ndarray, pi: np.ndarray, *, g_total: float | None = None, iid: bool = False
) -> tuple[float, float]:
    """(estimate, standard error) of sum f / sum g over a population from a sample with inclusion
    probabilities ``pi`` (Horvitz-Thompson numerator; ``g_total`` the known population total of g, else
    its estimate); ``iid``: a simple random sample (the naive and holdout estimates, ``pi`` ignored)."""
    if iid:
        den = g.sum()
        if f.size < 2 or den == 0:
            return (float(f.sum() / den) if den else math.nan), math.nan
        r = f.sum() / den
        e = f - r * g
        return float(r), float(math.sqrt((e**2).sum() * f.size / (f.size - 1)) / den)
    w = 1.0 / pi
    if g_total is not None:
        if g_total == 0:
            return math.nan, math.nan
        return float((w * f).sum() / g_total), float(math.sqrt(((1 - pi) * (w * f) ** 2).sum()) / g_total)
    den = (w * g).sum()
    if den == 0:
        return math.nan, math.nan
    r = (w * f).sum() / den
    e = f - r * g
    return float(r), float(math.sqrt(((1 - pi) * (w * e) ** 2).sum()) / den)


def _flags(data: Any, column: Column, role: str, n: int) -> np.ndarray:
    values = column_values(data, column, role=role, n=n)
    bad = next((i for i, v in enumerate(values.tolist()) if v not in (0, 1, True, False)), None)
    if bad is not None:
        raise CorpusError(
            f"{role} column holds {values[bad]!r} at row {bad}; give True/False (or 1/0) per item"
        )
    return values.astype(bool)


def _propensities(data: Any, column: Column, reviewed: np.ndarray, n: int) -> np.ndarray:
    values = column_values(data, column, role="propensity", n=n)
    name = column if isinstance(column, str) else "<propensity values>"
    try:
        pi = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise CorpusError(
            f"propensity column {name!r} holds a value that is not a number; give probabilities in (0, 1]"
        ) from None
    bad = np.flatnonzero(reviewed & np.isfinite(pi) & ((pi <= 0) | (pi > 1)))
    if bad.size:
        i = int(bad[0])
        raise CorpusError(
            f"propensity column {name!r} holds {float(pi[i])!r} at row {i} ({bad.size} such rows); a reviewed "
            "item's probability of review must be in (0, 1]: fix the sampling log"
        )
    return pi


def _labelled(data: Any, label: Column, reviewed: np.ndarray, n: int) -> np.ndarray:
    """The label column with a placeholder in unreviewed rows (their labels are unknown and unused)."""
    values = column_values(data, label, role="label", n=n)
    missing = [
        i
        for i in np.flatnonzero(reviewed).tolist()
        if values[i] is None or (isinstance(values[i], float) and math.isnan(values[i]))
    ]
    if missing:
        raise CorpusError(
            f"label column is empty at reviewed row {missing[0]} ({len(missing)} rows); a reviewed item needs its label"
        )
    return values


def selection_estimates(
    data: Any,
    *,
    label: Column,
    prediction: Column,
    reviewed: Column,
    propensity: Column | None = None,
    holdout: Column | None = None,
    positive: Hashable = 1,
    text: Column | None = None,
    lang: Column | None = None,
    policy: Column | None = None,
    slices: Sequence[str] = (),
    min_propensity: float = 0.01,
    config: EvalConfig | None = None,
) -> SelectionResult:
    """Population metrics per slice from reviewed items (module docstring). ``reviewed`` and ``holdout``
    are True/False columns (holdout items must be reviewed); ``label`` is read on reviewed rows only."""
    config = config or EvalConfig()
    data = as_table(data)
    if not 0.0 < min_propensity <= 1.0:
        raise ConfigError(f"min_propensity must be in (0, 1], got {min_propensity!r}")
    if propensity is None and holdout is None:
        raise ConfigError(
            "give propensity= (each item's probability of review) or holdout= (a random holdout flag)"
        )
    n = table_length(data)
    rev = _flags(data, reviewed, "reviewed", n)
    if not rev.any():
        raise CorpusError("no item is reviewed: the reviewed column is False everywhere")
    hold = _flags(data, holdout, "holdout", n) if holdout is not None else None
    if hold is not None and (hold & ~rev).any():
        i = int(np.flatnonzero(hold & ~rev)[0])
        raise CorpusError(
            f"row {i} is in the holdout but not reviewed; holdout items must be reviewed (labelled)"
        )
    labels = _labelled(data, label, rev, n)
    negative = next((v for v in labels[rev].tolist() if v != positive), None)
    filled = labels.copy()
    filled[~rev] = positive if negative is None else negative  # unknown labels: a placeholder, never used
    columns = {c: column_values(data, c, role="slices", n=n) for c in slices}
    lname = label if isinstance(label, str) else "<label>"
    pname = prediction if isinstance(prediction, str) else "<prediction>"
    columns |= {lname: filled, pname: column_values(data, prediction, role="prediction", n=n)}
    optional = {"text": text, "lang": lang, "policy": policy}
    given = {k: None if v is None else column_values(data, v, role=k, n=n) for k, v in optional.items()}
    items = prepare_items(
        columns, label=lname, positive=positive, predictions={"model": pname}, slices=slices,
        text=given["text"], lang=given["lang"], policy=given["policy"],
    )  # fmt: skip
    warnings: list[str] = []
    pi = None
    if propensity is not None:
        pi = _propensities(data, propensity, rev, n)
        missing = int((rev & ~np.isfinite(pi)).sum())
        if missing:
            warnings.append(
                f"{missing} reviewed items have no propensity and are left out of the corrected estimates"
            )
        low = int((rev & np.isfinite(pi) & (pi < min_propensity)).sum())
        if low:
            warnings.append(
                f"{low} propensities below {min_propensity} clipped to {min_propensity} (weights capped at {1 / min_propensity:g})"
            )
        pi = np.where(np.isfinite(pi), np.maximum(pi, min_propensity), np.nan)
    rows = []
    z = NormalDist().inv_cdf((1 + config.level) / 2)
    y, p = items.truth(positive), items.predicted("model", positive)
    for sl in item_slices(items, mixed_min_share=config.mixed_min_share):
        rows += _slice_rows(sl.kind, sl.name, sl.index, y, p, rev, pi, hold, z)
    import pandas as pd

    table = pd.DataFrame(rows)
    warnings += _disagreements(table)
    for w in warnings:
        log.warning(w)
    table.attrs.update(level=config.level, min_propensity=min_propensity)
    return SelectionResult(table=table, warnings=warnings)


def _slice_rows(
    kind: str, name: str, idx: np.ndarray, y: np.ndarray, p: np.ndarray, rev: np.ndarray,
    pi: np.ndarray | None, hold: np.ndarray | None, z: float,
) -> list[dict[str, Any]]:  # fmt: skip
    out = []
    r = idx[rev[idx]]  # reviewed items of the slice
    for metric in SELECTION_METRICS:
        f_all, g_all = _parts(metric, y, p)
        found: dict[str, tuple[float, float, int]] = {}
        est, se = ratio_estimate(f_all[r], g_all[r], np.ones(r.size), iid=True)
        found["naive"] = (est, se, r.size)
        if pi is not None:
            use = r[np.isfinite(pi[r])]
            known = float(g_all[idx].sum()) if metric in _KNOWN_DENOMINATOR else None
            est, se = ratio_estimate(f_all[use], g_all[use], pi[use], g_total=known)
            found["horvitz_thompson"] = (est, se, use.size)
            est, se = ratio_estimate(f_all[use], g_all[use], pi[use])
            found["self_normalized"] = (est, se, use.size)
        if hold is not None:
            h = idx[hold[idx]]
            est, se = ratio_estimate(f_all[h], g_all[h], np.ones(h.size), iid=True)
            found["holdout"] = (est, se, h.size)
        for estimator, (est, se, used) in found.items():
            lo, hi = (est - z * se, est + z * se) if math.isfinite(se) else (math.nan, math.nan)
            out.append({"slice_kind": kind, "slice": name, "metric": metric, "estimator": estimator,
                        "estimate": est, "lo": lo, "hi": hi, "n_used": used})  # fmt: skip
    return out


def _disagreements(table: pd.DataFrame) -> list[str]:
    out = []
    for (kind, name, metric), g in table.groupby(["slice_kind", "slice", "metric"], sort=False):
        by = g.set_index("estimator")
        corrected = "self_normalized" if "self_normalized" in by.index else "holdout"
        if corrected not in by.index or "naive" not in by.index:
            continue
        a, b = by.loc["naive"], by.loc[corrected]
        if a["hi"] < b["lo"] or b["hi"] < a["lo"]:
            out.append(
                f"{kind} {name}: naive {metric} {a['estimate']:.3f} [{a['lo']:.3f}, {a['hi']:.3f}] and the "
                f"{corrected.replace('_', '-')} estimate {b['estimate']:.3f} [{b['lo']:.3f}, {b['hi']:.3f}] disagree "
                "beyond their intervals: the reviewed items are not a random sample of this slice"
            )
    return out
