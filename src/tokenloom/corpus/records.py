"""Corpus records and rejects: what every reader yields, and what it sets aside instead of aborting.

Every input — a file of any format, a table in memory, an iterable of strings or dicts — becomes a stream of
:class:`Record`: the text, its language and script labels (when the input has them), the source and the
position (a line number, or a Parquet row group and row). Which cells hold these is a :class:`Columns`:
by default ``text``; the language from ``lang`` or else ``language``; the script from ``script`` or else
``language_script`` — so this library's own tables and FineWeb-2's (``language="rus"``,
``language_script="Cyrl"``) read without options.

Bad input becomes a :class:`Reject` (source, position, reason, how many documents it covers), handled by
:func:`reject` according to ``errors``:

- ``"strict"`` (the readers' default, and :func:`~tokenloom.corpus.load.load_corpus`'s): the first bad input
  raises :class:`~tokenloom.errors.CorpusError` whose
  message is the reject's (``"FILE: line N: reason"``);
- ``"replace"``: invalid UTF-8 is replaced by U+FFFD and counted (``SourceStats.replaced``); any other bad
  input raises as with ``"strict"``;
- ``"skip"``: every bad input — invalid UTF-8 included — is recorded in ``SourceStats.rejects`` and counted
  in ``SourceStats.rejected``, and reading goes on with the next document, row group or file.

A batch job over a corpus — a fertility report, a vocabulary sweep, training a tokenizer — defaults to
:data:`BATCH_ERRORS` (``"skip"``): one bad line never stops hours of work; the job counts what it set aside
on its summary line, and ``"strict"`` (``--errors strict``) stops it at the first bad input instead.

So every document of the input is either yielded as a record or covered by a reject. A reject's
``documents`` is ``1`` for a line or a row, the row count for a Parquet file or row group that cannot be
read (known from its metadata), and ``None`` where the count cannot be known (the unread tail of a
truncated compressed file, a file that cannot be opened).

Rows become records here too: :func:`record_of` turns one row's cells (a table's, a dict's) into a
:class:`Record`, or the reason it is rejected; :func:`iter_object_records` streams an in-memory corpus
(:func:`iter_object_items` the same items, a string as it is, with no record built for it) —
``datasets.Dataset`` / ``IterableDataset``, a pandas DataFrame, an iterable of strings or of dicts. A
string is a text with no labels; a dict, a DataFrame row or a dataset row is read through :class:`Columns`
as a table row is; anything else (a number, ``None``, a row without a string text) is a reject numbered by
its position (``row N``, from 1). :func:`is_table_object` recognises a DataFrame or a Hugging Face dataset
by ``isinstance`` against the library's class, looked up only when that library is already imported
(``sys.modules``), so checking never imports pandas or ``datasets``. What it does not do: read files
(``formats/``).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, Literal

from tokenloom.errors import CorpusError

__all__ = [
    "BATCH_ERRORS",
    "DEFAULT_COLUMNS",
    "ERRORS",
    "ERRORS_HELP",
    "MEMORY_SOURCE",
    "REJECT_COLUMNS",
    "REPLACE_ADVICE",
    "SURROGATE",
    "Columns",
    "Errors",
    "Record",
    "Reject",
    "SourceStats",
    "check_errors",
    "is_left_out",
    "is_table_object",
    "iter_object_items",
    "iter_object_records",
    "record_of",
    "reject",
]

Errors = Literal["strict", "replace", "skip"]
ERRORS: tuple[Errors, ...] = ("strict", "replace", "skip")
# the fix an error for invalid UTF-8 names; a reject set aside under "skip" says what became of it instead
REPLACE_ADVICE = "pass errors='replace' (--errors replace) to substitute U+FFFD and count"
_SET_ASIDE = "set aside; errors='replace' (--errors replace) would keep it with U+FFFD, counted"
# the default of every batch job over a corpus (report, sweep, training): set bad input aside and go on
BATCH_ERRORS: Errors = "skip"
ERRORS_HELP = (  # what errors= / --errors does, for every batch job's flag and config field
    "bad input in corpus files (invalid UTF-8, a malformed table row, an unreadable file): skip sets each "
    "aside, counted on the summary line, and reads the rest; strict stops at the first with an error; "
    "replace substitutes U+FFFD for invalid UTF-8 and counts it, stopping at other bad input"
)


@dataclass(frozen=True)
class Columns:
    """Which cells of a row hold the text and its labels; ``None`` = the first present of the defaults."""

    text: str = "text"  # the column of the document text
    lang: str | None = None  # language column; None: "lang", else "language"
    script: str | None = None  # script column; None: "script", else "language_script"
    align: str | None = None  # a translation key: rows sharing one are aligned; None: no alignment

    def __post_init__(self) -> None:
        for name in ("text", "lang", "script", "align"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value):
                raise ValueError(f"{name}_column must be a non-empty column name, got {value!r}")

    def resolve(self, names: list[str] | tuple[str, ...]) -> tuple[str | None, str | None]:
        """The (language, script) columns among ``names``: the given ones, or the first default present."""
        lang = self.lang or next((n for n in ("lang", "language") if n in names), None)
        script = self.script or next((n for n in ("script", "language_script") if n in names), None)
        return lang, script

    def used(self, names: list[str] | tuple[str, ...]) -> list[str]:
        """The columns among ``names`` a reader needs: text, language, script, ``slice``, the align key."""
        wanted = (self.text, *self.resolve(names), "slice", self.align)
        return list(dict.fromkeys(n for n in wanted if n is not None and n in names))

    @classmethod
    def of(cls, text: str | None, lang: str | None, script: str | None, align: str | None = None) -> Columns:
        """``Columns`` from keyword arguments where ``None`` means the default."""
        return cls("text" if text is None else text, lang, script, align)


DEFAULT_COLUMNS = Columns()


@dataclass(frozen=True, slots=True)
class Record:
    """One document: its text, labels (``None`` when the input has none) and where it was read."""

    text: str
    lang: str | None
    script: str | None
    source: str  # the file (as given) or "<texts>" for in-memory input
    number: int  # line number (text / JSONL / CSV), 1-based row number (Parquet, in-memory rows)
    row_group: int | None = None  # Parquet: the row group, and ``row`` the row inside it
    row: int | None = None
    slice: str | None = None  # a ``slice`` cell, when the input has one
    id: Any = None  # the align key (``Columns.align``), when one is declared

    @property
    def position(self) -> int | tuple[int, int]:
        """The line number, or ``(row group, row)`` for Parquet."""
        if self.row_group is not None and self.row is not None:
            return (self.row_group, self.row)
        return self.number


LEFT_OUT = ("not a corpus file", "hidden")  # how the reasons of files a folder search left out start
REJECT_COLUMNS: tuple[str, ...] = ("source", "unit", "number", "row_group", "documents", "reason")  # as_row()


@dataclass(frozen=True)
class Reject:
    """Input set aside: where (file, line or row), why, and how many documents it covers (see module)."""

    source: str
    reason: str
    unit: Literal["line", "row", "file"] = "line"
    number: int | None = None  # the line or row number (None for a whole file)
    row_group: int | None = None  # Parquet: the row group
    documents: int | None = 1  # documents covered; None when that cannot be known

    @property
    def where(self) -> str:
        """``"FILE: line N"``, ``"FILE: row N"``, ``"FILE: row group G"`` or ``"FILE"``."""
        if self.unit != "file" and self.number is not None:
            return f"{self.source}: {self.unit} {self.number}"
        if self.row_group is not None:
            return f"{self.source}: row group {self.row_group}"
        return self.source

    @property
    def message(self) -> str:
        return f"{self.where}: {self.reason}"

    def as_row(self) -> dict[str, Any]:
        """The reject as a flat row of :data:`REJECT_COLUMNS` (a line of ``rejects.csv``)."""
        return {name: getattr(self, name) for name in REJECT_COLUMNS}


@dataclass
class SourceStats:
    """Counters the readers update as they read (mutable; pass one to several calls to sum)."""

    files: int = 0  # files opened
    lines: int = 0  # lines (text files) or records (tables) returned
    bytes: int = 0  # bytes read (decompressed; a Parquet file's size), newlines included
    chars: int = 0  # code points returned (after replacement), newlines excluded
    replaced: int = 0  # U+FFFD substitutions made for invalid UTF-8 (errors="replace")
    replaced_lines: int = 0  # lines that contained at least one substitution
    replaced_where: list[str] = field(default_factory=list)  # first few "FILE:LINE" with substitutions
    rejected: int = 0  # documents set aside (errors="skip"); a reject of unknown size counts 1
    rejects: list[Reject] = field(default_factory=list)  # every reject, in reading order

    def add(self, other: SourceStats) -> None:
        """Add the counts of ``other`` (read after these): counters sum, rejects follow in order."""
        for name in ("files", "lines", "bytes", "chars", "replaced", "replaced_lines", "rejected"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.replaced_where.extend(other.replaced_where[: max(0, 10 - len(self.replaced_where))])
        self.rejects.extend(other.rejects)

    def as_dict(self) -> dict[str, int]:
        """The counters as a plain dict (for JSON), without the example locations; ``rejected`` (documents)
        and ``rejected_files`` (whole files among the rejects) only when some input was set aside."""
        out = {
            "files": self.files,
            "lines": self.lines,
            "bytes": self.bytes,
            "chars": self.chars,
            "replaced": self.replaced,
            "replaced_lines": self.replaced_lines,
        }
        if self.rejects:
            out["rejected"] = self.rejected
            out["rejected_files"] = sum(r.unit == "file" for r in self.rejects) - self.left_out
        listed = self.left_out
        if listed:
            out["left_out"] = listed
        return out

    @property
    def left_out(self) -> int:
        """Files a folder search did not read (listed in ``rejects``, covering no document)."""
        return sum(map(is_left_out, self.rejects))


def is_left_out(item: Reject) -> bool:
    """Whether a reject only lists a file a folder search did not read (covering no document; not bad input)."""
    return item.unit == "file" and item.documents == 0 and item.reason.startswith(LEFT_OUT)


def check_errors(errors: object) -> Errors:
    """``errors`` if it is one of ``strict``, ``replace``, ``skip``; ``ValueError`` naming it otherwise."""
    if errors not in ERRORS:
        raise ValueError(f"errors must be 'strict', 'replace' or 'skip', got {errors!r}")
    return errors


def reject(item: Reject, errors: Errors, stats: SourceStats) -> None:
    """Raise ``CorpusError(item.message)`` unless ``errors == "skip"``; then record and count ``item``,
    whose reason then says it was set aside rather than advise what only stops a strict run."""
    if errors != "skip":
        raise CorpusError(item.message)
    if REPLACE_ADVICE in item.reason:
        item = replace(item, reason=item.reason.replace(REPLACE_ADVICE, _SET_ASIDE))
    stats.rejects.append(item)
    stats.rejected += 1 if item.documents is None else item.documents


SURROGATE = re.compile("[\ud800-\udfff]")


def record_of(
    cells: dict[str, Any], source: str, number: int, columns: Columns, *, checked: bool = False, **where: Any
) -> Record | str:
    """The record of one row's ``cells``, or the reason it is rejected (no string text); ``checked``: the
    parser refused lone surrogates already (orjson), so the text is not searched for one."""
    text = cells.get(columns.text)
    if not isinstance(text, str):
        if columns.text not in cells:
            return (
                f"{columns.text!r} must be a string, got no such cell (cells: {sorted(cells)[:8]}); "
                "fill or remove the row, or pass text_column= (--text-column)"
            )
        return f"{columns.text!r} must be a string, got {text!r:.60}; fill or remove the row"
    if not checked and SURROGATE.search(text):
        return f"{columns.text!r} holds a lone surrogate (invalid UTF-8 or a bad JSON escape)"
    lang_col, script_col = _label_columns(columns, tuple(cells))
    return Record(
        text, _label(cells, lang_col), _label(cells, script_col), source, number,
        slice=_label(cells, "slice"), id=cells.get(columns.align) if columns.align else None, **where,
    )  # fmt: skip


@lru_cache(maxsize=256)
def _label_columns(columns: Columns, names: tuple[str, ...]) -> tuple[str | None, str | None]:
    """``columns.resolve(names)``, once per distinct set of cell names (a table has one or a few)."""
    return columns.resolve(names)


def _label(cells: dict[str, Any], key: str | None) -> str | None:
    value = cells.get(key) if key is not None else None
    if value is None or (isinstance(value, float) and value != value) or value == "":
        return None
    return str(value)


MEMORY_SOURCE = "<texts>"  # the source named in records and rejects of in-memory input


def _classes(module: str, names: tuple[str, ...]) -> tuple[type, ...]:
    found = sys.modules.get(module)
    return tuple(getattr(found, n) for n in names if found is not None and hasattr(found, n))


def _is_frame(obj: object) -> bool:
    return isinstance(obj, _classes("pandas", ("DataFrame",)))


def _is_dataset(obj: object) -> bool:
    return isinstance(obj, _classes("datasets", ("Dataset", "IterableDataset")))


def is_table_object(obj: object) -> bool:
    """Whether ``obj`` is a pandas DataFrame or a ``datasets`` (Iterable)Dataset (see the module)."""
    return _is_frame(obj) or _is_dataset(obj)


def _rows(obj: Any, columns: Columns) -> Iterable[Any]:
    """The items of ``obj``: a DataFrame's or dataset's rows as dicts of the columns used; else ``obj``."""
    if _is_frame(obj):
        names = [str(c) for c in obj.columns]
        used = columns.used(names)
        if columns.text not in used:  # every row is then rejected, naming the columns there are
            used = names
        return (
            dict(zip(used, values, strict=True))
            for values in zip(*(obj[c].tolist() for c in used), strict=True)
        )
    if _is_dataset(obj):
        names = list(obj.column_names or [])
        used = columns.used(names)
        return obj.select_columns(used) if columns.text in used else obj
    return obj


def iter_object_records(
    obj: Iterable[Any],
    *,
    columns: Columns = DEFAULT_COLUMNS,
    errors: Errors = "strict",
    stats: SourceStats,
) -> Iterator[Record]:
    """The records of an in-memory corpus (see the module docstring), counted in ``stats``."""
    for number, item in iter_object_items(obj, columns=columns, errors=errors, stats=stats):
        result = Record(item, None, None, MEMORY_SOURCE, number) if isinstance(item, str) else item
        stats.lines += 1
        stats.bytes += len(result.text.encode("utf-8"))
        stats.chars += len(result.text)
        yield result


def iter_object_items(
    obj: Iterable[Any], *, columns: Columns = DEFAULT_COLUMNS, errors: Errors = "strict", stats: SourceStats
) -> Iterator[tuple[int, str | Record]]:
    """(item number, item) of the items of an in-memory corpus that are kept, uncounted: a str as it is (no
    record built for it), anything else as its record; what is rejected is recorded in ``stats``."""
    for number, item in enumerate(_rows(obj, columns), start=1):
        if isinstance(item, str):
            yield number, item
            continue
        if isinstance(item, dict):
            result: Record | str = record_of(item, MEMORY_SOURCE, number, columns)
        else:
            result = (
                f"corpus item #{number} is {type(item).__name__}, not str; "
                f"pass texts, dicts with a {columns.text!r} key, or paths"
            )
        if isinstance(result, str):
            reject(Reject(MEMORY_SOURCE, result, "row", number), errors, stats)
            continue
        yield number, result
