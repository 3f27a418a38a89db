"""Fuzzing corpus files: random bytes, UTF-16 with and without a byte-order mark, NUL-filled files, valid text
and one enormous line, through train_tokenizer and fertility_report: a clear error or a correct result."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokenloom.corpus.sources import iter_lines
from tokenloom.errors import CorpusError, TokenloomError
from tokenloom.fertility.report import fertility_report
from tokenloom.text.train import train_tokenizer

REPO_ROOT = Path(__file__).resolve().parent.parent
WORDS = ["tokens", "naïve", "straße", "日本語", "слово", "λόγος", "كلمة", "१२३", "emoji 🙂", "x=1;"]
SAMPLE = [" ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(6)) for i in range(40)]


@pytest.fixture(scope="module")
def small_tokenizer() -> object:
    return train_tokenizer(iter(SAMPLE * 5), vocab_size=320, heldout=0.0, quiet=True)


text = st.text(
    st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00\r"), min_size=1, max_size=200
)


@st.composite
def corpus_bytes(draw: st.DrawFn) -> tuple[str, bytes]:
    """(what it is, the file's bytes)."""
    kind = draw(st.sampled_from(["random", "utf16-bom", "utf16-nobom", "nul", "utf8", "text-then-random"]))
    lines = draw(st.lists(text, min_size=1, max_size=8))
    body = "\n".join(lines) + "\n"
    if kind == "random":
        return kind, draw(st.binary(min_size=1, max_size=400))
    if kind == "utf16-bom":
        return kind, body.encode("utf-16")  # with a byte-order mark (little-endian here)
    if kind == "utf16-nobom":
        return kind, body.encode(draw(st.sampled_from(["utf-16-le", "utf-16-be"])))
    if kind == "nul":
        return kind, b"\x00" * draw(st.integers(1, 5000))
    if kind == "text-then-random":  # valid lines, then garbage: the error names a later line
        return kind, ("\n".join(SAMPLE) + "\n").encode() + draw(st.binary(min_size=1, max_size=200))
    return kind, ("\n".join(lines + SAMPLE) + "\n").encode()  # enough text to learn a small vocabulary


def _expect_clear_error(exc: TokenloomError, path: Path, kind: str) -> None:
    message = str(exc)
    assert message and "Traceback" not in message
    if isinstance(exc, CorpusError):
        assert path.name in message, message
    if kind == "utf16-bom":
        assert isinstance(exc, CorpusError) and "UTF-16" in message and "iconv -f UTF-16 -t UTF-8" in message
    if kind == "nul":
        assert isinstance(exc, CorpusError) and "NUL bytes" in message


FUZZ = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@FUZZ
@given(case=corpus_bytes())
def test_train_tokenizer_on_fuzzed_files_errs_clearly_or_round_trips(
    tmp_path: Path, case: tuple[str, bytes]
) -> None:
    kind, data = case
    path = tmp_path / f"fuzz-{kind}.txt"
    path.write_bytes(data)
    try:
        tok = train_tokenizer(path, vocab_size=600, engine="hf", heldout=0.0, quiet=True, errors="strict")
    except TokenloomError as exc:
        _expect_clear_error(exc, path, kind)
        return
    assert kind not in ("utf16-bom", "nul")  # these must never train
    assert kind != "utf8" or tok.record["corpus"]["lines"] == len(list(iter_lines(path)))
    for line in iter_lines(path):
        assert tok.decode(tok.encode(line)) == line  # lossless: byte fallback, no normalization


@FUZZ
@given(case=corpus_bytes())
def test_fertility_report_on_fuzzed_files_errs_clearly_or_counts_right(
    tmp_path: Path, small_tokenizer: object, case: tuple[str, bytes]
) -> None:
    kind, data = case
    path = tmp_path / f"fuzz-{kind}.txt"
    path.write_bytes(data)
    try:
        df = fertility_report({"t": small_tokenizer}, path, pivot=None, translit=False, errors="strict")
    except TokenloomError as exc:
        _expect_clear_error(exc, path, kind)
        return
    assert kind not in ("utf16-bom", "nul")
    lines = list(iter_lines(path))
    row = df[df["slice_kind"] == "all"].iloc[0]
    assert row["texts"] == len(lines)
    assert row["chars"] == sum(len(line) for line in lines)
    assert row["tokens"] == sum(len(small_tokenizer.encode(line)) for line in lines)  # type: ignore[attr-defined]


def test_utf16_with_a_bom_says_so_and_how_to_convert(tmp_path: Path) -> None:
    for encoding, order in [("utf-16-le", "little-endian"), ("utf-16-be", "big-endian")]:
        path = tmp_path / f"{encoding}.txt"
        path.write_bytes("\ufeffhello\nworld\n".encode(encoding))
        with pytest.raises(CorpusError) as exc:
            list(iter_lines(path))
        assert str(exc.value) == (
            f"{path}: the file is UTF-16 (it starts with a {order} UTF-16 byte-order mark), not UTF-8; "
            f"convert it, e.g. `iconv -f UTF-16 -t UTF-8 {path} > out.txt`"
        )
    path = tmp_path / "utf32.txt"
    path.write_bytes("hi\n".encode("utf-32"))
    with pytest.raises(CorpusError, match=r"UTF-32 \(it starts with a little-endian UTF-32"):
        train_tokenizer(path, vocab_size=300, quiet=True, errors="strict")
    plain = tmp_path / "plain.txt"
    plain.write_bytes("\ufeffa UTF-8 mark is fine\n".encode())
    assert list(iter_lines(plain)) == ["a UTF-8 mark is fine"]


def test_a_line_longer_than_the_limit_is_refused_after_reading_only_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "long.txt"
    path.write_bytes(b"short\n" + b"x" * 1000 + b"\r\nlast")
    assert list(iter_lines(path, max_line_bytes=1000)) == ["short", "x" * 1000, "last"]
    with pytest.raises(CorpusError, match=r"long\.txt: line 2 is longer than 999 bytes"):
        list(iter_lines(path, max_line_bytes=999))


_BIG_LINE = textwrap.dedent(
    """
    import resource, sys
    from pathlib import Path
    path = Path(sys.argv[1])
    chunk = ("tokens naïve straße 日本語 слово λόγος " * 4000).encode()
    with path.open("wb") as f:  # one line of 200 MB, no newline
        for _ in range(200_000_000 // len(chunk)):
            f.write(chunk)
    from tokenloom.errors import CorpusError
    from tokenloom.text.train import train_tokenizer
    from tokenloom.fertility.report import fertility_report
    tok = train_tokenizer(path, vocab_size=360, heldout=0.0, quiet=True)
    assert tok.record["corpus"]["split_lines"] == 1, tok.record["corpus"]
    text = "tokens naïve straße"
    assert tok.decode(tok.encode(text)) == text
    try:
        fertility_report({"t": tok}, path, pivot=None, translit=False, errors="strict")
    except CorpusError as exc:
        print("fertility:", exc)
    else:
        raise AssertionError("a 200 MB text reached the fertility report")
    try:  # this program's own peak: ru_maxrss would keep the peak of the process it was started from
        with open("/proc/self/status") as status:
            peak = next(int(line.split()[1]) // 1024 for line in status if line.startswith("VmHWM"))
    except OSError:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print("maxrss_mb", peak)
    """
)


@pytest.mark.slow
def test_a_200_mb_single_line_trains_and_is_refused_by_the_report_in_bounded_memory(tmp_path: Path) -> None:
    path = tmp_path / "one_line.txt"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "src")}
    result = subprocess.run(
        [sys.executable, "-c", _BIG_LINE, str(path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"{path}: line 1 is longer than 1048576 bytes" in result.stdout
    peak_mb = int(result.stdout.split("maxrss_mb")[1])
    print("peak RSS of the child:", peak_mb, "MB for a 200 MB line")
    assert peak_mb < 3000  # training splits the line into 16 KB chunks; the report reads at most 1 MiB of it
