"""Files of a vocabulary sweep: tables, charts against vocabulary size, one HTML page, the full report.

:func:`write_sweep_files` writes into a folder it is given (``fertility.sweep.write_sweep`` makes that
folder atomically): ``sweep.csv`` (one row per tokenizer), ``languages.csv`` (tokenizer × language costs),
``sweep_fertility.png`` / ``sweep_premium.png`` (one line per algorithm against vocabulary size, log scale),
``sweep.html`` (both tables and charts, self-contained) and ``report/`` (the fertility report of every
tokenizer, :func:`~tokenloom.fertility.writers.write_report`). :func:`format_sweep` is the terminal table.
"""

from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import TYPE_CHECKING

from tokenloom._atomic import atomic_write
from tokenloom._plot import png_bytes, pyplot
from tokenloom._tables import format_cell, format_table
from tokenloom.fertility.sweep_types import SweepResult
from tokenloom.fertility.writers import write_report

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["format_sweep", "sweep_charts", "write_sweep_files"]

# (column, header, format) of the terminal table and the page
_COLUMNS = (
    ("tokenizer", "tokenizer", "{}"), ("made", "made", "{}"), ("train_seconds", "train s", "{:.1f}"),
    ("fertility", "fertility", "{:.3f}"), ("premium_median", "premium med", "{:.3f}"),
    ("premium_spread", "spread", "{:.3f}"), ("premium_worst", "worst", "{:.3f}"),
    ("premium_gini", "Gini", "{:.3f}"), ("renyi_efficiency", "rényi", "{:.3f}"),
    ("byte_fallback_rate", "fallback", "{:.2%}"), ("strr", "strr", "{:.1%}"),
    ("distinct_ids", "ids used", "{:.0f}"), ("vocab_share", "vocab", "{:.1%}"),
    ("invalid_languages", "invalid", "{}"), ("embedding_params", "emb params", "{:,}"),
)  # fmt: skip


def format_sweep(table: pd.DataFrame) -> str:
    """The sweep table as aligned text, one line per tokenizer (a size that was not trained reads
    "not trained"; its reason is in the table's ``made`` column)."""
    rows = [[format_cell(getattr(r, c), s) for c, _, s in _COLUMNS] for r in table.itertuples(index=False)]
    for row in rows:
        row[1] = "not trained" if row[1].startswith("not trained: ") else row[1]
    return format_table([h for _, h, _ in _COLUMNS], rows, align="ll" + "r" * (len(_COLUMNS) - 2))


def _chart(table: pd.DataFrame, columns: dict[str, str], title: str, ylabel: str) -> bytes:
    fig, ax = pyplot().subplots(figsize=(6.5, 4.2))
    for algorithm, group in table.groupby("algorithm", sort=False):
        group = group.sort_values("vocab_size")
        for column, style in columns.items():
            label = f"{algorithm}" if len(columns) == 1 else f"{algorithm}: {column.replace('premium_', '')}"
            ax.plot(group["vocab_size"], group[column], style, marker="o", label=label)
    ax.set_xscale("log", base=2)
    sizes = sorted(set(table["vocab_size"]))
    ax.set_xticks(sizes)
    ax.set_xticklabels([f"{v / 1000:g}k" for v in sizes])
    ax.set_xlabel("vocabulary size")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return png_bytes(fig)


def sweep_charts(table: pd.DataFrame) -> dict[str, bytes]:
    """``{"sweep_fertility": PNG, "sweep_premium": PNG}``: fertility and premium against vocabulary size."""
    pivot_note = "median and worst language"
    return {
        "sweep_fertility": _chart(
            table, {"fertility": "-"}, "Fertility against vocabulary size", "tokens per word"
        ),
        "sweep_premium": _chart(
            table,
            {"premium_median": "-", "premium_worst": "--"},
            f"Premium against vocabulary size ({pivot_note})",
            "tokens / pivot tokens",
        ),
    }


def _page(result: SweepResult, charts: dict[str, bytes]) -> str:
    cfg = result.config
    images = "".join(
        f"<img alt='{name}' src='data:image/png;base64,{base64.b64encode(png).decode('ascii')}'>"
        for name, png in charts.items()
    )
    table = result.table.to_html(index=False, float_format=lambda x: f"{x:.4g}", border=0)
    langs = result.languages.to_html(index=False, float_format=lambda x: f"{x:.4g}", border=0)
    meta = html.escape(
        f"pivot {cfg.pivot} · costs for {cfg.preset} at a {cfg.context}-token reference context "
        f"(the pivot's content under {next(iter(result.tokenizers))}) · {cfg.dtype} · "
        f"{'tied' if cfg.tied else 'untied'} embeddings"
    )
    css = (
        "body{font-family:system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse;"
        "font-size:13px}th,td{border:1px solid #ccc;padding:3px 6px;text-align:right}img{margin:1em 1em 0 0}"
    )
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>tokenloom vocabulary sweep</title>"
        f"<style>{css}</style></head><body><h1>Vocabulary sweep</h1><p>{meta}</p>{images}"
        f"<h2>Per tokenizer</h2>{table}<h2>Per language</h2>{langs}"
        "<p>Per-slice details: report/report.html.</p></body></html>\n"
    )


def write_sweep_files(result: SweepResult, folder: Path) -> None:
    """Write every sweep file into ``folder`` (which exists)."""
    atomic_write(folder / "sweep.csv", result.table.to_csv(index=False))
    atomic_write(folder / "languages.csv", result.languages.to_csv(index=False))
    charts = sweep_charts(result.table)
    for name, png in charts.items():
        atomic_write(folder / f"{name}.png", png)
    atomic_write(folder / "sweep.html", _page(result, charts))
    write_report(result.report, folder / "report", title="tokenloom vocabulary sweep: fertility report")
