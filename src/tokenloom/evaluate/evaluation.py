"""``evaluate_slices``: a classifier (or several) judged on every slice of a labelled table.

One call reads and checks the columns (:mod:`~tokenloom.evaluate.items`), forms the slices
(:mod:`~tokenloom.evaluate.slices`: language, script, code-mixed, transliterated, policy, extra columns),
computes every metric with bootstrap intervals per model x class x slice (:mod:`~tokenloom.evaluate.table`)
and, with two or more models, their paired differences with Holm-corrected p-values and where the ranking
flips (:mod:`~tokenloom.evaluate.paired`). The result is an :class:`Evaluation`: tidy DataFrames and a
text summary; :func:`tokenloom.evaluate.writers.write_evaluation` writes them as CSV, Markdown and HTML.
What it does not do: cascades (``cascade``), selection-bias estimates (``selection``) or transform checks
(``transforms``), which take their own columns.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tokenloom.evaluate.config import EvalConfig
from tokenloom.evaluate.items import Column, Items, ScoreSpec, as_table, prepare_items
from tokenloom.evaluate.paired import dominance, dominance_summary, paired_table
from tokenloom.evaluate.samples import all_samples
from tokenloom.evaluate.slices import Slice, item_slices
from tokenloom.evaluate.table import metric_table

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Evaluation", "evaluate_slices"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Evaluation:
    """What :func:`evaluate_slices` found: the metric table, paired differences and ranking flips."""

    metrics: pd.DataFrame  # one row per model x class x slice (tokenloom.evaluate.table)
    paired: pd.DataFrame  # one row per model pair x class x slice x metric (empty with one model)
    flips: pd.DataFrame  # the rows of ``paired`` where the overall ranking flips (tokenloom.evaluate.paired)
    items: Items  # the checked columns
    slices: list[Slice]  # every slice formed
    config: EvalConfig

    def summary(self) -> str:
        """The headline per model and class, the worst ranked slices, the flagged ones, and the ranking flips."""
        m = self.metrics
        metric = self.config.rank_by
        lines = []
        for (model, cls), g in m.groupby(["model", "class"], sort=False):
            top = g[g["slice_kind"] == "all"].iloc[0]
            worst = g[g["rank"].notna()].sort_values("rank").head(3)
            shown = ", ".join(f"{r.slice} {getattr(r, metric):.3f} (n={r.n})" for r in worst.itertuples())
            flagged = int((g["flag"] != "").sum())
            lines.append(
                f"{model} (class {cls}): {metric} {top[metric]:.3f} [{top[metric + '_lo']:.3f}, "
                f"{top[metric + '_hi']:.3f}] on {top['n']} items; worst slices: {shown or '–'}; "
                f"{flagged} slices flagged (not ranked)"
            )
        if len(self.paired):
            lines.append(dominance_summary(self.paired, alpha=1 - self.config.level))
        return "\n".join(lines)


def evaluate_slices(
    data: Any,
    *,
    label: Column,
    predictions: Mapping[str, Column] | None = None,
    scores: Mapping[str, ScoreSpec] | None = None,
    text: Column | None = None,
    lang: Column | None = None,
    policy: Column | None = None,
    positive: Hashable | Sequence[Hashable] = 1,
    slices: Sequence[str] = (),
    config: EvalConfig | None = None,
    quiet: bool = False,
) -> Evaluation:
    """Judge classifiers on every slice of ``data`` (a DataFrame, a mapping of columns, or the path of a
    CSV / TSV / JSON Lines / Parquet table).

    ``label`` is the human-label column; ``predictions`` maps a model name to its prediction column and
    ``scores`` to its score column (the probability of the positive class; for a multi-class task a mapping
    class -> column); ``positive`` is the positive label, or a list of classes (one-vs-rest each).
    ``text`` gives the script, code-mixed and transliterated slices, ``lang`` the language slices (and
    transliteration), ``policy`` a policy-category slice, ``slices`` extra slice columns. Columns may be
    given as names or as the values themselves. Bad input raises :class:`tokenloom.errors.CorpusError`
    naming the column, row and value. A progress bar is drawn on a terminal unless ``quiet``.
    """
    config = config or EvalConfig()
    data = as_table(data)
    items = prepare_items(
        data, label=label, positive=positive, predictions=predictions, scores=scores, text=text, lang=lang,
        policy=policy, slices=slices, threshold=config.threshold,
    )  # fmt: skip
    found = item_slices(items, mixed_min_share=config.mixed_min_share)
    log.debug("evaluating %d models on %d items in %d slices", len(items.models), items.n, len(found))
    samples = all_samples(items, found, config=config, quiet=quiet)
    paired = paired_table(samples, items.models, config=config)
    return Evaluation(
        metrics=metric_table(samples, config=config),
        paired=paired,
        flips=dominance(paired, alpha=1 - config.level),
        items=items,
        slices=found,
        config=config,
    )
