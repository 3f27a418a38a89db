"""In-memory corpora as record streams: ``datasets.Dataset`` / ``IterableDataset``, pandas DataFrames,
iterables of strings or of dicts.

:func:`is_table_object` recognises a DataFrame or a Hugging Face dataset by ``isinstance`` against the
library's class, looked up only when that library is already imported (``sys.modules``): nobody passes a
DataFrame without having imported pandas, so checking never imports pandas or ``datasets``.
:func:`iter_object_records` yields :class:`~tokenloom.corpus.records.Record` s: a string is a text with no
labels; a dict, a DataFrame row or a dataset row is read through :class:`~tokenloom.corpus.records.Columns`
as a table row is. Anything else (a number, ``None``, a row without a string text) is a reject
(``records.reject``: raised unless ``errors="skip"``), numbered by its position (``row N``, from 1).
What it does not do: read files (``formats.py``).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import Any

from tokenloom.corpus.formats import record_of
from tokenloom.corpus.records import DEFAULT_COLUMNS, Columns, Errors, Record, Reject, SourceStats, reject

__all__ = ["MEMORY_SOURCE", "is_table_object", "iter_object_records"]

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
    count: bool = True,
) -> Iterator[Record]:
    """The records of an in-memory corpus (see the module docstring); counted in ``stats`` if ``count``."""
    for number, item in enumerate(_rows(obj, columns), start=1):
        if isinstance(item, str):
            result: Record | str = Record(item, None, None, MEMORY_SOURCE, number)
        elif isinstance(item, dict):
            result = record_of(item, MEMORY_SOURCE, number, columns)
        else:
            result = (
                f"corpus item #{number} is {type(item).__name__}, not str; "
                f"pass texts, dicts with a {columns.text!r} key, or paths"
            )
        if isinstance(result, str):
            reject(Reject(MEMORY_SOURCE, result, "row", number), errors, stats)
            continue
        if count:
            stats.lines += 1
            stats.bytes += len(result.text.encode("utf-8"))
            stats.chars += len(result.text)
        yield result
