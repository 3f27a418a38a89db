"""Text and source-code files: a text file is one record per line, a source file one record whole.

Lines come from ``lines.iter_handle_lines`` (UTF-8 checked, ``max_line_bytes`` enforced, a byte range
read from its first line start; :func:`read_file_texts` reads them a block at a time,
``lines.iter_handle_blocks``); a text file cannot hold a text with ``\\n`` or ``\\r`` (a line is a
text; CR LF reads as LF) and drops a byte-order mark opening the file. A source file's language is its
extension's (:data:`CODE_EXTENSIONS`, matched as written: ``.R`` is R). What it does not do: label texts
(a file's name is its label only for ``<lang>_<Script>.txt``, ``load.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

from tokenloom.corpus.formats.base import (
    STREAM_ERRORS,
    Format,
    Position,
    ReadRequest,
    open_request,
    read_file_records,
    reader_for,
    stream_broken,
)
from tokenloom.corpus.lines import iter_handle_blocks, iter_handle_lines
from tokenloom.corpus.records import DEFAULT_COLUMNS, Columns, Errors, Record, SourceStats

__all__ = ["CODE", "CODE_EXTENSIONS", "TEXT", "LineReader", "read_file_texts"]

# file extension -> programming language of a code slice
CODE_EXTENSIONS: dict[str, str] = {
    ".py": "python", ".pyi": "python", ".js": "javascript", ".mjs": "javascript", ".ts": "typescript",
    ".tsx": "typescript", ".java": "java", ".kt": "kotlin", ".scala": "scala", ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".cs": "csharp", ".go": "go", ".rs": "rust",
    ".rb": "ruby", ".php": "php", ".swift": "swift", ".sh": "shell", ".bash": "shell", ".sql": "sql",
    ".r": "r", ".R": "r", ".jl": "julia", ".lua": "lua", ".pl": "perl", ".hs": "haskell", ".ml": "ocaml",
    ".html": "html", ".css": "css", ".toml": "toml", ".yaml": "yaml", ".yml": "yaml",
}  # fmt: skip


@dataclass(frozen=True)
class LineReader:
    """Text (a record per line, cut into byte ranges when large) or code (the whole file one record)."""

    name: Format
    suffixes: tuple[str, ...]
    kind: Literal["text", "code"]
    fold_case: bool = False
    opens_itself: bool = False

    @property
    def split(self) -> Literal["none", "bytes"]:
        return "bytes" if self.kind == "text" else "none"

    def read(self, request: ReadRequest, handle: BinaryIO | None, at: Position) -> Iterator[Record]:
        assert handle is not None  # opened by read_file_records
        path = request.path
        lines = iter_handle_lines(
            handle, path, errors=request.errors, stats=request.stats, max_line_bytes=request.max_line_bytes,
            first_line=request.first_line, offset=request.start, end=request.end, streamed=request.streamed,
        )  # fmt: skip
        if self.kind == "code":
            yield Record("\n".join(line for _, line in lines), None, None, str(path), 1)
            return
        for number, line in lines:
            at.line = number + 1
            yield Record(line, None, None, str(path), number)


def read_file_texts(
    path: Path,
    *,
    columns: Columns = DEFAULT_COLUMNS,
    errors: Errors = "strict",
    stats: SourceStats,
    max_line_bytes: int | None = None,
) -> Iterator[tuple[int, str]]:
    """(line or row number, text) of one file's records (``base.read_file_records``), counted the same way;
    a text file's lines, compressed or not, come without building records (the fast path of FLORES-style
    folders)."""
    reader = reader_for(path)
    if not (isinstance(reader, LineReader) and reader.kind == "text"):
        for record in read_file_records(
            path, columns=columns, errors=errors, stats=stats, max_line_bytes=max_line_bytes
        ):
            yield record.number, record.text
        return
    opened = open_request(ReadRequest(path, columns, errors, stats, max_line_bytes))
    if opened is None:  # rejected: it cannot be opened
        return
    handle, request = opened
    at = Position(1)
    with handle:
        blocks = iter_handle_blocks(
            handle, path, errors=errors, stats=stats, max_line_bytes=max_line_bytes, streamed=request.streamed
        )
        try:
            for numbers, lines in blocks:
                at.line = numbers[-1] + 1
                yield from zip(numbers, lines, strict=True)
        except STREAM_ERRORS as exc:
            if not request.streamed:
                raise
            stream_broken(request, at, exc)


TEXT = LineReader("text", (".txt",), "text")
CODE = LineReader("code", tuple(CODE_EXTENSIONS), "code")
