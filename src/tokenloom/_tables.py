"""The one table formatter of tokenloom: rows of cells as aligned text, Markdown or HTML; counted nouns.

Every command and report that prints or writes a table builds ``header`` and ``rows`` (cells already
formatted as strings, or values ``str()`` turns into text) and renders them here, so all tables share one
look: the first column left-aligned, the others right-aligned unless ``align`` says otherwise
(one letter per column, ``"l"`` or ``"r"``). :func:`plural` words the counts in summaries ("1 file",
"2 files"), :func:`set_aside` the bad input a batch job set aside. This module formats only: it computes nothing, imports nothing heavy and writes no files.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

__all__ = ["format_cell", "format_table", "html_table", "markdown_table", "plural", "set_aside"]

Cells = Sequence[object]


def format_cell(value: object, spec: str = "{}") -> str:
    """``spec.format(value)``; "–" for None and NaN; ``str(value)`` when the spec does not fit the value."""
    if value is None or (isinstance(value, float) and value != value):  # NaN is the one float != itself
        return "–"
    try:
        return spec.format(value)
    except (ValueError, TypeError):
        return str(value)


def _cells(header: Cells, rows: Sequence[Cells], align: str | None) -> tuple[list[list[str]], str]:
    table = [[str(c) for c in header], *[[str(c) for c in row] for row in rows]]
    for i, row in enumerate(table[1:], start=1):
        if len(row) != len(header):
            raise ValueError(f"table row {i} has {len(row)} cells but the header has {len(header)}")
    align = align or "l" + "r" * (len(header) - 1)
    if len(align) != len(header) or set(align) - {"l", "r"}:
        raise ValueError(f"align must give 'l' or 'r' for each of the {len(header)} columns, got {align!r}")
    return table, align


def format_table(header: Cells, rows: Sequence[Cells], *, align: str | None = None) -> str:
    """Rows as aligned plain text: a header line, a rule of dashes, one line per row (no trailing spaces).

    >>> print(format_table(["lang", "tokens"], [["eng_Latn", 12], ["tha_Thai", 130]]))
    lang      tokens
    --------  ------
    eng_Latn      12
    tha_Thai     130
    """
    table, align = _cells(header, rows, align)
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines = []
    for k, row in enumerate(table):
        parts = [c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(row, widths, align, strict=True)]
        lines.append("  ".join(parts).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def markdown_table(header: Cells, rows: Sequence[Cells], *, align: str | None = None) -> str:
    """Rows as a GitHub-flavoured Markdown table (``|`` in cells escaped)."""
    table, align = _cells(header, rows, align)
    esc = [[c.replace("|", "\\|") for c in row] for row in table]
    lines = ["| " + " | ".join(esc[0]) + " |"]
    lines.append("|" + "|".join("---" if a == "l" else "---:" for a in align) + "|")
    lines += ["| " + " | ".join(row) + " |" for row in esc[1:]]
    return "\n".join(lines)


def html_table(header: Cells, rows: Sequence[Cells], *, align: str | None = None) -> str:
    """Rows as an HTML ``<table>`` (cells escaped; left-aligned columns carry ``class="l"``)."""
    table, align = _cells(header, rows, align)

    def row(tag: str, cells: list[str]) -> str:
        attrs = [' class="l"' if a == "l" else "" for a in align]
        inner = "".join(f"<{tag}{at}>{html.escape(c)}</{tag}>" for c, at in zip(cells, attrs, strict=True))
        return f"<tr>{inner}</tr>"

    return "\n".join(["<table>", row("th", table[0]), *(row("td", r) for r in table[1:]), "</table>"])


def plural(n: int, noun: str, plural_form: str | None = None, *, sep: str = ",") -> str:
    """``n`` and ``noun`` in agreement: ``plural(1, "file")`` → ``"1 file"``, ``plural(1200, "line")`` →
    ``"1,200 lines"`` (thousands separated by ``sep``; ``plural_form`` for irregular nouns)."""
    word = noun if n == 1 else plural_form or noun + "s"
    number = f"{n:,}".replace(",", sep)
    return f"{number} {word}"


def set_aside(documents: int, files: int) -> str:
    """What a batch job set aside as bad input (``errors="skip"``), for its summary line: ``"3 documents and
    1 file set aside"`` (``documents`` as ``SourceStats.rejected`` counts them, ``files`` the whole files)."""
    return f"{plural(documents, 'document')} and {plural(files, 'file')} set aside"
