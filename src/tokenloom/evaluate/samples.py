"""Point estimates and bootstrap resamples of every metric, per model x class x slice.

:func:`all_samples` computes, once, what the metric table (``table``) and the paired comparison
(``paired``) read: for every model, positive class (one-vs-rest) and slice, the point value of each metric
and its ``n_boot`` resampled values. The resamples of a slice depend only on its size, the seed and
``n_boot`` (:func:`tokenloom.evaluate.metrics.resample_weights`), so two models on one slice share them:
their differences are a paired bootstrap. What it does not do: form intervals or tables.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import numpy as np

from tokenloom._progress import progress
from tokenloom.evaluate.config import EvalConfig
from tokenloom.evaluate.items import Items
from tokenloom.evaluate.metrics import resample_weights, slice_metrics
from tokenloom.evaluate.slices import Slice

__all__ = ["SliceSamples", "all_samples", "slice_samples"]


@dataclass(frozen=True)
class SliceSamples:
    """One model's metrics on one slice for one class: point values and resamples ([n_boot] each)."""

    model: str
    cls: Hashable
    slice: Slice
    point: dict[str, float]
    boot: dict[str, np.ndarray]

    @property
    def n(self) -> int:
        return len(self.slice.index)


def slice_samples(
    y: np.ndarray, p: np.ndarray, s: np.ndarray | None, *, config: EvalConfig
) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """(point values, resampled values) of every metric of one slice's truth, predictions and scores."""
    n = len(y)
    point = {k: float(v[0]) for k, v in slice_metrics(np.ones((1, n)), y, p, s, bins=config.ece_bins).items()}
    chunks = [
        slice_metrics(w, y, p, s, bins=config.ece_bins)
        for w in resample_weights(n, config.n_boot, config.seed)
    ]
    boot = {k: np.concatenate([c[k] for c in chunks]) if chunks else np.empty(0) for k in point}
    return point, boot


def all_samples(
    items: Items, slices: list[Slice], *, config: EvalConfig, quiet: bool = True
) -> list[SliceSamples]:
    """:class:`SliceSamples` of every model x class x slice, in that nesting order (a progress bar on a
    terminal unless ``quiet``)."""
    out = []
    bar = progress(
        [(m, c) for m in items.models for c in items.classes],
        desc="models x classes",
        unit="model",
        quiet=quiet,
    )
    for model, cls in bar:
        truth, pred, score = items.truth(cls), items.predicted(model, cls), items.score(model, cls)
        for sl in slices:
            idx = sl.index
            point, boot = slice_samples(
                truth[idx], pred[idx], None if score is None else score[idx], config=config
            )
            out.append(SliceSamples(model, cls, sl, point, boot))
    return out
