"""Writers of a tokenizer comparison: the terminal table, CSV, Markdown, an HTML page with charts.

:func:`write_compare` writes ``compare.csv`` (every column of
:data:`tokenloom.lm.compare_table.COMPARE_COLUMNS`), ``correlations.csv``, ``compare.md`` (both tables
and the settings), ``bpb.png`` and ``correlation.png`` (:mod:`tokenloom.lm.plots`) and ``compare.html``
(the tables and both charts, self-contained), each atomically. :func:`compare_text` is what
``tokenloom compare-lm`` prints. What it does not do: compute the tables.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokenloom._atomic import atomic_write
from tokenloom._tables import format_cell, format_table, html_table, markdown_table
from tokenloom.lm import plots
from tokenloom.lm.compare_table import correlation_frame
from tokenloom.lm.html import Section, render_page

if TYPE_CHECKING:
    import pandas as pd

    from tokenloom.lm.correlation import Correlation

__all__ = ["COMPARE_HEADER", "CORRELATION_HEADER", "compare_text", "correlation_text", "write_compare"]

COMPARE_HEADER = [
    "tokenizer", "language", "vocab", "bits/byte", "95% CI", "order-0", "fertility", "premium", "STRR",
    "bytes/token", "train tokens", "train FLOPs", "wall s",
]  # fmt: skip
_ALIGN = "ll" + "r" * (len(COMPARE_HEADER) - 2)
CORRELATION_HEADER = ["metric", "Spearman rho (with bits/byte)", "95% CI", "points", "languages"]
_CORR_ALIGN = "l" + "r" * (len(CORRELATION_HEADER) - 1)


def _cells(r: Any) -> list[str]:
    ci = f"[{format_cell(r.bpb_lo, '{:.3f}')}, {format_cell(r.bpb_hi, '{:.3f}')}]"
    return [
        str(r.tokenizer), str(r.language), f"{r.vocab_size:,}", format_cell(r.bpb, "{:.3f}"), ci,
        format_cell(r.order0, "{:.3f}"), format_cell(r.fertility, "{:.2f}"), format_cell(r.premium, "{:.2f}"),
        format_cell(r.strr, "{:.3f}"), format_cell(r.bytes_per_token, "{:.2f}"), f"{r.train_tokens:,}",
        f"{r.train_flops:.3g}", f"{r.wall_seconds:.1f}",
    ]  # fmt: skip


def _corr_cells(c: Correlation) -> list[str]:
    ci = f"[{format_cell(c.lo, '{:+.2f}')}, {format_cell(c.hi, '{:+.2f}')}]"
    return [c.metric, format_cell(c.rho, "{:+.3f}"), ci, str(c.points), str(c.groups)]


def compare_text(table: pd.DataFrame) -> str:
    """The comparison as aligned text, one line per tokenizer and language."""
    return format_table(COMPARE_HEADER, [_cells(r) for r in table.itertuples(index=False)], align=_ALIGN)


def correlation_text(correlations: Sequence[Correlation]) -> str:
    """The rank correlations as aligned text, one line per metric."""
    return format_table(CORRELATION_HEADER, [_corr_cells(c) for c in correlations], align=_CORR_ALIGN)


def write_compare(
    table: pd.DataFrame,
    correlations: Sequence[Correlation],
    out: str | os.PathLike[str],
    *,
    notes: Sequence[str] = (),
    title: str = "tokenloom: what a tokenizer does to a model",
) -> dict[str, Path]:
    """Write the comparison's files into ``out`` (module docstring); ``notes``: lines stating the settings
    (budget, model, scoring). Returns ``{kind: path}``."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    rows = [_cells(r) for r in table.itertuples(index=False)]
    corr_rows = [_corr_cells(c) for c in correlations]
    written = {
        "csv": atomic_write(folder / "compare.csv", table.to_csv(index=False)),
        "correlations": atomic_write(
            folder / "correlations.csv", correlation_frame(correlations).to_csv(index=False)
        ),
    }
    md = "\n\n".join(
        [
            f"# {title}", *notes, markdown_table(COMPARE_HEADER, rows, align=_ALIGN),
            "## Does an intrinsic metric predict bits per byte?",
            markdown_table(CORRELATION_HEADER, corr_rows, align=_CORR_ALIGN),
        ]
    )  # fmt: skip
    written["md"] = atomic_write(folder / "compare.md", md + "\n")
    bpb_png = plots.bpb_chart(table.assign(slice_kind="language", slice=table["language"]))
    corr_png = plots.correlation_chart(table, correlations)
    for name, png in (("bpb", bpb_png), ("correlation", corr_png)):
        if png is not None:
            written[f"{name}_png"] = atomic_write(folder / f"{name}.png", png)
    sections = [
        Section(
            "Bits per byte per tokenizer and language", table=html_table(COMPARE_HEADER, rows, align=_ALIGN),
            images=[("bpb", bpb_png)],
        ),
        Section(
            "Does an intrinsic metric predict bits per byte?",
            notes=["Spearman's rank correlation over every (tokenizer, language) point; the interval "
                   "resamples languages (a percentile bootstrap)."],
            table=html_table(CORRELATION_HEADER, corr_rows, align=_CORR_ALIGN), images=[("correlation", corr_png)],
        ),
    ]  # fmt: skip
    written["html"] = atomic_write(folder / "compare.html", render_page(title, " ".join(notes), sections))
    return written
