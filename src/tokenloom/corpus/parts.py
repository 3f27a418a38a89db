"""Labelled corpus parts: what a group of texts is (slice, language, script, alignment), where from, and how
a table's rows are grouped into parts.

A :class:`CorpusPart` is one language file, one group of a table's rows or one programming language's
files; its ``load()`` gives the texts and their ids, and its labels alone travel to other processes (the
default ``load``, :func:`no_texts`, pickles). A :class:`Corpus` is the parts of one input. Labels are pure
functions of a record and its source: :func:`parse_lang_code` reads ``<lang>_<Script>``, :func:`slice_kind_of`
the kind a ``slice`` label names, :func:`file_label` / :func:`record_label` the language of a file or a
row, :func:`row_labels` a row's part (the language, ``hin`` or ``hin_Deva``; the script, labelled, from a
language code or the row's dominant script; the ``slice``, by default ``<lang>_<Script>``).

:class:`TableGroups` collects a table's rows into parts in first-seen order, the table read whole or piece
by piece (:meth:`TableGroups.take` hands a part's rows over and starts it again). A table is *aligned* only
when its align column is declared (``Columns.align``): rows sharing a key are the same content in several
languages; a row without a key, and a key seen before in the same part, are each a
:class:`~tokenloom.corpus.records.Reject` under the row's own file and line — the first row with a key is
kept (a table read piece by piece is checked for keys repeated across pieces first,
``plan.repeated_keys``). What it does not do: find or read files (``sources.py``, ``tasks.py``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from tokenloom.corpus.compression import inner_name
from tokenloom.corpus.records import (
    MEMORY_SOURCE,
    Columns,
    Errors,
    Record,
    Reject,
    SourceStats,
    check_errors,
    iter_object_records,
    reject,
)
from tokenloom.errors import CorpusError
from tokenloom.unicode import dominant_script

__all__ = [
    "TABLE_ALIGN", "UNLABELLED", "Corpus", "CorpusPart", "PartLabels", "RepeatedKeys", "SliceKind", "TableGroups",
    "cell_label", "file_label", "load_memory", "no_texts", "parse_lang_code", "record_label", "row_labels",
    "script_label", "slice_kind_of", "table_parts",
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
    return cell_label(record.lang, record.script, fallback)


def cell_label(lang: str | None, script: str | None, fallback: str | None) -> str | None:
    """The language label of a row's ``lang`` and ``script`` cells (:func:`record_label`)."""
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


TABLE_ALIGN = "table-ids"  # the align group of the parts of an aligned table
# (file, line or row) of a row whose key repeats an earlier row's -> where that earlier row is
RepeatedKeys = dict[tuple[str, int], str]


@dataclass(frozen=True)
class PartLabels:
    """The labels a row gives its part."""

    lang: str
    script: str
    label: str
    kind: SliceKind


def row_labels(row: Record) -> PartLabels:
    """The part labels of one row (see the module docstring)."""
    return _given_labels(row.lang, row.script, row.slice) or _text_labels(
        row.text, row.lang, row.script, row.slice
    )


def _text_labels(
    text: str, lang_cell: str | None, script_cell: str | None, slice_cell: str | None
) -> PartLabels:
    """The part labels of a row whose script its text decides."""
    lang, _ = _parsed(lang_cell, script_cell)
    script = dominant_script(text)
    label = slice_cell or f"{lang}_{script}"
    return PartLabels(lang, script, label, slice_kind_of(label))


def _parsed(lang_cell: str | None, script_cell: str | None) -> tuple[str, str | None]:
    """(language, script or ``None`` when the row's text decides it) from a row's two label cells."""
    lang, script = lang_cell or "und", script_label(script_cell)
    parsed = parse_lang_code(lang)
    if parsed:
        lang, script = parsed[0], script or parsed[1]
    return lang, script or None


@lru_cache(maxsize=4096)
def _given_labels(
    lang_cell: str | None, script_cell: str | None, slice_cell: str | None
) -> PartLabels | None:
    """The part labels of a row whose cells name its script (``None``: the text decides it); a table holds
    few distinct label cells, so each is parsed once."""
    lang, script = _parsed(lang_cell, script_cell)
    if script is None:
        return None
    label = slice_cell or f"{lang}_{script}"
    return PartLabels(lang, script, label, slice_kind_of(label))


def _shared_labels(cells: tuple[list[str | None], ...], rows: int) -> PartLabels | None:
    """The part labels of all ``rows`` rows when their label cells are alike and name the script; ``None``
    when the rows are labelled one by one."""
    if not rows or any(column.count(column[0]) != rows for column in cells):
        return None
    return _given_labels(*(column[0] for column in cells))


def _missing(rid: Any) -> bool:
    return rid is None or (isinstance(rid, float) and rid != rid)


class TableGroups:
    """Rows of one table (``source`` names it) grouped into parts; ``align``: the declared key column
    (``None``: not aligned); ``repeated``: rows known to repeat a key (:func:`repeated_keys`)."""

    def __init__(
        self,
        source: str,
        *,
        align: str | None,
        errors: Errors,
        stats: SourceStats,
        repeated: RepeatedKeys | None = None,
    ) -> None:
        self.source, self.align, self.errors, self.stats = source, align, errors, stats
        self.repeated = repeated or {}
        self.groups: dict[PartLabels, tuple[list[str], list[Any]]] = {}
        self.parts: dict[PartLabels, CorpusPart] = {}  # every part seen, in first-seen order
        self.keys: dict[tuple[PartLabels, str], str] = {}  # (part, key) -> where it was first seen

    def add(self, row: Record) -> PartLabels | None:
        """Add one row to its part; ``None`` when it is rejected (an aligned row without or with a repeated
        key)."""
        key = row_labels(row)
        if self.align is not None and not self._keyed(row, key):
            return None
        texts, ids = self._group(key)
        texts.append(row.text)
        ids.append(str(row.id) if self.align is not None else row.number)
        return key

    def add_columns(
        self,
        texts: list[str],
        cells: tuple[list[str | None], ...],
        numbers: list[int],
        chunk_size: int,
        held_rows: int | None = None,
    ) -> Iterator[tuple[CorpusPart, list[str], list[Any]]]:
        """Add the rows of a table that is not aligned, given as columns (``cells``: language, script and
        slice cells), as :meth:`add` adds them one by one; each part that reaches ``chunk_size`` rows is
        handed over (:meth:`take`) at the row that fills it, and with ``held_rows`` every part's rows are
        handed over, in first-seen order, whenever that many are held in all."""
        assert self.align is None
        held = sum(len(g[0]) for g in self.groups.values())
        shared = _shared_labels(cells, len(texts))
        if shared is not None:
            yield from self._add_run(shared, texts, numbers, chunk_size, held_rows, held)
            return
        groups = self.groups
        for text, lang, script, label, number in zip(texts, *cells, numbers, strict=True):
            key = _given_labels(lang, script, label) or _text_labels(text, lang, script, label)
            group = groups.get(key) or self._group(key)
            group[0].append(text)
            group[1].append(number)
            held += 1
            if len(group[0]) == chunk_size:
                held -= chunk_size
                yield self.take(key)
            elif held_rows is not None and held >= held_rows:
                yield from self._take_all()
                held = 0

    def _add_run(
        self, key: PartLabels, texts: list[str], numbers: list[int], chunk_size: int, held_rows: int | None,
        held: int,
    ) -> Iterator[tuple[CorpusPart, list[str], list[Any]]]:  # fmt: skip
        """:meth:`add_columns` for rows that all belong to the part of ``key``, many rows at a time, handed
        over at the same rows as one by one."""
        assert chunk_size >= 1, chunk_size
        at = 0
        while at < len(texts):
            group = self._group(key)
            room = chunk_size - len(group[0])  # >= 1: a full group is handed over at once
            if held_rows is not None:
                room = min(room, max(held_rows - held, 1))
            take = min(room, len(texts) - at)
            group[0].extend(texts[at : at + take])
            group[1].extend(numbers[at : at + take])
            held, at = held + take, at + take
            if len(group[0]) == chunk_size:
                held -= chunk_size
                yield self.take(key)
            elif held_rows is not None and held >= held_rows:
                yield from self._take_all()
                held = 0

    def _take_all(self) -> Iterator[tuple[CorpusPart, list[str], list[Any]]]:
        """Every part's held rows, handed over in first-seen order."""
        for key in [k for k in self.parts if k in self.groups]:
            yield self.take(key)

    def _group(self, key: PartLabels) -> tuple[list[str], list[Any]]:
        """The rows held for the part of ``key`` (a new part when it is first seen)."""
        group = self.groups.get(key)
        if group is None:
            if key not in self.parts:
                self.parts[key] = CorpusPart(
                    source=f"{self.source}[{key.label}]", slice_kind=key.kind, slice=key.label,
                    lang=key.lang, script=key.script, align=TABLE_ALIGN if self.align is not None else None,
                )  # fmt: skip
            group = self.groups[key] = ([], [])
        return group

    def _keyed(self, row: Record, labels: PartLabels) -> bool:
        """Whether ``row`` has a key not seen before in its part; else it is rejected."""
        where: Literal["line", "row"] = (
            "row" if row.row_group is not None or row.source == MEMORY_SOURCE else "line"
        )
        if _missing(row.id) or row.id == "":
            why = (
                f"no key in the align column {self.align!r}; give every row a key, or do not declare "
                "alignment (align_column=None, no --align-column)"
            )
            reject(Reject(row.source, why, where, row.number), self.errors, self.stats)
            return False
        rid = str(row.id)
        first = self.repeated.get((row.source, row.number)) or self.keys.get((labels, rid))
        if first is not None:
            why = (
                f"key {rid!r} repeats in {labels.label} (first at {first}); an aligned table holds each "
                "key once per language: remove the duplicate or give it its own key"
            )
            reject(Reject(row.source, why, where, row.number), self.errors, self.stats)
            return False
        self.keys[(labels, rid)] = f"{row.source}: {where} {row.number}"
        return True

    def size(self, key: PartLabels) -> int:
        """Rows of ``key``'s part held now."""
        group = self.groups.get(key)
        return len(group[0]) if group else 0

    def take(self, key: PartLabels) -> tuple[CorpusPart, list[str], list[Any]]:
        """The part of ``key`` and the rows held for it (texts, ids), which are handed over."""
        texts, ids = self.groups.pop(key, ([], []))
        return self.parts[key], texts, ids

    def whole_parts(self) -> list[CorpusPart]:
        """Every part with all its rows as its ``load`` (for a table read whole)."""
        out = []
        for key, part in self.parts.items():
            texts, ids = self.groups.get(key, ([], []))
            out.append(_with_texts(part, texts, ids))
        return out


def _with_texts(part: CorpusPart, texts: list[str], ids: list[Any]) -> CorpusPart:
    return replace(part, load=lambda: (texts, ids))


@dataclass
class Corpus:
    """Labelled parts of an evaluation corpus, read lazily part by part (see the module docstring)."""

    parts: list[CorpusPart]
    errors: Errors = "strict"  # how undecodable bytes were / will be handled
    stats: SourceStats = field(default_factory=SourceStats)  # replacement counts etc., updated as parts load

    def __post_init__(self) -> None:
        seen: Counter[tuple[str, str]] = Counter((p.slice_kind, p.slice) for p in self.parts)
        dupes = [key for key, n in seen.items() if n > 1]
        if dupes:
            kind, name = dupes[0]
            sources = [p.source for p in self.parts if (p.slice_kind, p.slice) == (kind, name)]
            raise CorpusError(
                f"slice {name!r} ({kind}) comes from more than one input: {', '.join(sources)}; "
                "give each file its own language label or pass only one of them"
            )

    def __iter__(self) -> Iterator[CorpusPart]:
        return iter(self.parts)

    def __len__(self) -> int:
        return len(self.parts)

    @property
    def slices(self) -> list[str]:
        """Slice labels in order."""
        return [p.slice for p in self.parts]

    @classmethod
    def from_records(cls, records: Iterable[tuple[str, str]]) -> Corpus:
        """An in-memory corpus from ``(source name, text)`` records, one part per language.

        A source name of the form ``<lang>_<Script>`` (optionally ``.txt``, or any path ending so) gives the
        part its language and script; the others are one part of language ``"und"`` (slice
        :data:`UNLABELLED`) with the script detected: a language is never named after a source.
        """
        groups: dict[str, tuple[str, list[str]]] = {}  # label -> (first source, texts)
        for source, text in records:
            if not isinstance(text, str):
                raise CorpusError(f"record from {source!r}: text must be a str, got {type(text).__name__}")
            name = Path(str(source)).name
            label = name.removesuffix(".txt") if parse_lang_code(name) else UNLABELLED
            groups.setdefault(label, (str(source), []))[1].append(text)
        parts = []
        for label, (source, texts) in groups.items():
            parsed = parse_lang_code(label)
            lang, script = parsed if parsed else ("und", None)
            parts.append(
                CorpusPart(
                    source=source, slice_kind="language", slice=label, lang=lang, script=script,
                    load=_frozen(texts, list(range(1, len(texts) + 1))),
                )
            )  # fmt: skip
        return cls(parts)


UNLABELLED = "und"  # the slice of text files whose names are not language codes


def _frozen(texts: list[str], ids: list[Any]) -> Callable[[], tuple[list[str], list[Any]]]:
    return lambda: (texts, ids)


def table_parts(
    source: str, records: Iterable[Record], columns: Columns, errors: Errors, stats: SourceStats
) -> list[CorpusPart]:
    """The parts of one table's records, grouped by slice; aligned by ``columns.align`` when declared."""
    groups = TableGroups(source, align=columns.align, errors=errors, stats=stats)
    for row in records:
        groups.add(row)
    return groups.whole_parts()


def load_memory(inputs: Any, *, errors: Errors, columns: Columns) -> Corpus:
    """An in-memory corpus (a DataFrame, a ``datasets`` dataset, an iterable of str or dict), read now and
    grouped like a table."""
    check_errors(errors)
    stats = SourceStats()
    records = iter_object_records(inputs, columns=columns, errors=errors, stats=stats)
    parts = table_parts(MEMORY_SOURCE, records, columns, errors, stats)
    if not parts:
        raise CorpusError("no texts found in the given corpus object; pass texts or rows with a text")
    return Corpus(parts, errors=errors, stats=stats)
