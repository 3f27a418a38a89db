"""The comparison report: summary numbers, charts, the self-contained HTML page in a real browser."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from html_tables import TableCells, run_probe
from tokenloom.fertility import plots
from tokenloom.fertility.html import TABLE_COLUMNS, render_html
from tokenloom.fertility.report import REPORT_COLUMNS
from tokenloom.fertility.summary import format_summary, gini, gini_reference, summarize
from tokenloom.fertility.writers import write_report


def _frame(premiums: dict[str, dict[str, tuple[str, float]]]) -> pd.DataFrame:
    """A report-shaped frame: {tokenizer: {language: (script, premium)}} plus per-script rows."""
    rows = []
    for tok, langs in premiums.items():
        for lang, (script, p) in langs.items():
            rows.append(
                dict(tokenizer=tok, slice_kind="language", slice=lang, lang=lang[:3], script=script, texts=10,
                     fertility=2.0 * p, fertility_lo=1.9 * p, fertility_hi=2.1 * p, premium_mean=p,
                     premium_lo=p - 0.05, premium_hi=p + 0.05, byte_fallback_rate=0.01, pivot="eng_Latn")
            )  # fmt: skip
        for script in sorted({s for s, _ in langs.values()}):
            ps = [p for s, p in langs.values() if s == script]
            rows.append(
                dict(tokenizer=tok, slice_kind="script", slice=script, lang="mul", script=script, texts=10,
                     fertility=2.0, premium_mean=sum(ps) / len(ps), pivot="eng_Latn")
            )  # fmt: skip
    df = pd.DataFrame(rows).reindex(columns=[*REPORT_COLUMNS, "pivot"])  # the rest: NaN
    df.attrs["pivot"] = "eng_Latn"
    return df


LANGS = {
    "eng_Latn": ("Latn", 1.0),
    "deu_Latn": ("Latn", 1.2),
    "rus_Cyrl": ("Cyrl", 1.6),
    "hin_Deva": ("Deva", 2.5),
    "tha_Thai": ("Thai", 3.0),
    "fra_Latn": ("Latn", 1.1),
    "ell_Grek": ("Grek", 1.4),
}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=1e3, allow_nan=False), min_size=1, max_size=40))
def test_gini_equals_pairwise_definition(values: list[float]) -> None:
    fast, ref = gini(values), gini_reference(values)
    assert (math.isnan(fast) and math.isnan(ref)) or fast == pytest.approx(ref, rel=1e-9, abs=1e-12)


def test_gini_known_answers() -> None:
    assert gini([1, 1, 1, 1]) == 0
    assert gini([0, 0, 0, 1]) == pytest.approx(0.75)  # one holds all: (n - 1) / n
    assert gini([1, 3]) == pytest.approx(0.25)  # |1-3|·2 / (2·4·2)
    with pytest.raises(ValueError, match="non-negative"):
        gini([-1, 2])


def test_summary_known_answers() -> None:
    df = _frame({"a": LANGS, "b": {k: (s, 1 + (p - 1) / 2) for k, (s, p) in LANGS.items()}})
    a, b = summarize(df)
    others = sorted(p for k, (_, p) in LANGS.items() if k != "eng_Latn")  # the pivot is excluded
    assert a.tokenizer == "a" and a.languages == 6 and a.pivot == "eng_Latn"
    assert a.median_premium == pytest.approx((others[2] + others[3]) / 2)
    assert (a.worst_premium, a.worst_language) == (3.0, "tha_Thai")
    assert a.share_above_1_5 == pytest.approx(3 / 6) and a.share_above_2 == pytest.approx(2 / 6)
    assert a.gini == pytest.approx(gini_reference(others))
    assert [k for k, _ in a.expensive_languages] == [
        "tha_Thai",
        "hin_Deva",
        "rus_Cyrl",
        "ell_Grek",
        "deu_Latn",
    ]
    assert a.expensive_scripts[0] == ("Thai", 3.0)
    assert b.worst_premium == pytest.approx(2.0) and b.share_above_2 == 0 and b.gini < a.gini
    text = format_summary(df)
    assert (
        "worst 3.00 (tha_Thai)" in text
        and "> 2×: 33%" in text
        and text.count("most expensive languages") == 2
    )


def test_summary_without_pivot_says_so() -> None:
    df = _frame({"a": {"deu_Latn": ("Latn", math.nan)}})
    df.attrs["pivot"] = ""
    assert summarize(df)[0].languages == 0
    assert "no premiums" in format_summary(df)


def test_charts_sorted_and_comparison_only_for_two() -> None:
    one = _frame({"a": LANGS})
    two = _frame({"a": LANGS, "b": LANGS})
    assert set(plots.render_all(one)) == {"fertility", "premium", "byte_fallback"}
    charts = plots.render_all(two)
    assert set(charts) == {"fertility", "premium", "byte_fallback", "comparison"}
    assert all(png[:8] == b"\x89PNG\r\n\x1a\n" for png in charts.values())
    colors = plots.script_colors(two)
    assert sorted(colors) == ["Cyrl", "Deva", "Grek", "Latn", "Thai"] and len(set(colors.values())) == 5


def test_html_page_is_self_contained_with_every_row() -> None:
    df = _frame({"a": LANGS, "b <script>": LANGS})
    page = render_html(df, plots.render_all(df), "t & <t>")
    assert "<script>alert" not in page and "b &lt;script&gt;" in page and "t &amp; &lt;t&gt;" in page
    assert "http://" not in page and "https://" not in page and "src='data:image/png;base64," in page
    parsed = TableCells()
    parsed.feed(page)
    assert len(parsed.tables["summary"]) == 1 + 2
    body = parsed.tables["rows"][1:]
    assert len(body) == len(df)
    at = [c for c, _, _ in TABLE_COLUMNS if c in df.columns].index("premium_mean")
    assert sorted(float(r[at]) for r in body if r[at]) == sorted(df["premium_mean"].dropna())


# Appended to a copy of the page: records script errors, clicks the premium header twice and reads that
# column's raw values after each click, then filters; the results go into a <pre id="probe"> that
# --dump-dom prints.
_PROBE = """<script>
const t=document.getElementById('rows'),h=[...t.tHead.rows[0].cells],i=h.findIndex(c=>c.textContent==='premium');
const col=()=>[...t.tBodies[0].rows].map(r=>r.cells[i].dataset.v);const before=col();
h[i].click();const asc=col();h[i].click();const desc=col();
document.getElementById('q').value='Thai';document.getElementById('q').dispatchEvent(new Event('input'));
const shown=[...t.tBodies[0].rows].filter(r=>!r.hidden).length;
const p=document.createElement('pre');p.id='probe';
p.textContent=JSON.stringify({errors:window.__errors,before,asc,desc,shown});document.body.appendChild(p);
</script>"""


def test_report_page_in_headless_chromium(tmp_path: Path) -> None:
    df = _frame({"a": LANGS, "b": {k: (s, 1 + (p - 1) / 2) for k, (s, p) in LANGS.items()}})
    code = df.iloc[[0]].assign(slice_kind="code", slice="python", premium_mean=math.nan)  # no premium
    df = pd.concat([df, code], ignore_index=True)
    df.attrs["pivot"] = "eng_Latn"
    write_report(df, tmp_path / "report")
    page = (tmp_path / "report" / "report.html").read_text("utf-8")
    result = run_probe(page, _PROBE, tmp_path)
    assert result["errors"] == []
    numbers = lambda col: [float(v) for v in col if v]  # noqa: E731
    assert result["before"] != result["asc"]
    assert numbers(result["asc"]) == sorted(numbers(result["before"]))
    assert numbers(result["desc"]) == sorted(numbers(result["before"]), reverse=True)
    assert result["asc"][-1] == "" and result["desc"][-1] == ""  # rows without a premium sort last
    assert result["shown"] == 4  # tha_Thai and the Thai script row, for each tokenizer
