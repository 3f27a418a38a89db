"""The one reader of corpus files: which files an input names, and the texts each file holds.

Evaluation (:func:`tokenloom.text.corpus.load_corpus`) and training (``train.py``, through ``_stream.py``)
read a corpus through this module, so a folder is the same corpus to both:

- :func:`corpus_files` expands files, folders (searched recursively for :data:`CORPUS_SUFFIXES`) and globs
  (``sources.resolve_inputs``);
- :func:`file_kind`: ``.jsonl`` / ``.csv`` / ``.parquet`` files are **tables**, files with a programming
  language's extension (:data:`CODE_EXTENSIONS`) are **code**, everything else is **text**;
- :func:`iter_texts` yields a file's texts: a text file's lines (``sources.iter_lines``), a code file whole
  (its lines joined by ``\\n``), a table's ``text`` column;
- :func:`read_table` reads a table's rows (pandas; JSON Lines parsed here so errors name the line), checking
  that every row has a string ``text``.

Bad input raises :class:`~tokenloom.errors.CorpusError` naming file and line: invalid JSON, a table without
a ``text`` column or without rows, a null / non-string text, undecodable bytes (or, with
``errors="replace"``, U+FFFD substitutions counted in ``stats``). Counters in ``stats``: a table's file and
bytes, and one line per row with its characters. What it does not do: label parts (``corpus.py``), sample
or split lines for training (``_stream.py``).
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from tokenloom.errors import CorpusError
from tokenloom.text.sources import Errors, SourceStats, decode_utf8, iter_lines, resolve_inputs

__all__ = [
    "CODE_EXTENSIONS",
    "CORPUS_SUFFIXES",
    "FileKind",
    "Table",
    "TableRow",
    "corpus_files",
    "file_kind",
    "iter_texts",
    "read_table",
]

FileKind = Literal["text", "table", "code"]

# file extension -> programming language of a code slice
CODE_EXTENSIONS: dict[str, str] = {
    ".py": "python", ".pyi": "python", ".js": "javascript", ".mjs": "javascript", ".ts": "typescript",
    ".tsx": "typescript", ".java": "java", ".kt": "kotlin", ".scala": "scala", ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".cs": "csharp", ".go": "go", ".rs": "rust",
    ".rb": "ruby", ".php": "php", ".swift": "swift", ".sh": "shell", ".bash": "shell", ".sql": "sql",
    ".r": "r", ".R": "r", ".jl": "julia", ".lua": "lua", ".pl": "perl", ".hs": "haskell", ".ml": "ocaml",
    ".html": "html", ".css": "css", ".toml": "toml", ".yaml": "yaml", ".yml": "yaml",
}  # fmt: skip
TEXT_SUFFIXES = (".txt",)
TABLE_SUFFIXES = (".jsonl", ".csv", ".parquet")
CORPUS_SUFFIXES = TEXT_SUFFIXES + TABLE_SUFFIXES + tuple(CODE_EXTENSIONS)


@dataclass(frozen=True)
class TableRow:
    """One row of a table: its text, all its cells, and its number (file line, or row for Parquet)."""

    text: str
    cells: dict[str, Any]
    number: int


@dataclass(frozen=True)
class Table:
    """A table's columns and rows (every row has a string ``text``); ``where`` names rows in messages."""

    path: Path
    columns: tuple[str, ...]
    rows: tuple[TableRow, ...]
    where: Literal["line", "row"]

    def at(self, row: TableRow) -> str:
        """``"FILE: line N"`` (or ``row N``) for messages."""
        return f"{self.path}: {self.where} {row.number}"


def corpus_files(inputs: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> list[Path]:
    """The files of ``inputs`` (files, folders searched for :data:`CORPUS_SUFFIXES`, globs), sorted."""
    return resolve_inputs(inputs, suffixes=CORPUS_SUFFIXES)


def file_kind(path: Path) -> FileKind:
    """``"table"``, ``"code"`` or ``"text"``, by the file's suffix (see the module docstring)."""
    if path.suffix.lower() in TABLE_SUFFIXES:
        return "table"
    return "code" if path.suffix in CODE_EXTENSIONS else "text"


def iter_texts(
    path: Path,
    *,
    errors: Errors = "strict",
    stats: SourceStats | None = None,
    max_line_bytes: int | None = None,
) -> Iterator[str]:
    """The texts of one file, by its kind (see the module docstring); ``max_line_bytes`` limits a text
    file's lines (``sources.iter_lines``)."""
    stats = SourceStats() if stats is None else stats
    kind = file_kind(path)
    if kind == "table":
        for row in read_table(path, errors, stats).rows:
            yield row.text
    elif kind == "code":
        yield "\n".join(iter_lines(path, errors=errors, stats=stats))
    else:
        yield from iter_lines(path, errors=errors, stats=stats, max_line_bytes=max_line_bytes)


def read_table(path: Path, errors: Errors, stats: SourceStats) -> Table:
    """The rows of a ``.jsonl`` / ``.csv`` / ``.parquet`` file, each with a string ``text``."""
    df, first_line = _read_frame(path, errors, stats)
    if "text" not in df.columns:
        cols = [c for c in df.columns if c != "__line__"]
        raise CorpusError(f"{path}: no 'text' column (columns: {cols}); rename the text column to 'text'")
    if len(df) == 0:
        raise CorpusError(f"{path}: no rows; remove it or put rows in it")
    lines = df["__line__"].tolist() if "__line__" in df.columns else [first_line + i for i in range(len(df))]
    where: Literal["line", "row"] = "line" if first_line else "row"
    rows = []
    for i, cells in enumerate(df.to_dict("records")):
        text, number = cells.get("text"), lines[i] if first_line else i + 1
        if not isinstance(text, str):
            raise CorpusError(
                f"{path}: {where} {number}: 'text' must be a string, got {text!r}; fill or remove the row"
            )
        stats.lines += 1
        stats.chars += len(text)
        rows.append(TableRow(text, cells, number))
    return Table(path, tuple(c for c in df.columns if c != "__line__"), tuple(rows), where)


def _decode(path: Path, data: bytes, errors: Errors, stats: SourceStats) -> str:
    text = decode_utf8(data, path, errors=errors, stats=stats)
    stats.files += 1
    stats.bytes += len(data)
    return text.removeprefix("\ufeff")


def _read_frame(path: Path, errors: Errors, stats: SourceStats) -> tuple[Any, int]:
    """The table as a pandas DataFrame and the file line of its first row (0: rows have no lines)."""
    import pandas as pd

    suffix = path.suffix.lower()
    if suffix == ".parquet":
        try:
            df = pd.read_parquet(path)
        except Exception as exc:  # pyarrow raises several types for corrupt files
            raise CorpusError(f"{path}: cannot read as Parquet ({exc}); check the file") from None
        stats.files += 1
        stats.bytes += path.stat().st_size
        return df, 0
    text = _decode(path, path.read_bytes(), errors, stats)
    if not text.strip():
        raise CorpusError(f"{path}: empty file (no rows); remove it or put rows in it")
    if suffix == ".jsonl":
        return pd.DataFrame(_json_rows(path, text)), 1
    try:
        df = pd.read_csv(io.StringIO(text), dtype=object, keep_default_na=False, na_values=[])
    except Exception as exc:  # pandas.errors.ParserError and friends
        raise CorpusError(f"{path}: cannot parse as CSV ({exc})") from None
    return df, 2  # header is line 1


def _json_rows(path: Path, text: str) -> list[dict[str, Any]]:
    rows = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CorpusError(
                f"{path}: line {number}: invalid JSON ({exc.msg} at column {exc.colno})"
            ) from None
        if not isinstance(row, dict):
            raise CorpusError(
                f"{path}: line {number}: expected a JSON object with a 'text' key, got {row!r:.60}"
            )
        row["__line__"] = number
        rows.append(row)
    return rows
