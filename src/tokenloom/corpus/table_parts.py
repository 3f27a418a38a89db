"""A table's rows grouped into corpus parts, whether the table is read whole or piece by piece.

A row's part is given by its labels (:func:`row_labels`): the language (``hin`` or ``hin_Deva``), the
script (labelled, from a language code, or the row's dominant script), and the ``slice`` label (default
``<lang>_<Script>``), whose wording gives the kind (:func:`~tokenloom.corpus.parts.slice_kind_of`).

A table is *aligned* only when its align column is declared (``Columns.align``): rows sharing a key are the
same content in several languages. Within an aligned table, a row without a key and a key seen before in
the same part (language) are each a :class:`~tokenloom.corpus.records.Reject` under the row's own file and
line — the first row with a key is kept. A table read piece by piece is checked for keys repeated across
pieces before it is read (:func:`repeated_keys`), so every reading rejects the same rows.
:class:`TableGroups` collects rows into parts in first-seen order; :meth:`TableGroups.take` hands a part's
rows over and starts it again, so a reader can pass on fixed-size pieces. What it does not do: read files.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Literal

from tokenloom.corpus.parts import CorpusPart, SliceKind, parse_lang_code, script_label, slice_kind_of
from tokenloom.corpus.records import MEMORY_SOURCE, Errors, Record, Reject, SourceStats, reject
from tokenloom.unicode import dominant_script

__all__ = ["TABLE_ALIGN", "PartLabels", "RepeatedKeys", "TableGroups", "repeated_keys", "row_labels"]

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


def repeated_keys(records: Iterable[Record], *, align: str, errors: Errors) -> RepeatedKeys:
    """The rows of an aligned table (``records``, every row in reading order) whose key repeats an earlier
    row's in the same part, each with where that earlier row is; under ``errors="strict"`` the first such row
    raises (as :class:`TableGroups` would)."""
    groups = TableGroups("", align=align, errors=errors, stats=SourceStats())
    out: RepeatedKeys = {}
    for row in records:
        first = groups.keys.get((row_labels(row), str(row.id)))
        if groups.add(row) is None and first is not None:
            out[(row.source, row.number)] = first
        groups.groups.clear()  # only the keys are needed
    return out


def _with_texts(part: CorpusPart, texts: list[str], ids: list[Any]) -> CorpusPart:
    return replace(part, load=lambda: (texts, ids))
