"""The one reader of corpora: which files an input names, and the records every input holds.

Evaluation (:func:`tokenloom.corpus.load.load_corpus`) and the corpus plan that training, reports and token
shards read (``tasks.py``, ``plan.py``) find files through this module, so a folder, a JSONL shard or a
DataFrame is the same corpus to all of them:

- :func:`corpus_files` expands files, folders (searched recursively for :func:`corpus_suffixes`, those of
  every registered format, ``formats/``) and globs
  (``sources.resolve_inputs``). A folder is searched for text, JSON Lines (``.jsonl``, ``.json`` — Dolma's
  naming —, ``.ndjson``), CSV, TSV, Parquet and source files, each also compressed (``.gz``, ``.zst``,
  ``.xz``, ``.bz2``). Every other file of a folder is listed in ``stats.rejects`` as left out (a reject
  covering no document: "not a corpus file", a hidden file), and a link to a missing target is bad input;
  nothing is dropped silently;
- :func:`file_kind`: JSON Lines / CSV / TSV / Parquet files are **tables**, files with a programming
  language's extension (:data:`CODE_EXTENSIONS`) are **code**, everything else is **text** (the kind of
  ``a.jsonl.gz`` is the kind of ``a.jsonl``);
- :func:`is_paths`: whether an input names files — the one test of "is this a path?" (the plan, training's
  stream and ``load_corpus`` ask it; an in-memory corpus is anything else);
- :func:`iter_records` streams the :class:`~tokenloom.corpus.records.Record` s of paths (``formats.py``)
  or of in-memory corpora (``memory.py``); :func:`iter_texts` the texts of one file.

Bad input is a :class:`~tokenloom.corpus.records.Reject`: raised as ``CorpusError`` naming file and line
under ``errors="strict"`` (the default) or ``"replace"`` (which replaces invalid UTF-8 by U+FFFD), set
aside in ``stats.rejects`` under ``errors="skip"`` (``records.py``). What it does not do: label parts
(``load.py``), sample or split lines for training (``stream.py``), split inputs into tasks (``tasks.py``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Literal, TypeAlias, TypeGuard

from tokenloom.corpus.compression import COMPRESSION_SUFFIXES, detect_compression
from tokenloom.corpus.formats import CODE_EXTENSIONS, file_format, read_file_records, reader_for, readers
from tokenloom.corpus.memory import iter_object_records
from tokenloom.corpus.records import DEFAULT_COLUMNS, Columns, Errors, Record, Reject, SourceStats, reject
from tokenloom.corpus.sources import LeftOut, iter_handle_lines, resolve_inputs

__all__ = [
    "CODE_EXTENSIONS",
    "CORPUS_SUFFIXES",
    "FileKind",
    "PathInputs",
    "corpus_files",
    "corpus_suffixes",
    "file_kind",
    "is_paths",
    "iter_numbered_texts",
    "iter_records",
    "iter_texts",
    "record_left_out",
    "scan_files",
]

FileKind = Literal["text", "table", "code"]
PathInputs: TypeAlias = (
    "str | os.PathLike[str] | list[str | os.PathLike[str]] | tuple[str | os.PathLike[str], ...]"
)


def corpus_suffixes() -> tuple[str, ...]:
    """The suffixes a folder search takes: every registered format's (text and tables, also compressed,
    then source files)."""
    data = tuple(s for r in readers() if r.kind != "code" for s in r.suffixes)
    code = tuple(s for r in readers() if r.kind == "code" for s in r.suffixes)
    return data + tuple(s + c for s in data for c in COMPRESSION_SUFFIXES) + code


CORPUS_SUFFIXES = corpus_suffixes()  # those of the built-in formats


def corpus_files(
    inputs: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    errors: Errors = "strict",
    stats: SourceStats | None = None,
) -> list[Path]:
    """The files of ``inputs`` (files, folders searched for :func:`corpus_suffixes`, globs), sorted; the
    files a folder search leaves out are recorded in ``stats`` (:func:`record_left_out`)."""
    files, left_out = scan_files(inputs)
    record_left_out(left_out, errors, SourceStats() if stats is None else stats)
    return files


def scan_files(
    inputs: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
) -> tuple[list[Path], list[LeftOut]]:
    """The files of ``inputs`` (as :func:`corpus_files`) and those a folder search left out."""
    left_out: list[LeftOut] = []
    return resolve_inputs(inputs, suffixes=corpus_suffixes(), left_out=left_out), left_out


def record_left_out(left_out: Iterable[LeftOut], errors: Errors, stats: SourceStats) -> None:
    """Files a folder search left out, in ``stats.rejects``: a link to a missing target is bad input (raised
    unless ``errors="skip"``, covering an unknown number of documents); any other is listed, covering no
    document and never raised."""
    for item in left_out:
        if item.broken:
            reject(Reject(str(item.path), item.why, "file", documents=None), errors, stats)
        else:
            stats.rejects.append(Reject(str(item.path), item.why, "file", documents=0))


def file_kind(path: Path) -> FileKind:
    """``"table"``, ``"code"`` or ``"text"``, by the file's suffix (see the module docstring)."""
    return reader_for(path).kind


def is_paths(inputs: object) -> TypeGuard[PathInputs]:
    """Whether ``inputs`` names files: a str, a PathLike, or a list / tuple of them — the one test of
    "is this a path?" that every consumer of a corpus (the task plan, training's stream) makes."""
    if isinstance(inputs, str | os.PathLike):
        return True
    return isinstance(inputs, list | tuple) and all(isinstance(x, str | os.PathLike) for x in inputs)


def iter_records(
    inputs: Any,
    *,
    columns: Columns = DEFAULT_COLUMNS,
    errors: Errors = "strict",
    stats: SourceStats | None = None,
    max_line_bytes: int | None = None,
) -> Iterator[Record]:
    """The records of ``inputs``: paths, folders and globs (:func:`corpus_files`, read file by file in
    sorted order), or an in-memory corpus (a DataFrame, a ``datasets`` dataset, an iterable of str or dict)."""
    stats = SourceStats() if stats is None else stats
    if not is_paths(inputs):
        yield from iter_object_records(inputs, columns=columns, errors=errors, stats=stats)
        return
    for path in corpus_files(inputs, errors=errors, stats=stats):
        yield from read_file_records(
            path, columns=columns, errors=errors, stats=stats, max_line_bytes=max_line_bytes
        )


def iter_texts(
    path: Path,
    *,
    errors: Errors = "strict",
    stats: SourceStats | None = None,
    max_line_bytes: int | None = None,
    columns: Columns = DEFAULT_COLUMNS,
) -> Iterator[str]:
    """The texts of one file, by its kind: a text file's lines, a table's text column, a code file whole;
    ``max_line_bytes`` limits a text file's lines (``sources.iter_handle_lines``)."""
    for _, text in iter_numbered_texts(
        path, errors=errors, stats=stats, max_line_bytes=max_line_bytes, columns=columns
    ):
        yield text


def iter_numbered_texts(
    path: Path,
    *,
    errors: Errors = "strict",
    stats: SourceStats | None = None,
    max_line_bytes: int | None = None,
    columns: Columns = DEFAULT_COLUMNS,
) -> Iterator[tuple[int, str]]:
    """(line or row number, text) of one file, as :func:`iter_texts`; an uncompressed text file's lines
    are read without building records (the fast path of FLORES-style folders)."""
    stats = SourceStats() if stats is None else stats
    if file_format(path) == "text" and detect_compression(path) == "none":
        try:
            handle = path.open("rb")
        except OSError as exc:
            why = f"cannot open ({exc.strerror or exc})"
            reject(Reject(str(path), why, "file", documents=None), errors, stats)
            return
        stats.files += 1
        with handle:
            yield from iter_handle_lines(
                handle, path, errors=errors, stats=stats, max_line_bytes=max_line_bytes
            )
        return
    for record in read_file_records(
        path, columns=columns, errors=errors, stats=stats, max_line_bytes=max_line_bytes
    ):
        yield record.number, record.text
