"""Lines of a byte stream: UTF-8 lines, streamed, with every bad line raised or set aside.

:func:`iter_handle_lines` reads an open binary stream (a decompressing one too) line by line, never whole:
lines are split on ``\n``, returned without the newline (a ``\r`` before it is removed too, so CRLF files
read like LF files), and a UTF-8 byte-order mark at the very start of the file is dropped. Invalid UTF-8
raises ``CorpusError`` naming file, line and byte offset (``errors="strict"``, the default), or is replaced
by U+FFFD and counted in ``stats`` (``errors="replace"``), or set aside as a reject in ``stats``
(``errors="skip"``, ``records.py``). A file that starts with a UTF-16 or UTF-32 byte-order mark, or whose
first line is at least a quarter NUL bytes (UTF-16 without a mark, a binary file), raises ``CorpusError``
saying so and how to convert it (``iconv``), in either mode. :func:`decode_utf8` decodes one line's bytes
so, :func:`complete_lines` joins a stream's pieces into whole lines. :func:`iter_handle_blocks` gives the same
lines a block at a time: a block of whole lines that decodes as UTF-8 at once and holds no line over the
limit is split in one call, and any other block — the file's first line, a bad byte, a long line, the
end of a byte range, a last line without a newline — goes through :func:`iter_handle_lines`, the
reference it is tested against.

What it does not do: open or find files (``sources.py``: ``iter_lines`` streams the lines of a path),
parse formats or decompress (``formats/``, ``compression.py``). It imports nothing heavy.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO, Literal, cast

from tokenloom.corpus.records import REPLACE_ADVICE, Errors, Reject, SourceStats, reject
from tokenloom.errors import CorpusError

__all__ = [
    "BLOCK_BYTES",
    "complete_line_blocks",
    "complete_lines",
    "decode_utf8",
    "error_reason",
    "iter_handle_blocks",
    "iter_handle_lines",
]

BLOCK_BYTES = 1 << 20  # bytes read at a time by iter_handle_blocks


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
    if offset == 0 and _wide(data):
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


def complete_line_blocks(handle: BinaryIO, block_bytes: int = BLOCK_BYTES) -> Iterator[list[bytes]]:
    """What :func:`complete_lines` gives of ``handle``'s lines (each with its newline; a last piece without
    one only once the stream is known to end there), a block of lines at a time. Each block comes from one
    ``read1``, so a stream that breaks loses only the line it breaks in, as a line-by-line read would."""
    read = getattr(handle, "read1", handle.read)  # every stream open_binary opens has read1
    pending: list[bytes] = []  # the start of a line that goes on in the next piece
    while piece := read(block_bytes):
        cut = piece.rfind(b"\n") + 1
        if not cut:
            pending.append(piece)
            continue
        whole = b"".join([*pending, piece[:cut]]) if pending else piece[:cut]
        pending = [piece[cut:]] if cut < len(piece) else []
        if b"\r" in whole:  # splitlines would also end a line at a lone carriage return
            yield [line + b"\n" for line in whole[:-1].split(b"\n")]
        else:
            yield whole.splitlines(keepends=True)
    if pending:
        yield [b"".join(pending)]


def error_reason(message: str, prefix: str) -> str:
    """A reject's reason from a ``CorpusError`` message: without ``"FILE: line N "``; ``"(byte offset K): x"``
    becomes ``"byte offset K: x"``."""
    reason = message.removeprefix(prefix).removeprefix(prefix.split(": line ")[0] + ": ")
    if reason.startswith("(byte offset"):
        reason = reason[1:].replace("):", ":", 1)
    return reason


class _Joined(io.RawIOBase):
    """``head``, then the rest of ``rest``: a stream to hand on to :func:`iter_handle_lines` mid-file."""

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        self.head, self.rest = memoryview(head), rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if len(self.head):
            n = min(len(buffer), len(self.head))
            buffer[:n], self.head = self.head[:n], self.head[n:]
            return n
        data = self.rest.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def iter_handle_blocks(
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
    block_bytes: int = BLOCK_BYTES,
) -> Iterator[tuple[Sequence[int], list[str]]]:
    """(line numbers, lines): what :func:`iter_handle_lines` gives with the same arguments, a block at a
    time (see the module docstring)."""

    def by_line(
        stream: BinaryIO, number: int, at: int, tail: bool = False
    ) -> Iterator[tuple[list[int], list[str]]]:
        """The reference's lines of ``stream`` (line ``number``, byte ``at`` on; ``tail``: the rest of the
        file, still streamed) in blocks."""
        found = iter_handle_lines(
            stream, path, errors=errors, stats=stats, max_line_bytes=max_line_bytes, first_line=number,
            offset=at, end=end, streamed=streamed and tail,
        )  # fmt: skip
        numbers: list[int] = []
        lines: list[str] = []
        try:
            for n, line in found:
                numbers.append(n)
                lines.append(line)
                if len(lines) == 4096:
                    yield numbers, lines
                    numbers, lines = [], []
        except Exception:
            if lines:  # the lines before the error are read, as with the reference
                yield numbers, lines
            raise
        if lines:
            yield numbers, lines

    # one read1 a block: a stream that breaks loses only the line it breaks in, as with the reference
    read = getattr(handle, "read1", handle.read)
    pending: list[bytes] = []  # the start of a line that goes on in the next block
    number, block = first_line, read(block_bytes)
    while block:
        cut = block.rfind(b"\n") + 1
        if not cut:  # no line ends in this block
            pending.append(block)
            block = read(block_bytes)
            if max_line_bytes is not None and sum(map(len, pending)) > max_line_bytes + 1:  # a long line
                yield from by_line(_joined(b"".join(pending), handle, block), number, offset, tail=True)
                return
            continue
        whole, pending = b"".join([*pending, block[:cut]]), [block[cut:]]
        if max_line_bytes is not None and len(block) - cut > max_line_bytes + 1:  # a long line comes
            yield from by_line(_joined(whole + pending[0], handle), number, offset, tail=True)
            return
        if offset == 0:  # the file's first line: the reference checks its mark and encoding
            first = whole[: whole.find(b"\n") + 1]
            yield from by_line(io.BytesIO(first), number, offset)
            body = first.rstrip(b"\n").removesuffix(b"\r")
            if _wide(body) and (max_line_bytes is None or len(body) <= max_line_bytes):
                return  # not UTF-8 at all: the reference rejected the whole file
            whole, number, offset = whole[len(first) :], number + 1, len(first)
        if end is not None and whole and offset + len(whole) >= end:  # the range ends in this block
            if offset < end:
                yield from by_line(io.BytesIO(whole), number, offset)
            return
        lines = _split_block(whole, max_line_bytes, stats) if whole else []
        if lines is None:
            yield from by_line(io.BytesIO(whole), number, offset)
        elif lines:
            yield range(number, number + len(lines)), lines
        number, offset = number + whole.count(b"\n"), offset + len(whole)
        block = read(block_bytes)
    if any(pending):  # a last line without a newline
        yield from by_line(io.BytesIO(b"".join(pending)), number, offset)


def _wide(first: bytes) -> bool:
    """Whether the reference reads a file whose first line is ``first`` as UTF-16/32 or binary."""
    return first.startswith(_WIDE_BOMS) or first[:64].count(0) * 4 >= min(len(first), 64) > 0


def _joined(head: bytes, rest: BinaryIO, more: bytes = b"") -> BinaryIO:
    """``head``, ``more``, then the rest of ``rest``, as one buffered stream."""
    return cast(BinaryIO, io.BufferedReader(_Joined(head + more, rest)))


def _split_block(whole: bytes, limit: int | None, stats: SourceStats) -> list[str] | None:
    """The lines of ``whole`` (whole lines, not the file's first), counted in ``stats``; ``None`` when one
    of them needs the reference (a bad byte, a line over ``limit`` bytes)."""
    try:
        text = whole.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if "\r" in text:
        text = text.replace("\r\n", "\n")  # a CR before the newline is not part of the line
    lines = text.split("\n")
    lines.pop()  # after the last newline
    quarter = -1 if limit is None else limit // 4  # a line of at most this many characters fits
    if limit is not None and any(len(line.encode("utf-8")) > limit for line in lines if len(line) > quarter):
        return None
    stats.lines += len(lines)
    stats.bytes += len(whole)
    stats.chars += len(text) - len(lines)
    return lines
