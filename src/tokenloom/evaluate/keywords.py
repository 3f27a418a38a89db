"""Keyword rules applied to texts: which texts a list of keywords (or phrases) matches, and how.

Three ways of matching, each stricter than plain substring search in a different direction:

- ``"exact"``: the keyword occurs in the text as written (case-sensitive substring);
- ``"casefold"``: the keyword occurs in the text, both case-folded (``str.casefold``: ``"STRASSE"``
  matches ``"straße"``);
- ``"word"`` (the default): case-folded, and the occurrence starts where an ICU word starts and ends where
  one ends (:func:`tokenloom.unicode.word_spans`, the word segmenter of the fertility reports, so
  Thai, Chinese and Japanese are segmented by ICU's dictionaries): ``"kill"`` matches ``"KILL you"`` but
  not ``"skills"``; a phrase ``"kill you"`` matches across the space between its words.

Keyword rules are what a cheap first stage or a weak labeller applies; they fail most on code-mixed and
transliterated text (``"maar"`` for ``"मार"``), which is why the cascade and the slice tables measure them
by slice. What it does not do: decide what a match means (``cascade``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, get_args

import numpy as np

from tokenloom.errors import ConfigError
from tokenloom.unicode import word_spans

__all__ = ["MATCHES", "Match", "check_keywords", "keyword_matches"]

Match = Literal["exact", "casefold", "word"]
MATCHES: tuple[Match, ...] = get_args(Match)


def check_keywords(keywords: Sequence[str], match: str) -> tuple[str, ...]:
    """``keywords`` as a tuple, each a non-empty string; ``match`` one of :data:`MATCHES`."""
    if isinstance(keywords, str):
        raise ConfigError(
            f"keywords must be a list of strings, got the string {keywords!r}; wrap it: [{keywords!r}]"
        )
    out = tuple(keywords)
    bad = next((k for k in out if not isinstance(k, str) or not k.strip()), None)
    if not out or bad is not None:
        raise ConfigError(f"keywords must be non-empty strings, got {bad!r} in {list(out)[:5]!r}")
    if match not in MATCHES:
        raise ConfigError(f"unknown keyword match {match!r}; choose from {', '.join(MATCHES)}")
    return out


def _occurrences(text: str, key: str) -> list[int]:
    out, at = [], text.find(key)
    while at >= 0:
        out.append(at)
        at = text.find(key, at + 1)
    return out


def _word_match(text: str, keys: tuple[str, ...], lang: str | None) -> bool:
    folded = text.casefold()
    spans = word_spans(folded, lang=lang)
    starts, ends = {a for a, _ in spans}, {b for _, b in spans}
    return any(at in starts and at + len(k) in ends for k in keys for at in _occurrences(folded, k))


def keyword_matches(
    texts: Sequence[str], keywords: Sequence[str], *, match: Match = "word", lang: Sequence[str] | None = None
) -> np.ndarray:
    """[n] bool: which texts any of ``keywords`` matches (module docstring); ``lang`` (one code per text)
    picks ICU's word-break locale for ``"word"`` matching."""
    keys = check_keywords(keywords, match)
    if match == "exact":
        return np.fromiter((any(k in t for k in keys) for t in texts), dtype=bool, count=len(texts))
    folded = tuple(k.casefold() for k in keys)
    if match == "casefold":
        return np.fromiter(
            (any(k in t.casefold() for k in folded) for t in texts), dtype=bool, count=len(texts)
        )
    langs = list(lang) if lang is not None else [None] * len(texts)
    return np.fromiter(
        (_word_match(t, folded, lg) for t, lg in zip(texts, langs, strict=True)), dtype=bool, count=len(texts)
    )
