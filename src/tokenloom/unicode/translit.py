"""Transliteration to Latin with ICU ``Any-Latin``, then optionally ``Latin-ASCII``."""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from typing import Any, overload

from tokenloom.unicode.scripts import load_icu

__all__ = ["transliterate"]


@functools.lru_cache(maxsize=4)
def _transliterator(ascii_only: bool) -> Any:
    icu = load_icu()
    return icu.Transliterator.createInstance("Any-Latin; Latin-ASCII" if ascii_only else "Any-Latin")


_translit_lock = threading.Lock()  # an ICU Transliterator must not be used by two threads at once


@overload
def transliterate(texts: str, *, ascii: bool = False) -> str: ...  # type: ignore[overload-overlap]  # str is a Sequence[str]
@overload
def transliterate(texts: Sequence[str], *, ascii: bool = False) -> list[str]: ...
def transliterate(texts: str | Sequence[str], *, ascii: bool = False) -> str | list[str]:
    """Transliterate to Latin with ICU ``Any-Latin`` (then ``Latin-ASCII`` when ``ascii``).

    Takes one string (returns one string) or a sequence of strings (returns a list).
    """
    tr = _transliterator(bool(ascii))
    with _translit_lock:
        if isinstance(texts, str):
            return tr.transliterate(texts)
        return [tr.transliterate(t) for t in texts]
