"""Text lines read a block at a time (``lines.iter_handle_blocks``) against the line-by-line reference."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tokenloom.corpus.lines import iter_handle_blocks, iter_handle_lines
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
