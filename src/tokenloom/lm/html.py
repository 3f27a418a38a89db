"""The HTML page of a language-model evaluation or comparison: one self-contained file, no network.

A title, a line of settings, then sections of text, tables (:func:`tokenloom._tables.html_table`, the
one table formatter) and charts embedded as base64 PNGs. Every value is escaped with :func:`html.escape`.
What it does not do: compute anything, draw charts (``plots``) or write files (``writers``).
"""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Section", "render_page"]

_CSS = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1400px}
table{border-collapse:collapse;font-size:13px;margin:.5em 0}th,td{border:1px solid #ccc;padding:3px 6px;text-align:right}
th{background:#f3f3f3}td.l,th.l{text-align:left}img{max-width:100%;margin:1em 0}.muted{color:#666}
"""


@dataclass(frozen=True)
class Section:
    """One part of the page: a heading, notes, a table (already HTML) and charts."""

    title: str
    notes: Sequence[str] = ()  # paragraphs of plain text (escaped here)
    table: str = ""  # an HTML table from tokenloom._tables.html_table
    images: Sequence[tuple[str, bytes | None]] = ()  # (name, PNG bytes); None is skipped


def _image(name: str, png: bytes | None) -> str:
    if png is None:
        return ""
    data = base64.b64encode(png).decode("ascii")
    return f"<img id='{html.escape(name)}' alt='{html.escape(name)}' src='data:image/png;base64,{data}'>"


def render_page(title: str, meta: str, sections: Sequence[Section]) -> str:
    """The whole page: ``title``, ``meta`` (plain text) under it, then each section."""
    parts = []
    for s in sections:
        notes = "".join(f"<p class='muted'>{html.escape(n)}</p>" for n in s.notes)
        charts = "".join(_image(name, png) for name, png in s.images)
        parts.append(f"<h2>{html.escape(s.title)}</h2>{notes}{s.table}{charts}")
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{_CSS}</style></head><body><h1>{html.escape(title)}</h1>"
        f"<p class='muted'>{html.escape(meta)}</p>{''.join(parts)}</body></html>\n"
    )
