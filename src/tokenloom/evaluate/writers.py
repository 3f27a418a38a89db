"""Writers of a classifier evaluation: CSV tables, a Markdown page, the HTML page and its charts.

:func:`write_evaluation` writes into one folder, each file atomically (``tokenloom._atomic``):
``metrics.csv`` (every model x class x slice), ``paired.csv`` and ``flips.csv`` (with two or more models),
``cascade.csv``, ``frontier.csv`` and ``keywords.csv`` (with a cascade), ``selection.csv`` (with
selection-bias estimates), ``transforms.csv`` and ``flipped_examples.csv`` (with flip rates),
``evaluation.md`` (the summary and the slice table sorted by gap), ``evaluation.html``
(:mod:`tokenloom.evaluate.html`) and the charts as PNG files (``forest.png``, ``frontier.png``).
:func:`to_markdown` is the Markdown page alone. What it does not do: compute anything.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from tokenloom._atomic import atomic_write
from tokenloom._tables import format_cell, markdown_table
from tokenloom.evaluate import plots
from tokenloom.evaluate.cascade import CascadeResult
from tokenloom.evaluate.evaluation import Evaluation
from tokenloom.evaluate.html import METRIC_TABLE, render_evaluation_html, sorted_by_gap
from tokenloom.evaluate.selection import SelectionResult
from tokenloom.evaluate.transforms import FlipResult

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["to_markdown", "write_evaluation"]


def _markdown_rows(df: pd.DataFrame) -> str:
    shown = [c for c in METRIC_TABLE if c[0] in df.columns]
    rows = [
        [format_cell(r[c], spec) if str(r[c]) not in ("nan", "<NA>") else "–" for c, _, spec in shown]
        for r in df.to_dict("records")
    ]
    return markdown_table([h for _, h, _ in shown], rows)


def to_markdown(evaluation: Evaluation, *, title: str = "Classifier evaluation") -> str:
    """The summary and the slice table sorted by gap, as Markdown."""
    summary = "\n\n".join(evaluation.summary().splitlines())
    return f"# {title}\n\n{summary}\n\n## Slices, worst gap first\n\n{_markdown_rows(sorted_by_gap(evaluation.metrics))}\n"


def write_evaluation(
    evaluation: Evaluation,
    out: str | os.PathLike[str],
    *,
    cascade: CascadeResult | None = None,
    selection: SelectionResult | None = None,
    flips: FlipResult | None = None,
    title: str = "Classifier evaluation",
) -> dict[str, Path]:
    """Write every table, the Markdown and HTML pages and the charts into ``out`` (module docstring);
    returns ``{name: path}``."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    tables: dict[str, pd.DataFrame | None] = {"metrics": evaluation.metrics}
    if len(evaluation.paired):
        tables |= {"paired": evaluation.paired, "flips": evaluation.flips}
    if cascade is not None:
        tables |= {"cascade": cascade.table, "frontier": cascade.frontier, "keywords": cascade.keywords}
    if selection is not None:
        tables["selection"] = selection.table
    if flips is not None:
        tables |= {"transforms": flips.table, "flipped_examples": flips.examples}
    written = {
        name: atomic_write(folder / f"{name}.csv", df.to_csv(index=False))
        for name, df in tables.items()
        if df is not None
    }
    images = {
        "forest": plots.forest_chart(evaluation.paired, evaluation.config.rank_by, flips=evaluation.flips)
        if len(evaluation.paired) else None,
        "frontier": plots.frontier_chart(cascade.frontier) if cascade is not None and cascade.frontier is not None else None,
    }  # fmt: skip
    for name, png in images.items():
        if png is not None:
            written[f"{name}_png"] = atomic_write(folder / f"{name}.png", png)
    written["md"] = atomic_write(folder / "evaluation.md", to_markdown(evaluation, title=title))
    page = render_evaluation_html(
        title, evaluation.summary(), evaluation.metrics, paired=evaluation.paired, images=images,
        cascade=None if cascade is None else cascade.table, selection=None if selection is None else selection.table,
        warnings=() if selection is None else selection.warnings, transforms=None if flips is None else flips.table,
    )  # fmt: skip
    written["html"] = atomic_write(folder / "evaluation.html", page)
    return written
