"""A corpus as tasks: pieces that can be read anywhere, in any order, into the parts ``load_corpus`` gives.

:func:`label_files` labels the files of an input without reading them — FLORES-style ``<lang>_<Script>``
files (parallel when one folder's files have the same number of lines: see
:func:`~tokenloom.corpus.load.load_corpus`), other text files (one part of unknown language), source
files (a part per programming language) and the table files, whose parts come from their rows.
:func:`plan_corpus_tasks` starts from it (as ``load_corpus`` does) and cuts the work into
:class:`CorpusTask` s of about ``chunk_bytes`` (``tasks.py``):

- a file part (a FLORES-style or text file, a programming language's files) is one task, read whole —
  unless it is an uncompressed text file larger than ``chunk_bytes``, which becomes byte ranges, or a
  compressed text file (of unknown size), which is one task read piece by piece;
- the table files of the input are one table (a slice spread over many shards is one part) cut into
  tasks: a file, a range of Parquet row groups or a byte range of a JSON Lines file. The table is
  *aligned* (its parts share keys across languages) only when ``columns.align`` declares its key column;
  the table is then read once before it is planned, for keys repeated across tasks
  (:func:`repeated_keys`), so every task rejects the same rows;
- an in-memory corpus (a :class:`~tokenloom.corpus.parts.Corpus`, a DataFrame, a ``datasets`` dataset, an
  iterable of str or dict) is one task: it is read in this process, never sent to another.

"Is this input a path?" is decided here, once (``sources.is_paths``); every consumer — reports, training
(``stream.py``), the token-shard writer — plans its input with :func:`plan_corpus_tasks`.

A task on files is plain data (it pickles) and its :attr:`CorpusTask.id` is stable across runs over the
same files; ``columnar.read_corpus_task`` reads one. What it does not do: read tasks (``columnar.py``),
count or schedule (``tokenloom.fertility.runner``).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tokenloom.corpus.formats import CODE_EXTENSIONS, read_file_records
from tokenloom.corpus.parts import (
    UNLABELLED,
    Corpus,
    CorpusPart,
    RepeatedKeys,
    TableGroups,
    load_memory,
    no_texts,
    parse_lang_code,
    row_labels,
)
from tokenloom.corpus.records import DEFAULT_COLUMNS, Columns, Errors, Record, Reject, SourceStats
from tokenloom.corpus.sources import corpus_files, is_paths
from tokenloom.corpus.tasks import (
    CHUNK_BYTES,
    Task,
    file_kind,
    file_tasks,
    read_code_part,
    read_text_files,
    read_text_part,
)
from tokenloom.errors import CorpusError

__all__ = [
    "CorpusTask", "Labelled", "label_files", "plan_corpus_tasks", "repeated_keys", "table_source", "task_parts",
]  # fmt: skip

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CorpusTask:
    """A file part read whole (``part``), a byte range of one (``part`` and ``piece``), or a piece of the
    input's table (``piece``; ``table`` names the table, ``aligned``: its rows carry declared keys,
    ``repeated``: the rows of this task's file whose key repeats an earlier row's)."""

    id: str  # stable across runs over the same files
    bytes: int  # bytes on disk the task reads (for progress)
    part: CorpusPart | None = None  # labels only (its load is no_texts)
    piece: Task | None = None
    table: str = ""
    aligned: bool = False
    repeated: tuple[tuple[tuple[str, int], str], ...] = ()
    rejects: tuple[Reject, ...] = ()  # what planning set aside or listed (files left out): read as rejects
    memory: Corpus | None = field(default=None, compare=False)  # an in-memory corpus, read in this process


def _size(paths: Iterable[Path]) -> int:
    total = 0
    for p in paths:
        with contextlib.suppress(OSError):  # unreadable: the reader rejects it
            total += p.stat().st_size
    return total


def _piece_bytes(task: Task) -> int:
    return task.stop - task.start if task.kind == "bytes" else _size([task.path])


def _repeated(tables: list[Path], columns: Columns, errors: Errors) -> RepeatedKeys:
    """Rows of an aligned table whose key repeats an earlier row's (one read of the table)."""
    if columns.align is None:
        return {}
    records = (
        r for f in tables for r in read_file_records(f, columns=columns, errors="skip", stats=SourceStats())
    )
    return repeated_keys(records, align=columns.align, errors=errors)


def plan_corpus_tasks(
    inputs: Corpus | str | os.PathLike[str] | Iterable[Any],
    *,
    errors: Errors = "strict",
    parallel: bool | None = None,
    columns: Columns = DEFAULT_COLUMNS,
    chunk_bytes: int = CHUNK_BYTES,
) -> list[CorpusTask]:
    """The tasks of ``inputs`` (see the module docstring). Paths, folders and globs: the files left out
    of a folder search (a task holding their rejects), the table's, then the file parts in ``load_corpus``
    order; bad labels (an empty file, a broken parallel folder) raise as there. A
    :class:`~tokenloom.corpus.parts.Corpus` or an in-memory corpus (a DataFrame, a ``datasets`` dataset, an
    iterable of str or dict, read as by ``load_corpus``): one task holding it (:attr:`CorpusTask.memory`)."""
    if isinstance(inputs, Corpus) or not is_paths(inputs):  # the one test of "is this a path?" of a report
        corpus = inputs if isinstance(inputs, Corpus) else load_memory(inputs, errors=errors, columns=columns)
        return [CorpusTask("memory", 0, memory=corpus)]
    stats = SourceStats()
    labelled = label_files(inputs, errors=errors, parallel=parallel, stats=stats)
    if not labelled.parts and not labelled.tables:
        raise CorpusError(f"no texts found in {inputs!r}; pass .txt, .jsonl, .csv, .parquet or source files")
    tasks: list[CorpusTask] = []
    if stats.rejects:  # files a folder search left out: passed on to the report as rejects
        tasks.append(CorpusTask("left-out", 0, rejects=tuple(stats.rejects)))
    tables = list(labelled.tables)
    if tables:
        name, aligned = table_source(tables), columns.align is not None
        repeated = _repeated(tables, columns, errors)
        for t in file_tasks(tables, chunk_bytes=chunk_bytes):
            size = t.stop - t.start if t.kind == "bytes" else _size([t.path])
            mine = tuple((k, v) for k, v in repeated.items() if k[0] == str(t.path))
            tasks.append(CorpusTask(t.id, size, piece=t, table=name, aligned=aligned, repeated=mine))
    for part in labelled.parts:
        labels = replace(part, load=no_texts)
        ranges = file_tasks(part.paths, chunk_bytes=chunk_bytes) if part.slice_kind != "code" else []
        if len(ranges) > 1:  # a large uncompressed text file, or several text files
            tasks += [CorpusTask(t.id, _piece_bytes(t), part=labels, piece=t) for t in ranges]
        elif ranges and ranges[0].compressed:  # of unknown size: streamed
            tasks.append(CorpusTask(ranges[0].id, _size(part.paths), part=labels, piece=ranges[0]))
        else:
            tasks.append(CorpusTask(f"{part.slice_kind}:{part.slice}", _size(part.paths), part=labels))
    return tasks


def task_parts(tasks: Iterable[CorpusTask]) -> list[CorpusPart]:
    """The parts the tasks name before they are read (a table's parts are known once it is read)."""
    parts: list[CorpusPart] = []
    for task in tasks:
        parts += list(task.memory) if task.memory is not None else [task.part] if task.part else []
    return list(dict.fromkeys(parts))


def _count_lines(path: Path) -> int:
    with path.open("rb") as f:
        return sum(1 for _ in f)


def _unlabelled_part(paths: list[Path], errors: Errors, stats: SourceStats) -> CorpusPart:
    """The text files whose names are not language codes: one part of unknown language."""
    return CorpusPart(
        source=_sources(paths), slice_kind="language", slice=UNLABELLED, lang="und", script=None,
        load=lambda: read_text_files(paths, errors, stats), paths=tuple(paths),
    )  # fmt: skip


def _code_parts(files: list[Path], errors: Errors, stats: SourceStats) -> list[CorpusPart]:
    by_lang: dict[str, list[Path]] = {}
    for f in files:
        by_lang.setdefault(CODE_EXTENSIONS[f.suffix], []).append(f)
    parts = []
    for lang, paths in sorted(by_lang.items()):
        part = CorpusPart(
            source=_sources(paths), slice_kind="code", slice=lang, lang=lang, script=None,
            load=(lambda ps: lambda: read_code_part(ps, errors, stats))(paths), paths=tuple(paths),
        )  # fmt: skip
        parts.append(part)
    return parts


def _flores_parts(
    folder: Path, files: list[Path], parallel: bool | None, errors: Errors, stats: SourceStats
) -> list[CorpusPart]:
    counts = {f: _count_lines(f) for f in files}
    for f, n in counts.items():
        if n == 0:
            raise CorpusError(f"{f}: empty file (no lines); remove it or put text in it")
    common, n_common = Counter(counts.values()).most_common(1)[0]
    aligned = False
    if parallel is not False and len(files) > 1:
        if n_common == len(files):
            aligned = True
        elif parallel or n_common * 2 > len(files):
            bad = next(f for f, n in counts.items() if n != common)
            ref = next(f for f, n in counts.items() if n == common)
            first_missing = min(counts[bad], common) + 1
            # the CLI never passes `parallel`, so only an explicit parallel=True (Python) names the keyword
            way_out = (
                "or pass parallel=False to read the files independently"
                if parallel
                else f"or move {bad.name} into a folder of its own (or give it as the only input) so that it "
                "is read on its own"
            )
            raise CorpusError(
                f"parallel folder {folder}: {bad.name} has {counts[bad]} lines but {ref.name} (and "
                f"{n_common - 1} other files) have {common}; line {first_missing} has no counterpart. "
                f"In a FLORES-style folder line i of every file is the same sentence: fix {bad.name} so that "
                f"it has {common} lines, remove it, {way_out}"
            )
        else:
            shown = ", ".join(f"{f.name} {n}" for f, n in sorted(counts.items())[:4])
            logger.warning(
                "%s: line counts differ across files (%s%s), so its files are read as NOT parallel and no "
                "premiums against a pivot can be computed; pass parallel=True to require line alignment "
                "(an error names the first file that breaks it)",
                folder,
                shown,
                ", ..." if len(counts) > 4 else "",
            )
    align = str(folder.resolve()) if aligned or (parallel is not False and len(files) == 1) else None

    def loader(path: Path) -> Callable[[], tuple[list[str], list[Any]]]:
        return lambda: read_text_part(path, errors, stats)

    parts = []
    for f in files:
        lang, script = parse_lang_code(f.name)  # type: ignore[misc]
        parts.append(
            CorpusPart(
                source=str(f), slice_kind="language", slice=f.stem, lang=lang, script=script,
                align=align, load=loader(f), paths=(f,),
            )
        )  # fmt: skip
    return parts


@dataclass(frozen=True)
class Labelled:
    """The files of an input, labelled without reading them: the file parts (FLORES-style and other text
    files, code) and the table files, whose parts come from their rows (at index ``tables_at``)."""

    parts: tuple[CorpusPart, ...]
    tables: tuple[Path, ...]
    tables_at: int  # where the table's parts go among ``parts`` (after the unlabelled part)


def label_files(
    inputs: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    errors: Errors,
    parallel: bool | None,
    stats: SourceStats,
) -> Labelled:
    """The labelled file parts and the table files of ``inputs`` (see the module docstring): what
    :func:`load_corpus` and the task plan (``plan.py``) both start from. Bad labels (an empty text file, a
    broken parallel folder) raise; the files a folder search leaves out are recorded in ``stats``."""
    files = corpus_files(inputs, errors=errors, stats=stats)
    flores: dict[Path, list[Path]] = {}
    code: list[Path] = []
    tables: list[Path] = []
    unlabelled: list[Path] = []
    for f in files:
        kind = file_kind(f)
        if f.suffix == ".txt" and parse_lang_code(f.name):
            flores.setdefault(f.parent, []).append(f)
        elif kind == "code":
            code.append(f)
        elif kind == "table":
            tables.append(f)
        else:
            if f.stat().st_size == 0:
                raise CorpusError(f"{f}: empty file (no lines); remove it or put text in it")
            unlabelled.append(f)
    parts = [_unlabelled_part(unlabelled, errors, stats)] if unlabelled else []
    at = len(parts)
    for folder, group in flores.items():
        parts.extend(_flores_parts(folder, group, parallel, errors, stats))
    parts.extend(_code_parts(code, errors, stats))
    return Labelled(tuple(parts), tuple(tables), at)


def table_source(paths: list[Path]) -> str:
    """A table's name in its parts' sources: its files (the shards of one table)."""
    return _sources(paths)


def _sources(paths: list[Path]) -> str:
    """Files as named in a part's source: up to three, then how many more."""
    shown = ", ".join(str(p) for p in paths[:3])
    return shown + (f" (+{len(paths) - 3} more)" if len(paths) > 3 else "")


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
