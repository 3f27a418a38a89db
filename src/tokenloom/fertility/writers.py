"""Writers of a fertility report table: CSV, Markdown, a self-contained HTML page, a compact terminal table.

:func:`write_report` writes ``report.csv``, ``report.md``, ``report.html`` (:mod:`tokenloom.fertility.html`: a summary, the charts of
:mod:`tokenloom.fertility.plots` embedded as base64 PNGs, a sortable table) and the PNGs beside it, each file atomically
(``tokenloom._atomic``). :func:`format_table` is what ``tokenloom fertility`` prints. What it does not do:
compute the table (``report``) or draw the charts (``plots``). pandas is only used through the DataFrame
it is given.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["format_table", "to_markdown", "write_report"]

_KIND_ORDER = ("all", "language", "script", "code_mixed", "transliterated", "code")


_TABLE_COLUMNS = (
    ("slice_kind", "kind", "{}"), ("slice", "slice", "{}"), ("texts", "texts", "{:d}"),
    ("fertility", "fertility", "{:.3f}"), ("fertility_lo", "lo", "{:.3f}"), ("fertility_hi", "hi", "{:.3f}"),
    ("continued_words", "cont.", "{:.1%}"), ("chars_per_token", "chars/tok", "{:.2f}"),
    ("bytes_per_token", "bytes/tok", "{:.2f}"), ("byte_fallback_rate", "fallback", "{:.2%}"),
    ("roundtrip_exact_rate", "roundtrip", "{:.1%}"), ("premium_mean", "premium", "{:.3f}"),
    ("premium_median", "median", "{:.3f}"), ("premium_lo", "p_lo", "{:.3f}"), ("premium_hi", "p_hi", "{:.3f}"),
    ("rel_attention_work", "attn work", "{:.2f}"), ("renyi_efficiency", "rényi", "{:.3f}"),
)  # fmt: skip


def _fmt(value: Any, spec: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    try:
        return spec.format(value)
    except (ValueError, TypeError):
        return str(value)


def to_markdown(df: Any) -> str:
    """The report as Markdown: one table per tokenizer, the main columns, intervals beside estimates."""
    lines = []
    for name, group in df.groupby("tokenizer", sort=False):
        lines += [f"### {name}", ""]
        lines.append("| " + " | ".join(h for _, h, _ in _TABLE_COLUMNS) + " |")
        lines.append("|" + "|".join("---" if i < 2 else "---:" for i in range(len(_TABLE_COLUMNS))) + "|")
        for row in group.itertuples(index=False):
            cells = [_fmt(getattr(row, col), spec) for col, _, spec in _TABLE_COLUMNS]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def format_table(df: Any, *, kinds: Sequence[str] = _KIND_ORDER, max_rows: int | None = None) -> str:
    """A compact terminal table: one line per slice, fertility and premium per tokenizer side by side."""
    names = list(dict.fromkeys(df["tokenizer"]))
    sub = df[df["slice_kind"].isin(list(kinds))]
    slices = list(dict.fromkeys(zip(sub["slice_kind"], sub["slice"], strict=True)))
    if max_rows is not None:
        slices = slices[:max_rows]
    index = {(r.tokenizer, r.slice_kind, r.slice): r for r in sub.itertuples(index=False)}
    width = max([len(s) for _, s in slices] + [5])
    head1 = f"{'kind':<14} {'slice':<{width}} {'texts':>6}"
    head2 = " " * len(head1)
    for name in names:
        cell = f" | {'fert':>6} {'[95% CI]':>15} {'prem':>6} {'c/tok':>5} {'fb%':>5}"
        head1 += f" | {name[: len(cell) - 3]:<{len(cell) - 3}}"
        head2 += cell
    out = [head1, head2, "-" * len(head2)]
    for kind, label in slices:
        first = next(index[(n, kind, label)] for n in names if (n, kind, label) in index)
        line = f"{kind:<14} {label:<{width}} {first.texts:>6}"
        for name in names:
            r = index.get((name, kind, label))
            if r is None:
                line += " | " + " " * 41
                continue
            ci = f"[{_fmt(r.fertility_lo, '{:.2f}')}, {_fmt(r.fertility_hi, '{:.2f}')}]"
            line += (
                f" | {_fmt(r.fertility, '{:.3f}'):>6} {ci:>15} {_fmt(r.premium_mean, '{:.2f}'):>6}"
                f" {_fmt(r.chars_per_token, '{:.2f}'):>5} {_fmt(100 * r.byte_fallback_rate, '{:.1f}'):>5}"
            )
        out.append(line)
    return "\n".join(out)


def write_report(
    df: Any, out: str | os.PathLike[str], *, title: str = "tokenloom fertility report"
) -> dict[str, Path]:
    """Write report.csv, report.md, report.html (charts embedded) and the chart PNGs into ``out``.

    Each file is written atomically; returns ``{kind: path}``.
    """
    from tokenloom._atomic import atomic_write
    from tokenloom.fertility import plots
    from tokenloom.fertility.html import render_html

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    written["csv"] = atomic_write(out / "report.csv", df.to_csv(index=False))
    written["md"] = atomic_write(out / "report.md", f"# {title}\n\n" + to_markdown(df))
    images = plots.render_all(df)
    for name, png in images.items():
        written[name] = atomic_write(out / f"{name}.png", png)
    written["html"] = atomic_write(out / "report.html", render_html(df, images, title))
    return written
