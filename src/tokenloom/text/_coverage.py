"""``character_coverage`` on the ``tokenizers`` engine: the alphabet of an HF-trained BPE limited, as
sentencepiece limits it, to the most frequent characters covering that share of the training text (the
rest is spelled by byte fallback, or ``<unk>`` without it).

The engine's ``BpeTrainer(limit_alphabet=N)`` keeps the ``N`` most frequent characters (those of
``initial_alphabet`` count as infinitely frequent) but breaks ties at the cut in no fixed order. So
:func:`covering_alphabet` counts the characters as the engine does — over the training lines, a space as the
meta-symbol ``▁``, after normalization — takes the most frequent ones until their occurrences reach
``coverage`` of all, then **every character as frequent as the last one taken**, so the cut falls between
two counts and the engine keeps exactly that set: ``N`` is its size with the required characters.

It reads the training lines once more before the engine does (``_sampling.training_lines``, the same
lines). What it does not do: train (``_engines.py``).
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Iterable
from typing import Literal

from tokenloom.text._hf_build import META

__all__ = ["char_counts", "covering_alphabet"]


def char_counts(lines: Iterable[str], normalization: str = "none") -> Counter[str]:
    """Occurrences of each character in ``lines`` as the engine sees them (space → ``▁``, normalized)."""
    counts: Counter[str] = Counter()
    form: Literal["NFC", "NFKC"] | None = (
        "NFC" if normalization == "nfc" else "NFKC" if normalization == "nfkc" else None
    )
    for line in lines:
        counts.update(unicodedata.normalize(form, line) if form else line)
    if " " in counts:
        counts[META] += counts.pop(" ")
    return counts


def covering_alphabet(counts: Counter[str], coverage: float, required: str = "") -> set[str]:
    """The characters kept: the most frequent covering ``coverage`` of all occurrences, ties at the cut
    included, plus ``required`` (see the module docstring)."""
    total = sum(counts.values())
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    kept: set[str] = set(required)
    seen, cut = 0, None
    for char, n in ranked:
        if cut is not None and n < cut:
            break
        kept.add(char)
        seen += n
        if cut is None and seen >= coverage * total:
            cut = n  # take the rest of this count's characters, then stop
    return kept
