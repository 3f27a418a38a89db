"""A classifier judged by slice: metrics with intervals, paired models, cascades, selection bias, transforms.

Submodules: ``config`` (``EvalConfig``), ``items`` (reading and checking the columns), ``slices`` (which
slices an item belongs to: language, script, code-mixed, transliterated, policy), ``metrics`` (metric
definitions over bootstrap weights), ``samples`` (point and resampled values per model x class x slice),
``table`` (the metric table: intervals, flags, ranks), ``paired`` (paired differences, Holm, ranking flips),
``evaluation`` (``evaluate_slices``), ``keywords`` (keyword rules on ICU word boundaries), ``cascade``
(two-stage cascades and their frontier), ``selection`` (selection-bias-corrected feedback metrics),
``transforms`` (flip rates under normalization and transliteration), ``read`` (a table file into a
DataFrame), ``plots``, ``html`` and ``writers`` (the files). Names are imported lazily: ``import tokenloom.evaluate`` pulls in
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
    "CascadeResult": "tokenloom.evaluate.cascade",
    "KeywordStage": "tokenloom.evaluate.cascade",
    "ScoreStage": "tokenloom.evaluate.cascade",
    "StageCost": "tokenloom.evaluate.cascade",
    "evaluate_cascade": "tokenloom.evaluate.cascade",
    "keyword_matches": "tokenloom.evaluate.keywords",
    "SelectionResult": "tokenloom.evaluate.selection",
    "selection_estimates": "tokenloom.evaluate.selection",
    "FlipResult": "tokenloom.evaluate.transforms",
    "flip_rates": "tokenloom.evaluate.transforms",
    "read_table": "tokenloom.evaluate.read",
    "write_evaluation": "tokenloom.evaluate.writers",
}

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time _LAZY imports each name on first use
    from tokenloom.evaluate.cascade import (
        CascadeResult,
        KeywordStage,
        ScoreStage,
        StageCost,
        evaluate_cascade,
    )
    from tokenloom.evaluate.config import EvalConfig
    from tokenloom.evaluate.evaluation import Evaluation, evaluate_slices
    from tokenloom.evaluate.keywords import keyword_matches
    from tokenloom.evaluate.read import read_table
    from tokenloom.evaluate.selection import SelectionResult, selection_estimates
    from tokenloom.evaluate.transforms import FlipResult, flip_rates
    from tokenloom.evaluate.writers import write_evaluation

__all__ = [
    "CascadeResult",
    "EvalConfig",
    "Evaluation",
    "FlipResult",
    "KeywordStage",
    "ScoreStage",
    "SelectionResult",
    "StageCost",
    "evaluate_cascade",
    "evaluate_slices",
    "flip_rates",
    "keyword_matches",
    "read_table",
    "selection_estimates",
    "write_evaluation",
]


__getattr__, __dir__ = lazy_exports(globals(), _LAZY)
