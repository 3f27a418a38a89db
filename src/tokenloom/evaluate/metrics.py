"""Classification metrics of one slice, for every bootstrap resample at once (numpy only).

Every function takes ``weights`` [R, n]: row r says how often each of the slice's n items counts in
resample r (multiplicities from :func:`tokenloom.fertility.bootstrap.bootstrap_weights`; a row of ones is
the point estimate), so one matrix product gives a metric on all resamples. The definitions are
scikit-learn's (the tests compare every slice to it):

- ``precision`` tp / (tp + fp), ``recall`` tp / (tp + fn), ``f1`` 2tp / (2tp + fp + fn),
  ``fpr`` fp / (fp + tn), ``fnr`` fn / (fn + tp), ``accuracy`` (tp + tn) / n; a metric whose denominator
  is 0 is NaN (never scikit-learn's ``zero_division`` stand-in), and the table flags why;
- ``auroc``: the area under the ROC curve, ties counted one half (``roc_auc_score``: the Mann-Whitney
  statistic); NaN without both classes;
- ``auprc``: average precision, sum over descending distinct scores of (recall step) x precision
  (``average_precision_score``, not the trapezoidal area);
- ``ece``: expected calibration error of the score as the probability of the class, over ``bins``
  equal-width bins of [0, 1] (a score of 1 in the last): sum over bins of (bin share) x |mean label -
  mean score| = sum over bins of |sum(label - score)| / n.

What it does not do: draw resamples (``fertility.bootstrap``), or choose slices (``slices``).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from tokenloom.fertility.bootstrap import bootstrap_weights

__all__ = [
    "COUNT_METRICS",
    "SCORE_METRICS",
    "auroc",
    "average_precision",
    "confusion",
    "expected_calibration_error",
    "rates",
    "resample_weights",
    "slice_metrics",
]

# metrics from predictions alone, then those that need scores, in the order tables show them
COUNT_METRICS: tuple[str, ...] = ("precision", "recall", "f1", "fpr", "fnr", "accuracy")
SCORE_METRICS: tuple[str, ...] = ("auroc", "auprc", "ece")


def _div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def confusion(weights: np.ndarray, y: np.ndarray, p: np.ndarray) -> np.ndarray:
    """[R, 4] weighted (tp, fp, fn, tn) of truth ``y`` and prediction ``p`` ([n] bool each)."""
    cells = np.stack([y & p, ~y & p, y & ~p, ~y & ~p], axis=1).astype(np.float64)  # [n, 4]
    return weights @ cells  # [R, n] @ [n, 4] -> [R, 4]


def rates(counts: np.ndarray) -> dict[str, np.ndarray]:
    """The count metrics (module docstring) of [R, 4] (tp, fp, fn, tn), each [R]."""
    tp, fp, fn, tn = counts.T  # [R] each
    return {
        "precision": _div(tp, tp + fp),
        "recall": _div(tp, tp + fn),
        "f1": _div(2 * tp, 2 * tp + fp + fn),
        "fpr": _div(fp, fp + tn),
        "fnr": _div(fn, fn + tp),
        "accuracy": _div(tp + tn, tp + fp + fn + tn),
    }


def _group_sums(x: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """[R, U] sums of the runs of columns of ``x`` [R, n] that end (inclusive) at ``ends`` [U]: differences
    of a running sum, exact for the integer multiplicities and 0/1 labels summed here."""
    total = np.cumsum(x, axis=1)[:, ends]  # [R, U] running sum at each run's last column
    return np.diff(total, axis=1, prepend=0.0)  # [R, U]


def _grouped(weights: np.ndarray, y: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[R, U] weighted positives and negatives per distinct score, scores ascending."""
    order = np.argsort(s, kind="stable")  # [n]
    sorted_s = s[order]
    ends = np.flatnonzero(np.r_[sorted_s[1:] != sorted_s[:-1], True])  # [U] last item of each score
    w = weights[:, order]  # [R, n]
    yo = y[order]  # [n]
    pos = _group_sums(np.where(yo, w, 0.0), ends)  # [R, U]
    neg = _group_sums(np.where(yo, 0.0, w), ends)  # [R, U]
    return pos, neg


def _auroc(pos: np.ndarray, neg: np.ndarray) -> np.ndarray:
    below = np.cumsum(neg, axis=1) - neg  # [R, U] negative weight strictly below each score
    pairs = (pos * (below + 0.5 * neg)).sum(axis=1)  # [R]
    return _div(pairs, pos.sum(axis=1) * neg.sum(axis=1))


def _average_precision(pos: np.ndarray, neg: np.ndarray) -> np.ndarray:
    pos, neg = pos[:, ::-1], neg[:, ::-1]  # [R, U] scores descending
    tp, fp = np.cumsum(pos, axis=1), np.cumsum(neg, axis=1)  # [R, U] at threshold >= each score
    precision = np.nan_to_num(_div(tp, tp + fp))  # a step of 0 recall contributes nothing
    return _div((pos * precision).sum(axis=1), pos.sum(axis=1))


def auroc(weights: np.ndarray, y: np.ndarray, s: np.ndarray) -> np.ndarray:
    """[R] area under the ROC curve of scores ``s`` for truth ``y`` (ties count one half)."""
    return _auroc(*_grouped(weights, y, s))


def average_precision(weights: np.ndarray, y: np.ndarray, s: np.ndarray) -> np.ndarray:
    """[R] average precision: sum over descending distinct scores of (recall step) x (precision there)."""
    return _average_precision(*_grouped(weights, y, s))


def expected_calibration_error(
    weights: np.ndarray, y: np.ndarray, s: np.ndarray, *, bins: int = 10
) -> np.ndarray:
    """[R] expected calibration error of ``s`` over ``bins`` equal-width bins (module docstring)."""
    which = np.minimum((s * bins).astype(np.int64), bins - 1)  # [n] bin of each score
    gap = np.zeros((len(s), bins), dtype=np.float64)  # [n, B] label - score in the item's bin
    gap[np.arange(len(s)), which] = y.astype(np.float64) - s
    return _div(np.abs(weights @ gap).sum(axis=1), weights.sum(axis=1))  # [R, n] @ [n, B] -> [R, B] -> [R]


def slice_metrics(
    weights: np.ndarray, y: np.ndarray, p: np.ndarray, s: np.ndarray | None, *, bins: int = 10
) -> dict[str, np.ndarray]:
    """Every metric of one slice on every row of ``weights``: counts ``tp fp fn tn``, the count metrics
    and, with scores ``s``, the score metrics; each [R]."""
    counts = confusion(weights, y, p)  # [R, 4]
    out = dict(zip(("tp", "fp", "fn", "tn"), counts.T, strict=True)) | rates(counts)
    if s is not None:
        pos, neg = _grouped(weights, y, s)  # [R, U] each, shared by both curves
        out["auroc"] = _auroc(pos, neg)
        out["auprc"] = _average_precision(pos, neg)
        out["ece"] = expected_calibration_error(weights, y, s, bins=bins)
    return out


def resample_weights(n: int, n_boot: int, seed: int) -> Iterator[np.ndarray]:
    """The bootstrap multiplicity weights of a slice of ``n`` items in chunks ([rows, n] each; none when
    ``n_boot`` is 0): deterministic in (n, n_boot, seed), so two models scored on the same slice are
    resampled alike (a paired bootstrap)."""
    if n_boot > 0 and n > 0:
        yield from bootstrap_weights(n, n_boot, seed)
