"""Do normalization and transliteration change a classifier's mind? Flip rates per slice and transform.

Text pipelines normalize before a model sees the text, and users write the same words in other forms; a
transform that removes meaning (diacritics that distinguish words, a script the model never learnt)
shows up as predictions that flip. :func:`flip_rates` scores the texts with a predict function (any
callable taking a list of texts and returning one prediction per text), applies each transform, re-scores
the texts the transform changed, and reports per slice (:mod:`~tokenloom.evaluate.slices`, on the original
texts) the share of items whose prediction flipped, with a bootstrap interval, and — with labels — the
change in F1, recall and accuracy. A sample of the flipped examples is kept (``FlipResult.examples``).

Transforms: ``nfkc`` (Unicode NFKC), ``casefold`` (``str.casefold``), ``translit`` (ICU ``Any-Latin``,
:func:`tokenloom.unicode.transliterate`), ``translit_ascii`` (then ``Latin-ASCII``), and every
perturbation of :mod:`tokenloom.fertility.perturb` (``diacritics``, ``case``, ``fullwidth``,
``zerowidth``, ``homoglyphs``, ``keyboard``, ``ocr``), seeded as the reports seed them.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, get_args

import numpy as np

from tokenloom.errors import ConfigError, CorpusError
from tokenloom.evaluate.config import EvalConfig
from tokenloom.evaluate.items import Column, as_table, column_values, prepare_items, table_length
from tokenloom.evaluate.samples import slice_samples
from tokenloom.evaluate.slices import item_slices
from tokenloom.fertility.bootstrap import bootstrap_ratio
from tokenloom.fertility.perturb import PERTURBATIONS, Perturbation, perturb
from tokenloom.unicode import transliterate

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DEFAULT_TRANSFORMS", "TRANSFORMS", "FlipResult", "Transform", "apply_transform", "flip_rates"]

Transform: TypeAlias = Literal["nfkc", "casefold", "translit", "translit_ascii"] | Perturbation
TRANSFORMS: tuple[str, ...] = (
    *get_args(Literal["nfkc", "casefold", "translit", "translit_ascii"]),
    *PERTURBATIONS,
)
DEFAULT_TRANSFORMS: tuple[Transform, ...] = ("nfkc", "casefold", "diacritics", "translit")
Predict: TypeAlias = Callable[[list[str]], Sequence[Hashable]]


def apply_transform(texts: Sequence[str], name: str, *, seed: int = 0) -> list[str]:
    """``texts`` after transform ``name`` (module docstring)."""
    if name == "nfkc":
        return [unicodedata.normalize("NFKC", t) for t in texts]
    if name == "casefold":
        return [t.casefold() for t in texts]
    if name in ("translit", "translit_ascii"):
        return transliterate(list(texts), ascii=name == "translit_ascii")
    if name in PERTURBATIONS:
        return [perturb(t, name, seed=seed) for t in texts]
    raise ConfigError(f"unknown transform {name!r}; choose from {', '.join(TRANSFORMS)}")


@dataclass(frozen=True)
class FlipResult:
    """Flip rates per transform x slice, and a sample of the flipped examples."""

    table: (
        pd.DataFrame
    )  # transform, slice_kind, slice, n, changed, flips, flip_rate (+ lo, hi), metric deltas
    examples: pd.DataFrame  # transform, row, lang, text, transformed, before, after, label


def _predict(predict: Predict, texts: list[str], *, what: str) -> np.ndarray:
    out = list(predict(texts))
    if len(out) != len(texts):
        raise CorpusError(
            f"the predict function returned {len(out)} predictions for {len(texts)} texts ({what}); return one per text"
        )
    values = np.empty(len(out), dtype=object)
    values[:] = out
    return values


def flip_rates(
    data: Any,
    predict: Predict,
    *,
    text: Column,
    label: Column | None = None,
    positive: Hashable = 1,
    lang: Column | None = None,
    policy: Column | None = None,
    slices: Sequence[str] = (),
    transforms: Sequence[str] = DEFAULT_TRANSFORMS,
    sample: int = 20,
    config: EvalConfig | None = None,
) -> FlipResult:
    """Prediction flip rates of ``predict`` under each transform, per slice (module docstring); with
    ``label``, the change of F1, recall and accuracy (the predictions are compared with ``positive``)."""
    config = config or EvalConfig()
    data = as_table(data)
    for name in transforms:
        if name not in TRANSFORMS:
            raise ConfigError(f"unknown transform {name!r}; choose from {', '.join(TRANSFORMS)}")
    n = table_length(data)
    texts_raw = column_values(data, text, role="text", n=n)
    base = _predict(predict, [str(t) for t in texts_raw.tolist()], what="original texts")
    labels = column_values(data, label, role="label", n=n) if label is not None else base
    items = prepare_items(
        {"<label>": labels, "<base>": base}, label="<label>", positive=positive, predictions={"base": "<base>"},
        text=texts_raw, lang=None if lang is None else column_values(data, lang, role="lang", n=n),
        policy=None if policy is None else column_values(data, policy, role="policy", n=n),
    ) if label is not None else None  # fmt: skip
    texts = [str(t) for t in texts_raw.tolist()]
    found = item_slices(
        items if items is not None else _unlabelled(texts, data, lang, policy, n),
        mixed_min_share=config.mixed_min_share,
    )
    rows, examples = [], []
    rng = np.random.default_rng(config.seed)
    for name in transforms:
        changed_texts = apply_transform(texts, name, seed=config.seed)
        changed = np.array([a != b for a, b in zip(texts, changed_texts, strict=True)])
        after = base.copy()
        at = np.flatnonzero(changed)
        if at.size:
            after[at] = _predict(predict, [changed_texts[i] for i in at.tolist()], what=name)
        flipped = np.array([a != b for a, b in zip(base.tolist(), after.tolist(), strict=True)])
        for sl in found:
            rows.append(
                _row(name, sl.kind, sl.name, sl.index, changed, flipped, base, after, items, positive, config)
            )
        picked = np.flatnonzero(flipped)
        if picked.size > sample:
            picked = np.sort(rng.choice(picked, sample, replace=False))
        for i in picked.tolist():
            examples.append({"transform": name, "row": i, "text": texts[i], "transformed": changed_texts[i],
                             "before": base[i], "after": after[i], "label": labels[i] if label is not None else None})  # fmt: skip
    import pandas as pd

    table = pd.DataFrame(rows)
    table.attrs.update(n_boot=config.n_boot, seed=config.seed, level=config.level)
    return FlipResult(
        table=table,
        examples=pd.DataFrame(
            examples, columns=["transform", "row", "text", "transformed", "before", "after", "label"]
        ),
    )


def _unlabelled(texts: list[str], data: Any, lang: Column | None, policy: Column | None, n: int) -> Any:
    """Items for slicing only (no labels): every item labelled 0, predicted 0."""
    zeros = [0] * n
    return prepare_items(
        {"<label>": zeros, "<base>": zeros}, label="<label>", predictions={"base": "<base>"}, text=texts,
        lang=None if lang is None else column_values(data, lang, role="lang", n=n),
        policy=None if policy is None else column_values(data, policy, role="policy", n=n),
    )  # fmt: skip


def _row(
    name: str, kind: str, slice_name: str, idx: np.ndarray, changed: np.ndarray, flipped: np.ndarray,
    base: np.ndarray, after: np.ndarray, items: Any, positive: Hashable, config: EvalConfig,
) -> dict[str, Any]:  # fmt: skip
    rate, lo, hi = bootstrap_ratio(
        flipped[idx].astype(np.float64),
        np.ones(idx.size),
        n_boot=config.n_boot,
        seed=config.seed,
        level=config.level,
    )
    row: dict[str, Any] = {
        "transform": name, "slice_kind": kind, "slice": slice_name, "n": int(idx.size),
        "changed": int(changed[idx].sum()), "flips": int(flipped[idx].sum()), "flip_rate": rate,
        "flip_rate_lo": lo, "flip_rate_hi": hi,
    }  # fmt: skip
    if items is not None:
        y = items.truth(positive)[idx]
        before_pred = np.array([v == positive for v in base[idx].tolist()])
        after_pred = np.array([v == positive for v in after[idx].tolist()])
        before, _ = slice_samples(y, before_pred, None, config=EvalConfig(n_boot=0))
        later, _ = slice_samples(y, after_pred, None, config=EvalConfig(n_boot=0))
        for metric in ("f1", "recall", "accuracy"):
            row[f"{metric}_before"], row[f"{metric}_after"] = before[metric], later[metric]
            row[f"{metric}_change"] = later[metric] - before[metric]
    return row
