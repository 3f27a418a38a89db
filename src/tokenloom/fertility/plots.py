"""Matplotlib charts of a fertility report, rendered to PNG bytes (headless, Agg backend).

- :func:`fertility_chart`: fertility per language, languages grouped by script, one bar per tokenizer;
- :func:`premium_chart`: premium against the pivot per language (a line at 1), one bar per tokenizer;
- :func:`byte_fallback_chart`: byte-fallback rate per language, one bar per tokenizer.

Each returns PNG bytes; :func:`render_all` returns the three by name (``fertility``, ``premium``,
``byte_fallback``), skipping a chart with nothing to show. Bars are horizontal so that a hundred languages
stay readable. What it does not do: compute anything (the report does) or write files (``report``).
matplotlib is imported inside the functions.
"""

from __future__ import annotations

import io
import math
from typing import Any

__all__ = ["byte_fallback_chart", "fertility_chart", "premium_chart", "render_all"]


def _language_rows(df: Any) -> Any:
    sub = df[(df["slice_kind"] == "language")].copy()
    sub["_script"] = sub["script"].fillna("")
    return sub


def _bars(
    df: Any, column: str, *, title: str, xlabel: str, ref: float | None = None, percent: bool = False
) -> bytes | None:
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    sub = _language_rows(df)
    sub = sub[sub[column].notna()]
    if sub.empty:
        return None
    names = list(dict.fromkeys(sub["tokenizer"]))
    order = (
        sub.groupby(["_script", "slice"], sort=True)
        .size()
        .reset_index()[["_script", "slice"]]
        .itertuples(index=False)
    )
    labels = [(sc, sl) for sc, sl in order]
    values = {(r.tokenizer, r.slice): getattr(r, column) for r in sub.itertuples(index=False)}
    n, k = len(labels), len(names)
    height = max(3.0, 0.18 * n * max(1, k) ** 0.5 + 1.5)
    fig, ax = plt.subplots(figsize=(9, height))
    bar = 0.8 / k
    for j, name in enumerate(names):
        ys = [i + (j - (k - 1) / 2) * bar for i in range(n)]
        xs = [values.get((name, sl), math.nan) for _, sl in labels]
        if percent:
            xs = [100 * x for x in xs]
        ax.barh(ys, xs, height=bar, label=name)
    ax.set_yticks(range(n))
    ax.set_yticklabels([sl for _, sl in labels], fontsize=7)
    ax.set_ylim(n - 0.5, -0.5)  # first label on top, no empty margin
    prev = None
    for i, (sc, _) in enumerate(labels):  # script group separators
        if prev is not None and sc != prev:
            ax.axhline(i - 0.5, color="#999", linewidth=0.5)
        prev = sc
    if ref is not None:
        ax.axvline(ref, color="black", linewidth=0.8, linestyle="--")
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    return buf.getvalue()


def fertility_chart(df: Any) -> bytes | None:
    """Fertility (tokens per word) per language, grouped by script, one bar per tokenizer."""
    return _bars(
        df, "fertility", title="Fertility per language (grouped by script)", xlabel="tokens per word"
    )


def premium_chart(df: Any) -> bytes | None:
    """Premium against the pivot (mean tokens / pivot tokens on the same sentence) per language."""
    pivot = df.attrs.get("pivot") or (df["pivot"].iloc[0] if len(df) else "")
    return _bars(
        df, "premium_mean", title=f"Premium against {pivot}", xlabel="tokens / pivot tokens", ref=1.0
    )


def byte_fallback_chart(df: Any) -> bytes | None:
    """Share of tokens that are byte-fallback pieces, per language."""
    return _bars(df, "byte_fallback_rate", title="Byte-fallback rate", xlabel="% of tokens", percent=True)


def render_all(df: Any) -> dict[str, bytes]:
    """The charts that have data, as ``{name: PNG bytes}``."""
    charts = {"fertility": fertility_chart, "premium": premium_chart, "byte_fallback": byte_fallback_chart}
    out = {}
    for name, draw in charts.items():
        png = draw(df)
        if png is not None:
            out[name] = png
    return out
