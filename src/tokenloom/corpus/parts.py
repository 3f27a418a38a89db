"""Labelled corpus parts: what a group of texts is (its slice, language, script, alignment) and where from.

A :class:`CorpusPart` is one language file, one group of a table's rows or one programming language's
files. Its ``load()`` gives the texts and their ids; the labels alone travel to other processes (a part
whose ``load`` is :func:`no_texts`, the default, pickles). :func:`parse_lang_code` reads FLORES-style
``<lang>_<Script>`` labels, :func:`slice_kind_of` the kind a table's ``slice`` label names,
:func:`file_label` and :func:`record_label` the language of a file or a table row. What it does
not do: find or read files (``sources.py``, ``tasks.py``, ``load.py``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from tokenloom.corpus.compression import inner_name
from tokenloom.corpus.records import Record

__all__ = [
    "CorpusPart", "SliceKind", "file_label", "no_texts", "parse_lang_code", "record_label", "script_label",
    "slice_kind_of",
]  # fmt: skip

SliceKind = Literal["language", "code_mixed", "transliterated", "code", "numbers", "perturbed"]

_LANG_CODE = re.compile(r"^([a-z]{2,3})_([A-Z][a-z]{3})(?:-[A-Za-z0-9-]+)?$")  # "acu_Latn-1": a variant


def parse_lang_code(name: str) -> tuple[str, str] | None:
    """``"hin_Deva"`` / ``"hin_Deva.txt"`` / ``"acu_Latn-1"`` -> ``("hin", "Deva")``; ``None`` otherwise."""
    stem = name[: -len(".txt")] if name.endswith(".txt") else name
    m = _LANG_CODE.match(stem)
    return (m.group(1), m.group(2)) if m else None


def script_label(value: str | None) -> str | None:
    """A script label: ``"Cyrl"``, or the script of a language code given as one (``"rus_Cyrl"``)."""
    parsed = parse_lang_code(value) if value else None
    return parsed[1] if parsed else value


def slice_kind_of(label: str) -> SliceKind:
    """The kind a table's ``slice`` label names: ``translit`` -> transliterated, ``mixed`` -> code-mixed,
    ``code`` / ``code-*`` / ``code_*`` -> code, anything else a language slice."""
    low = label.lower()
    if "translit" in low:
        return "transliterated"
    if "mixed" in low:
        return "code_mixed"
    if low == "code" or low.startswith("code-") or low.startswith("code_"):
        return "code"
    return "language"


def file_label(path: Path) -> str | None:
    """The language of a FLORES-style file name (``eng_Latn.txt``, also compressed), else None."""
    parsed = parse_lang_code(inner_name(path.name))
    return f"{parsed[0]}_{parsed[1]}" if parsed else None


def record_label(record: Record, fallback: str | None) -> str | None:
    """A record's language label (``lang``, with ``script`` when given apart), else ``fallback``."""
    lang, script = record.lang, record.script
    if not lang:
        return fallback
    if script and parse_lang_code(lang) is None:
        return f"{lang}_{script}"
    return lang


def no_texts() -> tuple[list[str], list[Any]]:
    """The ``load`` of a part that carries labels only: no texts."""
    return [], []


@dataclass(frozen=True)
class CorpusPart:
    """A group of texts sharing labels: one language file, one table group, one code language."""

    source: str  # where the texts come from, as shown in reports and errors (a file or "FILE[lang=...]")
    slice_kind: SliceKind  # which kind of slice the texts form
    slice: str  # the slice label: "eng_Latn", "python", "hin_Deva_Latn-translit", a file stem
    lang: str  # ISO 639 code ("eng"), a programming language for code, "und" when unknown
    script: str | None  # ISO 15924 code ("Latn"); None = detect from the texts
    align: str | None = None  # parallel group: texts of parts with the same align and id are the same content
    generated: bool = False  # produced by tokenloom (e.g. ICU transliteration), not read from input
    # part.load() -> (texts, ids); ids are line numbers for files, the ``id`` column for tables
    load: Callable[[], tuple[list[str], list[Any]]] = field(default=no_texts, repr=False, compare=False)
    paths: tuple[Path, ...] = field(default=(), repr=False, compare=False)  # the files of a file part
