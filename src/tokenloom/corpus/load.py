"""Read evaluation corpora into labelled parts: FLORES-style folders, JSONL / CSV / Parquet, code folders.

What it reads (:func:`load_corpus`):

- **FLORES-style files** ``<lang>_<Script>.txt`` (``eng_Latn.txt``, ``zho_Hans.txt``), one sentence per line.
  Such files in one folder are *parallel* (line i of every file is the same sentence) when they all have
  the same number of lines — or when most of them do, in which case a file that differs is an error
  (``CorpusError`` naming it, its line count and the expected one). Folders whose files disagree
  throughout (e.g. UDHR translations) are read as independent, non-parallel files. ``parallel=True``
  makes any mismatch an error, ``parallel=False`` never aligns.
- **Tables**: JSON Lines (``.jsonl``, ``.json``), ``.csv``, ``.tsv``, ``.parquet``, each also compressed
  (``.gz``, ``.zst``, ``.xz``, ``.bz2``), streamed by ``formats.py``, with a ``text`` column and optional
  language (``lang``, else ``language``: ``hin`` or ``hin_Deva``), script (``script``, else
  ``language_script``) and ``slice`` columns (other names: ``text_column=``, ``lang_column=``,
  ``script_column=``). Alignment is declared, never inferred from a column's name: with
  ``align_column="id"`` (``--align-column id``) rows sharing a key are aligned (parallel) across languages,
  a row without a key or repeating a key within its language is bad input; without it, an ``id`` column
  (a pretraining shard's document id) is ignored. The table files of
  one call are shards of one table: a slice spread over many shards is one part. An in-memory corpus (a
  DataFrame, a ``datasets`` dataset, an iterable of str or dict) is read as one table. A ``slice`` label containing ``translit`` is a transliterated
  slice, one containing ``mixed`` a code-mixed slice, ``code`` a code slice; others name a language slice.
- **Other text files** (a ``.txt`` whose name is not a language code, ``NOTICE.txt``): one text per line,
  all of them one part of unknown language: slice :data:`UNLABELLED` (``und``), its script detected per
  text. A language is never named after a file; a report lists these files as unlabelled.
- **Source files** (``.py``, ``.rs``, ...): one text per file, a ``code`` slice per programming language,
  the language taken from the file extension.

Files are found by ``tokenloom.corpus.sources`` and read by ``tokenloom.corpus.tasks``, as training reads them. Bad input raises
:class:`~tokenloom.errors.CorpusError` naming file and line: missing ``text`` column,
empty file, null / non-string text, invalid JSON, undecodable bytes (or, with ``errors="replace"``,
U+FFFD substitutions counted in :attr:`Corpus.stats`), mismatched line counts in a parallel folder. With
``errors="skip"`` every such line, row or file but the last (line counts are a property of a folder) is a
:class:`~tokenloom.corpus.records.Reject` in ``Corpus.stats.rejects`` instead, and the rest is read; a text
file's ids are then the line numbers of the lines kept. Nothing else is dropped: blank lines are texts too
(with no words and no tokens).

Files are read lazily, one part at a time (``part.load()``), so a report holds one language's texts at
once; tables are read when loaded (their rows must be grouped). :func:`label_files` labels the files
without reading any: the task plan (``plan.py``) starts from it too and reads the tables piece by piece.
What it does not do: tokenize, segment words or transliterate (``tokenloom.fertility.slices`` generates transliterated slices).
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tokenloom.corpus.formats import CODE_EXTENSIONS, read_file_records
from tokenloom.corpus.parts import CorpusPart, SliceKind, parse_lang_code
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
)  # fmt: skip
from tokenloom.corpus.sources import corpus_files, is_paths
from tokenloom.corpus.table_parts import TableGroups
from tokenloom.corpus.tasks import file_kind, iter_numbered_texts, iter_texts
from tokenloom.errors import CorpusError

__all__ = [
    "CODE_EXTENSIONS",
    "UNLABELLED",
    "Corpus",
    "CorpusPart",
    "Labelled",
    "SliceKind",
    "label_files",
    "load_corpus",
    "load_memory",
    "parse_lang_code",
    "read_code_part",
    "read_text_files",
    "read_text_part",
    "table_source",
]

logger = logging.getLogger(__name__)


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
MAX_TEXT_BYTES = 1 << 20  # one line of a text file is one text (a sentence, a paragraph): 1 MiB at most


def _frozen(texts: list[str], ids: list[Any]) -> Callable[[], tuple[list[str], list[Any]]]:
    return lambda: (texts, ids)


def _count_lines(path: Path) -> int:
    with path.open("rb") as f:
        return sum(1 for _ in f)


def read_text_part(path: Path, errors: Errors, stats: SourceStats) -> tuple[list[str], list[Any]]:
    """A text file's lines and their line numbers (rejected lines, under ``errors="skip"``, left out):
    the texts of a FLORES-style or plain text file part."""
    numbered = list(iter_numbered_texts(path, errors=errors, stats=stats, max_line_bytes=MAX_TEXT_BYTES))
    if not numbered:
        why = "empty file (no lines); remove it or put text in it"
        if errors != "skip" or not stats.rejects or stats.rejects[-1].source != str(path):
            reject(Reject(str(path), why, "file", documents=0), errors, stats)
    return [text for _, text in numbered], [number for number, _ in numbered]


def _table_parts(
    source: str, records: Iterable[Record], columns: Columns, errors: Errors, stats: SourceStats
) -> list[CorpusPart]:
    """The parts of one table's records, grouped by slice; aligned by ``columns.align`` when declared."""
    groups = TableGroups(source, align=columns.align, errors=errors, stats=stats)
    for row in records:
        groups.add(row)
    return groups.whole_parts()


def read_text_files(paths: Iterable[Path], errors: Errors, stats: SourceStats) -> tuple[list[str], list[Any]]:
    """The lines of text files, one after another, with their line numbers (the texts of a part made of
    several files)."""
    texts: list[str] = []
    ids: list[Any] = []
    for path in paths:
        more, numbers = read_text_part(path, errors, stats)
        texts += more
        ids += numbers
    return texts, ids


def _unlabelled_part(paths: list[Path], errors: Errors, stats: SourceStats) -> CorpusPart:
    """The text files whose names are not language codes: one part of unknown language."""
    return CorpusPart(
        source=_sources(paths), slice_kind="language", slice=UNLABELLED, lang="und", script=None,
        load=lambda: read_text_files(paths, errors, stats), paths=tuple(paths),
    )  # fmt: skip


def read_code_part(paths: Iterable[Path], errors: Errors, stats: SourceStats) -> tuple[list[str], list[Any]]:
    """The texts of a code part: each file whole, its path as its id."""
    paths = list(paths)
    texts = [text for p in paths for text in iter_texts(p, errors=errors, stats=stats)]
    return texts, [str(p) for p in paths]


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


def load_corpus(
    inputs: str | os.PathLike[str] | Iterable[Any],
    *,
    errors: Errors = "strict",
    parallel: bool | None = None,
    text_column: str | None = None,
    lang_column: str | None = None,
    script_column: str | None = None,
    align_column: str | None = None,
) -> Corpus:
    """Find and label the parts of a corpus (files are read later, part by part; tables now).

    ``inputs``: files, folders (searched recursively) and globs, or an in-memory corpus (a DataFrame, a
    ``datasets`` dataset, an iterable of str or dict, grouped like a table). ``errors``: ``"strict"``
    raises at the first bad input, ``"replace"`` substitutes U+FFFD for invalid UTF-8 (counted in
    ``corpus.stats``) and raises on other bad input, ``"skip"`` sets every bad input aside in
    ``corpus.stats.rejects`` and reads the rest (``tokenloom.corpus.records``). ``parallel``: ``None``
    decides per folder from the line counts (see the module docstring), ``True`` requires FLORES-style
    files of one folder to be parallel, ``False`` never aligns them. ``text_column`` / ``lang_column`` /
    ``script_column``: the cells of a table row that hold the text and its labels (defaults: ``text``;
    ``lang`` or ``language``; ``script`` or ``language_script``). ``align_column``: the column of a
    translation key that aligns a table's rows across languages (``None``: tables are not aligned).
    """
    check_errors(errors)
    columns = Columns.of(text_column, lang_column, script_column, align_column)
    if not is_paths(inputs):
        return load_memory(inputs, errors=errors, columns=columns)
    stats = SourceStats()
    labelled = label_files(inputs, errors=errors, parallel=parallel, stats=stats)
    parts = list(labelled.parts)
    if labelled.tables:  # shards of one table: a slice spread over many files is one part
        tables = labelled.tables
        records = (
            r for f in tables for r in read_file_records(f, columns=columns, errors=errors, stats=stats)
        )
        parts[labelled.tables_at : labelled.tables_at] = _table_parts(
            table_source(list(tables)), records, columns, errors, stats
        )
    if not parts:
        raise CorpusError(f"no texts found in {inputs!r}; pass .txt, .jsonl, .csv, .parquet or source files")
    return Corpus(parts, errors=errors, stats=stats)


def load_memory(inputs: Any, *, errors: Errors, columns: Columns) -> Corpus:
    """An in-memory corpus (a DataFrame, a ``datasets`` dataset, an iterable of str or dict), read now and
    grouped like a table."""
    check_errors(errors)
    stats = SourceStats()
    records = iter_object_records(inputs, columns=columns, errors=errors, stats=stats)
    parts = _table_parts(MEMORY_SOURCE, records, columns, errors, stats)
    if not parts:
        raise CorpusError("no texts found in the given corpus object; pass texts or rows with a text")
    return Corpus(parts, errors=errors, stats=stats)


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
