"""Scripts of text: the Unicode Script property of each character (ICU ``icu.Script``), resolved for Common and
Inherited characters; the dominant script of a text; the scripts its letters come from; code points; the
script a language is usually written in.

Common (``Zyyy``) and Inherited (``Zinh``) characters are resolved to their neighbours: an inherited mark
takes the script of the character it follows; a common character the script before it, else the one after
it. :func:`usual_script` reads ICU's likely subtags (CLDR). ``icu`` is imported on first use
(:func:`load_icu`), not at import time. What it does not do: segment words (``words.py``) or transliterate
(``translit.py``).
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "ASTRAL", "COMMON", "INHERITED", "UNKNOWN", "char_scripts", "code_mixed_scripts", "code_points",
    "dominant_script", "letter_script_variety", "letter_scripts", "load_icu", "script_of", "usual_script",
    "utf16_to_codepoints",
]  # fmt: skip

COMMON = "Zyyy"  # ICU short name of the Common script (spaces, digits, punctuation, emoji)
INHERITED = "Zinh"  # ICU short name of the Inherited script (combining marks)
UNKNOWN = "Zzzz"  # unassigned code points
_NEUTRAL = frozenset({COMMON, INHERITED, UNKNOWN})


def load_icu() -> Any:
    """The PyICU module (imported on first use)."""
    import icu  # PyICU (pyicu-wheels); imported lazily

    return icu


@functools.lru_cache(maxsize=65536)
def _script_cp(cp: int) -> str:
    return load_icu().Script.getScript(cp).getShortName()


def script_of(char: str) -> str:
    """ISO 15924 code of one character's Unicode Script property, e.g. ``"Deva"``, ``"Zyyy"`` (common).

    >>> script_of("क"), script_of("a"), script_of(" ")
    ('Deva', 'Latn', 'Zyyy')
    """
    if len(char) != 1:
        raise ValueError(f"script_of takes one character, got {char!r}")
    return _script_cp(ord(char))


def char_scripts(text: str) -> list[str]:
    """Script of every character of ``text`` with Common / Inherited resolved to their neighbours.

    Inherited marks take the resolved script of the preceding character; Common characters take the
    nearest real script before them, else the nearest one after them; a text with no real script keeps
    ``"Zyyy"`` (``"Zinh"`` for a lone mark).
    """
    raw = [_script_cp(ord(ch)) for ch in text]
    out = list(raw)
    last: str | None = None
    pending: list[int] = []  # leading neutral positions waiting for the first real script
    for i, sc in enumerate(raw):
        if sc in _NEUTRAL:
            if last is not None:
                out[i] = last
            else:
                pending.append(i)
        else:
            if last is None:
                for j in pending:
                    out[j] = sc
                pending.clear()
            last = sc
    return out


_LETTER_SCRIPT: dict[str, str | None] = {}  # character -> script of a letter; None for non-letters / neutral


def _letter_script(ch: str) -> str | None:
    sc = _script_cp(ord(ch)) if ch.isalpha() else None
    sc = None if sc in _NEUTRAL else sc
    if len(_LETTER_SCRIPT) < 1 << 20:
        _LETTER_SCRIPT[ch] = sc
    return sc


def _letter_counts(text: str) -> Counter[str]:
    """Letters per script, with Japanese and Korean script combinations merged into ``Jpan`` / ``Kore``.

    Counts distinct characters first (``Counter`` runs in C), then looks each one up once.
    """
    counts: Counter[str] = Counter()
    table = _LETTER_SCRIPT
    for ch, k in Counter(text).items():
        sc = table[ch] if ch in table else _letter_script(ch)
        if sc is not None:
            counts[sc] += k
    return _merge_families(counts)


def _merge_families(counts: Counter[str]) -> Counter[str]:
    """``counts`` (letters per script) with Japanese and Korean script combinations merged, in place."""
    for family, members in _FAMILIES:
        present = set(counts) & members
        if len(present) >= 2 or (family == "Jpan" and present & {"Hira", "Kana"}):
            counts[family] = sum(counts.pop(sc) for sc in present)
    return counts


# Writing systems that mix scripts by design are not code-mixing: Japanese writes Han, Hiragana and
# Katakana together (any kana makes it Japanese), Korean may write Hangul with Han.
_FAMILIES: tuple[tuple[str, frozenset[str]], ...] = (
    ("Jpan", frozenset({"Hani", "Hira", "Kana"})),
    ("Kore", frozenset({"Hang", "Hani"})),
)


def dominant_script(text: str, *, default: str = COMMON) -> str:
    """The script most of the text's letters are written in; ties go to the first seen.

    Japanese (kana, with or without Han) is ``"Jpan"``, Hangul with Han ``"Kore"``, Han alone ``"Hani"``.
    A text without letters falls back to its other characters; ``default`` when none has a real script.
    """
    counts = _letter_counts(text)
    if not counts:
        counts = Counter(_script_cp(ord(ch)) for ch in text)
        for sc in _NEUTRAL:
            counts.pop(sc, None)
    if not counts:
        return default
    return max(counts, key=counts.__getitem__)  # Counter keeps first-seen order: ties go to the first


def letter_scripts(text: str, *, min_share: float = 0.0) -> tuple[str, ...]:
    """Sorted scripts of the text's letters, each holding at least ``min_share`` of its letters.

    Japanese (Han + Hiragana + Katakana) and Korean (Hangul + Han) combinations are reported as one
    writing system, ``"Jpan"`` / ``"Kore"``, so that they do not count as code-mixing.
    """
    return _shares(_letter_counts(text), min_share)


def _shares(counts: Counter[str], min_share: float) -> tuple[str, ...]:
    total = sum(counts.values())
    if not total:
        return ()
    return tuple(sorted(sc for sc, n in counts.items() if n / total >= min_share))


ASTRAL = re.compile("[\U00010000-\U0010ffff]")  # code points outside the BMP (two UTF-16 units)


def letter_script_variety(texts: Sequence[str]) -> Any:
    """[n] numpy int array: how many distinct scripts (raw, before merging Japanese / Korean) the letters of
    each text come from. Vectorized over all texts (one code-point array, one lookup per distinct character);
    ``len(letter_scripts(t)) <= letter_script_variety([t])[0]``, so only texts with 2 or more can be
    code-mixed. Reference: ``len({script of each letter})`` per text (``tests/test_unicode.py``)."""
    _, counts = _script_letter_counts(texts)
    return (counts > 0).sum(axis=1)


def code_mixed_scripts(texts: Sequence[str], *, min_share: float = 0.0) -> dict[int, tuple[str, ...]]:
    """``{i: letter_scripts(texts[i], min_share=min_share)}`` for the texts whose letters come from two or
    more scripts (:func:`letter_script_variety`), from the letters per script of every text counted at once."""
    names, counts = _script_letter_counts(texts)
    mixed = np.flatnonzero((counts > 0).sum(axis=1) >= 2)
    out = {}
    for i, row in zip(mixed.tolist(), counts[mixed].tolist(), strict=True):
        per_script = Counter({name: k for name, k in zip(names, row, strict=True) if k})
        out[i] = _shares(_merge_families(per_script), min_share)
    return out


def _script_letter_counts(texts: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """(the K scripts present, sorted; [n, K] letters of each text in each), raw scripts, one lookup per
    distinct character and one ``bincount`` of (text, script) pairs."""
    n = len(texts)
    chars = np.fromiter(map(len, texts), dtype=np.int64, count=n)
    cps = code_points("".join(texts))  # [C]
    if cps.size == 0:
        return [], np.zeros((n, 0), dtype=np.int64)
    seen = np.zeros(int(cps.max()) + 1, dtype=bool)
    seen[cps] = True
    uniq = np.flatnonzero(seen)  # [U] distinct code points, sorted (no sort of all C)
    table = _LETTER_SCRIPT
    names = [table[ch] if ch in table else _letter_script(ch) for ch in map(chr, uniq.tolist())]
    scripts = sorted({x for x in names if x is not None})
    codes = {name: k for k, name in enumerate(scripts)}
    lookup = np.full(int(uniq[-1]) + 1, -1, dtype=np.int64)  # code point -> script code (-1: not a letter)
    lookup[uniq] = [codes[x] if x is not None else -1 for x in names]
    sid = lookup[cps]  # [C]
    letter = sid >= 0  # [C]
    text = np.repeat(np.arange(n, dtype=np.int64), chars)  # [C] text of each code point
    pairs = text[letter] * len(scripts) + sid[letter]  # [L] (text, script) of each letter
    return scripts, np.bincount(pairs, minlength=n * len(scripts)).reshape(n, len(scripts))  # [n, K]


def code_points(text: str) -> np.ndarray:
    """The code points of ``text`` as a numpy uint32 array ``[C]`` (lone surrogates kept as their values)."""

    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def utf16_to_codepoints(text: str) -> list[int] | None:
    """Map UTF-16 offsets of ``text`` to code-point offsets; ``None`` when the text is all BMP (identity).

    The list has ``len(utf16) + 1`` entries; an offset inside a surrogate pair maps to the code point that
    pair encodes.
    """
    if not text or ASTRAL.search(text) is None:  # a regex scan in C: ~8x faster than max(text)
        return None
    table: list[int] = []
    for i, ch in enumerate(text):
        table.append(i)
        if ord(ch) > 0xFFFF:
            table.append(i)
    table.append(len(text))
    return table


@functools.lru_cache(maxsize=4096)
def usual_script(lang: str) -> str | None:
    """The script ``lang`` is usually written in, by ICU's likely subtags (CLDR): ``"hin"`` / ``"hi"`` ->
    ``"Deva"``, ``"rus"`` -> ``"Cyrl"``, ``"jpn"`` -> ``"Jpan"``; a code with a script (``"hin_Latn"``)
    is looked up by its language alone. ``None`` for ``"und"`` and codes ICU does not know."""
    base = lang.replace("-", "_").split("_", 1)[0].lower()
    if not base or base == "und":
        return None
    icu = load_icu()
    locale = icu.Locale(icu.Locale.createCanonical(base).getName())
    if not locale.getLanguage():
        return None
    locale.addLikelySubtags()
    return locale.getScript() or None
