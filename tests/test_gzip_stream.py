"""gzip read by ISA-L (``isal``) is the standard library's ``gzip``, bytes and errors alike.

``open_binary`` inflates gzip with ISA-L and hands a file over to the standard library at the first
error ISA-L raises. The oracle is ``gzip.GzipFile`` itself, read the way the corpus readers read (``read1``
of 1 MiB): on whole, multi-member, padded, truncated and corrupted files, both give the same bytes before
the end or the break, and the same error.
"""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokenloom.corpus import compression
from tokenloom.corpus.compression import STREAM_ERRORS, open_binary

pytest.importorskip("isal")

READ = 1 << 20  # what the line and JSON Lines readers ask of a stream


def _drain(stream: io.BufferedIOBase) -> tuple[bytes, str | None]:
    """Everything ``stream`` gives by ``read1`` and the error it stops with (type and message)."""
    out = bytearray()
    try:
        with stream:
            while chunk := stream.read1(READ):
                out += chunk
    except STREAM_ERRORS as exc:
        return bytes(out), f"{type(exc).__name__}: {exc}"
    return bytes(out), None


def _both(path: Path) -> tuple[tuple[bytes, str | None], tuple[bytes, str | None]]:
    """One gzip layer read by ``open_binary``'s reader and by the standard library's."""
    ours = compression._decompressing(path.open("rb"), "gzip")
    return _drain(ours), _drain(gzip.GzipFile(path, "rb"))  # type: ignore[arg-type]


def test_the_fast_reader_serves_gzip_and_a_pipe_falls_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "a.gz"
    path.write_bytes(gzip.compress(b"abc\n" * 1000))
    with open_binary(path) as stream:
        assert isinstance(stream.raw, compression._CheckedGzip)  # type: ignore[attr-defined]
        assert stream.read() == b"abc\n" * 1000
    with monkeypatch.context() as m:  # isal not installed: the standard library reads it
        m.setattr(compression, "_FAST_GZIP", None)
        with open_binary(path) as stream:
            assert isinstance(stream, gzip.GzipFile) and stream.read() == b"abc\n" * 1000
    # a stream that cannot seek (a layer inside another codec) is read by the standard library only
    unseekable = io.BufferedReader(compression._Owned(path.open("rb")))  # type: ignore[arg-type]
    with compression._decompressing(unseekable, "gzip") as s:  # type: ignore[arg-type]
        assert isinstance(s, gzip.GzipFile) and s.read() == b"abc\n" * 1000


@pytest.mark.parametrize("size", [3, 5, 11])
def test_a_file_broken_before_its_first_byte_raises_when_read(tmp_path: Path, size: int) -> None:
    """``open_binary`` peeks at the first bytes for a second layer; a stream broken there raises when it is
    read (the standard library's reader, read again after raising, would end quietly: an empty file)."""
    path = tmp_path / "x.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"text": "a"}\n', mtime=0)[:size])
    with open_binary(path) as stream, pytest.raises(EOFError):
        stream.read1(READ)


_TEXT = st.binary(min_size=0, max_size=3000).map(lambda b: b * 400)  # repeats: deflate back-references


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(
    members=st.lists(_TEXT, min_size=1, max_size=3),
    padding=st.sampled_from([b"", b"\x00" * 7, b"junk", b"\x1f\x8b"]),
    cut=st.floats(0.0, 1.0),
    flips=st.lists(st.tuples(st.floats(0.0, 1.0), st.integers(1, 255)), max_size=3),
)
def test_isal_reads_what_the_standard_library_reads(
    tmp_path_factory: pytest.TempPathFactory,
    members: list[bytes],
    padding: bytes,
    cut: float,
    flips: list[tuple[float, int]],
) -> None:
    data = bytearray(b"".join(gzip.compress(m, mtime=0) for m in members) + padding)
    for where, mask in flips:  # corrupt bytes anywhere: header, deflate blocks, trailer
        data[min(int(where * len(data)), len(data) - 1)] ^= mask
    # half of the examples truncated, never below the 3 magic bytes that make a file gzip to open_binary
    data = data[: max(3, int(cut * len(data)))] if cut < 0.5 else data
    path = tmp_path_factory.mktemp("gz") / "x.gz"
    path.write_bytes(bytes(data))
    ours, reference = _both(path)
    assert ours[1] == reference[1]
    if ours[1] is None or not flips:  # whole files and plain truncations: byte for byte
        assert ours[0] == reference[0]
    else:  # a corrupt deflate block: the bytes before it, as far as each reader had inflated them
        assert reference[0].startswith(ours[0]) or ours[0].startswith(reference[0])
