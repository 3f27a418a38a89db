"""Every corpus format and codec read into the same records; bad input set aside, never lost; tasks.

The mix is built at test time from the shared FLORES texts by ``scripts/make_mix.py`` (5 languages x 20
sentences, in every format x codec, plus broken files).
"""

from __future__ import annotations

import csv
import gzip
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokenloom.corpus.columnar import read_task_batches
from tokenloom.corpus.formats import ReadRequest
from tokenloom.corpus.load import load_corpus
from tokenloom.corpus.records import Record, SourceStats
from tokenloom.corpus.stream import TrainingCorpus
from tokenloom.corpus.tasks import (
    iter_records,
    iter_texts,
    plan_files,
    plan_tasks,
    read_task,
)
from tokenloom.errors import CorpusError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
try:
    import make_mix
finally:
    sys.path.pop(0)

LINES = 20  # sentences per language in the test mix


@pytest.fixture(scope="module")
def mix(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    out = tmp_path_factory.mktemp("mix")
    return make_mix.write_mix(out / "good", shared_dir, lines=LINES), make_mix.write_mix(
        out / "broken", shared_dir, lines=LINES, formats=[("jsonl", "zst")], broken=True
    )


def _labels(records: list[Record]) -> list[tuple[str, str | None, str | None]]:
    return [(r.text, r.lang, r.script) for r in records]


def test_every_format_and_codec_gives_the_same_records(mix: Any) -> None:
    good, _ = mix
    expected = [(r["text"], r["language"], r["language_script"]) for r in good.rows]
    assert len(good.files) == len(make_mix.ALL) == 30 and len(expected) == 5 * LINES
    for path in good.files:
        stats = SourceStats()
        records = list(iter_records(path, stats=stats))
        if path.name.startswith("mix.txt"):  # texts only: no label columns
            assert _labels(records) == [(t, None, None) for t, _, _ in expected], path.name
            assert [r.number for r in records] == list(range(1, len(expected) + 1))
        else:
            assert _labels(records) == expected, path.name
        assert stats.lines == len(expected) and stats.files == 1 and not stats.rejects, path.name
    jsonl, csv_, parquet = (
        iter_records(good.out_dir / n) for n in ("mix.jsonl.gz", "mix.csv", "mix.parquet")
    )
    assert [r.position for r in jsonl][:2] == [1, 2]  # line numbers
    assert [r.position for r in csv_][:2] == [2, 3]  # the header is line 1
    assert [r.position for r in parquet][63:66] == [(0, 63), (1, 0), (1, 1)]  # 64-row row groups


def test_compression_is_detected_by_magic_bytes(tmp_path: Path) -> None:
    row = {"text": "Привет", "language": "rus", "language_script": "Cyrl"}
    (tmp_path / "disguised.jsonl").write_bytes(gzip.compress((json.dumps(row) + "\n").encode()))
    (tmp_path / "plain.txt.gz").write_text("not compressed\n", encoding="utf-8")
    assert _labels(list(iter_records(tmp_path / "disguised.jsonl"))) == [("Привет", "rus", "Cyrl")]
    assert [r.text for r in iter_records(tmp_path / "plain.txt.gz")] == ["not compressed"]


def test_load_corpus_slices_fineweb_and_own_columns(mix: Any, tmp_path: Path) -> None:
    good, _ = mix
    shards = sorted(good.out_dir.glob("mix.jsonl*")) + sorted(good.out_dir.glob("mix.parquet*"))
    corpus = load_corpus([str(p) for p in shards])  # ten shards of one table: one part per language
    assert sorted(corpus.slices) == ["arb_Arab", "eng_Latn", "hin_Deva", "rus_Cyrl", "zho_Hans"]
    texts, _ = next(p for p in corpus if p.slice == "rus_Cyrl").load()
    assert len(texts) == LINES * len(shards)
    own = tmp_path / "own.jsonl"
    own.write_text('{"body": "hello", "tongue": "eng", "writing": "Latn"}\n', encoding="utf-8")
    with pytest.raises(CorpusError, match=r"own\.jsonl: no 'text' column \(columns: \['body'"):
        load_corpus(own)
    corpus = load_corpus(own, text_column="body", lang_column="tongue", script_column="writing")
    assert corpus.slices == ["eng_Latn"] and corpus.parts[0].load()[0] == ["hello"]


def test_in_memory_corpora_read_like_tables(mix: Any) -> None:
    import datasets
    import pandas as pd

    good, _ = mix
    expected = _labels(list(iter_records(good.out_dir / "mix.parquet")))
    frame = pd.DataFrame(good.rows)
    for obj in (
        good.rows,
        frame,
        datasets.Dataset.from_pandas(frame),
        datasets.Dataset.from_pandas(frame).to_iterable_dataset(),
    ):
        assert _labels(list(iter_records(obj))) == expected, type(obj).__name__
    assert [r.text for r in iter_records(iter(["a", "b"]))] == ["a", "b"]
    assert sorted(load_corpus(frame).slices) == sorted(load_corpus(good.out_dir / "mix.csv").slices)


def test_bad_input_is_rejected_and_never_lost(mix: Any) -> None:
    _, broken = mix
    stats = SourceStats()
    records = list(iter_records(broken.out_dir, errors="skip", stats=stats))
    by_file: dict[str, list[Record]] = {}
    for r in records:
        by_file.setdefault(Path(r.source).name, []).append(r)
    rejects = {(Path(r.source).name, r.number, r.documents): r.reason for r in stats.rejects}
    for path, rows in broken.files.items():  # intact files: all read
        assert [r.text for r in by_file[path.name]] == [row["text"] for row in rows]
    rows_file = broken.out_dir / "broken-rows.jsonl"
    assert [r.text for r in by_file[rows_file.name]] == [r["text"] for r in broken.broken[rows_file] if r]
    assert {k[1] for k in rejects if k[0] == rows_file.name} == {2, 3, 5, 6}
    for name in ("broken-truncated.jsonl.gz", "broken-truncated.jsonl.zst"):
        read = [r.text for r in by_file.get(name, [])]
        written = [r["text"] for r in broken.broken[broken.out_dir / name]]
        assert read == written[: len(read)] and len(read) < len(written)  # a prefix, then one reject
        (tail,) = [k for k in rejects if k[0] == name]
        assert tail[1] == len(read) + 1 and tail[2] is None
    assert ("broken-schema.parquet", None, 6) in rejects and (
        "broken-unreadable.parquet",
        None,
        None,
    ) in rejects
    # every document is read or covered by a reject (the truncated tails: one reject of unknown size)
    known = sum(len(rows) for rows in broken.files.values()) + len(broken.broken[rows_file]) + 6
    truncated_read = sum(
        len(by_file.get(n, [])) for n in ("broken-truncated.jsonl.gz", "broken-truncated.jsonl.zst")
    )
    sized = sum(r.documents for r in stats.rejects if r.documents is not None)
    assert len(records) - truncated_read + sized == known
    assert stats.rejected == sized + sum(1 for r in stats.rejects if r.documents is None)
    assert [r.as_row()["source"] for r in stats.rejects] == [r.source for r in stats.rejects]


def test_strict_stops_at_the_first_bad_input(mix: Any, tmp_path: Path) -> None:
    _, broken = mix
    with pytest.raises(CorpusError, match=r"broken-rows\.jsonl: line 2: invalid JSON"):
        list(iter_records(broken.out_dir / "broken-rows.jsonl"))
    with pytest.raises(CorpusError, match=r"broken-truncated\.jsonl\.gz: line \d+: cannot read further"):
        list(iter_records(broken.out_dir / "broken-truncated.jsonl.gz"))
    with pytest.raises(
        CorpusError, match=r"broken-schema\.parquet: no 'text' column \(columns: \['body'\]\)"
    ):
        list(iter_records(broken.out_dir / "broken-schema.parquet", errors="replace"))
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"text": "ok"}\n{"text": "bad \xff byte"}\n')
    with pytest.raises(CorpusError, match=r"bad\.jsonl: line 2 \(byte offset 29\): invalid UTF-8"):
        list(iter_records(bad))
    assert [r.text for r in iter_records(bad, errors="replace")] == ["ok", "bad \ufffd byte"]
    corpus = load_corpus(broken.out_dir, errors="skip")
    assert corpus.stats.rejects and sorted(corpus.slices) == [
        "arb_Arab",
        "eng_Latn",
        "hin_Deva",
        "rus_Cyrl",
        "zho_Hans",
    ]


def test_tasks_read_in_order_give_the_records_of_whole_files(shared_dir: Path, tmp_path: Path) -> None:
    formats = [("jsonl", "none"), ("txt", "none"), ("parquet", "none"), ("jsonl", "gz"), ("csv", "none")]
    make_mix.write_mix(tmp_path, shared_dir, lines=60, formats=formats, row_group_rows=16)
    whole = list(iter_records(tmp_path))
    tasks = plan_tasks(tmp_path, chunk_bytes=2000)
    kinds = {t.kind for t in tasks}
    assert kinds == {"file", "bytes", "row_groups"} and len(tasks) > 20
    assert [t.id for t in plan_tasks(tmp_path, chunk_bytes=2000)] == [t.id for t in tasks]  # stable
    assert len({t.id for t in tasks}) == len(tasks)
    parts = [r for t in tasks for r in read_task(t)]
    assert parts == whole
    assert [text for t in tasks for b in read_task_batches(t) for text in b.texts] == [r.text for r in whole]


def test_training_reads_the_plan_of_whole_files_with_the_left_out_files_as_rejects(
    shared_dir: Path, tmp_path: Path
) -> None:
    formats = [("jsonl", "none"), ("txt", "none"), ("parquet", "none"), ("jsonl", "gz"), ("csv", "none")]
    make_mix.write_mix(tmp_path, shared_dir, lines=60, formats=formats, row_group_rows=16)
    (tmp_path / "notes.md").write_text("not a corpus file\n", encoding="utf-8")
    plan = plan_files(tmp_path, chunk_bytes=None)
    assert [t.kind for t in plan.tasks] == ["file"] * len(plan.files) and len(plan.files) == len(formats)
    assert [x.path.name for x in plan.left_out] == ["notes.md"]
    assert plan.files == tuple(dict.fromkeys(t.path for t in plan_tasks(tmp_path, chunk_bytes=2000)))
    stats = SourceStats()
    lines = [line for _, line in TrainingCorpus.of(tmp_path).lines("strict", stats)]
    assert lines == [line for r in iter_records(tmp_path) for line in r.text.split("\n")]
    assert stats.files == len(formats) and [r.source for r in stats.rejects] == [str(tmp_path / "notes.md")]


@pytest.mark.parametrize("consumer", ["load_corpus", "plan_corpus_tasks", "TrainingCorpus.of"])
def test_a_text_given_as_a_path_says_how_to_pass_texts_to_every_consumer(consumer: str) -> None:
    from tokenloom.corpus.columnar import read_corpus_task
    from tokenloom.corpus.plan import plan_corpus_tasks

    read = {
        "load_corpus": load_corpus,
        "plan_corpus_tasks": plan_corpus_tasks,
        "TrainingCorpus.of": TrainingCorpus.of,
    }
    with pytest.raises(
        CorpusError, match=r"'a sentence, not a path' does not exist.*pass an iterator, e\.g\. iter\(texts\)"
    ):
        read[consumer](["a sentence, not a path", "another one"])  # type: ignore[operator]
    given = read[consumer](iter(["a sentence, not a path"]))  # an iterator is texts: read in memory
    texts = {
        "load_corpus": lambda c: [t for part in c for t in part.load()[0]],
        "plan_corpus_tasks": lambda c: [
            t for task in c for piece in read_corpus_task(task) for t in piece.texts
        ],
        "TrainingCorpus.of": lambda c: [line for _, line in c.lines("strict", SourceStats())],
    }[consumer](given)
    assert texts == ["a sentence, not a path"]


def test_a_tokenizer_trained_on_jsonl_learns_no_json_syntax(mix: Any) -> None:
    from tokenloom.text.train import train_tokenizer

    good, _ = mix
    tok = train_tokenizer(
        good.out_dir / "mix.jsonl.zst", algorithm="bpe", engine="hf", vocab_size=1500, heldout=0.0, quiet=True
    )
    pieces = list(tok.hf_export().get_vocab())
    assert len(pieces) == 1500
    assert not [p for p in pieces if '"text"' in p or '{"' in p or '":' in p or "language" in p]
    import pandas as pd

    frame = pd.DataFrame(good.rows).rename(columns={"text": "body"})
    same = train_tokenizer(
        frame, text_column="body", algorithm="bpe", engine="hf", vocab_size=1500, heldout=0.0, quiet=True
    )
    assert same.hf_export().get_vocab() == tok.hf_export().get_vocab()  # the same lines, in the same order


# which texts each format keeps: .txt cannot hold a newline or a carriage return (a line is a text, CR LF
# reads as LF) and drops a byte-order mark opening the file; tables keep every string
_ANY = st.text(st.characters(exclude_categories=("Cs",)), max_size=30)
_LINE = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\n\r"), max_size=30)
FUZZ = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@FUZZ
@given(texts=st.lists(_ANY, min_size=1, max_size=8), fmt=st.sampled_from(["jsonl", "csv", "tsv", "parquet"]),
       codec=st.sampled_from(make_mix.CODECS))  # fmt: skip
def test_tables_round_trip_any_text(tmp_path: Path, texts: list[str], fmt: str, codec: str) -> None:
    path = tmp_path / make_mix.file_name("t", fmt, codec)
    make_mix.write_rows(path, fmt, codec, [{"text": t, "language": "und"} for t in texts])
    assert [r.text for r in iter_records(path)] == texts


@FUZZ
@given(texts=st.lists(_LINE, min_size=1, max_size=8), codec=st.sampled_from(make_mix.CODECS))
def test_text_files_round_trip_texts_without_line_breaks(
    tmp_path: Path, texts: list[str], codec: str
) -> None:
    # a first line that starts with a byte-order mark or is mostly NUL bytes is read as UTF-16/32 or binary
    texts[0] = texts[0].replace("\x00", "").lstrip("\ufeff")
    path = tmp_path / make_mix.file_name("t", "txt", codec)
    make_mix.write_rows(path, "txt", codec, [{"text": t} for t in texts])
    assert [r.text for r in iter_records(path)] == texts


@pytest.mark.slow
def test_cli_trains_and_reports_on_a_broken_mix(
    mix: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tokenloom import cli

    _, broken = mix
    assert (
        cli.main(["train", str(broken.out_dir), "--errors", "strict", "--out", str(tmp_path / "strict")]) != 0
    )
    assert "broken-rows.jsonl: line 2: invalid JSON" in capsys.readouterr().err  # strict: the first bad input
    args = ["--algorithm", "bpe", "--engine", "hf", "--vocab-size", "1500", "--heldout", "0", "--quiet"]
    assert (
        cli.main(["train", str(broken.out_dir), "--errors", "skip", "--out", str(tmp_path / "tok"), *args])
        == 0
    )
    record = json.loads((tmp_path / "tok" / "tokenloom.json").read_text(encoding="utf-8"))
    assert record["corpus"]["rejected"] >= 4 + 6 + 2 and record["config"]["text_column"] == "text"
    out = capsys.readouterr().out
    files = record["corpus"]["rejected_files"]
    counted = f"{record['corpus']['rejected']} documents and {files} file{'s' * (files != 1)} set aside"
    assert f"bad input      {counted} (--errors skip; --errors strict stops at the first)" in out
    body = tmp_path / "body.jsonl"
    body.write_text("".join(json.dumps({"body": r["text"]}) + "\n" for r in broken.rows), encoding="utf-8")
    assert (
        cli.main(["train", str(body), "--text-column", "body", "--out", str(tmp_path / "tok2"), *args]) == 0
    )
    report = [
        "fertility",
        "--tokenizer",
        str(tmp_path / "tok"),
        "--corpus",
        str(broken.out_dir),
        "--no-translit",
    ]
    assert (
        cli.main([*report, "--errors", "skip", "--segmenter", "whitespace", "--out", str(tmp_path / "r")])
        == 0
    )
    out = capsys.readouterr().out
    with (tmp_path / "r" / "rejects.csv").open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    want = load_corpus(broken.out_dir, errors="skip").stats.rejects
    documents = sum(1 if r.documents is None else r.documents for r in want)
    files, unknown = sum(r.unit == "file" for r in want), sum(r.documents is None for r in want)
    note = f" ({unknown} reject{'s' * (unknown != 1)} of an unknown number of documents, counted as one each)"
    assert (
        f"bad input: {documents} documents and {files} file{'s' * (files != 1)} set aside; rejects.csv"
        f"{note if unknown else ''}; first: {want[0].message}\n"
    ) in out
    assert [(r["source"], r["reason"]) for r in rows] == [(r.source, r.reason) for r in want] and rows
    body_report = ["--corpus", str(body), "--text-column", "body", "--out", str(tmp_path / "r2")]
    assert cli.main(["fertility", "--tokenizer", str(tmp_path / "tok"), *body_report]) == 0
    clean = (tmp_path / "r2" / "rejects.csv").read_text(encoding="utf-8")
    assert clean == "source,unit,number,row_group,documents,reason\n"  # nothing set aside: the header alone


@dataclass(frozen=True)
class _TaggedReader:
    """A format made for this test: ``LANG<TAB>TEXT`` per line (a table: its rows carry a language)."""

    name: str = "tagged"
    suffixes: tuple[str, ...] = (".tagged",)
    fold_case: bool = True
    kind: Literal["table"] = "table"
    split: Literal["bytes"] = "bytes"
    opens_itself: bool = False

    def read(self, request: ReadRequest, handle: BinaryIO | None, at: Any) -> Iterator[Record]:
        assert handle is not None
        for number, raw in enumerate(handle, start=request.first_line):
            lang, _, text = raw.decode("utf-8").rstrip("\n").partition("\t")
            request.stats.lines += 1
            yield Record(text, lang, None, str(request.path), number)


def test_a_new_format_is_one_reader_and_its_registration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Registered, a reader is found by suffix (compressed too), searched for in folders, read as a table
    by load_corpus and by the task plan; a suffix taken twice is an error."""
    from tokenloom.corpus import formats
    from tokenloom.corpus.columnar import read_corpus_task
    from tokenloom.corpus.formats import base
    from tokenloom.corpus.plan import plan_corpus_tasks

    monkeypatch.setattr(base, "_READERS", list(base.readers()))  # the registry as it was after the test
    (tmp_path / "a.tagged").write_text("deu\tHallo\nfra\tBonjour\n", encoding="utf-8")
    (tmp_path / "b.tagged.gz").write_bytes(gzip.compress(b"deu\tWelt\n"))
    assert formats.file_format(tmp_path / "a.tagged") == "text"  # not registered yet: a text file
    formats.register(_TaggedReader())
    assert formats.file_format(tmp_path / "b.tagged.gz") == "tagged"
    parts = {p.slice: p.load()[0] for p in load_corpus(tmp_path)}
    assert parts == {"deu_Latn": ["Hallo", "Welt"], "fra_Latn": ["Bonjour"]}
    tasks = plan_corpus_tasks(tmp_path)
    assert [t.piece.path.name for t in tasks if t.piece] == ["a.tagged", "b.tagged.gz"]
    texts = [text for t in tasks for piece in read_corpus_task(t) for text in piece.texts]
    assert sorted(texts) == ["Bonjour", "Hallo", "Welt"]
    training = TrainingCorpus.of(tmp_path).lines("strict", SourceStats())  # training reads the same plan
    assert [line for _, line in training] == ["Hallo", "Bonjour", "Welt"]
    with pytest.raises(ValueError, match="registered already"):
        formats.register(_TaggedReader(name="tagged-again", suffixes=(".TAGGED",)))


def test_jsonl_lines_read_by_orjson_give_what_json_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lines orjson reads give the records ``json`` gives (the oracle: the reader with orjson switched off),
    and lines it reads otherwise (an integer beyond 64 bits, NaN, a lone surrogate, a float cell) go to
    ``json``: the same labels, keys and rejects."""
    from tokenloom.corpus.formats import jsonl
    from tokenloom.corpus.records import Columns

    lines = [
        '{"text": "first", "lang": "eng_Latn", "k": 1}',
        '{"text": "Привет", "lang": "rus", "script": "Cyrl", "k": 123456789012345678901234567890}',
        '{"text": "नमस्ते", "lang": "hin_Deva", "k": 2, "n": NaN}',
        '{"text": "bad \\ud800 escape", "lang": "eng", "k": 3}',
        '{"text": "float", "lang": "fra_Latn", "k": 1.5, "text": "later key wins"}',
        '{"text": "मराठी", "language": "mar", "k": "x"}',
    ]
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    columns = Columns("text", None, None, "k")

    def read() -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        stats = SourceStats()
        records = list(iter_records(path, columns=columns, errors="skip", stats=stats))
        rows = [(r.text, r.lang, r.script, r.number, r.id) for r in records]
        return rows, [(j.number, j.reason) for j in stats.rejects]

    fast = read()
    monkeypatch.setattr(jsonl, "ORJSON_LOADS", None)
    assert fast == read()
    rows, rejects = fast
    assert [r[4] for r in rows] == [1, 123456789012345678901234567890, 2, 1.5, "x"]
    assert [(r[1], r[2]) for r in rows] == [
        ("eng_Latn", None), ("rus", "Cyrl"), ("hin_Deva", None), ("fra_Latn", None), ("mar", None),
    ]  # fmt: skip
    assert [line for line, _ in rejects] == [4] and "lone surrogate" in rejects[0][1]
    assert rows[3][0] == "later key wins"


@pytest.mark.parametrize("name", ["gone.txt", "gone.txt.gz", "gone.jsonl"])
def test_a_file_gone_before_it_is_read_is_a_reject(tmp_path: Path, name: str) -> None:
    """Every format's texts (the text fast path too) turn a file that cannot be opened into a reject."""
    path = tmp_path / name
    stats = SourceStats()
    assert list(iter_texts(path, errors="skip", stats=stats)) == []
    assert [(r.source, r.reason, r.unit) for r in stats.rejects] == [
        (str(path), "cannot open (No such file or directory)", "file")
    ]
    with pytest.raises(CorpusError, match="cannot open"):
        list(iter_texts(path))
