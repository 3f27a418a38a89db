"""tokenloom.corpus.load: FLORES folders, tables, code folders, and bad input named by file and line."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tokenloom.corpus.columnar import read_corpus_task
from tokenloom.corpus.load import Corpus, load_corpus, parse_lang_code
from tokenloom.corpus.plan import plan_corpus_tasks, task_parts
from tokenloom.errors import CorpusError


def write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8")
    return path


@pytest.fixture
def flores(tmp_path: Path) -> Path:
    folder = tmp_path / "flores"
    write(folder / "eng_Latn.txt", "Hello world.\nGood morning.\n\nThe end.\n")
    write(folder / "hin_Deva.txt", "नमस्ते दुनिया।\nसुप्रभात।\n\nसमाप्त।\n")
    write(folder / "zho_Hans.txt", "你好世界。\n早上好。\n\n结束。\n")
    return folder


def test_parse_lang_code() -> None:
    assert parse_lang_code("hin_Deva.txt") == ("hin", "Deva")
    assert parse_lang_code("acu_Latn-1") == ("acu", "Latn")
    assert parse_lang_code("README.txt") is None
    assert parse_lang_code("eng_latn") is None


def test_flores_folder_is_parallel_and_lazy(flores: Path) -> None:
    corpus = load_corpus(flores)
    assert corpus.slices == ["eng_Latn", "hin_Deva", "zho_Hans"]
    part = corpus.parts[1]
    assert (part.lang, part.script, part.slice_kind, part.align) == (
        "hin",
        "Deva",
        "language",
        str(flores.resolve()),
    )
    texts, ids = part.load()
    assert texts == ["नमस्ते दुनिया।", "सुप्रभात।", "", "समाप्त।"]  # the blank line is kept, not dropped
    assert ids == [1, 2, 3, 4]
    assert len({p.align for p in corpus}) == 1


def test_mismatched_line_count_in_parallel_folder_names_the_file(flores: Path) -> None:
    write(flores / "fra_Latn.txt", "Bonjour le monde.\nBonjour.\n\n")  # 3 lines, the others 4
    with pytest.raises(
        CorpusError, match=r"fra_Latn\.txt has 3 lines but .* have 4; line 4 has no counterpart"
    ):
        load_corpus(flores)
    assert all(p.align is None for p in load_corpus(flores, parallel=False))


def test_mismatch_error_says_what_to_do_from_the_command_line(flores: Path) -> None:
    """The default (what ``tokenloom fertility`` uses) names fixes a CLI user can make, no Python keyword;
    only an explicit ``parallel=True`` (Python) points at ``parallel=False``."""
    write(flores / "fra_Latn.txt", "Bonjour le monde.\nBonjour.\n\n")  # 3 lines, the others 4
    with pytest.raises(CorpusError) as exc:
        load_corpus(flores)
    message = str(exc.value)
    assert (
        "fix fra_Latn.txt so that it has 4 lines, remove it, or move fra_Latn.txt into a folder of its own"
        in message
    )
    assert "parallel" not in message.replace("parallel folder", "")
    with pytest.raises(CorpusError, match=r"or pass parallel=False to read the files independently"):
        load_corpus(flores, parallel=True)
    assert len(load_corpus(flores / "fra_Latn.txt")) == 1  # the file on its own reads fine


def test_folder_whose_files_all_differ_is_read_unaligned(tmp_path: Path) -> None:
    for i, name in enumerate(["eng_Latn", "fra_Latn", "deu_Latn"]):
        write(tmp_path / "udhr" / f"{name}.txt", "line\n" * (i + 2))
    corpus = load_corpus(tmp_path / "udhr")
    assert [p.align for p in corpus] == [None, None, None]
    with pytest.raises(CorpusError, match="has 2 lines but"):
        load_corpus(tmp_path / "udhr", parallel=True)


def test_two_files_that_disagree_warn_that_no_premiums_follow(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write(tmp_path / "pair" / "eng_Latn.txt", "one\n" * 10)
    write(tmp_path / "pair" / "fra_Latn.txt", "un\n" * 9)  # one line short: no majority to blame
    with caplog.at_level("WARNING", logger="tokenloom.corpus.load"):
        corpus = load_corpus(tmp_path / "pair")
    assert [p.align for p in corpus] == [None, None]
    assert "eng_Latn.txt 10, fra_Latn.txt 9" in caplog.text
    assert "NOT parallel and no premiums" in caplog.text
    with pytest.raises(CorpusError, match=r"line 10 has no counterpart"):
        load_corpus(tmp_path / "pair", parallel=True)


def test_empty_file_is_an_error(flores: Path) -> None:
    write(flores / "fra_Latn.txt", "")
    with pytest.raises(CorpusError, match=r"fra_Latn\.txt: empty file"):
        load_corpus(flores)


def test_undecodable_bytes_strict_names_line_and_replace_counts(tmp_path: Path) -> None:
    path = write(tmp_path / "bad" / "eng_Latn.txt", b"fine\nbad \xff\xfe byte\nok\n")
    corpus = load_corpus(path)
    with pytest.raises(CorpusError, match=r"eng_Latn\.txt: line 2 \(byte offset 9\): invalid UTF-8"):
        corpus.parts[0].load()
    corpus = load_corpus(path, errors="replace")
    texts, _ = corpus.parts[0].load()
    assert texts[1] == "bad \ufffd\ufffd byte"
    assert corpus.stats.replaced == 2 and corpus.stats.replaced_lines == 1


def test_jsonl_with_labels_ids_and_detected_script(tmp_path: Path) -> None:
    rows = [
        {"text": "Hello there", "lang": "eng", "id": "s1"},
        {"text": "नमस्ते", "lang": "hin_Deva", "id": "s1"},
        {"text": "Hello नमस्ते", "lang": "hin", "slice": "hin-code-mixed", "id": "s2"},
        {"text": "namaste", "lang": "hin", "script": "Latn", "slice": "hin_Latn-translit", "id": "s1"},
        {"text": "no label at all", "id": "s3"},
    ]
    path = write(tmp_path / "data.jsonl", "\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n")
    corpus = load_corpus(path, align_column="id")
    got = {(p.slice_kind, p.slice, p.lang, p.script) for p in corpus}
    assert got == {
        ("language", "eng_Latn", "eng", "Latn"),  # script detected from the text
        ("language", "hin_Deva", "hin", "Deva"),
        ("code_mixed", "hin-code-mixed", "hin", "Latn"),  # 5 Latin letters vs 4 Devanagari
        ("transliterated", "hin_Latn-translit", "hin", "Latn"),
        ("language", "und_Latn", "und", "Latn"),
    }
    hin = next(p for p in corpus if p.slice == "hin_Deva")
    assert hin.load() == (["नमस्ते"], ["s1"])
    assert hin.align == "table-ids"


def test_jsonl_bad_rows_are_named(tmp_path: Path) -> None:
    path = write(tmp_path / "a.jsonl", '{"text": "ok"}\n{"text": "broken"\n')
    with pytest.raises(CorpusError, match=r"a\.jsonl: line 2: invalid JSON"):
        load_corpus(path)
    path = write(tmp_path / "b.jsonl", '{"text": "ok"}\n\n{"body": "no text key"}\n')
    with pytest.raises(CorpusError, match=r"b\.jsonl: line 3: 'text' must be a string"):
        load_corpus(path)
    path = write(tmp_path / "c.jsonl", '{"sentence": "x"}\n')
    with pytest.raises(CorpusError, match=r"c\.jsonl: no 'text' column \(columns: \['sentence'\]\)"):
        load_corpus(path)


def test_csv_and_parquet(tmp_path: Path) -> None:
    write(tmp_path / "t.csv", "id,lang,text\n1,eng,Hello world\n2,eng,Good night\n1,fra,Bonjour le monde\n")
    corpus = load_corpus(tmp_path / "t.csv", align_column="id")
    assert sorted(corpus.slices) == ["eng_Latn", "fra_Latn"]
    eng = next(p for p in corpus if p.slice == "eng_Latn")
    assert eng.load() == (["Hello world", "Good night"], ["1", "2"])
    write(tmp_path / "bad.csv", "lang,body\neng,x\n")
    with pytest.raises(CorpusError, match=r"bad\.csv: no 'text' column"):
        load_corpus(tmp_path / "bad.csv")
    pd.DataFrame({"text": ["Привет мир", None], "lang": ["rus", "rus"]}).to_parquet(tmp_path / "p.parquet")
    with pytest.raises(CorpusError, match=r"p\.parquet: row 2: 'text' must be a string"):
        load_corpus(tmp_path / "p.parquet")
    pd.DataFrame({"text": ["Привет мир"], "lang": ["rus"]}).to_parquet(tmp_path / "q.parquet")
    assert load_corpus(tmp_path / "q.parquet").slices == ["rus_Cyrl"]


def test_code_folder_becomes_code_slices(tmp_path: Path) -> None:
    write(tmp_path / "src" / "a.py", "def f(x):\n    return x + 1\n")
    write(tmp_path / "src" / "pkg" / "b.py", "print('hi')\n")
    write(tmp_path / "src" / "c.rs", "fn main() {}\n")
    corpus = load_corpus(tmp_path / "src")
    assert [(p.slice_kind, p.slice) for p in corpus] == [("code", "python"), ("code", "rust")]
    texts, ids = corpus.parts[0].load()
    assert texts == ["def f(x):\n    return x + 1", "print('hi')"]  # one text per file
    assert [Path(i).name for i in ids] == ["a.py", "b.py"]


def test_plain_text_file_and_missing_inputs(tmp_path: Path) -> None:
    write(tmp_path / "notes.txt", "first line\nsecond line\n")
    corpus = load_corpus(tmp_path / "notes.txt")
    assert [(p.slice, p.lang, p.script) for p in corpus] == [("und", "und", None)]  # never named after a file
    with pytest.raises(CorpusError, match="does not exist"):
        load_corpus(tmp_path / "nope")
    with pytest.raises(ValueError, match="errors must be"):
        load_corpus(tmp_path / "notes.txt", errors="ignore")  # type: ignore[arg-type]


def test_same_slice_from_two_inputs_is_refused(flores: Path, tmp_path: Path) -> None:
    write(tmp_path / "other" / "eng_Latn.txt", "x\n")
    with pytest.raises(CorpusError, match=r"slice 'eng_Latn' .* comes from more than one input"):
        load_corpus([flores, tmp_path / "other"])


def test_from_records_groups_by_source() -> None:
    corpus = Corpus.from_records(
        [("eng_Latn.txt", "a b"), ("x/hin_Deva.txt", "क"), ("eng_Latn.txt", "c"), ("misc", "z")]
    )
    assert [(p.slice, p.lang, p.script) for p in corpus] == [
        ("eng_Latn", "eng", "Latn"),
        ("hin_Deva", "hin", "Deva"),
        ("und", "und", None),  # a language is never named after a source
    ]
    assert corpus.parts[0].load() == (["a b", "c"], [1, 2])
    with pytest.raises(CorpusError, match="text must be a str"):
        Corpus.from_records([("eng_Latn", b"bytes")])  # type: ignore[list-item]


def test_real_flores_devtest_is_parallel(shared_dir: Path) -> None:
    corpus = load_corpus(shared_dir / "corpora" / "flores200" / "devtest")
    assert len(corpus) == 99
    assert len({p.align for p in corpus}) == 1
    texts, ids = next(p for p in corpus if p.slice == "zho_Hans").load()
    assert len(texts) == 1012 and ids[-1] == 1012


def test_the_plan_reads_the_parts_load_corpus_gives(tmp_path: Path) -> None:
    """Files (a FLORES-style pair, a stray text file, a JSON Lines table) planned into tasks and read task
    by task give exactly ``load_corpus``'s parts; an in-memory table is one task holding the same parts."""
    (tmp_path / "eng_Latn.txt").write_text("one\ntwo\n", encoding="utf-8")
    (tmp_path / "fra_Latn.txt").write_text("un\ndeux\n", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("a stray line\n", encoding="utf-8")
    rows = [{"text": f"row {i}", "lang": lang} for i, lang in enumerate(["deu", "ita", "deu"])]
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")

    def by_slice(pieces: Iterable[Any]) -> dict[tuple[str, str], list[str]]:
        out: dict[tuple[str, str], list[str]] = {}
        for piece in pieces:
            out.setdefault((piece.part.slice_kind, piece.part.slice), []).extend(piece.texts)
        return out

    expected = {(p.slice_kind, p.slice): p.load()[0] for p in load_corpus(tmp_path)}
    assert expected[("language", "deu_Latn")] == ["row 0", "row 2"] and len(expected) == 5
    tasks = plan_corpus_tasks(tmp_path, chunk_bytes=1)
    assert by_slice(p for t in tasks for p in read_corpus_task(t, chunk_size=1)) == expected
    assert {(p.slice_kind, p.slice) for p in task_parts(tasks)} == {  # tables: known once read
        ("language", "eng_Latn"), ("language", "fra_Latn"), ("language", "und"),
    }  # fmt: skip

    frame = pd.DataFrame(rows)
    (task,) = plan_corpus_tasks(frame)
    assert task.memory is not None and task_parts([task]) == list(task.memory)
    pieces = list(read_corpus_task(task, first="ita_Latn"))
    assert [p.part.slice for p in pieces] == ["ita_Latn", "deu_Latn"]  # the slice asked for first
    assert by_slice(pieces) == {
        ("language", "deu_Latn"): ["row 0", "row 2"], ("language", "ita_Latn"): ["row 1"],
    }  # fmt: skip
