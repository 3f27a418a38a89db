"""A classifier judged by slice: metrics with intervals, paired models, cascades, selection bias, transforms.

Submodules: ``config`` (``EvalConfig``), ``items`` (reading and checking the columns), ``slices`` (which
slices an item belongs to: language, script, code-mixed, transliterated, policy), ``metrics`` (metric
definitions over bootstrap weights), ``samples`` (point and resampled values per model x class x slice),
``table`` (the metric table: intervals, flags, ranks), ``paired`` (paired differences, Holm, ranking flips),
``evaluation`` (``evaluate_slices``). Names are imported lazily: ``import tokenloom.evaluate`` pulls in
neither numpy nor pandas, and nothing here imports torch or scikit-learn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tokenloom._lazy import lazy_exports

# public name -> module that defines it (imported on first access)
_LAZY: dict[str, str] = {
    "EvalConfig": "tokenloom.evaluate.config",
    "Evaluation": "tokenloom.evaluate.evaluation",
    "evaluate_slices": "tokenloom.evaluate.evaluation",
}

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time _LAZY imports each name on first use
    from tokenloom.evaluate.config import EvalConfig
    from tokenloom.evaluate.evaluation import Evaluation, evaluate_slices

__all__ = [
    "EvalConfig",
    "Evaluation",
    "evaluate_slices",
]


__getattr__, __dir__ = lazy_exports(globals(), _LAZY)
