"""A parser for the tables of tokenloom's HTML pages: each table's cells (their ``data-v`` sort values) by
the table's ``id``; the report and evaluation page tests read their tables with it."""

from __future__ import annotations

from html.parser import HTMLParser


class TableCells(HTMLParser):
    """``tables[id]``: the rows of the table with that ``id``, each a list of its cells' ``data-v``."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self._table: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table":
            self._table = a.get("id") or ""
            self.tables[self._table] = []
        elif tag == "tr" and self._table is not None:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table is not None:
            self.tables[self._table][-1].append(a.get("data-v") or "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._table = None
