"""The evaluation's files: CSV and Markdown tables, the self-contained HTML page (escaped, sorted by gap)
and the same page in headless Chromium (no script errors, charts decoded, sorting and filtering work)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from html_tables import TableCells, run_probe
from tokenloom.evaluate import EvalConfig, evaluate_slices
from tokenloom.evaluate.cascade import ScoreStage, StageCost, evaluate_cascade
from tokenloom.evaluate.selection import selection_estimates
from tokenloom.evaluate.transforms import flip_rates
from tokenloom.evaluate.writers import write_evaluation

BAD = "b <script>alert(1)</script>"


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    rng = np.random.default_rng(2)
    texts = {
        "eng": "call me later",
        "hin": "मुझे बाद में फ़ोन करो",
        "hin_Latn": "mujhe baad mein phone karo",
        "rus": "позвони позже",
    }
    rows = []
    for lang, text in texts.items():
        for _ in range(50 if lang != "rus" else 12):  # Russian: under the minimum support
            y = int(rng.random() < 0.4)
            s = float(np.clip(0.6 * y + 0.4 * rng.random(), 0, 1))
            rows.append(dict(text=text, lang=lang, y=y, a=int(s > 0.5), b=y ^ int(rng.random() < (0.05 if lang == "hin_Latn" else 0.3)),
                             s=s, reviewed=rng.random() < 0.5, pi=0.5))  # fmt: skip
    data = pd.DataFrame(rows)
    config = EvalConfig(n_boot=100, min_support=20)
    ev = evaluate_slices(
        data,
        text="text",
        label="y",
        predictions={"a": "a", BAD: "b"},
        scores={"a": "s"},
        lang="lang",
        config=config,
    )
    cascade = evaluate_cascade(
        data,
        label="y",
        first=ScoreStage("s", 0.3, 0.7),
        second="b",
        costs=(StageCost(0.1), StageCost(1.0)),
        lang="lang",
        config=config,
    )
    selection = selection_estimates(
        data.assign(y=data["y"].where(data["reviewed"])),
        label="y",
        prediction="a",
        reviewed="reviewed",
        propensity="pi",
    )
    flips = flip_rates(
        data,
        lambda t: [int("phone" in x or "फ़ोन" in x) for x in t],
        text="text",
        label="y",
        lang="lang",
        config=config,
    )
    return write_evaluation(
        ev,
        tmp_path_factory.mktemp("eval") / "out",
        cascade=cascade,
        selection=selection,
        flips=flips,
        title="t & <t>",
    )


def test_every_file_is_written(written: dict[str, Path]) -> None:
    assert set(written) == {
        "metrics", "paired", "flips", "cascade", "frontier", "keywords", "selection", "transforms",
        "flipped_examples", "forest_png", "frontier_png", "md", "html",
    } - {"keywords"}  # fmt: skip
    metrics = pd.read_csv(written["metrics"])
    assert {"model", "class", "slice_kind", "slice", "f1", "f1_lo", "f1_hi", "flag", "rank", "gap"} <= set(
        metrics.columns
    )
    assert written["forest_png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = written["md"].read_text("utf-8")
    assert md.startswith("# t & <t>") and "| model | class | kind | slice |" in md
    # the predict function looks for "फ़ोन": removing the nukta (a combining mark) or transliterating flips it
    assert set(pd.read_csv(written["flipped_examples"])["transform"]) == {"diacritics", "translit"}


def test_page_is_self_contained_escaped_and_sorted_by_gap(written: dict[str, Path]) -> None:
    page = written["html"].read_text("utf-8")
    assert "<script>alert" not in page and "b &lt;script&gt;" in page and "t &amp; &lt;t&gt;" in page
    assert "http://" not in page and "https://" not in page and page.count("src='data:image/png;base64,") == 2
    parsed = TableCells()
    parsed.feed(page)
    metrics = pd.read_csv(written["metrics"])
    body = parsed.tables["slices"][1:]
    assert len(body) == len(metrics)
    ranks = [r[7] for r in body if r[0] == "a"]
    assert ranks[0] == ""  # the all row first
    ranked = [int(x) for x in ranks[1:] if x]
    assert ranked == sorted(ranked) and ranks[-1] == ""  # worst gap first, flagged rows last
    assert {"paired", "cascade", "selection", "transforms"} <= set(parsed.tables)


_PROBE = """<script>addEventListener('load',()=>{
const t=document.getElementById('slices'),h=[...t.tHead.rows[0].cells],i=h.findIndex(c=>c.textContent==='gap');
const col=()=>[...t.tBodies[0].rows].map(r=>r.cells[i].dataset.v);const before=col();
h[i].click();const asc=col();h[i].click();const desc=col();
const q=document.getElementById('q');q.value='hin_Latn';q.dispatchEvent(new Event('input'));
const shown=[...t.tBodies[0].rows].filter(r=>!r.hidden).length;
const images=[...document.images].map(im=>[im.id,im.naturalWidth]);
const p=document.createElement('pre');p.id='probe';
p.textContent=JSON.stringify({errors:window.__errors,before,asc,desc,shown,images});document.body.appendChild(p);});
</script>"""


def test_page_in_headless_chromium(written: dict[str, Path], tmp_path: Path) -> None:
    page = written["html"].read_text("utf-8")
    result = run_probe(page, _PROBE, tmp_path)
    assert result["errors"] == []
    numbers = lambda col: [float(v) for v in col if v]  # noqa: E731
    assert numbers(result["asc"]) == sorted(numbers(result["before"]))
    assert numbers(result["desc"]) == sorted(numbers(result["before"]), reverse=True)
    metrics = pd.read_csv(written["metrics"])
    assert result["shown"] == int(metrics["slice"].str.contains("hin_Latn").sum())
    assert sorted(name for name, _ in result["images"]) == ["forest", "frontier"]
    assert all(width > 100 for _, width in result["images"])  # the PNGs decoded
