"""Deterministic, seeded perturbations of text: what a tokenizer does with noisy or disguised input.

Each perturbation maps one text to one text; the random ones draw from ``random.Random`` seeded with the
perturbation's name, the seed and the text itself, so a text is perturbed the same way in any chunk,
process or run. The report counts each as a generated slice aligned with the clean text
(:func:`tokenloom.fertility.slices.perturb_target`), whose premium is tokens(perturbed) / tokens(clean)
per text. The robustness suites that perturb text this way: TokSuite (2025).

- ``diacritics``: NFD, drop every combining mark (``Mn``), NFC — ``"café"`` → ``"cafe"``;
- ``case``: upper case (``str.upper``) — ``"Straße"`` → ``"STRASSE"``;
- ``fullwidth``: ASCII ``!``..``~`` to their full-width forms U+FF01..U+FF5E, space to U+3000;
- ``zerowidth``: a ZERO WIDTH SPACE (U+200B) inserted between two characters with probability ``rate``;
- ``homoglyphs``: with probability ``rate``, a letter is replaced by a confusable letter of another of
  Latin, Cyrillic and Greek (ICU's confusables data: :func:`homoglyph_table`) — ``"a"`` → ``"α"``
  (U+03B1), Cyrillic ``"р"`` → ``"p"``;
- ``keyboard``: with probability ``rate``, an ASCII letter is replaced by a QWERTY neighbour (its case
  kept) — ``"hello"`` → ``"hellp"``;
- ``ocr``: with probability ``rate``, each OCR confusion site is swapped: ``rn``↔``m``, ``l``↔``1``,
  ``O``↔``0``.

What it does not do: decide which parts are perturbed (``slices``) or count tokens (``counting``).
"""

from __future__ import annotations

import functools
import random
import unicodedata
from collections.abc import Callable
from typing import Literal, TypeAlias, get_args

from tokenloom.errors import ConfigError

__all__ = [
    "DEFAULT_RATE",
    "PERTURBATIONS",
    "Perturbation",
    "homoglyph_table",
    "parse_perturbations",
    "perturb",
]

Perturbation: TypeAlias = Literal[
    "diacritics", "case", "fullwidth", "zerowidth", "homoglyphs", "keyboard", "ocr"
]
PERTURBATIONS: tuple[Perturbation, ...] = get_args(Perturbation)
DEFAULT_RATE = 0.1  # probability per site of the random perturbations
ZWSP = "\u200b"

_QWERTY = ("qwertyuiop", "asdfghjkl", "zxcvbnm")
_OCR = {"rn": "m", "m": "rn", "l": "1", "1": "l", "O": "0", "0": "O"}


def _neighbours() -> dict[str, str]:
    """Each lower-case letter's QWERTY neighbours: left and right in its row, and the two keys above and
    below (rows are staggered: a key sits between keys c and c + 1 of the row above)."""
    out: dict[str, str] = {}
    for r, row in enumerate(_QWERTY):
        for c, key in enumerate(row):
            near = [row[k] for k in (c - 1, c + 1) if 0 <= k < len(row)]
            if r > 0:
                near += [_QWERTY[r - 1][k] for k in (c, c + 1) if k < len(_QWERTY[r - 1])]
            if r + 1 < len(_QWERTY):
                near += [_QWERTY[r + 1][k] for k in (c - 1, c) if 0 <= k < len(_QWERTY[r + 1])]
            out[key] = "".join(sorted(set(near)))
    return out


NEIGHBOURS: dict[str, str] = _neighbours()


@functools.lru_cache(maxsize=1)
def homoglyph_table() -> dict[str, str]:
    """Letter -> its homoglyph in another of Latin, Cyrillic and Greek, from ICU's confusables data.

    A Cyrillic or Greek letter whose ICU skeleton (``SpoofChecker.getSkeleton``, UTS #39) is one ASCII
    Latin letter maps to that letter; each such Latin letter maps back to the lowest of those code points."""
    import icu

    checker = icu.SpoofChecker()
    table: dict[str, str] = {}
    for char in icu.UnicodeSet("[[[:Cyrl:][:Grek:]]&[[:Lu:][:Ll:]]]"):
        skeleton = checker.getSkeleton(0, char)
        if len(skeleton) == 1 and skeleton.isascii() and skeleton.isalpha():
            table[char] = skeleton
            if skeleton not in table or ord(char) < ord(table[skeleton]):
                table[skeleton] = char
    return table


def _rng(name: str, text: str, seed: int) -> random.Random:
    return random.Random(f"{name}\0{seed}\0{text}")  # str seeds hash with SHA-512: stable across runs


def _diacritics(text: str) -> str:
    stripped = "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")
    return unicodedata.normalize("NFC", stripped)


def _fullwidth(text: str) -> str:
    return "".join("\u3000" if c == " " else chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


def _zerowidth(text: str, rng: random.Random, rate: float) -> str:
    out = [text[:1]]
    for c in text[1:]:
        if rng.random() < rate:
            out.append(ZWSP)
        out.append(c)
    return "".join(out)


def _swap(text: str, rng: random.Random, rate: float, table: dict[str, str]) -> str:
    return "".join(table[c] if c in table and rng.random() < rate else c for c in text)


def _keyboard(text: str, rng: random.Random, rate: float) -> str:
    out = []
    for c in text:
        low = c.lower()
        if c.isascii() and low in NEIGHBOURS and rng.random() < rate:
            new = rng.choice(NEIGHBOURS[low])
            c = new.upper() if c.isupper() else new
        out.append(c)
    return "".join(out)


def _ocr(text: str, rng: random.Random, rate: float) -> str:
    out, i = [], 0
    while i < len(text):
        site = text[i : i + 2] if text[i : i + 2] == "rn" else text[i]
        if site in _OCR and rng.random() < rate:
            out.append(_OCR[site])
        else:
            out.append(site)
        i += len(site)
    return "".join(out)


def perturb(text: str, name: Perturbation, *, seed: int = 0, rate: float = DEFAULT_RATE) -> str:
    """``text`` under perturbation ``name`` (module docstring); the same inputs give the same output."""
    fixed: dict[str, Callable[[str], str]] = {
        "diacritics": _diacritics,
        "case": str.upper,
        "fullwidth": _fullwidth,
    }
    if name in fixed:
        return fixed[name](text)
    rng = _rng(name, text, seed)
    if name == "zerowidth":
        return _zerowidth(text, rng, rate)
    if name == "homoglyphs":
        return _swap(text, rng, rate, homoglyph_table())
    if name == "keyboard":
        return _keyboard(text, rng, rate)
    if name == "ocr":
        return _ocr(text, rng, rate)
    raise ValueError(f"unknown perturbation {name!r}; choose from {', '.join(PERTURBATIONS)}")


def parse_perturbations(spec: str | tuple[str, ...] | list[str] | None) -> tuple[Perturbation, ...]:
    """``"diacritics,case"`` or a sequence of names -> the perturbations in the order given (``"all"``:
    every one); a clear error naming an unknown one."""
    if spec is None:
        return ()
    names = [n.strip() for n in (spec.split(",") if isinstance(spec, str) else spec) if n.strip()]
    if names == ["all"]:
        return PERTURBATIONS
    bad = [n for n in names if n not in PERTURBATIONS]
    if bad:
        raise ConfigError(
            f"unknown perturbation {bad[0]!r}; choose from {', '.join(PERTURBATIONS)} (or 'all')"
        )
    return tuple(dict.fromkeys(names))  # type: ignore[arg-type]
