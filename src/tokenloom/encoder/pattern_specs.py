"""The CLI spelling of attention patterns: ``window:512``, ``global:2+window:64``, ``causal&window:64,0``.

``parse_pattern`` turns one spelling into a :class:`~tokenloom.encoder.patterns.Pattern`;
``parse_patterns`` a comma-separated list, where a piece that starts with a digit (or ``both``, or lies
inside parentheses) continues the previous term's arguments (``dense,bigbird:192,128,3`` is two patterns).
``Pattern.spec()`` writes the spelling back. The grammar (``&`` binds tighter than ``+``, as in Python)::

    spec  := inter ("+" inter)*          a union: a key allowed by any part
    inter := atom ("&" atom)*            an intersection: a key allowed by every part
    atom  := "(" spec ")" | term
    term  := dense | causal | window:W | window:L,R | global:G | strided:S[,both]
           | bigbird[:W,G,R[,BLOCK]] | random:R[,BLOCK[,SEED]]

Numbers are non-negative integers; ``W``, ``S`` and ``BLOCK`` are at least 1. No torch is imported.
"""

from __future__ import annotations

from collections.abc import Callable

from tokenloom.encoder._pattern_base import Dense, Intersection, Pattern, Union
from tokenloom.encoder._pattern_blocks import RandomBlocks
from tokenloom.encoder._pattern_kinds import Causal, GlobalTokens, Strided, Window, bigbird

__all__ = ["FORMS", "parse_pattern", "parse_patterns"]

FORMS = (
    "dense, causal, window:W (W >= 1), window:L,R, global:G, strided:S[,both] (S >= 1), "
    "bigbird[:W,G,R[,BLOCK]], random:R[,BLOCK[,SEED]] (BLOCK >= 1); join with + (union) or & "
    "(intersection, binds tighter), group with ( ), e.g. global:2+window:512 or causal&(global:2+window:512)"
)


def parse_pattern(spec: str) -> Pattern:
    """A pattern from its CLI spelling: ``dense``, ``causal``, ``window:W`` (W keys per row, itself
    included), ``window:L,R``, ``global:G``, ``strided:S`` (``strided:S,both`` mirrored), ``bigbird:W,G,R``
    (block 64, seed 0), ``bigbird:W,G,R,B`` or ``bigbird`` (``bigbird:192,128,3``), ``random:R,B,SEED``;
    ``+`` joins terms into a union (``global:2+window:64``), ``&`` into an intersection
    (``causal&window:64,0``; ``&`` binds tighter than ``+``), parentheses group
    (``causal&(global:2+window:128,0)``). A bad spelling raises ``ValueError`` naming it and the forms."""
    return _Parser(str(spec)).parse()


class _Parser:
    """Recursive descent over the grammar in the module docstring; ``pos`` indexes ``spec``."""

    def __init__(self, spec: str) -> None:
        self.spec, self.pos = spec, 0

    def fail(self, what: str, reason: str) -> ValueError:
        where = "" if what.strip() == self.spec.strip() else f" in {self.spec!r}"
        return ValueError(f"invalid attention pattern {what!r}{where}: {reason}; use {FORMS}")

    def peek(self) -> str:
        while self.pos < len(self.spec) and self.spec[self.pos].isspace():
            self.pos += 1
        return self.spec[self.pos] if self.pos < len(self.spec) else ""

    def parse(self) -> Pattern:
        pattern = self.union()
        if self.peek():  # a stray ")" or a "(" right after a term
            raise self.fail(self.spec, f"unexpected {self.peek()!r} at character {self.pos + 1}")
        return pattern

    def union(self) -> Pattern:
        parts = [self.inter()]
        while self.peek() == "+":
            self.pos += 1
            parts.append(self.inter())
        flat = tuple(
            q for p in parts for q in (p.parts if isinstance(p, Union) and p.label is None else (p,))
        )
        return parts[0] if len(parts) == 1 else Union(flat)

    def inter(self) -> Pattern:
        parts = [self.atom()]
        while self.peek() == "&":
            self.pos += 1
            parts.append(self.atom())
        flat = tuple(q for p in parts for q in (p.parts if isinstance(p, Intersection) else (p,)))
        return parts[0] if len(parts) == 1 else Intersection(flat)

    def atom(self) -> Pattern:
        if self.peek() == "(":
            self.pos += 1
            inner = self.union()
            if self.peek() != ")":
                raise self.fail(self.spec, "a '(' is never closed")
            self.pos += 1
            return inner
        start = self.pos
        while self.pos < len(self.spec) and self.spec[self.pos] not in "+&()":
            self.pos += 1
        term = self.spec[start : self.pos].strip()
        if not term:
            before = self.spec[:start].rstrip()[-1:]
            raise self.fail(
                self.spec, f"a term is missing after {before!r}" if before else "a term is missing"
            )
        return _term(term, self.fail)


def _term(term: str, fail: Callable[[str, str], ValueError]) -> Pattern:
    name, _, rest = term.partition(":")
    name = name.strip().lower()
    words = [a.strip() for a in rest.split(",")] if rest.strip() else []
    both = name == "strided" and len(words) == 2 and words[1].lower() == "both"
    if both:
        words = words[:1]
    try:
        args = [int(a) for a in words]
    except ValueError:
        raise fail(term, f"arguments are non-negative integers, got {rest.strip()!r}") from None
    if any(a < 0 for a in args):
        raise fail(term, f"arguments are non-negative integers, got {rest.strip()!r}")
    arity = {"dense": (0,), "causal": (0,), "window": (1, 2), "global": (1,), "strided": (1,),
             "bigbird": (0, 3, 4), "random": (1, 2, 3)}  # fmt: skip
    if name not in arity:
        raise fail(term, f"unknown pattern kind {name!r}")
    if len(args) not in arity[name]:
        raise fail(term, f"{name} takes {' or '.join(str(k) for k in arity[name])} numbers, got {len(args)}")
    at_least_one = {  # the arguments that count something of which a pattern needs one
        "window": [("W (keys per query, itself included; window:0,0 is the query alone)", args[0])]
        if len(args) == 1
        else [],
        "strided": [("S", a) for a in args[:1]],
        "bigbird": [("W", a) for a in args[:1]] + [("BLOCK", a) for a in args[3:]],
        "random": [("BLOCK", a) for a in args[1:2]],
    }.get(name, [])
    for label, value in at_least_one:
        if value < 1:
            raise fail(term, f"{name} {label} must be at least 1, got {value}")
    if name == "dense":
        return Dense()
    if name == "causal":
        return Causal()
    if name == "window":
        w = args[0]
        return Window(w // 2, (w - 1) // 2) if len(args) == 1 else Window(args[0], args[1])
    if name == "global":
        return GlobalTokens(args[0])
    if name == "strided":
        return Strided(args[0], causal=not both)
    if name == "bigbird":
        w, g, r, b = args + [192, 128, 3, 64][len(args) :]  # the paper's ITC setting, block 64 by default
        return bigbird(w, g, r, block=b)
    return RandomBlocks(*args)


def parse_patterns(text: str) -> list[Pattern]:
    """A comma-separated list of specs; a piece that starts with a digit (or is ``both``, or lies inside
    parentheses) continues the previous spec's arguments (``dense,window:512,bigbird:256,64,3`` is three
    patterns)."""
    specs: list[str] = []
    for part in (p.strip() for p in text.split(",")):
        open_ = bool(specs) and specs[-1].count("(") > specs[-1].count(")")
        if specs and (part[:1].isdigit() or part.lower() == "both" or open_):
            specs[-1] += "," + part
        elif part:
            specs.append(part)
    if not specs:
        raise ValueError(f"no attention pattern in {text!r}: give e.g. dense,window:512")
    return [parse_pattern(s) for s in specs]
