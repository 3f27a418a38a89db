"""The HTML page of a classifier evaluation: one self-contained file, no network.

On top the summary (headline per model, worst slices, ranking flips); then the slice table sorted by gap
(ranked slices from the worst, then the flagged ones), sortable by any column (click a header, again to
reverse) and filterable by text; the paired-difference forest plot and table; a cascade's table and
frontier chart; the selection-bias estimates with their warnings; the transform flip rates. Charts are
base64 PNGs from :mod:`tokenloom.evaluate.plots`. Every value is escaped with :func:`html.escape`.
What it does not do: compute anything or write files (``writers``).
"""

from __future__ import annotations

import base64
import html
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tokenloom._tables import format_cell

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["METRIC_TABLE", "render_evaluation_html", "sorted_by_gap"]

# (column, header, format) of the slice table; the raw value travels in data-v for sorting
METRIC_TABLE: tuple[tuple[str, str, str], ...] = (
    ("model", "model", "{}"), ("class", "class", "{}"), ("slice_kind", "kind", "{}"), ("slice", "slice", "{}"),
    ("n", "n", "{:d}"), ("positives", "pos", "{:d}"), ("gap", "gap", "{:+.3f}"), ("rank", "rank", "{}"),
    ("precision", "precision", "{:.3f}"), ("recall", "recall", "{:.3f}"), ("f1", "F1", "{:.3f}"),
    ("f1_lo", "F1 lo", "{:.3f}"), ("f1_hi", "F1 hi", "{:.3f}"), ("fpr", "FPR", "{:.3f}"), ("fnr", "FNR", "{:.3f}"),
    ("auroc", "AUROC", "{:.3f}"), ("auprc", "AUPRC", "{:.3f}"), ("ece", "ECE", "{:.3f}"), ("flag", "flag", "{}"),
)  # fmt: skip

_CSS = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1400px}
table{border-collapse:collapse;font-size:13px;margin:.5em 0}th,td{border:1px solid #ccc;padding:3px 6px;text-align:right}
th{background:#f3f3f3}td.t{text-align:left}table.sortable th{cursor:pointer;user-select:none}
th.asc::after{content:" ▲"}th.desc::after{content:" ▼"}img{max-width:100%;margin:1em 0}
.muted{color:#666}.warn{color:#a33}tr.flagged{color:#888}
"""

_SCRIPT = """
(function(){
function key(td){const v=td.dataset.v;if(v===undefined||v==='')return null;const n=Number(v);
  return Number.isNaN(n)?v:n;}
for(const table of document.querySelectorAll('table.sortable')){
  const body=table.tBodies[0],heads=[...table.tHead.rows[0].cells];let col=-1,dir=1;
  heads.forEach((h,i)=>h.addEventListener('click',()=>{dir=(col===i)?-dir:1;col=i;
    const rows=[...body.rows];rows.sort((a,b)=>{const x=key(a.cells[i]),y=key(b.cells[i]);
      if(x===null)return y===null?0:1;if(y===null)return -1;
      const c=(typeof x==='number'&&typeof y==='number')?x-y:String(x).localeCompare(String(y));return c*dir;});
    rows.forEach(r=>body.appendChild(r));
    heads.forEach((g,j)=>{g.classList.toggle('asc',j===i&&dir===1);g.classList.toggle('desc',j===i&&dir===-1);});}));
}
const q=document.getElementById('q'),rows=document.getElementById('slices').tBodies[0];
function filter(){const t=q.value.toLowerCase();let shown=0;
  for(const r of rows.rows){r.hidden=!!t&&!r.textContent.toLowerCase().includes(t);if(!r.hidden)shown++;}
  document.getElementById('shown').textContent=shown;}
q.addEventListener('input',filter);filter();
})();
"""


def _raw(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    try:
        if value is not None and value != value:  # pandas NA
            return ""
    except TypeError:  # pandas NA refuses bool()
        return ""
    return str(value)


def _cell(value: Any, spec: str) -> str:
    text = "–" if _raw(value) == "" else format_cell(value, spec)
    cls = " class='t'" if spec == "{}" else ""
    return f"<td{cls} data-v='{html.escape(_raw(value))}'>{html.escape(text)}</td>"


def _table(
    df: pd.DataFrame, columns: Sequence[tuple[str, str, str]], table_id: str, *, flagged: bool = False
) -> str:
    shown = [c for c in columns if c[0] in df.columns]
    head = "".join(f"<th>{html.escape(h)}</th>" for _, h, _ in shown)
    body = []
    for row in df.to_dict("records"):
        cls = " class='flagged'" if flagged and row.get("flag") else ""
        body.append(f"<tr{cls}>" + "".join(_cell(row[c], spec) for c, _, spec in shown) + "</tr>")
    return f"<table id='{table_id}' class='sortable'><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _auto(df: pd.DataFrame) -> list[tuple[str, str, str]]:
    """Every column, numbers with three decimals, counts as integers, text as is."""
    out = []
    for c in df.columns:
        kind = df[c].dtype.kind
        out.append((str(c), str(c), "{:.3f}" if kind == "f" else "{:d}" if kind in "iu" else "{}"))
    return out


def sorted_by_gap(metrics: pd.DataFrame) -> pd.DataFrame:
    """The slice table in page order: per model and class, the ``all`` row, then ranked slices from the
    worst (rank 1), then the flagged ones."""
    order = metrics.assign(
        _all=(metrics["slice_kind"] != "all").astype(int),
        _flag=metrics["rank"].isna().astype(int),
        _rank=metrics["rank"].astype("float64"),
    )
    order = order.sort_values(["model", "class", "_all", "_flag", "_rank"], kind="stable")
    return order.drop(columns=["_all", "_flag", "_rank"])


def _image(name: str, png: bytes | None) -> str:
    if png is None:
        return ""
    data = base64.b64encode(png).decode("ascii")
    return f"<img id='{html.escape(name)}' alt='{html.escape(name)}' src='data:image/png;base64,{data}'>"


def _section(title: str, body: str) -> str:
    return f"<h2>{html.escape(title)}</h2>{body}" if body else ""


def render_evaluation_html(
    title: str,
    summary: str,
    metrics: pd.DataFrame,
    *,
    paired: pd.DataFrame | None = None,
    images: Mapping[str, bytes | None] | None = None,
    cascade: pd.DataFrame | None = None,
    selection: pd.DataFrame | None = None,
    warnings: Sequence[str] = (),
    transforms: pd.DataFrame | None = None,
) -> str:
    """The whole page (module docstring)."""
    images = images or {}
    attrs = metrics.attrs
    meta = (
        f"{attrs.get('n_boot', '?')} bootstrap resamples (percentile intervals, seed {attrs.get('seed', '?')}, "
        f"level {attrs.get('level', '?')}); slices under {attrs.get('min_support', '?')} items and slices "
        f"without positives, negatives or predicted positives are flagged and not ranked; gap = "
        f"{attrs.get('rank_by', 'f1')} minus the model's value on all items."
    )
    summary_html = "".join(f"<p>{html.escape(line)}</p>" for line in summary.splitlines())
    controls = (
        "<p><label>filter <input id='q' type='search' placeholder='language, script…'></label> "
        f"<span class='muted'><span id='shown'>{len(metrics)}</span> of {len(metrics)} rows</span></p>"
    )
    parts = [
        _section("Summary", summary_html + f"<p class='muted'>{html.escape(meta)}</p>"),
        _section(
            "Slices, worst gap first",
            controls + _table(sorted_by_gap(metrics), METRIC_TABLE, "slices", flagged=True),
        ),
    ]
    if paired is not None and len(paired):
        parts.append(
            _section(
                "Paired differences",
                _image("forest", images.get("forest")) + _table(paired, _auto(paired), "paired"),
            )
        )
    if cascade is not None and len(cascade):
        parts.append(
            _section(
                "Cascade",
                _table(cascade, _auto(cascade), "cascade") + _image("frontier", images.get("frontier")),
            )
        )
    if selection is not None and len(selection):
        notes = "".join(f"<p class='warn'>{html.escape(w)}</p>" for w in warnings)
        parts.append(
            _section(
                "Selection-bias-corrected estimates", notes + _table(selection, _auto(selection), "selection")
            )
        )
    if transforms is not None and len(transforms):
        parts.append(
            _section("Prediction flips under transforms", _table(transforms, _auto(transforms), "transforms"))
        )
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{_CSS}</style></head><body><h1>{html.escape(title)}</h1>{''.join(parts)}"
        f"<script>{_SCRIPT}</script></body></html>\n"
    )
