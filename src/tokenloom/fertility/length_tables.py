"""Tokens per document in a fertility report: the histogram table, the columns tables show, the headline.

A report row carries the distribution columns of :func:`tokenloom.fertility.lengths.distribution_columns`
(tokens per document: mean, p50 / p90 / p99, max; per context length ``C`` the share of documents longer
than ``C`` and the share of tokens beyond it); the totals are the row's ``texts``, ``tokens``, ``chars``
and ``bytes``. A document is one text of the corpus: a line of a FLORES file, a row of a table.

- :data:`HISTOGRAM_COLUMNS`: the columns of ``lengths.csv``, documents per log-spaced bin ``[bin_lo,
  bin_hi)`` for one tokenizer × slice (made as each slice is finished, ``accumulate.histogram_rows``:
  :meth:`LengthCounts.histogram <tokenloom.fertility.lengths.LengthCounts.histogram>` with
  :data:`BINS_PER_DECADE` bins per factor 10, so the counts are exact and sum to the slice's documents);
  :func:`histogram_frame` reads them as a table;
- :func:`contexts_of` / :func:`table_columns`: the context lengths a report was counted with (read from its
  columns) and the ``(column, header, format)`` of the length columns the Markdown and HTML tables show;
- :func:`headline`: the summary's line for one tokenizer (p99 tokens per document and the share of
  documents over the largest context, on the ``all`` slice).

What it does not do: count (``counts``, ``lengths``), write files (``writers``) or draw (``plots``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tokenloom.fertility.lengths import distribution_columns

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "BINS_PER_DECADE",
    "HISTOGRAM_COLUMNS",
    "contexts_of",
    "headline",
    "histogram_frame",
    "table_columns",
]

BINS_PER_DECADE = 10  # log-spaced histogram bins per factor 10 of tokens per document
HISTOGRAM_COLUMNS = ("tokenizer", "slice_kind", "slice", "bin_lo", "bin_hi", "documents")
_SHARE_DOCS = "share_docs_over_"


def histogram_frame(rows: Sequence[tuple[Any, ...]]) -> pd.DataFrame:
    """The histogram rows as a DataFrame under :data:`HISTOGRAM_COLUMNS` (int64 bins and counts)."""
    import pandas as pd

    frame = pd.DataFrame(list(rows), columns=list(HISTOGRAM_COLUMNS))
    return frame.astype({"bin_lo": "int64", "bin_hi": "int64", "documents": "int64"})


def contexts_of(df: pd.DataFrame) -> tuple[int, ...]:
    """The context lengths of a report's length columns, in order (``()`` when it has none)."""
    return tuple(int(c[len(_SHARE_DOCS) :]) for c in df.columns if str(c).startswith(_SHARE_DOCS))


def _short(context: int) -> str:
    return f"{context // 1024}k" if context % 1024 == 0 else str(context)


def table_columns(df: pd.DataFrame) -> tuple[tuple[str, str, str], ...]:
    """``(column, header, format)`` of the length columns of ``df`` (``()`` when it has none)."""
    contexts = contexts_of(df)
    if not contexts:
        return ()
    per_doc = [
        ("tok/doc", "{:.1f}"),
        ("p50", "{:.0f}"),
        ("p90", "{:.0f}"),
        ("p99", "{:.0f}"),
        ("max", "{:.0f}"),
    ]
    shares = [
        (f"{what} > {_short(c)}", spec)
        for c in contexts
        for what, spec in (("docs", "{:.1%}"), ("tok", "{:.2%}"))
    ]
    names = distribution_columns(contexts)
    return tuple((name, header, spec) for name, (header, spec) in zip(names, per_doc + shares, strict=True))


def _pct(value: float) -> str:
    return "–" if not math.isfinite(value) else f"{100 * value:.1f}%"


def headline(df: pd.DataFrame, tokenizer: str) -> str | None:
    """``tokens/doc p99 …, max …; docs over <largest context>: …%`` for a tokenizer's ``all`` slice
    (``None`` when the report has no length columns or no such row)."""
    contexts = contexts_of(df)
    rows = df[(df["tokenizer"] == tokenizer) & (df["slice_kind"] == "all")]
    if not contexts or rows.empty:
        return None
    row, top = rows.iloc[0], contexts[-1]
    return (
        f"{int(row['tokens']):,} tokens in {int(row['texts']):,} documents; tokens/doc p99 "
        f"{row['tokens_per_doc_p99']:.0f}, max {row['tokens_per_doc_max']:.0f}; over {top}: "
        f"{_pct(row[f'share_docs_over_{top}'])} of docs, {_pct(row[f'share_tokens_over_{top}'])} of tokens"
    )
