"""The CLI spelling of attention patterns: ``window:512``, ``global:2+window:64``, ``bigbird:192,128,3``.

``parse_pattern`` turns one spelling into a :class:`~tokenloom.encoder.patterns.Pattern` (``+`` joins terms
into a union); ``parse_patterns`` a comma-separated list, where a bare number continues the previous term's
arguments (``dense,bigbird:192,128,3`` is two patterns). ``Pattern.spec()`` writes the spelling back.
No torch is imported.
"""

from __future__ import annotations

from typing import Any

from tokenloom.encoder.patterns import (
    Causal,
    Dense,
    GlobalTokens,
    Pattern,
    RandomBlocks,
    Strided,
    Union,
    Window,
    bigbird,
)

__all__ = ["parse_pattern", "parse_patterns"]


def parse_pattern(spec: str) -> Pattern:
    """A pattern from its CLI spelling: ``dense``, ``causal``, ``window:W`` (W keys per row),
    ``window:L,R``, ``global:G``, ``strided:S``, ``bigbird:W,G,R`` (block 64, seed 0), ``bigbird:W,G,R,B`` or
    ``bigbird`` (``bigbird:192,128,3``),
    ``random:R,B,SEED``; ``+`` joins terms into a union (``global:2+window:64``)."""
    terms = [t.strip() for t in str(spec).split("+")]
    parts = [_parse_term(t, spec) for t in terms]
    return parts[0] if len(parts) == 1 else Union(tuple(parts))


def _parse_term(term: str, spec: str) -> Pattern:
    name, _, rest = term.partition(":")
    name = name.strip().lower()
    try:
        args = [int(a) for a in rest.split(",")] if rest.strip() else []
    except ValueError:
        args = [-1]
    forms: dict[str, tuple[tuple[int, ...], Any]] = {
        "dense": ((0,), lambda: Dense()),
        "causal": ((0,), lambda: Causal()),
        "window": ((1, 2), lambda w, r=None: Window(w // 2, (w - 1) // 2) if r is None else Window(w, r)),
        "global": ((1,), GlobalTokens),
        "strided": ((1,), Strided),
        "bigbird": ((0, 3, 4), lambda w=192, g=128, r=3, b=64: bigbird(w, g, r, block=b)),
        "random": ((1, 2, 3), RandomBlocks),
    }
    if name not in forms or len(args) not in forms[name][0] or any(a < 0 for a in args):
        raise ValueError(
            f"invalid attention pattern {term!r} in {spec!r}: use dense, causal, window:W, window:L,R, "
            "global:G, strided:S, bigbird[:W,G,R[,BLOCK]] or random:R[,BLOCK,SEED], joined with + "
            "(e.g. global:2+window:512); numbers are non-negative ints"
        )
    pattern: Pattern = forms[name][1](*args)
    return pattern


def parse_patterns(text: str) -> list[Pattern]:
    """A comma-separated list of specs; a bare number continues the previous spec's arguments
    (``dense,window:512,bigbird:256,64,3`` is three patterns)."""
    specs: list[str] = []
    for part in (p.strip() for p in text.split(",")):
        if part.isdigit() and specs:
            specs[-1] += "," + part
        elif part:
            specs.append(part)
    if not specs:
        raise ValueError(f"no attention pattern in {text!r}: give e.g. dense,window:512")
    return [parse_pattern(s) for s in specs]
