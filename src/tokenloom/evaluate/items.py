"""The items of a classifier evaluation: columns read from a table, checked once, as typed arrays.

:func:`prepare_items` turns a table — a pandas DataFrame or a mapping of column name to values — and the
names of its columns into :class:`Items`: the texts, the human labels, each model's predictions and scores,
and the language, policy and extra slice columns. A column may also be given as the values themselves (a
list or array as long as the table). Everything the rest of :mod:`tokenloom.evaluate` computes starts here,
so every check of the input is made here (a path is read first, :func:`as_table`), once, with a one-line error naming the column, the row (counted
from 0, the table's positional index) and the value, and saying how to fix it:

- a column that is not in the table, or values whose length differs from the table's;
- a label outside the classes: ``positive`` names the positive class (binary) or classes (multi-class,
  one-vs-rest per class); every other label value is the one negative class, so a second non-positive
  value (a typo, an unmapped category) is an error;
- a prediction that is neither a positive class nor the negative value of the labels;
- a score that is NaN, infinite or outside [0, 1];
- a text that is not a string.

What it does not do: decide slices (``slices``) or compute metrics (``metrics``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import numpy as np

from tokenloom.errors import CorpusError
from tokenloom.evaluate.read import read_table

__all__ = [
    "Column",
    "Items",
    "ScoreSpec",
    "as_table",
    "column_values",
    "prepare_items",
    "scores_in_unit_interval",
]

Column: TypeAlias = "str | Sequence[Any] | np.ndarray"  # a column name, or the values themselves
ScoreSpec: TypeAlias = "Column | Mapping[Any, Column]"  # binary: one column; multi-class: class -> column


def as_table(data: Any) -> Any:
    """``data`` itself, or the table a path names read into a DataFrame (:func:`~tokenloom.evaluate.read.read_table`)."""
    if isinstance(data, str | os.PathLike):
        return read_table(data)
    return data


def _names(data: Any) -> list[str]:
    return [str(c) for c in data.columns] if hasattr(data, "columns") else [str(k) for k in data]


def table_length(data: Any) -> int:
    """Rows of ``data`` (a DataFrame, or a mapping whose columns must all have one length)."""
    if hasattr(data, "columns"):
        return len(data)
    lengths = {str(k): len(v) for k, v in data.items()}
    if len(set(lengths.values())) > 1:
        shown = ", ".join(f"{k}: {n}" for k, n in lengths.items())
        raise CorpusError(
            f"the columns of the data have different lengths ({shown}); give columns of one length"
        )
    return next(iter(lengths.values()), 0)


def column_values(data: Any, column: Column, *, role: str, n: int) -> np.ndarray:
    """The values of ``column`` (a name in ``data`` or the values) as an object array of length ``n``."""
    if isinstance(column, str):
        if column not in _names(data):
            shown = ", ".join(_names(data)[:12])
            raise CorpusError(
                f"no column {column!r} in the data (its columns: {shown}); pass {role}= the name of an existing column"
            )
        raw = data[column]
        values = (
            raw.to_numpy(dtype=object) if hasattr(raw, "to_numpy") else np.asarray(list(raw), dtype=object)
        )
    else:
        values = np.empty(len(column), dtype=object)
        values[:] = list(column)
    if len(values) != n:
        raise CorpusError(
            f"{role} has {len(values)} values but the data has {n} rows; give one value per row"
        )
    return values


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _shown(values: list[tuple[int, Any]]) -> str:
    return ", ".join(f"{v!r} (row {i})" for i, v in values[:3]) + (" ..." if len(values) > 3 else "")


def _first_rows(values: np.ndarray, bad: set[Any]) -> list[tuple[int, Any]]:
    seen: dict[Any, int] = {}
    for i, v in enumerate(values.tolist()):
        if v in bad and v not in seen:
            seen[v] = i
    return [(i, v) for v, i in seen.items()]


def check_labels(labels: np.ndarray, positive: tuple[Hashable, ...], *, column: str) -> Hashable | None:
    """The one negative value of ``labels`` (``None`` when every label is positive); raises on a missing
    label or a second value outside the positive set."""
    missing = [i for i, v in enumerate(labels.tolist()) if _missing(v)]
    if missing:
        raise CorpusError(
            f"label column {column!r} is empty at row {missing[0]} ({len(missing)} rows in all); "
            "give every item a label or drop the unlabelled rows"
        )
    others = set(labels.tolist()) - set(positive)
    if len(others) > 1:
        shown = _shown(sorted(_first_rows(labels, others), key=lambda t: t[0]))
        raise CorpusError(
            f"label column {column!r} holds values outside the positive set {list(positive)!r}: {shown}; "
            "only one other (negative) value is allowed: list every positive class in positive= "
            "or map the rest to one negative label"
        )
    return next(iter(others)) if others else None


def scores_in_unit_interval(values: np.ndarray, *, column: str) -> np.ndarray:
    """``values`` as float64, every one finite and in [0, 1]; else a one-line error naming row and value."""
    try:
        out = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        bad = next(i for i, v in enumerate(values.tolist()) if not isinstance(v, int | float))
        raise CorpusError(
            f"score column {column!r} holds {values[bad]!r} at row {bad}; scores must be numbers in [0, 1]"
        ) from None
    bad_rows = np.flatnonzero(~np.isfinite(out) | (out < 0) | (out > 1))
    if bad_rows.size:
        i = int(bad_rows[0])
        raise CorpusError(
            f"score column {column!r} holds {float(out[i])!r} at row {i} ({bad_rows.size} such rows); scores must be "
            "probabilities in [0, 1]: fill missing scores, or rescale (e.g. a sigmoid of logits)"
        )
    return out


@dataclass(frozen=True)
class Items:
    """Checked columns of an evaluation; ``classes`` are the positive classes (one for a binary task)."""

    labels: np.ndarray  # [n] object: the human label of every item
    classes: tuple[Hashable, ...]  # the positive classes, in the order given
    negative: Hashable | None  # the one other label value (None when every label is positive)
    predictions: dict[str, np.ndarray] = field(default_factory=dict)  # model -> [n] object predictions
    scores: dict[str, dict[Hashable, np.ndarray]] = field(default_factory=dict)  # model -> class -> [n] float
    texts: list[str] | None = None  # the texts (needed for script, code-mixed and transliterated slices)
    lang: list[str] | None = None  # language label per item ("hin", "hin_Latn")
    policy: list[str] | None = None  # policy category per item
    extra: dict[str, list[str]] = field(default_factory=dict)  # extra slice columns: name -> value per item

    @property
    def n(self) -> int:
        return len(self.labels)

    @property
    def models(self) -> list[str]:
        return list(self.predictions)

    @property
    def binary(self) -> bool:
        return len(self.classes) == 1

    def truth(self, cls: Hashable) -> np.ndarray:
        """[n] bool: the label is ``cls``."""
        return np.fromiter((v == cls for v in self.labels.tolist()), dtype=bool, count=self.n)

    def predicted(self, model: str, cls: Hashable) -> np.ndarray:
        """[n] bool: ``model`` predicts ``cls``."""
        return np.fromiter((v == cls for v in self.predictions[model].tolist()), dtype=bool, count=self.n)

    def score(self, model: str, cls: Hashable) -> np.ndarray | None:
        """[n] scores of ``model`` for ``cls``, or None when it has none."""
        return self.scores.get(model, {}).get(cls)


def _as_strings(values: np.ndarray, *, role: str) -> list[str]:
    out = []
    for i, v in enumerate(values.tolist()):
        if _missing(v):
            raise CorpusError(f"{role} is empty at row {i}; fill it (e.g. 'und' for an unknown language)")
        out.append(str(v))
    return out


def _texts(values: np.ndarray, *, column: str) -> list[str]:
    bad = next((i for i, v in enumerate(values.tolist()) if not isinstance(v, str)), None)
    if bad is not None:
        raise CorpusError(
            f"text column {column!r} holds {values[bad]!r} at row {bad}, not a string; give every item its text"
        )
    return list(values.tolist())


def _role(column: Column, role: str) -> str:
    return column if isinstance(column, str) else f"<{role} values>"


def _model_scores(
    data: Any, name: str, spec: ScoreSpec, classes: tuple[Hashable, ...], n: int
) -> dict[Hashable, np.ndarray]:
    if isinstance(spec, Mapping):
        unknown = [c for c in spec if c not in classes]
        if unknown:
            raise CorpusError(
                f"scores of {name!r} name class {unknown[0]!r}, not one of positive={list(classes)!r}"
            )
        per_class = dict(spec)
    elif len(classes) == 1:
        per_class = {classes[0]: spec}
    else:
        raise CorpusError(
            f"scores of {name!r}: a multi-class task needs one score column per class, "
            f"e.g. scores={{{name!r}: {{{classes[0]!r}: 'p_{classes[0]}', ...}}}}"
        )
    out = {}
    for cls, column in per_class.items():
        values = column_values(data, column, role=f"scores[{name!r}]", n=n)
        out[cls] = scores_in_unit_interval(values, column=_role(column, f"{name} scores"))
    return out


def _check_predictions(values: np.ndarray, allowed: set[Hashable], *, column: str) -> None:
    bad = set(values.tolist()) - allowed
    if bad:
        shown = _shown(sorted(_first_rows(values, bad), key=lambda t: t[0]))
        raise CorpusError(
            f"prediction column {column!r} holds {shown}, not a label value ({sorted(map(repr, allowed))}); "
            "map predictions to the labels' values"
        )


def prepare_items(
    data: Any,
    *,
    label: Column,
    positive: Hashable | Sequence[Hashable] = 1,
    predictions: Mapping[str, Column] | None = None,
    scores: Mapping[str, ScoreSpec] | None = None,
    text: Column | None = None,
    lang: Column | None = None,
    policy: Column | None = None,
    slices: Sequence[str] = (),
    threshold: float = 0.5,
) -> Items:
    """Read and check the columns of an evaluation (see the module docstring).

    A model named in ``scores`` but not in ``predictions`` predicts the class of its highest score when
    that score is at least ``threshold`` (binary: positive when score >= threshold), else the negative.
    """
    n = table_length(data)
    if n == 0:
        raise CorpusError("the data has no rows; give at least one labelled item")
    classes: tuple[Hashable, ...] = (
        tuple(positive) if isinstance(positive, list | tuple | set | frozenset) else (positive,)
    )
    if not classes or len(set(classes)) != len(classes):
        raise CorpusError(f"positive= must name one or more distinct classes, got {positive!r}")
    labels = column_values(data, label, role="label", n=n)
    negative = check_labels(labels, classes, column=_role(label, "label"))
    preds = {
        name: column_values(data, col, role=f"predictions[{name!r}]", n=n)
        for name, col in (predictions or {}).items()
    }
    for name, values in preds.items():
        allowed = set(classes) | ({negative} if negative is not None else set())
        extra = set(values.tolist()) - set(classes)
        if negative is None and len(extra) == 1:  # every label positive: the predictions name the negative
            allowed |= extra
        _check_predictions(values, allowed, column=_role((predictions or {})[name], name))
    score_arrays = {
        name: _model_scores(data, name, spec, classes, n) for name, spec in (scores or {}).items()
    }
    for name, per_class in score_arrays.items():
        if name not in preds:
            preds[name] = _decide(per_class, classes, negative, threshold, n)
    if not preds:
        raise CorpusError("no model to evaluate: give predictions={name: column} or scores={name: column}")
    return Items(
        labels=labels,
        classes=classes,
        negative=negative,
        predictions=preds,
        scores=score_arrays,
        texts=None
        if text is None
        else _texts(column_values(data, text, role="text", n=n), column=_role(text, "text")),
        lang=None
        if lang is None
        else _as_strings(
            column_values(data, lang, role="lang", n=n), role=f"lang column {_role(lang, 'lang')!r}"
        ),
        policy=None
        if policy is None
        else _as_strings(
            column_values(data, policy, role="policy", n=n), role=f"policy column {_role(policy, 'policy')!r}"
        ),
        extra={
            c: _as_strings(column_values(data, c, role="slices", n=n), role=f"slice column {c!r}")
            for c in slices
        },
    )


def _decide(
    per_class: dict[Hashable, np.ndarray],
    classes: tuple[Hashable, ...],
    negative: Hashable | None,
    threshold: float,
    n: int,
) -> np.ndarray:
    order = [c for c in classes if c in per_class]
    stacked = np.stack([per_class[c] for c in order], axis=1)  # [n, k] scores of the scored classes
    best = stacked.argmax(axis=1)  # [n]
    fallback = negative if negative is not None else "<negative>"
    out = np.empty(n, dtype=object)
    for i, (b, s) in enumerate(zip(best.tolist(), stacked.max(axis=1).tolist(), strict=True)):
        out[i] = order[b] if s >= threshold else fallback
    return out
