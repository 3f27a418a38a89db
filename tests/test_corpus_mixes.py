"""Pretraining mixes as users hold them: document ids that are not translation keys, Dolma's ``.json.gz``
shards, files compressed twice, broken links, macOS and hidden files, stray ``NOTICE.txt`` files.

Each test is built from a probe that once lost documents or gave a wrong premium; the last one reads one
mixed folder through every entry point and accounts for every document and file.
"""

from __future__ import annotations

import bz2
import gzip
import json
import math
import os
import zlib
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import zstandard

from tokenloom import cli, fertility_report, load_corpus, load_tokenizer, train_tokenizer
from tokenloom.corpus.compression import open_binary
from tokenloom.errors import CorpusError
from tokenloom.fertility.report import ReportConfig
from tokenloom.fertility.runner import RunConfig
from tokenloom.fertility.summary import format_summary


def _bytes_tok(text: str) -> list[int]:
    return list(text.encode("utf-8"))


def _jsonl(path: Path, rows: list[dict[str, Any]], *, opener: Any = None) -> Path:
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(opener(data) if opener else data)
    return path


def _report(corpus: Any, **kw: Any) -> pd.DataFrame:
    kw.setdefault("errors", "skip")
    config = ReportConfig(n_boot=20, metrics=kw.pop("metrics", "full"))
    return fertility_report({"bytes": _bytes_tok}, corpus, config=config, translit=False, numbers=False, **kw)


def _row(df: pd.DataFrame, kind: str, label: str) -> pd.Series:
    return df[(df.slice_kind == kind) & (df.slice == label)].iloc[0]


def _texts(corpus: Any) -> int:
    return sum(len(part.load()[0]) for part in corpus)


# --- alignment is declared, never inferred from a column named "id" ---------------------------------


@pytest.mark.parametrize("names", [("a", "b"), ("z", "b")])
def test_document_ids_do_not_align_or_reject(tmp_path: Path, names: tuple[str, str]) -> None:
    """Shards with and without a document ``id``: every row counts, whatever the file names and the entry."""
    with_id, without = names
    _jsonl(tmp_path / "m" / f"{with_id}.jsonl", [{"id": "doc-1", "text": "Hello there", "lang": "eng"}])
    _jsonl(tmp_path / "m" / f"{without}.jsonl", [{"text": "Good night", "lang": "eng"}, {"text": "Bye"}])
    corpus = load_corpus(tmp_path / "m", errors="skip")
    assert _texts(corpus) == 3 and corpus.stats.rejects == []
    assert all(part.align is None for part in corpus)
    df = _report(str(tmp_path / "m"))
    assert _row(df, "all", "all").texts == 3 and df.attrs["rejects"] == []


def test_a_declared_key_aligns_rows_and_repeated_keys_are_rejected(tmp_path: Path) -> None:
    rows = [
        {"id": "1", "lang": "eng_Latn", "text": "One two three"},
        {"id": "1", "lang": "eng_Latn", "text": "Something else entirely"},
        {"id": "1", "lang": "fra_Latn", "text": "Un deux trois"},
        {"lang": "fra_Latn", "text": "sans clé"},
    ]
    path = _jsonl(tmp_path / "t" / "table.jsonl", rows)
    with pytest.raises(
        CorpusError, match=r"table\.jsonl: line 2: key '1' repeats in eng_Latn \(first at .*line 1\)"
    ):
        load_corpus(path, align_column="id")
    corpus = load_corpus(path, align_column="id", errors="skip")
    reasons = [(Path(r.source).name, r.number, r.reason.split(";")[0]) for r in corpus.stats.rejects]
    assert reasons == [
        ("table.jsonl", 2, f"key '1' repeats in eng_Latn (first at {path}: line 1)"),
        ("table.jsonl", 4, "no key in the align column 'id'"),
    ]
    df = _report(path, align_column="id")
    assert _row(df, "language", "eng_Latn").premium_mean == 1.0  # the pivot against itself
    fra = _row(df, "language", "fra_Latn")
    assert fra.premium_pairs == 1 and fra.premium_mean == pytest.approx(len(b"Un deux trois") / 13)


def test_keys_repeated_across_tasks_are_rejected_as_in_one_read(tmp_path: Path) -> None:
    """The duplicate sits in another shard, read by another task: the same rows are rejected either way."""
    first = [
        {"id": str(i), "lang": lang, "text": f"{lang} sentence {i} " * 3}
        for i in range(40)
        for lang in ("eng", "deu")
    ]
    _jsonl(tmp_path / "p" / "a.jsonl", first)
    _jsonl(tmp_path / "p" / "b.jsonl", [{"id": "7", "lang": "eng", "text": "a different text"}])
    whole = _report(load_corpus(tmp_path / "p", align_column="id", errors="skip"))
    tasks = _report(str(tmp_path / "p"), align_column="id", run=RunConfig(task_bytes=600))
    assert tasks.attrs["tasks"]["tasks"] > 4
    pd.testing.assert_frame_equal(whole, tasks, check_exact=True)
    assert [(Path(r["source"]).name, r["number"]) for r in tasks.attrs["rejects"]] == [("b.jsonl", 1)]
    assert _row(tasks, "language", "eng_Latn").premium_mean == 1.0


def test_unrelated_sources_with_the_same_ids_are_not_aligned(tmp_path: Path) -> None:
    _jsonl(
        tmp_path / "d" / "en.jsonl",
        [{"id": str(i), "lang": "eng", "text": f"English line {i}"} for i in range(20)],
    )
    _jsonl(
        tmp_path / "d" / "de.jsonl",
        [{"id": str(i), "lang": "deu", "text": f"Zeile {500 + i} auf Deutsch"} for i in range(20)],
    )
    df = _report(str(tmp_path / "d"))
    assert math.isnan(_row(df, "language", "deu_Latn").premium_mean)
    assert math.isnan(_row(df, "all", "all").premium_mean)


# --- what a folder search reads, lists and rejects ----------------------------------------------------


def test_dolma_json_shards_are_read_and_other_files_listed(tmp_path: Path) -> None:
    rows = [{"id": str(i), "text": f"document {i}", "source": "c4"} for i in range(5)]
    _jsonl(tmp_path / "dolma" / "c4-0000.json.gz", rows, opener=gzip.compress)
    _jsonl(tmp_path / "dolma" / "c4-0001.json", rows[:2])
    _jsonl(tmp_path / "dolma" / "c4-0002.ndjson.zst", rows[:1], opener=zstandard.compress)
    (tmp_path / "dolma" / "README.md").write_text("about this mix\n")
    (tmp_path / "dolma" / "tokenizer.json").write_text(json.dumps({"model": {"vocab": {}}}, indent=2))
    corpus = load_corpus(tmp_path / "dolma")
    assert _texts(corpus) == 8
    assert [(Path(r.source).name, r.documents, r.reason.split(" (")[0]) for r in corpus.stats.rejects] == [
        ("README.md", 0, "not a corpus file"),
        ("tokenizer.json", 0, "not a corpus file: one JSON document"),
    ]
    assert corpus.stats.left_out == 2 and corpus.stats.rejected == 0
    (tmp_path / "dolma" / "array.json").write_text(json.dumps([{"text": "a"}, {"text": "b"}], indent=1))
    with pytest.raises(CorpusError, match=r"array\.json: a JSON array, not JSON Lines"):
        load_corpus(tmp_path / "dolma")


def test_hidden_files_and_folders_are_listed_not_read(tmp_path: Path) -> None:
    _jsonl(tmp_path / "h" / "real.jsonl", [{"text": "kept"}])
    (tmp_path / "h" / "._real.jsonl").write_bytes(b"\x00\x05\x16\x07binary resource fork")
    _jsonl(tmp_path / "h" / ".hidden.jsonl.zst", [{"text": "hidden"}], opener=zstandard.compress)
    _jsonl(tmp_path / "h" / ".cache" / "x.jsonl.xz", [{"text": "cached"}])
    _jsonl(tmp_path / "h" / "__MACOSX" / "real.jsonl", [{"text": "junk"}])
    corpus = load_corpus(tmp_path / "h")  # strict: listing is not an error
    assert _texts(corpus) == 1
    listed = sorted(str(Path(r.source).relative_to(tmp_path / "h")) for r in corpus.stats.rejects)
    assert listed == ["._real.jsonl", ".cache/x.jsonl.xz", ".hidden.jsonl.zst", "__MACOSX/real.jsonl"]
    assert all(r.documents == 0 and r.reason.startswith("hidden") for r in corpus.stats.rejects)


def test_a_link_to_a_missing_target_is_bad_input(tmp_path: Path) -> None:
    _jsonl(tmp_path / "s" / "real.jsonl", [{"text": "kept"}])
    os.symlink("/nonexistent/lost.jsonl", tmp_path / "s" / "lost.jsonl")
    with pytest.raises(CorpusError, match=r"lost\.jsonl: symbolic link to a missing target"):
        load_corpus(tmp_path / "s")
    corpus = load_corpus(tmp_path / "s", errors="skip")
    assert _texts(corpus) == 1
    [bad] = corpus.stats.rejects
    assert Path(bad.source).name == "lost.jsonl" and bad.documents is None and corpus.stats.rejected == 1
    df = _report(str(tmp_path / "s"), run=RunConfig(task_bytes=1 << 20))
    assert [Path(r["source"]).name for r in df.attrs["rejects"]] == ["lost.jsonl"]
    (tmp_path / "s" / "NOTES.md").write_text("not a corpus file\n")
    summary = format_summary(_report(str(tmp_path / "s")))
    assert "files not read: 1" in summary and "NOTES.md" in summary


def test_a_stray_text_file_is_unlabelled_not_a_language(tmp_path: Path) -> None:
    (tmp_path / "u").mkdir()
    (tmp_path / "u" / "eng_Latn.txt").write_text("All human beings are born free.\n")
    (tmp_path / "u" / "NOTICE.txt").write_text("Copyright notice.\nSecond line.\n")
    (tmp_path / "u" / "LICENSE.txt").write_text("Licence text.\n")
    corpus = load_corpus(tmp_path / "u")
    labels = {(p.slice, p.lang) for p in corpus}
    assert labels == {("eng_Latn", "eng"), ("und", "und")}
    df = _report(str(tmp_path / "u"))
    assert "NOTICE" not in set(df.slice) and _row(df, "language", "und").texts == 3
    assert sorted(Path(p).name for p in df.attrs["unlabelled"]) == ["LICENSE.txt", "NOTICE.txt"]
    assert "unlabelled: 2 text files read as language und" in format_summary(df)


# --- files compressed twice ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "layers"),
    [
        ("x.txt.gz", (gzip.compress, gzip.compress)),
        ("x.jsonl.gz", (gzip.compress, gzip.compress)),
        ("x.jsonl.gz", (zstandard.compress, gzip.compress)),
        ("x.jsonl.zst", (bz2.compress, zstandard.compress)),
    ],
)
def test_a_file_compressed_twice_is_read_whole(tmp_path: Path, name: str, layers: tuple[Any, ...]) -> None:
    texts = [f"line {i} of a shard" for i in range(28)]
    data = (
        "".join(t + "\n" for t in texts)
        if name.startswith("x.txt")
        else "".join(json.dumps({"text": t, "lang": "eng"}) + "\n" for t in texts)
    ).encode()
    for layer in layers:
        data = layer(data)
    path = tmp_path / "c" / name
    path.parent.mkdir()
    path.write_bytes(data)
    corpus = load_corpus(path, errors="skip")
    assert corpus.stats.rejects == [] and sorted(t for p in corpus for t in p.load()[0]) == sorted(texts)
    assert _row(_report(path), "all", "all").texts == 28


def test_a_corrupt_deflate_block_is_a_reject_after_the_rows_before_it(tmp_path: Path) -> None:
    """gzip raises zlib.error (not an OSError) for a bad deflate block: still one reject, the job goes on."""
    rows = [json.dumps({"text": f"row {i} " * 20, "lang": "eng"}) + "\n" for i in range(2000)]
    second = gzip.compress("".join(rows[1000:]).encode())
    for at in range(20, len(second)):  # the first flipped byte that breaks the deflate stream itself
        broken = second[:at] + bytes([second[at] ^ 0xFF]) + second[at + 1 :]
        try:
            gzip.decompress(broken)
        except zlib.error:
            break
        except OSError:  # a CRC or length mismatch: not the case here
            pass
    else:
        pytest.fail("no flipped byte gave a zlib.error")
    path = tmp_path / "c" / "x.jsonl.gz"
    path.parent.mkdir()
    path.write_bytes(gzip.compress("".join(rows[:1000]).encode()) + broken)
    corpus = load_corpus(path, errors="skip")
    assert sum(len(p.load()[0]) for p in corpus) == 1000
    (only,) = corpus.stats.rejects
    assert only.unit == "line" and only.number == 1001 and "cannot read further" in only.reason


def test_plain_text_that_looks_like_a_magic_number_is_text(tmp_path: Path) -> None:
    (tmp_path / "bzh.txt").write_text("BZh is how this line starts\n")
    with open_binary(tmp_path / "bzh.txt") as f:
        assert f.read() == b"BZh is how this line starts\n"


# --- one mixed folder through every entry point -----------------------------------------------------------


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    """FineWeb-2 Parquet (document ids) + Dolma .json.gz + plain JSONL + a shard gzipped twice + a broken
    link + a macOS resource fork + NOTICE.txt + a README: 14 documents, 1 bad file, 2 listed files."""
    mix = tmp_path / "mix"
    mix.mkdir()
    pd.DataFrame(
        {
            "text": ["Привет мир", "Как дела?", "Всё хорошо"],
            "id": ["<urn:uuid:1>", "<urn:uuid:2>", "<urn:uuid:3>"],
            "language": ["rus"] * 3,
            "language_script": ["Cyrl"] * 3,
        }
    ).to_parquet(mix / "fineweb2-rus.parquet")
    _jsonl(
        mix / "dolma" / "c4-0000.json.gz",
        [{"id": str(i), "text": f"c4 document {i}"} for i in range(4)],
        opener=gzip.compress,
    )
    _jsonl(
        mix / "plain.jsonl",
        [{"text": "plain one", "lang": "eng"}, {"text": "plain two"}, {"text": "plain three"}],
    )
    _jsonl(
        mix / "twice.jsonl.gz",
        [{"text": "twice a"}, {"text": "twice b"}],
        opener=lambda d: gzip.compress(gzip.compress(d)),
    )
    os.symlink("/nonexistent/lost.jsonl", mix / "lost.jsonl")
    (mix / "._plain.jsonl").write_bytes(b"\x00\x05\x16\x07resource fork")
    (mix / "NOTICE.txt").write_text("Notice line one.\nNotice line two.\n")
    (mix / "README.md").write_text("what this mix is\n")
    return mix


def _accounted(rejects: list[Any], documents: int) -> tuple[int, int, int]:
    bad = sum(1 if r["documents"] is None else r["documents"] for r in rejects)
    listed = sum(r["documents"] == 0 for r in rejects)
    return documents, bad, listed


@pytest.mark.slow
def test_a_mixed_folder_gives_the_same_totals_everywhere(mixed: Path, tmp_path: Path) -> None:
    expected = (14, 1, 2)  # documents counted, rejected (the broken link), files listed
    corpus = load_corpus(mixed, errors="skip")
    assert _accounted([r.as_row() for r in corpus.stats.rejects], _texts(corpus)) == expected
    for run in (RunConfig(), RunConfig(workers=2, task_bytes=200)):
        df = _report(str(mixed), run=run)
        assert _accounted(df.attrs["rejects"], int(_row(df, "all", "all").texts)) == expected
    result = train_tokenizer(str(mixed), vocab_size=400, errors="skip")
    read = result.record["corpus"]
    assert (read["lines"], read["rejected"], read["left_out"]) == expected
    result.save(tmp_path / "tok")
    for workers in ("1", "2"):  # the CLI, its default (skip) and both ways of running
        out = tmp_path / f"rep-{workers}"
        args = ["fertility", "--tokenizer", str(tmp_path / "tok"), "--corpus", str(mixed), "--out", str(out)]
        assert cli.main([*args, "--quiet", "--workers", workers]) == 0
        report = pd.read_csv(out / "report.csv")
        rejects = pd.read_csv(out / "rejects.csv").replace({float("nan"): None}).to_dict("records")
        assert _accounted(rejects, int(_row(report, "all", "all").texts)) == expected
    assert load_tokenizer(tmp_path / "tok").vocab_size <= 400
