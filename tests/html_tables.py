"""Reading tokenloom's HTML pages in tests: each table's cells (their ``data-v`` sort values) by the table's
``id``, and a page run in headless Chromium with a probe script; the report and evaluation page tests use
both."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest


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


def run_probe(page: str, probe: str, folder: Path) -> dict[str, Any]:
    """Open ``page`` in headless Chromium with ``probe`` (a ``<script>`` that writes a JSON object into a
    ``<pre id="probe">``) appended and script errors caught into ``window.__errors``; the object, read from
    the DOM Chromium dumps. Skips without Chromium, except under ``CI=true`` (``.ci/run`` installs it)."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("CI=true but no chromium on PATH (.ci/run installs Debian's chromium package)")
        pytest.skip("no chromium on PATH (apt-get install chromium)")
    catcher = (
        "<script>window.__errors=[];addEventListener('error',e=>__errors.push(String(e.message)));</script>"
    )
    page = page.replace("<head>", "<head>" + catcher, 1).replace("</body>", probe + "</body>")
    path = folder / "probe.html"
    path.write_text(page, "utf-8")
    argv = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", path.as_uri()]
    dom = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True).stdout
    start = dom.index('<pre id="probe">') + len('<pre id="probe">')
    result: dict[str, Any] = json.loads(
        dom[start : dom.index("</pre>", start)].replace("&quot;", '"').replace("&amp;", "&")
    )
    return result
