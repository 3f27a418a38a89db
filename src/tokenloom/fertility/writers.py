"""Writers of a fertility report table: CSV, Markdown, a self-contained HTML page, a compact terminal table.

:func:`write_report` writes ``report.csv``, ``report.md``, ``report.html`` (:mod:`tokenloom.fertility.html`: a
summary, the charts of :mod:`tokenloom.fertility.plots` embedded as base64 PNGs, a sortable table),
``lengths.csv`` (the histogram of tokens per document, ``df.attrs["lengths"]``, when the report has one),
``rejects.csv`` (every input set aside as bad input, ``df.attrs["rejects"]``; a header only when none),
``vocab_overlap.csv`` (shared ids and Jaccard overlap of every two languages, ``df.attrs["vocab_overlap"]``) and
the PNGs beside it, each file atomically (``tokenloom._atomic``). The Markdown shows, per tokenizer, the main
table and the retention / integrity / vocabulary / numbers table (not for ``metrics="lengths"`` reports) and
the tokens-per-document table
(:func:`tokenloom.fertility.length_tables.table_columns`). :func:`report_table` is what ``tokenloom
fertility --table`` prints (the tokens per document for a ``metrics="lengths"`` report). Every table is
rendered by :mod:`tokenloom._tables`. What it does not do: compute the table (``report``) or draw the charts
(``plots``). pandas is only used through the DataFrame it is given.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokenloom._atomic import atomic_write
from tokenloom._tables import format_cell, format_table, markdown_table
from tokenloom.corpus.records import REJECT_COLUMNS
from tokenloom.fertility import plots
from tokenloom.fertility.html import render_html
from tokenloom.fertility.length_tables import table_columns
from tokenloom.fertility.slices import KIND_ORDER

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["report_table", "to_markdown", "write_report"]


_TABLE_COLUMNS = (
    ("slice_kind", "kind", "{}"), ("slice", "slice", "{}"), ("texts", "texts", "{:d}"),
    ("fertility", "fertility", "{:.3f}"), ("fertility_lo", "lo", "{:.3f}"), ("fertility_hi", "hi", "{:.3f}"),
    ("continued_words", "cont.", "{:.1%}"), ("chars_per_token", "chars/tok", "{:.2f}"),
    ("bytes_per_token", "bytes/tok", "{:.2f}"), ("byte_fallback_rate", "fallback", "{:.2%}"),
    ("roundtrip_exact_rate", "roundtrip", "{:.1%}"), ("premium_mean", "premium", "{:.3f}"),
    ("premium_median", "median", "{:.3f}"), ("premium_lo", "p_lo", "{:.3f}"), ("premium_hi", "p_hi", "{:.3f}"),
    ("rel_attention_work", "attn work", "{:.2f}"), ("renyi_efficiency", "rényi", "{:.3f}"),
)  # fmt: skip


_MORE_COLUMNS = (
    ("slice_kind", "kind", "{}"), ("slice", "slice", "{}"), ("strr", "strr", "{:.1%}"),
    ("partial_token_rate", "partial tok", "{:.2%}"), ("split_char_rate", "split chars", "{:.2%}"),
    ("unk_char_rate", "unk chars", "{:.2%}"), ("valid", "valid", "{}"), ("distinct_ids", "ids", "{:d}"),
    ("vocab_share", "vocab", "{:.1%}"), ("unique_ids", "only here", "{:.0f}"), ("nsl", "nsl", "{:.3f}"),
    ("nsl_lo", "nsl_lo", "{:.3f}"), ("nsl_hi", "nsl_hi", "{:.3f}"), ("numbers", "numbers", "{:d}"),
    ("number_place_value_rate", "place-value", "{:.1%}"), ("number_boundary_f1", "boundary F1", "{:.3f}"),
)  # fmt: skip


def _report_rows(
    group: pd.DataFrame, columns: Sequence[tuple[str, str, str]] = _TABLE_COLUMNS
) -> list[list[str]]:
    return [
        [format_cell(getattr(row, col), spec) for col, _, spec in columns]
        for row in group.itertuples(index=False)
    ]


_HEADER = [h for _, h, _ in _TABLE_COLUMNS]
_ALIGN = "ll" + "r" * (len(_TABLE_COLUMNS) - 2)


_LENGTH_ID = (("slice_kind", "kind", "{}"), ("slice", "slice", "{}"), ("texts", "docs", "{:d}"), ("tokens", "tokens", "{:d}"))  # fmt: skip


def _length_table(group: pd.DataFrame, lengths: Sequence[tuple[str, str, str]]) -> str:
    columns = [*_LENGTH_ID, *lengths]
    rows = [
        [format_cell(getattr(r, c), spec) for c, _, spec in columns] for r in group.itertuples(index=False)
    ]
    return markdown_table([h for _, h, _ in columns], rows, align="ll" + "r" * (len(columns) - 2))


def to_markdown(df: pd.DataFrame) -> str:
    """The report as Markdown: per tokenizer, the main columns (intervals beside estimates; not for a
    ``metrics="lengths"`` report), then the tokens per document when the report has them."""
    lines = []
    lengths = table_columns(df)
    full = df.attrs.get("metrics", "full") == "full"
    for name, group in df.groupby("tokenizer", sort=False):
        lines += [f"### {name}", ""]
        if full:
            lines += [markdown_table(_HEADER, _report_rows(group), align=_ALIGN), ""]
            if all(c in group for c, _, _ in _MORE_COLUMNS):
                more = markdown_table(
                    [h for _, h, _ in _MORE_COLUMNS],
                    _report_rows(group, _MORE_COLUMNS),
                    align="ll" + "r" * (len(_MORE_COLUMNS) - 2),
                )
                lines += ["Retention, UTF-8 integrity, vocabulary use, reference and numbers:", "", more, ""]
        if lengths:
            lines += ["Tokens per document:", "", _length_table(group, lengths), ""]
    return "\n".join(lines)


_FERTILITY_HEADER = ["fertility", "95% CI", "premium", "chars/tok", "fallback"]


def _fertility_cells(r: Any) -> list[str]:
    """A slice row's fertility, its interval, premium, chars/token and fallback rate."""
    ci = f"[{format_cell(r.fertility_lo, '{:.2f}')}, {format_cell(r.fertility_hi, '{:.2f}')}]"
    return [
        format_cell(r.fertility, "{:.3f}"),
        ci,
        format_cell(r.premium_mean, "{:.2f}"),
        format_cell(r.chars_per_token, "{:.2f}"),
        format_cell(r.byte_fallback_rate, "{:.1%}"),
    ]


def _columns(df: pd.DataFrame) -> tuple[list[str], Callable[[Any], list[str]]]:
    """The per-tokenizer headers of :func:`report_table` and the cells of a slice row under them."""
    if df.attrs.get("metrics", "full") == "full":
        return _FERTILITY_HEADER, _fertility_cells
    columns = [("tokens", "tokens", "{:d}"), *table_columns(df)]
    return [h for _, h, _ in columns], lambda r: [format_cell(getattr(r, c), f) for c, _, f in columns]


def report_table(df: pd.DataFrame, *, kinds: Sequence[str] = KIND_ORDER, max_rows: int | None = None) -> str:
    """A compact terminal table: one line per slice, per tokenizer side by side its fertility and premium,
    or, for a ``metrics="lengths"`` report, its tokens and tokens per document
    (:func:`~tokenloom.fertility.length_tables.table_columns`)."""
    names = list(dict.fromkeys(df["tokenizer"]))
    sub = df[df["slice_kind"].isin(list(kinds))]
    slices = list(dict.fromkeys(zip(sub["slice_kind"], sub["slice"], strict=True)))
    if max_rows is not None:
        slices = slices[:max_rows]
    index = {(r.tokenizer, r.slice_kind, r.slice): r for r in sub.itertuples(index=False)}
    headers, cells = _columns(df)
    header = ["kind", "slice", "texts"]
    for name in names:
        prefix = f"{name} " if len(names) > 1 else ""
        header += [f"{prefix}{headers[0]}", *headers[1:]]
    rows = []
    for kind, label in slices:
        first = next(index[(n, kind, label)] for n in names if (n, kind, label) in index)
        row = [kind, label, str(first.texts)]
        for name in names:
            r = index.get((name, kind, label))
            row += [""] * len(headers) if r is None else cells(r)
        rows.append(row)
    return format_table(header, rows, align="ll" + "r" * (len(header) - 2))


def _rejects_csv(rows: Sequence[dict[str, object]]) -> str:
    """``rejects.csv``: one row per input set aside (:meth:`tokenloom.corpus.records.Reject.as_row`)."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=REJECT_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def write_report(
    df: pd.DataFrame, out: str | os.PathLike[str], *, title: str = "tokenloom fertility report"
) -> dict[str, Path]:
    """Write report.csv, report.md, lengths.csv, rejects.csv, report.html (charts embedded) and the chart PNGs
    into ``out``.

    Each file is written atomically; returns ``{kind: path}``.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    written["csv"] = atomic_write(out / "report.csv", df.to_csv(index=False))
    written["md"] = atomic_write(out / "report.md", f"# {title}\n\n" + to_markdown(df))
    if "rejects" in df.attrs:  # every document set aside as bad input: file, where, why (header only: none)
        written["rejects_csv"] = atomic_write(out / "rejects.csv", _rejects_csv(df.attrs["rejects"]))
    overlap = df.attrs.get("vocab_overlap")
    if overlap is not None:
        written["vocab_overlap_csv"] = atomic_write(out / "vocab_overlap.csv", overlap.to_csv(index=False))
    histogram = df.attrs.get("lengths")
    if histogram is not None:
        written["lengths_csv"] = atomic_write(out / "lengths.csv", histogram.to_csv(index=False))
    images = plots.render_all(df)
    for name, png in images.items():
        written[name] = atomic_write(out / f"{name}.png", png)
    written["html"] = atomic_write(out / "report.html", render_html(df, images, title))
    return written
