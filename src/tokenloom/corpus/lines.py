"""Lines of a byte stream: UTF-8 lines, streamed, with every bad line raised or set aside.

:func:`iter_handle_lines` reads an open binary stream (a decompressing one too) line by line, never whole:
lines are split on ``\n``, returned without the newline (a ``\r`` before it is removed too, so CRLF files
read like LF files), and a UTF-8 byte-order mark at the very start of the file is dropped. Invalid UTF-8
raises ``CorpusError`` naming file, line and byte offset (``errors="strict"``, the default), or is replaced
by U+FFFD and counted in ``stats`` (``errors="replace"``), or set aside as a reject in ``stats``
(``errors="skip"``, ``records.py``). A file that starts with a UTF-16 or UTF-32 byte-order mark, or whose
first line is at least a quarter NUL bytes (UTF-16 without a mark, a binary file), raises ``CorpusError``
saying so and how to convert it (``iconv``), in either mode. :func:`decode_utf8` decodes one line's bytes
so, :func:`complete_lines` joins a stream's pieces into whole lines.

What it does not do: open or find files (``sources.py``: ``iter_lines`` streams the lines of a path),
parse formats or decompress (``formats/``, ``compression.py``). It imports nothing heavy.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO, Literal

from tokenloom.corpus.records import REPLACE_ADVICE, Errors, Reject, SourceStats, reject
from tokenloom.errors import CorpusError

__all__ = ["complete_lines", "decode_utf8", "error_reason", "iter_handle_lines"]


_BOM = "\ufeff"


_REPLACEMENT_BYTES = "\ufffd".encode()


_UTF_BOMS = (  # longest first: the UTF-32LE mark starts with the UTF-16LE one
    (b"\xff\xfe\x00\x00", "UTF-32", "little-endian"),
    (b"\x00\x00\xfe\xff", "UTF-32", "big-endian"),
    (b"\xff\xfe", "UTF-16", "little-endian"),
    (b"\xfe\xff", "UTF-16", "big-endian"),
)


_WIDE_BOMS = tuple(bom for bom, _, _ in _UTF_BOMS)


def decode_utf8(
    data: bytes,
    path: str | os.PathLike[str],
    *,
    errors: Errors = "strict",
    stats: SourceStats | None = None,
    line: int = 1,
    offset: int = 0,
) -> str:
    """Decode ``data``, read from ``path`` at ``line`` / byte ``offset``: strict errors name the file, line and
    byte offset of the first bad byte; ``"replace"`` substitutes U+FFFD and counts in ``stats``."""
    if offset == 0 and (data.startswith(_WIDE_BOMS) or data[:64].count(0) * 4 >= min(len(data), 64) > 0):
        _refuse_wide_encoding(data, path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        number = line + data.count(b"\n", 0, exc.start)
        if errors != "replace":
            bad = data[exc.start : exc.end].hex(" ")
            raise CorpusError(
                f"{path}: line {number} (byte offset {offset + exc.start}): invalid UTF-8 (bytes {bad}: "
                f"{exc.reason}); {REPLACE_ADVICE}"
            ) from None
        text = data.decode("utf-8", errors="replace")
        if stats is not None:
            stats.replaced += text.count("\ufffd") - data.count(_REPLACEMENT_BYTES)
            stats.replaced_lines += 1
            if len(stats.replaced_where) < 10:
                stats.replaced_where.append(f"{path}:{number}")
        return text


def _refuse_wide_encoding(data: bytes, path: str | os.PathLike[str]) -> None:
    """The start of a file is a UTF-16/32 byte-order mark or mostly NUL bytes: say so and how to convert."""
    for bom, encoding, order in _UTF_BOMS:
        if data.startswith(bom):
            raise CorpusError(
                f"{path}: the file is {encoding} (it starts with a {order} {encoding} byte-order mark), not "
                f"UTF-8; convert it, e.g. `iconv -f {encoding} -t UTF-8 {path} > out.txt`"
            )
    raise CorpusError(
        f"{path}: the first line is at least 1/4 NUL bytes: UTF-16 without a byte-order mark or a binary "
        f"file, not UTF-8 text; if it is UTF-16 convert it, e.g. `iconv -f UTF-16LE -t UTF-8 {path} > out.txt`"
    )


def iter_handle_lines(
    handle: BinaryIO,
    path: Path,
    *,
    errors: Errors,
    stats: SourceStats,
    max_line_bytes: int | None = None,
    first_line: int = 1,
    offset: int = 0,
    end: int | None = None,
    streamed: bool = False,
) -> Iterator[tuple[int, str]]:
    """(line number, line) of a binary stream positioned at byte ``offset``, line ``first_line``; lines
    starting at or after byte ``end`` are left to the next reader; ``streamed``: a decompressing stream,
    whose cut-off last line is held back (:func:`complete_lines`). Counted in ``stats``; bad lines are
    rejects under ``errors="skip"`` (see the module docstring)."""
    limit = max_line_bytes
    raws = iter(handle) if limit is None else iter(lambda: handle.readline(limit + 2), b"")
    for number, raw in enumerate(complete_lines(raws) if streamed else raws, start=first_line):
        if end is not None and offset >= end:
            return
        size = len(raw)
        body = raw[:-1] if raw.endswith(b"\n") else raw
        if body.endswith(b"\r"):
            body = body[:-1]
        if limit is not None and len(body) > limit:
            why = f"longer than {limit} bytes, the limit for one text; put one sentence or paragraph per line"
            if errors != "skip":
                raise CorpusError(f"{path}: line {number} is {why}")
            reject(Reject(str(path), why, "line", number), errors, stats)
            while not raw.endswith(b"\n"):  # the rest of the long line
                raw = handle.readline(limit + 2)
                if not raw:
                    break
                size += len(raw)
            offset += size
            continue
        try:
            if offset == 0:
                raise UnicodeError  # the first line: decode_utf8 also checks for UTF-16/32
            line = body.decode("utf-8")  # the common case, without a call
        except UnicodeError:
            try:
                line = decode_utf8(body, path, errors=errors, stats=stats, line=number, offset=offset)
            except CorpusError as exc:
                if errors != "skip":
                    raise
                if _reject_line(str(exc), path, number, offset, stats):
                    return  # the whole file is not UTF-8
                offset += size
                continue
        if offset == 0 and line.startswith(_BOM):
            line = line[1:]
        offset += size
        stats.lines += 1
        stats.bytes += size
        stats.chars += len(line)
        yield number, line


def _reject_line(message: str, path: Path, number: int, offset: int, stats: SourceStats) -> bool:
    """Record the reject of an undecodable line; ``True`` when it rejects the whole file (UTF-16/32)."""
    whole = offset == 0 and number == 1 and message.startswith(f"{path}: the ")
    unit: Literal["line", "file"] = "file" if whole else "line"
    reason = error_reason(message, f"{path}: line {number} ")
    item = Reject(str(path), reason, unit, None if whole else number, documents=None if whole else 1)
    reject(item, "skip", stats)
    return whole


def complete_lines(raws: Iterable[bytes]) -> Iterator[bytes]:
    """``raws`` as they come, but a piece without a newline is given only once the stream is known to end
    there: a truncated compressed stream raises first, so its cut-off last line is never read as a line."""
    raws = iter(raws)
    for raw in raws:
        if not raw.endswith(b"\n"):
            for more in raws:  # nothing follows the last line, except in a long line read in pieces
                yield raw
                raw = more
        yield raw


def error_reason(message: str, prefix: str) -> str:
    """A reject's reason from a ``CorpusError`` message: without ``"FILE: line N "``; ``"(byte offset K): x"``
    becomes ``"byte offset K: x"``."""
    reason = message.removeprefix(prefix).removeprefix(prefix.split(": line ")[0] + ": ")
    if reason.startswith("(byte offset"):
        reason = reason[1:].replace("):", ":", 1)
    return reason
