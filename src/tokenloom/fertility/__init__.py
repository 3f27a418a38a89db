"""Fertility and multilingual slice reports: metrics, slices, the report table, its writers and charts.

Submodules: ``metrics`` (pure per-text counts and per-slice aggregates), ``bootstrap`` (seeded percentile
intervals over texts), ``slices`` (which slices a text belongs to; generated transliterated, numbers and
perturbed parts), ``perturb`` (seeded text perturbations), ``reference`` (the per-text definitions the fast
paths are tested against: offsets, round trips, counts), ``counting`` (one chunk of texts under every
tokenizer -> per-slice counts), ``counts`` (``SliceCounts``: mergeable per-slice accumulation, stratified
bootstrap), ``lengths`` (``LengthCounts``: mergeable tokens per document, percentiles within 1%, exact
context shares), ``report`` (``fertility_report``, ``fertility_by_source``: the loop over parts and chunks),
``writers`` (CSV / Markdown / HTML / terminal table), ``plots`` (matplotlib charts). Names are imported
lazily: ``import tokenloom.fertility`` pulls in neither numpy, pandas nor matplotlib, and nothing here ever
imports torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tokenloom._lazy import lazy_exports

# public name -> module that defines it (imported on first access)
_LAZY: dict[str, str] = {
    "fertility_report": "tokenloom.fertility.report",
    "fertility_by_source": "tokenloom.fertility.report",
    "ReportConfig": "tokenloom.fertility.report",
    "write_report": "tokenloom.fertility.writers",
    "REPORT_COLUMNS": "tokenloom.fertility.report",
}

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time _LAZY imports each name on first use
    from tokenloom.fertility.report import REPORT_COLUMNS, ReportConfig, fertility_by_source, fertility_report
    from tokenloom.fertility.writers import write_report

__all__ = [
    "REPORT_COLUMNS",
    "ReportConfig",
    "fertility_by_source",
    "fertility_report",
    "write_report",
]


__getattr__, __dir__ = lazy_exports(globals(), _LAZY)
