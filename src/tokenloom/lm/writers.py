"""Writers of a bits-per-byte table: the terminal table, CSV, Markdown, a self-contained HTML page, a chart.

:func:`write_bpb` writes ``bpb.csv`` (every column of :data:`tokenloom.lm.evaluate.COLUMNS`), ``bpb.md``,
``bpb.html`` (:mod:`tokenloom.lm.html`, the chart embedded) and ``bpb.png``
(:func:`tokenloom.lm.plots.bpb_chart`), each atomically (``tokenloom._atomic``). :func:`bpb_table` is
what ``tokenloom eval-lm`` prints. Tables are rendered by :mod:`tokenloom._tables`. What it does not do:
compute the table.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokenloom._atomic import atomic_write
from tokenloom._tables import format_cell, format_table, html_table, markdown_table
from tokenloom.lm import plots
from tokenloom.lm.html import Section, render_page

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["BPB_HEADER", "bpb_cells", "bpb_table", "describe_scoring", "write_bpb"]

BPB_HEADER = ["kind", "slice", "docs", "tokens", "bytes", "bits/byte", "95% CI", "order-0", "bits/token"]
_ALIGN = "ll" + "r" * (len(BPB_HEADER) - 2)


def bpb_cells(r: Any) -> list[str]:
    """A row's cells under :data:`BPB_HEADER` (``r``: a row of the table as ``itertuples`` gives it)."""
    ci = f"[{format_cell(r.bpb_lo, '{:.3f}')}, {format_cell(r.bpb_hi, '{:.3f}')}]"
    return [
        str(r.slice_kind), str(r.slice), f"{r.documents:,}", f"{r.tokens:,}", f"{r.bytes:,}",
        format_cell(r.bpb, "{:.3f}"), ci, format_cell(r.order0, "{:.3f}"), format_cell(r.bits_per_token, "{:.2f}"),
    ]  # fmt: skip


def _rows(df: pd.DataFrame) -> list[list[str]]:
    return [bpb_cells(r) for r in df.itertuples(index=False)]


def describe_scoring(attrs: Mapping[Any, Any]) -> str:
    """One line stating how the table was scored (window, stride, start and end tokens, intervals)."""
    eos = (
        f"the end token (id {attrs.get('eos_id')}) scored after each document"
        if attrs.get("score_eos")
        else "the end of a document not scored"
    )
    return (
        f"documents scored whole: start token id {attrs.get('bos_id')} before each, windows of "
        f"{attrs.get('context')} tokens every {attrs.get('stride_used')} beyond the context; {eos}; "
        f"bits per byte = summed bits / UTF-8 bytes of the text; {attrs.get('level', 0.95):.0%} percentile "
        f"bootstrap intervals over documents ({attrs.get('n_boot')} resamples, seed {attrs.get('seed')}); "
        "order-0 = entropy of the slice's own byte distribution"
    )


def bpb_table(df: pd.DataFrame) -> str:
    """The table as aligned text, one line per slice."""
    return format_table(BPB_HEADER, _rows(df), align=_ALIGN)


def write_bpb(
    df: pd.DataFrame, out: str | os.PathLike[str], *, title: str = "tokenloom bits per byte"
) -> dict[str, Path]:
    """Write bpb.csv, bpb.md, bpb.html and bpb.png into ``out``; returns ``{kind: path}``."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    note = describe_scoring(df.attrs)
    written = {"csv": atomic_write(folder / "bpb.csv", df.to_csv(index=False))}
    md = f"# {title}\n\n{note}.\n\n{markdown_table(BPB_HEADER, _rows(df), align=_ALIGN)}\n"
    written["md"] = atomic_write(folder / "bpb.md", md)
    chart = plots.bpb_chart(df)
    if chart is not None:
        written["png"] = atomic_write(folder / "bpb.png", chart)
    section = Section(
        "Bits per byte per slice",
        table=html_table(BPB_HEADER, _rows(df), align=_ALIGN),
        images=[("bpb", chart)],
    )
    written["html"] = atomic_write(folder / "bpb.html", render_page(title, note, [section]))
    return written
