"""Sources: which files an input names, and which it leaves out — "is this input a path?" decided once.

What it does:

- :func:`is_paths`: whether an input names files (a str, a PathLike, a list / tuple of them) — the one test
  of "is this a path?" that every consumer makes (the task plan, training's stream, ``load_corpus``); an
  in-memory corpus is anything else.
- :func:`corpus_files` (and :func:`scan_files`) expands files, folders and globs (:func:`resolve_inputs`)
  with the suffixes of every registered format (:func:`corpus_suffixes`, ``formats/``): text, JSON Lines
  (``.jsonl``, ``.json`` — Dolma's naming —, ``.ndjson``), CSV, TSV, Parquet and source files, each also
  compressed (``.gz``, ``.zst``, ``.xz``, ``.bz2``).
- :func:`resolve_inputs` expands each input: an existing file is taken as is (whatever its suffix), a
  folder is searched recursively for files ending in one of ``suffixes``, anything else containing glob
  characters (``* ? [``) is expanded with ``glob(recursive=True)``. The result is sorted and without
  duplicates. A missing path (one that holds a space or a newline: a text, says how to pass texts), a
  folder without matching files or a glob that matches nothing raises
  :class:`~tokenloom.errors.CorpusError` naming it; so does an empty string (``Path("")`` would be the
  current folder, searched recursively: pass ``"."`` for that). Nothing in a folder is left out silently:
  every file the search does not take is a :class:`LeftOut` with its reason — a file of another kind, a
  hidden file or one in a hidden folder (a name starting with ``.``, and ``__MACOSX/``), and a symbolic
  link whose target is missing (``broken``: bad input, the others are only listed) —, which
  :func:`record_left_out` puts in ``stats.rejects``.

- :func:`iter_lines` streams the lines of one file (``lines.iter_handle_lines``: UTF-8 checked, every bad
  line raised or set aside).

What it does not do: parse formats or read tasks (``formats/``, ``tasks.py``), decompress
(``compression.py``), sample or tokenize. It imports nothing heavy.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias, TypeGuard

from tokenloom.corpus.compression import COMPRESSION_SUFFIXES
from tokenloom.corpus.formats import readers
from tokenloom.corpus.lines import iter_handle_lines
from tokenloom.corpus.records import Errors, Reject, SourceStats, check_errors, reject
from tokenloom.errors import CorpusError

__all__ = [
    "CORPUS_SUFFIXES", "Errors", "LeftOut", "PathInputs", "SourceStats", "corpus_files", "corpus_suffixes",
    "is_paths", "iter_lines", "record_left_out", "resolve_inputs", "scan_files",
]  # fmt: skip

_GLOB_CHARS = frozenset("*?[")


def _as_list(inputs: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> list[str]:
    if isinstance(inputs, str | os.PathLike):
        return [os.fspath(inputs)]
    items = [os.fspath(item) for item in inputs]
    if not items:
        raise CorpusError("no corpus inputs given: pass at least one file, folder or glob")
    return items


@dataclass(frozen=True)
class LeftOut:
    """A file a folder search did not take, and why; ``broken``: a link to a missing target (bad input)."""

    path: Path
    why: str
    broken: bool = False


_OTHER_WHY = "not a corpus file (no text, table or source-code suffix): not read; give it by name to read it"
_HIDDEN_WHY = "hidden (a name starting with '.', or __MACOSX/): not read; give it by name to read it"


def _scan_folder(folder: Path, suffixes: tuple[str, ...], left_out: list[LeftOut]) -> list[Path]:
    """The files below ``folder`` ending in ``suffixes``; every other file is appended to ``left_out``."""
    matches = []
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder).parts
        if p.is_symlink() and not p.exists():
            why = (
                f"symbolic link to a missing target ({os.readlink(p)}); restore the target or remove the link"
            )
            left_out.append(LeftOut(p, why, broken=True))
        elif not p.is_file():
            continue
        elif any(part.startswith(".") or part == "__MACOSX" for part in rel):
            left_out.append(LeftOut(p, _HIDDEN_WHY))
        elif p.name.endswith(suffixes):
            matches.append(p)
        else:
            left_out.append(LeftOut(p, _OTHER_WHY))
    return matches


def resolve_inputs(
    inputs: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    suffixes: tuple[str, ...] = (".txt",),
    left_out: list[LeftOut] | None = None,
) -> list[Path]:
    """Expand files, folders (recursively, keeping ``suffixes``) and globs into a sorted list of files; the
    files of a folder not taken are appended to ``left_out``, when given (see the module docstring)."""
    found: set[Path] = set()
    skipped: list[LeftOut] = []
    for item in _as_list(inputs):
        refuse_empty(item)
        path = Path(item)
        if path.is_file():
            found.add(path)
        elif path.is_dir():
            matches = _scan_folder(path, suffixes, skipped)
            if not matches:
                raise CorpusError(
                    f"folder {item!r} contains no files ending in {', '.join(suffixes)}; "
                    "point at the text files or another folder"
                )
            found.update(matches)
        elif _GLOB_CHARS & set(item):
            matches = [Path(p) for p in glob.glob(item, recursive=True) if Path(p).is_file()]
            if not matches:
                raise CorpusError(f"glob {item!r} matches no files; check the pattern and the folder")
            found.update(matches)
        elif path.exists():
            raise CorpusError(f"{item!r} is neither a regular file nor a folder; pass text files or folders")
        elif " " in str(item) or "\n" in str(item):  # a text given where paths are read
            raise CorpusError(
                f"corpus path {str(item)[:60]!r} does not exist; strings (also in a list or tuple) are paths — "
                "to pass texts, pass an iterator, e.g. iter(texts)"
            )
        else:
            raise CorpusError(
                f"corpus path {item!r} does not exist; check the spelling or the working folder"
            )
    if left_out is not None:
        left_out.extend(x for x in dict.fromkeys(skipped) if x.path not in found)
    return sorted(found)


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


def is_paths(inputs: object) -> TypeGuard[PathInputs]:
    """Whether ``inputs`` names files: a str, a PathLike, or a list / tuple of them — the one test of
    "is this a path?" that every consumer of a corpus (the task plan, training's stream) makes."""
    if isinstance(inputs, str | os.PathLike):
        return True
    return isinstance(inputs, list | tuple) and all(isinstance(x, str | os.PathLike) for x in inputs)


def iter_lines(
    path: str | os.PathLike[str],
    *,
    errors: Errors = "strict",
    stats: SourceStats | None = None,
    max_line_bytes: int | None = None,
) -> Iterator[str]:
    """Yield the lines of a UTF-8 file without their newline, streaming (see ``lines.py``).

    ``max_line_bytes``: a longer line raises ``CorpusError`` naming file, line and limit, after reading at
    most that many bytes of it (so a file that is one 200 MB line costs no more memory than the limit).
    With ``errors="skip"`` such a line, a line of invalid UTF-8 or a UTF-16/32 file is a reject in
    ``stats`` (``tokenloom.corpus.records``) instead, and the other lines are read.
    """
    check_errors(errors)
    refuse_empty(os.fspath(path))
    path = Path(path)
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        raise CorpusError(f"corpus file {str(path)!r} does not exist") from None
    except IsADirectoryError:
        raise CorpusError(f"{str(path)!r} is a folder; use resolve_inputs() to list its files") from None
    stats = SourceStats() if stats is None else stats
    stats.files += 1
    with handle:
        for _, line in iter_handle_lines(
            handle, path, errors=errors, stats=stats, max_line_bytes=max_line_bytes
        ):
            yield line


def refuse_empty(item: str) -> None:
    """``""`` is no path: ``Path("")`` would be the current folder, searched recursively."""
    if item == "":
        raise CorpusError(
            f"corpus path {item!r} is empty; pass a file, folder or glob (for the current folder, pass '.')"
        )
