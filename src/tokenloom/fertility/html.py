"""The HTML fertility report: one self-contained page built for comparing tokenizers.

On top, the summary of :mod:`tokenloom.fertility.summary` (per tokenizer: median and worst premium, the
share of languages above 1.5× and 2×, the Gini coefficient, the most expensive languages and scripts);
then the charts of :mod:`tokenloom.fertility.plots`, embedded as base64 PNGs; then every row of the report
(with the tokens-per-document columns of :func:`tokenloom.fertility.length_tables.table_columns`; a
``metrics="lengths"`` report shows only those and its totals) in one table that sorts by any column
(click a header; click again to reverse) and filters by text, slice kind and tokenizer. A report with
perturbed slices also gets a tokenizer × perturbation table of premiums against the clean text (the mean
over languages of each perturbed slice's mean premium). The script is inline and the page loads nothing from the network: it is one file that
works offline and can be mailed around.

What it does not do: compute the report or draw the charts. No third-party HTML or JS library is used;
every value is escaped with :func:`html.escape`.
"""

from __future__ import annotations

import base64
import html
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tokenloom._tables import format_cell
from tokenloom.fertility.length_tables import headline, table_columns
from tokenloom.fertility.summary import summarize

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["TABLE_COLUMNS", "perturbation_premiums", "render_html"]

# (column, header, format) of the page's table; the raw value travels in data-v for numeric sorting
TABLE_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("tokenizer", "tokenizer", "{}"), ("slice_kind", "kind", "{}"), ("slice", "slice", "{}"),
    ("script", "script", "{}"), ("texts", "texts", "{:d}"), ("fertility", "fertility", "{:.3f}"),
    ("fertility_lo", "lo", "{:.3f}"), ("fertility_hi", "hi", "{:.3f}"), ("continued_words", "cont.", "{:.1%}"),
    ("chars_per_token", "chars/tok", "{:.2f}"), ("bytes_per_token", "bytes/tok", "{:.2f}"),
    ("byte_fallback_rate", "fallback", "{:.2%}"), ("roundtrip_exact_rate", "roundtrip", "{:.1%}"),
    ("premium_mean", "premium", "{:.3f}"), ("premium_lo", "p_lo", "{:.3f}"), ("premium_hi", "p_hi", "{:.3f}"),
    ("rel_attention_work", "attn work", "{:.2f}"), ("renyi_efficiency", "rényi", "{:.3f}"),
    ("strr", "strr", "{:.1%}"), ("partial_token_rate", "partial tok", "{:.2%}"),
    ("split_char_rate", "split chars", "{:.2%}"), ("unk_char_rate", "unk chars", "{:.2%}"),
    ("valid", "valid", "{}"), ("distinct_ids", "ids", "{:d}"), ("vocab_share", "vocab", "{:.1%}"),
    ("unique_ids", "only here", "{:.0f}"), ("nsl", "nsl", "{:.3f}"),
    ("number_place_value_rate", "place-value", "{:.1%}"),
)  # fmt: skip

_LENGTHS_ONLY = (*TABLE_COLUMNS[:5], ("tokens", "tokens", "{:d}"))  # identity, documents, tokens

_CSS = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1400px}
table{border-collapse:collapse;font-size:13px}th,td{border:1px solid #ccc;padding:3px 6px;text-align:right}
th{background:#f3f3f3;position:sticky;top:0}td.t{text-align:left}#rows th{cursor:pointer;user-select:none}
#rows th.asc::after{content:" ▲"}#rows th.desc::after{content:" ▼"}img{max-width:100%;margin:1em 0}
.controls{margin:1em 0;display:flex;gap:1em;align-items:center}.muted{color:#666}
"""

# sorts by data-v (numbers numerically, text by localeCompare, blanks last); filters hide rows
_SCRIPT = """
(function(){
const table=document.getElementById('rows'),body=table.tBodies[0];
const heads=[...table.tHead.rows[0].cells];let col=-1,dir=1;
function key(td){const v=td.dataset.v;if(v===undefined||v==='')return null;const n=Number(v);
  return Number.isNaN(n)?v:n;}
function sortBy(i){dir=(col===i)?-dir:1;col=i;
  const rows=[...body.rows];rows.sort((a,b)=>{const x=key(a.cells[i]),y=key(b.cells[i]);
    if(x===null)return y===null?0:1;if(y===null)return -1;
    const c=(typeof x==='number'&&typeof y==='number')?x-y:String(x).localeCompare(String(y));return c*dir;});
  rows.forEach(r=>body.appendChild(r));
  heads.forEach((h,j)=>{h.classList.toggle('asc',j===i&&dir===1);h.classList.toggle('desc',j===i&&dir===-1);});}
heads.forEach((h,i)=>h.addEventListener('click',()=>sortBy(i)));
const q=document.getElementById('q'),kind=document.getElementById('kind'),tok=document.getElementById('tok');
function filter(){const t=q.value.toLowerCase();let shown=0;
  for(const r of body.rows){const ok=(!t||r.textContent.toLowerCase().includes(t))&&
    (!kind.value||r.dataset.kind===kind.value)&&(!tok.value||r.dataset.tok===tok.value);
    r.hidden=!ok;if(ok)shown++;}
  document.getElementById('shown').textContent=shown;}
[q,kind,tok].forEach(e=>e.addEventListener('input',filter));filter();
})();
"""


def _raw(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)


def _summary(df: pd.DataFrame) -> str:
    head = (
        "<tr><th>tokenizer</th><th>languages</th><th>median fertility</th><th>median premium</th>"
        "<th>worst premium</th><th>&gt; 1.5×</th><th>&gt; 2×</th><th>Gini</th>"
        "<th>most expensive languages</th><th>most expensive scripts</th><th>tokens per document</th>"
        "<th>median STRR</th><th>ids used</th><th>invalid pairs left out</th></tr>"
    )
    rows = []
    for s in summarize(df):
        langs = ", ".join(f"{k} {v:.2f}" for k, v in s.expensive_languages) or "–"
        scripts = ", ".join(f"{k} {v:.2f}" for k, v in s.expensive_scripts) or "–"
        cells = [
            f"<td class='t'>{html.escape(s.tokenizer)}</td>",
            f"<td>{s.languages}</td>",
            f"<td>{format_cell(s.median_fertility, '{:.2f}')}</td>",
            f"<td>{format_cell(s.median_premium, '{:.2f}')}</td>",
            f"<td>{format_cell(s.worst_premium, '{:.2f}')} ({html.escape(s.worst_language)})</td>",
            f"<td>{format_cell(s.share_above_1_5, '{:.0%}')}</td>",
            f"<td>{format_cell(s.share_above_2, '{:.0%}')}</td>",
            f"<td>{format_cell(s.gini, '{:.3f}')}</td>",
            f"<td class='t'>{html.escape(langs)}</td>",
            f"<td class='t'>{html.escape(scripts)}</td>",
            f"<td class='t'>{html.escape(headline(df, s.tokenizer) or '–')}</td>",
            f"<td>{format_cell(s.median_strr, '{:.1%}')}</td>",
            f"<td>{format_cell(s.distinct_ids, '{:.0f}')} ({format_cell(s.vocab_share, '{:.1%}')})</td>",
            f"<td class='t'>{len(s.left_out)}{': ' + html.escape(', '.join(s.left_out)) if s.left_out else ''}</td>",
        ]
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f"<h2>Summary</h2><table id='summary'>{head}{''.join(rows)}</table>"


def perturbation_premiums(df: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Tokenizer -> perturbation -> mean over languages of the perturbed slices' mean premium (against the
    clean text); empty without perturbed slices."""
    out: dict[str, dict[str, list[float]]] = {}
    rows = df[(df["slice_kind"] == "perturbed") & df["premium_mean"].notna()]
    for r in rows.itertuples(index=False):
        name = str(r.slice).rsplit("_", 1)[-1].removesuffix("-perturbed")
        out.setdefault(str(r.tokenizer), {}).setdefault(name, []).append(float(r.premium_mean))  # type: ignore[arg-type]
    return {t: {p: sum(v) / len(v) for p, v in ps.items()} for t, ps in out.items()}


def _perturbations(df: pd.DataFrame) -> str:
    table = perturbation_premiums(df)
    if not table:
        return ""
    names = list(dict.fromkeys(p for ps in table.values() for p in ps))
    head = "<tr><th>tokenizer</th>" + "".join(f"<th>{html.escape(p)}</th>" for p in names) + "</tr>"
    body = "".join(
        f"<tr><td class='t'>{html.escape(t)}</td>"
        + "".join(f"<td>{format_cell(ps.get(p, math.nan), '{:.3f}')}</td>" for p in names)
        + "</tr>"
        for t, ps in table.items()
    )
    return (
        "<h2>Robustness: premium of perturbed text against the clean text</h2>"
        f"<table id='perturbations'>{head}{body}</table>"
        "<p class='muted'>Mean over languages of tokens(perturbed) / tokens(clean) per sentence; 1 = unchanged.</p>"
    )


def _options(element_id: str, label: str, values: list[str]) -> str:
    opts = "".join(f"<option value='{html.escape(v)}'>{html.escape(v)}</option>" for v in values)
    return f"<label>{label} <select id='{element_id}'><option value=''>all</option>{opts}</select></label>"


def _table(df: pd.DataFrame) -> str:
    shown = TABLE_COLUMNS if df.attrs.get("metrics", "full") == "full" else _LENGTHS_ONLY
    columns = [c for c in shown if c[0] in df.columns] + list(table_columns(df))
    head = "".join(f"<th>{html.escape(h)}</th>" for _, h, _ in columns)
    body = []
    for row in df.itertuples(index=False):
        cells = []
        for col, _, spec in columns:
            value = getattr(row, col)
            cls = " class='t'" if spec == "{}" else ""
            cells.append(
                f"<td{cls} data-v='{html.escape(_raw(value))}'>{html.escape(format_cell(value, spec))}</td>"
            )
        body.append(
            f"<tr data-kind='{html.escape(str(row.slice_kind))}' data-tok='{html.escape(str(row.tokenizer))}'>"
            + "".join(cells)
            + "</tr>"
        )
    controls = (
        "<div class='controls'><label>filter <input id='q' type='search' placeholder='language, script…'></label>"
        + _options("kind", "kind", list(dict.fromkeys(map(str, df["slice_kind"]))))
        + _options("tok", "tokenizer", list(dict.fromkeys(map(str, df["tokenizer"]))))
        + f"<span class='muted'><span id='shown'>{len(df)}</span> of {len(df)} rows</span></div>"
    )
    table = f"<table id='rows'><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    return f"<h2>All slices</h2>{controls}{table}"


def render_html(df: pd.DataFrame, images: Mapping[str, bytes], title: str) -> str:
    """The whole page for a report DataFrame and its charts (``{name: PNG bytes}``)."""
    meta = (
        f"pivot: <b>{html.escape(str(df.attrs.get('pivot', '')))}</b> · word segmenter: "
        f"<b>{html.escape(str(df.attrs.get('segmenter', '')))}</b> · tokenizers: "
        f"{html.escape(', '.join(map(str, dict.fromkeys(df['tokenizer']))))}"
    )
    if df.attrs.get("replaced"):
        meta += f" · <b>{df.attrs['replaced']}</b> invalid UTF-8 sequences replaced by U+FFFD"
    charts = "".join(
        f"<h2>{html.escape(name)}</h2><img alt='{html.escape(name)}' "
        f"src='data:image/png;base64,{base64.b64encode(png).decode('ascii')}'>"
        for name, png in images.items()
    )
    notes = (
        "<p class='muted'>Full numbers: report.csv. Fertility = tokens / ICU words (Rust et al. 2021); premium = "
        "tokens / pivot tokens on the same sentence (Petrov et al. 2023), whiskers and lo/hi are bootstrap "
        "intervals; Rényi efficiency α=2.5 (Zouhar et al. 2023); Gini = inequality of the premiums across "
        "languages (0 = all equal).</p>"
    )
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{_CSS}</style></head><body><h1>{html.escape(title)}</h1><p>{meta}</p>"
        f"{_summary(df)}{charts}{_perturbations(df)}{_table(df)}{notes}<script>{_SCRIPT}</script></body></html>\n"
    )
