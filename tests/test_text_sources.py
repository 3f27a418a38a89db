"""Line sources: resolving inputs, streaming UTF-8 lines, clear errors on bad input."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenloom.corpus.sources import SourceStats, iter_lines, resolve_inputs
from tokenloom.errors import CorpusError


def _tree(tmp_path: Path) -> Path:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "deep").mkdir()
    (tmp_path / "a.txt").write_text("a\n", encoding="utf-8")
    (tmp_path / "b" / "c.txt").write_text("c\n", encoding="utf-8")
    (tmp_path / "b" / "deep" / "d.txt").write_text("d\n", encoding="utf-8")
    (tmp_path / "b" / "ignored.json").write_text("{}", encoding="utf-8")
    return tmp_path


def test_resolve_folder_recursive_sorted_and_suffix_filtered(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    files = resolve_inputs(root)
    assert files == sorted([root / "a.txt", root / "b" / "c.txt", root / "b" / "deep" / "d.txt"])
    assert resolve_inputs(root / "b", suffixes=(".json",)) == [root / "b" / "ignored.json"]


def test_resolve_file_glob_and_duplicates(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    got = resolve_inputs([root / "b" / "ignored.json", str(root / "**" / "*.txt"), root / "a.txt"])
    assert got == sorted(
        [root / "a.txt", root / "b" / "c.txt", root / "b" / "deep" / "d.txt", root / "b" / "ignored.json"]
    )


def test_resolve_errors_name_the_path(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="does not exist") as exc:
        resolve_inputs(tmp_path / "missing.txt")
    assert "missing.txt" in str(exc.value)
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "x.json").write_text("{}")
    with pytest.raises(CorpusError, match=r"no files ending in \.txt") as exc:
        resolve_inputs(empty)
    assert str(empty) in str(exc.value)
    with pytest.raises(CorpusError, match="matches no files") as exc:
        resolve_inputs(str(tmp_path / "*.nothing"))
    assert "*.nothing" in str(exc.value)
    with pytest.raises(CorpusError, match="no corpus inputs"):
        resolve_inputs([])


def test_empty_path_is_an_error_for_every_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tokenloom import cli
    from tokenloom.corpus.load import load_corpus
    from tokenloom.text.train import train_tokenizer

    monkeypatch.chdir(_tree(tmp_path))  # "" would be this folder, which has text files to find
    assert resolve_inputs(".")  # the current folder, asked for by name, is still fine
    readers = [
        lambda: resolve_inputs(""),
        lambda: resolve_inputs(["a.txt", ""]),
        lambda: list(iter_lines("")),
        lambda: load_corpus([""]),
        lambda: train_tokenizer([""], vocab_size=1000, quiet=True),
        lambda: train_tokenizer("", vocab_size=1000, quiet=True),
    ]
    for read in readers:
        with pytest.raises(
            CorpusError, match=r"^corpus path '' is empty; pass a file, folder or glob \(for the "
        ):
            read()
    assert cli.main(["train", "", "--vocab-size", "1000", "--out", str(tmp_path / "tok"), "--quiet"]) == 2
    assert "corpus path '' is empty" in capsys.readouterr().err and not (tmp_path / "tok").exists()


def test_lines_crlf_bom_last_line_and_stats(tmp_path: Path) -> None:
    path = tmp_path / "x.txt"
    path.write_bytes("\ufeffhé\r\n\n  tab\tend\nlast".encode())
    stats = SourceStats()
    assert list(iter_lines(path, stats=stats)) == ["hé", "", "  tab\tend", "last"]
    assert stats.files == 1 and stats.lines == 4
    assert stats.bytes == path.stat().st_size
    assert stats.chars == len("hé") + len("  tab\tend") + len("last")
    assert stats.replaced == 0


def test_invalid_utf8_strict_names_file_line_and_offset(tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(b"ok line\nsecond \xff\xfe here\n")
    with pytest.raises(CorpusError) as exc:
        list(iter_lines(path))
    message = str(exc.value)
    assert str(path) in message
    assert "line 2" in message
    assert "byte offset 15" in message  # 8 bytes of line 1, then "second " is 7 bytes
    assert "errors='replace'" in message and "--errors replace" in message


def test_invalid_utf8_replace_counts(tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    # a literal U+FFFD already in the text must not be counted as a substitution
    path.write_bytes(b"a\xffb\xc3\n\xef\xbf\xbd fine\n\xe2\x82\n")
    stats = SourceStats()
    lines = list(iter_lines(path, errors="replace", stats=stats))
    assert lines == ["a\ufffdb\ufffd", "\ufffd fine", "\ufffd"]
    assert stats.replaced == 3
    assert stats.replaced_lines == 2
    assert stats.replaced_where == [f"{path}:1", f"{path}:3"]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(blacklist_characters="\n\r", blacklist_categories=("Cs",)))))
def test_lines_roundtrip_property(tmp_path_factory: pytest.TempPathFactory, lines: list[str]) -> None:
    path = tmp_path_factory.mktemp("prop") / "p.txt"
    lines = [line.removeprefix("\ufeff") if i == 0 else line for i, line in enumerate(lines)]
    data = "".join(line + "\n" for line in lines).encode()
    path.write_bytes(data)
    head = data.split(b"\n", 1)[0][:64]
    if head and head.count(0) * 4 >= len(head):  # documented: a first line of 1/4 NUL bytes is not UTF-8 text
        with pytest.raises(CorpusError, match="at least 1/4 NUL bytes"):
            list(iter_lines(path))
        return
    assert list(iter_lines(path)) == lines
