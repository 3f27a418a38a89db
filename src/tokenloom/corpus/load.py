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
once; tables are read when loaded (their rows must be grouped).  ``plan.label_files`` labels the files
without reading any: the task plan starts from it too and reads the tables piece by piece. The parts and
the :class:`~tokenloom.corpus.parts.Corpus` holding them are ``parts.py``'s.
What it does not do: tokenize, segment words or transliterate (``tokenloom.fertility.slices`` generates transliterated slices).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from tokenloom.corpus.formats import CODE_EXTENSIONS, read_file_records
from tokenloom.corpus.parts import (
    UNLABELLED,
    Corpus,
    CorpusPart,
    SliceKind,
    load_memory,
    parse_lang_code,
    table_parts,
)
from tokenloom.corpus.plan import Labelled, label_files, table_source
from tokenloom.corpus.records import Columns, Errors, SourceStats, check_errors
from tokenloom.corpus.sources import is_paths
from tokenloom.corpus.tasks import read_code_part, read_text_files, read_text_part
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
        parts[labelled.tables_at : labelled.tables_at] = table_parts(
            table_source(list(tables)), records, columns, errors, stats
        )
    if not parts:
        raise CorpusError(f"no texts found in {inputs!r}; pass .txt, .jsonl, .csv, .parquet or source files")
    return Corpus(parts, errors=errors, stats=stats)
