"""Compressed corpus files: which codec a file uses (by its magic bytes) and a decompressing binary stream.

- :func:`detect_compression` reads a file's first bytes: gzip ``1f 8b 08``, zstd ``28 b5 2f fd``, xz
  ``fd 37 7a 58 5a 00``, bzip2 ``BZh`` + a block size digit + a block or end-of-stream marker; anything
  else is ``"none"``. The suffix is not trusted: a ``.jsonl`` that is really gzip is read as gzip, a
  ``.gz`` that is plain text as plain text.
- :func:`open_binary` opens a file as a binary stream of its decompressed bytes, read as it is consumed
  (``gzip`` / ``lzma`` / ``bz2`` from the standard library, ``zstandard``'s stream reader), so no file is
  ever held in memory whole. gzip is inflated by ISA-L (``isal``, about 3x zlib's speed) when it is
  installed, with the standard library's reader as the reference: at the first error ISA-L raises, the
  file is read again by ``gzip`` past the bytes already given, so what is read before a break, and the
  error, are the standard library's (ISA-L drops the part of a read it was inflating when a stream
  breaks) — :class:`_CheckedGzip`. A file compressed more than once (``x.txt.gz`` gzipped again, zstd inside
  gzip) is decompressed layer by layer, each layer found by the same magic bytes (at most
  :data:`MAX_LAYERS`). A truncated or corrupt stream raises while it is read (``EOFError``,
  ``OSError``, ``lzma.LZMAError``, ``zlib.error``: :data:`STREAM_ERRORS`): callers turn that into a reject.
- :func:`inner_name`: the file name without its compression suffix (``a.jsonl.zst`` -> ``a.jsonl``), whose
  suffix names the format.

Why libraries rather than hand-written decoders: the codecs are the reference implementations (zlib, liblzma,
libbz2, libzstd), streaming, checked against their own checksums and far faster than Python could be.
What it does not do: parse formats (``formats.py``).
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import zlib
from pathlib import Path
from typing import Any, BinaryIO, Literal, cast

import zstandard

__all__ = [
    "COMPRESSION_SUFFIXES", "MAX_LAYERS", "STREAM_ERRORS", "Compression", "detect_compression", "inner_name",
    "open_binary",
]  # fmt: skip

Compression = Literal["none", "gzip", "zstd", "xz", "bz2"]

_MAGIC: tuple[tuple[bytes, Compression], ...] = (
    (b"\x1f\x8b\x08", "gzip"),  # the deflate method: every gzip writer's
    (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"\xfd7zXZ\x00", "xz"),
)
_BZ2_MARKERS = (b"1AY&SY", b"\x17rE8P\x90")  # after "BZh<digit>": a block, or the end of an empty stream
_HEAD = 10  # bytes that decide the codec
COMPRESSION_SUFFIXES = (".gz", ".zst", ".xz", ".bz2")
# what reading a truncated or corrupt stream raises (gzip: zlib.error for a bad deflate block; zstd's
# errors are raised as OSError)
STREAM_ERRORS = (EOFError, OSError, lzma.LZMAError, zlib.error)
MAX_LAYERS = 4  # compression layers decompressed at most (a file compressed twice is read whole)


def _codec_of(head: bytes) -> Compression:
    if head[:3] == b"BZh" and head[3:4].isdigit() and head[3:4] != b"0" and head[4:10] in _BZ2_MARKERS:
        return "bz2"
    return next((codec for magic, codec in _MAGIC if head.startswith(magic)), "none")


def detect_compression(path: Path) -> Compression:
    """The codec of ``path`` by its first bytes (see the module docstring)."""
    with path.open("rb") as handle:
        return _codec_of(handle.read(_HEAD))


def inner_name(name: str) -> str:
    """``name`` without one compression suffix (``.gz``, ``.zst``, ``.xz``, ``.bz2``, any case)."""
    low = name.lower()
    for suffix in COMPRESSION_SUFFIXES:
        if low.endswith(suffix):
            return name[: -len(suffix)]
    return name


def open_binary(path: Path, codec: Compression | None = None) -> BinaryIO:
    """``path`` as a stream of decompressed bytes, every compression layer removed (the outer ``codec``
    detected when ``None``); close it after use."""
    codec = detect_compression(path) if codec is None else codec
    stream: BinaryIO = path.open("rb")
    for _ in range(MAX_LAYERS):
        if codec == "none":
            return stream
        stream = _decompressing(stream, codec)
        try:
            codec = _codec_of(stream.peek(_HEAD)[:_HEAD])  # type: ignore[attr-defined]
        except STREAM_ERRORS as exc:  # broken before its first bytes: the stream raises it when read
            stream.close()
            return cast(BinaryIO, io.BufferedReader(_Failing(exc)))
    if codec != "none":
        stream.close()
        raise OSError(f"more than {MAX_LAYERS} compression layers; decompress it first")
    return stream


def _decompressing(raw: BinaryIO, codec: Compression) -> BinaryIO:
    """A stream of ``raw``'s bytes decompressed by ``codec``, closing ``raw`` when closed; it has ``peek``."""
    if codec == "zstd":
        return cast(BinaryIO, io.BufferedReader(_ZstdReader(raw), buffer_size=_CHUNK))
    if codec == "gzip" and _FAST_GZIP is not None and raw.seekable():
        return cast(BinaryIO, io.BufferedReader(_CheckedGzip(raw), buffer_size=_CHUNK))
    owned = cast(BinaryIO, _Owned(raw))  # closing it (also when it is collected) closes ``raw``
    if codec == "gzip":
        return cast(BinaryIO, gzip.GzipFile(fileobj=owned, mode="rb"))
    if codec == "xz":
        return cast(BinaryIO, lzma.LZMAFile(owned, "rb"))
    return cast(BinaryIO, bz2.BZ2File(owned, "rb"))


class _Failing(io.RawIOBase):
    """A stream that raises ``error`` when read (a decompressor's own stream, read again after it raised,
    may end quietly instead)."""

    def __init__(self, error: BaseException) -> None:
        self._error = error

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        raise self._error


class _Owned(io.RawIOBase):
    """A stream that closes the stream it reads (``GzipFile(fileobj=...)`` leaves its ``fileobj`` open)."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self._raw.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self._raw.close()
        super().close()


_CHUNK = 1 << 17

try:  # ISA-L's gzip reader (the ``isal`` package), verified against the standard library's (see below)
    from isal import igzip as _FAST_GZIP
except ImportError:  # pragma: no cover - isal is a dependency; without it gzip is read by the stdlib
    _FAST_GZIP = None  # type: ignore[assignment]


class _CheckedGzip(io.RawIOBase):
    """A seekable gzip file's bytes inflated by ISA-L until it raises; from there the standard library's
    ``gzip`` reads the file again, skips the bytes already given and goes on to its own end or error."""

    def __init__(self, raw: BinaryIO) -> None:
        assert _FAST_GZIP is not None
        self._raw, self._given = raw, 0
        self._stream: Any = _FAST_GZIP.IGzipFile(fileobj=raw, mode="rb")
        self._fast = True

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        try:
            data = self._stream.read1(len(buffer))
        # ISA-L's error types vary (EOFError, BadGzipFile, IsalError): the reference decides
        except Exception:
            if not self._fast:
                raise
            self._reference()
            data = self._stream.read1(len(buffer))
        buffer[: len(data)] = data
        self._given += len(data)
        return len(data)

    def _reference(self) -> None:
        """Go on with the standard library's reader, at the byte the fast one stopped (an error the
        reference raises before that byte is raised here)."""
        self._fast = False
        self._raw.seek(0)
        self._stream = gzip.GzipFile(fileobj=self._raw, mode="rb")
        left = self._given
        while left:
            skipped = len(self._stream.read(min(left, _CHUNK)))
            if not skipped:
                raise OSError("the gzip stream ends before the bytes ISA-L gave (a corrupt file)")
            left -= skipped

    def close(self) -> None:
        self._raw.close()
        super().close()


class _ZstdReader(io.RawIOBase):
    """zstd frames (one or more) decompressed chunk by chunk; a stream that ends inside a frame raises
    ``EOFError`` (``zstandard``'s own ``stream_reader`` ends silently there)."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw, self._new = raw, zstandard.ZstdDecompressor().decompressobj
        self._obj, self._pending, self._started = self._new(), b"", False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        while not self._pending:
            chunk = self._raw.read(_CHUNK)
            if not chunk:
                if self._started and not self._obj.eof:
                    raise EOFError("zstd stream ended before the end of its frame (truncated file)")
                return 0
            self._feed(chunk)
        n = min(len(buffer), len(self._pending))
        buffer[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n

    def _feed(self, chunk: bytes) -> None:
        while chunk:
            self._started = True
            try:
                self._pending += self._obj.decompress(chunk)
            except Exception as exc:  # zstandard.ZstdError: corrupt data
                raise OSError(f"corrupt zstd stream ({exc})") from None
            chunk = self._obj.unused_data if self._obj.eof else b""
            if self._obj.eof:
                self._obj, self._started = self._new(), False

    def close(self) -> None:
        self._raw.close()
        super().close()
