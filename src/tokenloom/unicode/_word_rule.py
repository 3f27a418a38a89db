"""The library's word rule on top of ICU's word-like segments (stated in :mod:`tokenloom.unicode.words`).

UAX #29 joins words across ExtendNumLet characters — connector punctuation (``_``, ``‿``, ``＿``) and
U+202F NARROW NO-BREAK SPACE — so ``__init__`` is one word; ICU also gives a run of them alone (``__``)
a word status, though not a single one (``_``). Here a segment of only connector punctuation (and the
marks attached to it) is never a word, and U+202F separates words as every other space does
(``1\u202f000`` is two words, like ``1 000``). Spans are code-point offsets. No ICU, numpy or torch.
"""

from __future__ import annotations

import re
import unicodedata

Span = tuple[int, int]

# UAX #29 ExtendNumLet: connector punctuation (General_Category Pc) and U+202F NARROW NO-BREAK SPACE
_NNBSP = "\u202f"
_CONNECTORS = frozenset("_\u203f\u2040\u2054\ufe33\ufe34\ufe4d\ufe4e\ufe4f\uff3f")
JOINER_RE = re.compile("[" + "".join(sorted(_CONNECTORS)) + _NNBSP + "]")


def _attached(ch: str) -> bool:
    """Marks, format characters and emoji modifiers: they extend the character before (UAX #29 WB4)."""
    cat = unicodedata.category(ch)
    return cat[0] == "M" or cat == "Cf" or "\U0001f3fb" <= ch <= "\U0001f3ff"


def _word_rule(text: str, s: int, e: int) -> list[Span]:
    """An ICU word-like segment ``text[s:e]`` under the library's rule (module docstring): split at each
    U+202F (with the marks attached to it), keeping the parts that hold more than connector punctuation."""
    out: list[Span] = []
    start = i = s
    while i <= e:
        if i == e or text[i] == _NNBSP:
            if any(ch not in _CONNECTORS and not _attached(ch) for ch in text[start:i]):
                out.append((start, i))
            i += 1
            while i < e and _attached(text[i]):  # marks on the space belong to no word
                i += 1
            start = i
        else:
            i += 1
    return out


def apply_word_rule(text: str, spans: list[Span]) -> list[Span]:
    """:func:`_word_rule` on the spans that hold a joiner (code-point spans of ``text``)."""
    if JOINER_RE.search(text) is None:  # the usual case: nothing to do
        return spans
    out: list[Span] = []
    for s, e in spans:
        if JOINER_RE.search(text, s, e):
            out += _word_rule(text, s, e)
        else:
            out.append((s, e))
    return out
