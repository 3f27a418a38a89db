"""``tokenloom explain``: the attention lessons as playgrounds whose every number the library computes.

Each module computes one lesson and returns a plain, JSON-ready ``dict`` (floats at full precision;
non-finite values as the strings ``"nan"``, ``"inf"``, ``"-inf"``), and renders it as text:

- ``attention``: one query's attention step by step (scores, scaling, softmax, weighted values, output);
- ``rope``: rotary positions — the score stays put under a common shift and changes with the gap;
- ``complexity``: edges, FLOPs and score memory of dense and sparse patterns as N grows;
- ``scaling``: why scores are scaled by 1/√d (the variance of q·k grows with d);
- ``pitfalls``: masking after softmax, mask polarity, all-masked rows.

The attention computations go through ``tokenloom.encoder.attention`` (reference path) and the counts
through ``tokenloom.costs``; nothing here re-implements them. Importing this package imports no torch
(each lesson imports it when run). The command line is ``tokenloom._commands.explain``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tokenloom._lazy import lazy_exports

_LAZY: dict[str, str] = {
    "explain_attention": "tokenloom.explain.attention",
    "explain_rope": "tokenloom.explain.rope",
    "explain_complexity": "tokenloom.explain.complexity",
    "explain_scaling": "tokenloom.explain.scaling",
    "explain_pitfalls": "tokenloom.explain.pitfalls",
}

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time _LAZY imports each name on first use
    from tokenloom.explain.attention import explain_attention
    from tokenloom.explain.complexity import explain_complexity
    from tokenloom.explain.pitfalls import explain_pitfalls
    from tokenloom.explain.rope import explain_rope
    from tokenloom.explain.scaling import explain_scaling

__all__ = ["explain_attention", "explain_complexity", "explain_pitfalls", "explain_rope", "explain_scaling"]

__getattr__, __dir__ = lazy_exports(globals(), _LAZY)
