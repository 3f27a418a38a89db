"""A table's rows grouped into corpus parts, whether the table is read whole or piece by piece.

A row's part is given by its labels (:func:`row_labels`): the language (``hin`` or ``hin_Deva``), the
script (labelled, from a language code, or the row's dominant script), and the ``slice`` label (default
``<lang>_<Script>``), whose wording gives the kind (:func:`~tokenloom.text.parts.slice_kind_of`). The
rows of an *aligned* table carry an ``id`` (rows sharing one are the same content in several languages);
a row of such a table without an id is a :class:`~tokenloom.text.records.Reject`. :class:`TableGroups`
collects rows into parts in first-seen order; :meth:`TableGroups.take` hands a part's rows over and
starts it again, so a reader can pass on fixed-size pieces. What it does not do: read files.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

from tokenloom.text.memory import MEMORY_SOURCE
from tokenloom.text.parts import CorpusPart, SliceKind, parse_lang_code, script_label, slice_kind_of
from tokenloom.text.records import Errors, Record, Reject, SourceStats, reject
from tokenloom.text.unicode import dominant_script

__all__ = ["TABLE_ALIGN", "PartLabels", "TableGroups", "row_labels"]

TABLE_ALIGN = "table-ids"  # the align group of the parts of a table with ids


@dataclass(frozen=True)
class PartLabels:
    """The labels a row gives its part."""

    lang: str
    script: str
    label: str
    kind: SliceKind


def row_labels(row: Record) -> PartLabels:
    """The part labels of one row (see the module docstring)."""
    lang, script = row.lang or "und", script_label(row.script)
    parsed = parse_lang_code(lang)
    if parsed:
        lang, script = parsed[0], script or parsed[1]
    script = script or dominant_script(row.text)
    label = row.slice or f"{lang}_{script}"
    return PartLabels(lang, script, label, slice_kind_of(label))


def _missing(rid: Any) -> bool:
    return rid is None or (isinstance(rid, float) and rid != rid)


class TableGroups:
    """Rows of one table (``source`` names it) grouped into parts; ``aligned``: the table has ids."""

    def __init__(self, source: str, *, aligned: bool, errors: Errors, stats: SourceStats) -> None:
        self.source, self.aligned, self.errors, self.stats = source, aligned, errors, stats
        self.groups: dict[PartLabels, tuple[list[str], list[Any]]] = {}
        self.parts: dict[PartLabels, CorpusPart] = {}  # every part seen, in first-seen order

    def add(self, row: Record) -> PartLabels | None:
        """Add one row to its part; ``None`` when it is rejected (an aligned table's row without id)."""
        if self.aligned and _missing(row.id):
            where: Literal["line", "row"] = (
                "row" if row.row_group is not None or self.source == MEMORY_SOURCE else "line"
            )
            why = "empty 'id'; give every row an id or drop the column"
            reject(Reject(self.source, why, where, row.number), self.errors, self.stats)
            return None
        key = row_labels(row)
        if key not in self.parts:
            self.parts[key] = CorpusPart(
                source=f"{self.source}[{key.label}]", slice_kind=key.kind, slice=key.label, lang=key.lang,
                script=key.script, align=TABLE_ALIGN if self.aligned else None,
            )  # fmt: skip
        texts, ids = self.groups.setdefault(key, ([], []))
        texts.append(row.text)
        ids.append(str(row.id) if self.aligned else row.number)
        return key

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
