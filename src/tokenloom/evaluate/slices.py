"""Which slices each evaluated item belongs to: language, script, code-mixed, transliterated, policy.

Every item belongs to several slices at once (the tables are tidy, one row per model x class x slice):

- ``("all", "all")``: every item;
- ``("language", L)``: the item's language label as given (``hin``, ``hin_Deva``, ``hin_Latn``);
- ``("script", S)``: the script of the language label when it has one (``hin_Latn`` -> ``Latn``), else the
  dominant script of the text's letters (:func:`tokenloom.unicode.dominant_script`) — as the
  fertility reports assign scripts;
- ``("code_mixed", "<lang>_<S1>+<S2>")``: texts whose letters come from two or more scripts, each holding
  at least ``mixed_min_share`` of them, named as the reports name them
  (:func:`tokenloom.fertility.slices.mixed_name`: Japanese kana with Han is one writing system);
- ``("transliterated", "<lang>_Latn")``: Latin-script text of a language usually written in another
  script (:func:`tokenloom.unicode.usual_script`, ICU's likely subtags): a label such as
  ``hin_Latn``, or an unlabelled-script text whose letters are all Latin (none of another script holds
  ``mixed_min_share`` of them: Latin-heavy code-mixed text is code-mixed, not transliterated); needs a
  language column;
- ``("policy", P)``: the item's policy category, when a policy column is given;
- ``(column, value)``: each extra slice column given.

Script, code-mixed and transliterated slices need the texts; without them only the labelled slices are
formed. What it does not do: compute metrics (``metrics``) or read columns (``items``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tokenloom.corpus.parts import parse_lang_code
from tokenloom.evaluate.items import Items
from tokenloom.fertility.slices import mixed_name
from tokenloom.unicode import code_mixed_scripts, dominant_script, letter_scripts, usual_script

__all__ = ["BASE_KINDS", "Slice", "item_scripts", "item_slices", "transliterated_langs"]

# the slice kinds formed from items, in the order tables list them (extra columns follow)
BASE_KINDS: tuple[str, ...] = ("all", "language", "script", "code_mixed", "transliterated", "policy")


@dataclass(frozen=True)
class Slice:
    """One slice: its kind, its name and the positions of its items."""

    kind: str
    name: str
    index: np.ndarray  # [k] int64 positions of the slice's items in the table

    @property
    def key(self) -> tuple[str, str]:
        return (self.kind, self.name)


def _split(lang: str) -> tuple[str, str | None]:
    parsed = parse_lang_code(lang.replace("-", "_"))
    return parsed if parsed else (lang, None)


def item_scripts(texts: list[str], lang: list[str] | None) -> list[str]:
    """Script of every item: its language label's script, else the dominant script of its text."""
    labelled = [_split(x)[1] for x in lang] if lang is not None else [None] * len(texts)
    return [sc or dominant_script(t) for t, sc in zip(texts, labelled, strict=True)]


def transliterated_langs(
    texts: list[str], lang: list[str], scripts: list[str], *, min_share: float = 0.1
) -> list[str | None]:
    """Per item, ``"<lang>_Latn"`` when it is Latin-script text of a language usually written in another
    script (module docstring), else None."""
    out: list[str | None] = []
    for text, code, script in zip(texts, lang, scripts, strict=True):
        base, labelled = _split(code)
        usual = usual_script(base)
        latin = script == "Latn" and (
            labelled == "Latn" or letter_scripts(text, min_share=min_share) == ("Latn",)
        )
        out.append(f"{base}_Latn" if latin and usual not in (None, "Latn") else None)
    return out


def _groups(kind: str, values: list[str | None]) -> list[Slice]:
    by: dict[str, list[int]] = {}
    for i, v in enumerate(values):
        if v is not None:
            by.setdefault(v, []).append(i)
    return [Slice(kind, name, np.asarray(by[name], dtype=np.int64)) for name in sorted(by)]


def _code_mixed(texts: list[str], lang: list[str] | None, min_share: float) -> list[str | None]:
    out: list[str | None] = [None] * len(texts)
    for i, found in code_mixed_scripts(texts, min_share=min_share).items():
        base, label_script = _split(lang[i]) if lang is not None else ("und", None)
        name = mixed_name(found, label_script)
        if "+" in name:
            out[i] = f"{base}_{name}"
    return out


def item_slices(items: Items, *, mixed_min_share: float = 0.1) -> list[Slice]:
    """Every slice of ``items`` (module docstring), in :data:`BASE_KINDS` order, names sorted in a kind."""
    out = [Slice("all", "all", np.arange(items.n, dtype=np.int64))]
    lang = items.lang
    if lang is not None:
        out += _groups("language", list(lang))
    if items.texts is not None:
        scripts = item_scripts(items.texts, lang)
        out += _groups("script", list(scripts))
        out += _groups("code_mixed", _code_mixed(items.texts, lang, mixed_min_share))
        if lang is not None:
            out += _groups(
                "transliterated", transliterated_langs(items.texts, lang, scripts, min_share=mixed_min_share)
            )
    if items.policy is not None:
        out += _groups("policy", list(items.policy))
    for column, values in items.extra.items():
        out += _groups(column, list(values))
    return out
