"""Lines read a block at a time (``lines.iter_handle_blocks``, ``lines.complete_line_blocks``) against the
line-by-line references."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tokenloom.corpus.lines import complete_line_blocks, complete_lines, iter_handle_blocks, iter_handle_lines
from tokenloom.corpus.records import SourceStats
from tokenloom.errors import CorpusError

PATH = Path("corpus.txt")
# pieces a line is made of: ASCII, multi-byte UTF-8, CR, invalid bytes, NUL, BOMs (UTF-8 and UTF-16)
PIECES = st.sampled_from(
    [b"a", b"hello ", "é".encode(), "日本".encode(), "😀".encode(), b"\r", b"\xff", b"\xc3", b"\x00", b"\xef\xbb\xbf",
     b"\xff\xfe", b"\n", b"\n", b"\n", b"\r\n"]
)  # fmt: skip


def _read(fn: Any, data: bytes, **kwargs: Any) -> tuple[list[tuple[int, str]], SourceStats, str | None]:
    stats, out, error = SourceStats(), [], None
    try:
        for item in fn(io.BytesIO(data[kwargs.get("offset", 0) :]), PATH, stats=stats, **kwargs):
            out.extend([item] if fn is iter_handle_lines else zip(*item, strict=True))
    except CorpusError as exc:
        error = str(exc)
    return out, stats, error


@settings(max_examples=400)
@given(
    st.lists(PIECES, max_size=80).map(b"".join),
    st.sampled_from(["strict", "replace", "skip"]),
    st.sampled_from([None, 4, 9, 40]),
    st.integers(1, 24),
    st.booleans(),
    st.data(),
)
def test_blocks_give_the_reference_lines(
    data: bytes, errors: str, limit: int | None, block: int, ranged: bool, draw: st.DataObject
) -> None:
    kwargs: dict[str, Any] = {"errors": errors, "max_line_bytes": limit}
    if ranged and data:  # a byte range starting at a line start
        starts = [0] + [i + 1 for i, b in enumerate(data) if b == 10]
        offset = draw.draw(st.sampled_from(starts))
        kwargs |= {"offset": offset, "first_line": 1 + data[:offset].count(b"\n")}
        kwargs["end"] = draw.draw(st.integers(offset, len(data) + 1))
    expected = _read(iter_handle_lines, data, **kwargs)
    assert _read(iter_handle_blocks, data, block_bytes=block, **kwargs) == expected


def test_a_large_file_is_read_in_blocks_with_every_line(tmp_path: Path) -> None:
    lines = [f"línea {i} " + "x" * (i % 300) for i in range(20_000)]
    data = ("\n".join(lines) + "\r\n").encode()
    stats = SourceStats()
    blocks = list(
        iter_handle_blocks(io.BytesIO(data), PATH, errors="strict", stats=stats, block_bytes=1 << 16)
    )
    assert [line for _, got in blocks for line in got] == lines
    assert [n for numbers, _ in blocks for n in numbers] == list(range(1, 20_001))
    assert len(blocks) < 100  # whole blocks, not a line at a time
    assert (stats.lines, stats.bytes, stats.chars) == (20_000, len(data), sum(map(len, lines)))


class _Breaks(io.BytesIO):
    """A stream that raises ``EOFError`` once ``at`` bytes are read (a truncated compressed file)."""

    def __init__(self, data: bytes, at: int) -> None:
        super().__init__(data[:at])
        self.cut = at < len(data)

    def read1(self, size: int = -1) -> bytes:
        piece = super().read1(size)
        if not piece and self.cut:
            raise EOFError("truncated")
        return piece

    def readline(self, size: int | None = -1) -> bytes:
        line = super().readline(size)
        if self.cut and not line.endswith(b"\n"):
            raise EOFError("truncated")
        return line


@settings(max_examples=300)
@given(st.lists(PIECES, max_size=80).map(b"".join), st.integers(1, 24), st.floats(0, 1.1))
def test_complete_line_blocks_equal_complete_lines(data: bytes, block_bytes: int, cut: float) -> None:
    """Raw lines a block at a time, as ``complete_lines`` gives them a line at a time: a CR ends no line, the
    piece after the last newline comes only when the stream ends there, a stream that breaks loses only the
    line it breaks in."""
    at = min(int(cut * len(data)), len(data))

    def lines(blocks: bool) -> tuple[list[bytes], bool]:
        out: list[bytes] = []
        stream = _Breaks(data, at)
        try:
            if blocks:
                for block in complete_line_blocks(stream, block_bytes):
                    out += block
            else:
                out += complete_lines(iter(stream.readline, b""))
        except EOFError:
            return out, True
        return out, False

    assert lines(True) == lines(False)
