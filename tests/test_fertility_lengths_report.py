"""Tokens per document in the fertility report: columns, histogram, ``metrics="lengths"``, CLI.

Oracles: every text encoded on its own with the tokenizer's ``encode_batch`` (exact lengths), numpy
percentiles (``method="inverted_cdf"``, within the 1 % bound of :mod:`tokenloom.fertility.lengths`), shares
computed from those lengths; the full report's rows for the columns both modes count.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import tokenloom
from tokenloom import cli
from tokenloom.corpus.load import CorpusPart, load_corpus
from tokenloom.errors import ConfigError
from tokenloom.fertility.counting import ChunkCounter, CountOptions, lengths_only_counts
from tokenloom.fertility.counts import SliceCounts
from tokenloom.fertility.length_tables import HISTOGRAM_COLUMNS
from tokenloom.fertility.lengths import ALPHA, DEFAULT_CONTEXTS, distribution_columns
from tokenloom.fertility.report import (
    EXTRA_COLUMNS,
    METRIC_COLUMNS,
    REPORT_COLUMNS,
    ReportConfig,
    fertility_report,
)
from tokenloom.fertility.slices import SliceConfig
from tokenloom.fertility.summary import format_summary
from tokenloom.fertility.writers import report_table, to_markdown, write_report
from tokenloom.text.tokenizer import Tokenizer
from tokenloom.unicode import get_segmenter

LANGS = ("eng_Latn", "hin_Deva", "zho_Hans", "rus_Cyrl")
CONTEXTS = (16, 32, 64, 128)
KEYS = ["tokenizer", "slice_kind", "slice"]
SHARED = [
    "lang", "script", "texts", "tokens", "chars", "bytes", "engine", "algorithm", "vocab_size", "generated",
    "byte_fallback_def", "unk_def", *distribution_columns(CONTEXTS),
]  # fmt: skip


@pytest.fixture(scope="module")
def flores(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first 150 documents of four FLORES-200 devtest languages."""
    folder = tmp_path_factory.mktemp("flores-subset")
    for lang in LANGS:
        lines = (
            (shared_dir / "corpora" / "flores200" / "devtest" / f"{lang}.txt").read_text("utf-8").splitlines()
        )
        (folder / f"{lang}.txt").write_text("\n".join(lines[:150]) + "\n", encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def toks(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Tokenizer]:
    """A BPE tokenizer on the HF engine and a unigram one on sentencepiece, trained on FLORES dev (Chinese
    left to byte fallback)."""
    dev = shared_dir / "corpora" / "flores200" / "dev"
    train = [dev / f"{lang}.txt" for lang in LANGS if lang != "zho_Hans"]
    out = {}
    for algorithm, engine in (("bpe", "hf"), ("unigram", "sentencepiece")):
        out[algorithm] = tokenloom.train_tokenizer(
            train, algorithm=algorithm, engine=engine, vocab_size=2000, heldout=0.0, quiet=True
        )
    return out


def _texts(folder: Path, lang: str) -> list[str]:
    return (folder / f"{lang}.txt").read_text("utf-8").splitlines()


@pytest.fixture(scope="module")
def reports(flores: Path, toks: dict[str, Tokenizer]) -> dict[str, pd.DataFrame]:
    def run(**kw: Any) -> pd.DataFrame:
        return fertility_report(toks, flores, config=ReportConfig(n_boot=20, contexts=CONTEXTS, **kw))

    return {"full": run(), "chunked": run(chunk_size=7), "lengths": run(metrics="lengths")}


def test_length_columns_against_exact_lengths(
    flores: Path, toks: dict[str, Tokenizer], reports: dict[str, pd.DataFrame]
) -> None:
    df = reports["full"]
    assert list(df.columns) == [
        *REPORT_COLUMNS,
        *EXTRA_COLUMNS,
        *METRIC_COLUMNS,
        *distribution_columns(CONTEXTS),
    ]
    for name, tok in toks.items():
        per_lang = {
            lang: np.array([len(ids) for ids in tok.encode_batch(_texts(flores, lang))]) for lang in LANGS
        }
        slices = {
            **{("language", lang): n for lang, n in per_lang.items()},
            ("all", "all"): np.concatenate(list(per_lang.values())),
        }
        for (kind, label), n in slices.items():
            row = df[(df.tokenizer == name) & (df.slice_kind == kind) & (df.slice == label)].iloc[0]
            assert row["texts"] == n.size and row["tokens"] == n.sum()
            assert row["tokens_per_doc_mean"] == n.sum() / n.size and row["tokens_per_doc_max"] == n.max()
            for q in (50, 90, 99):
                exact = float(np.percentile(n, q, method="inverted_cdf"))
                assert abs(row[f"tokens_per_doc_p{q}"] - exact) <= ALPHA * exact, (name, label, q)
            for c in CONTEXTS:
                assert row[f"share_docs_over_{c}"] == (n > c).sum() / n.size
                assert row[f"share_tokens_over_{c}"] == np.maximum(n - c, 0).sum() / n.sum()
    texts = df[df.slice_kind != "numbers"]  # numbers slices: a few digits per document
    assert (
        texts["share_docs_over_32"].max() > 0
        and texts["share_docs_over_16"].min() > texts["share_docs_over_128"].min()
    )


def test_chunks_merge_exactly(reports: dict[str, pd.DataFrame]) -> None:
    """Counted 7 texts at a time or 1024 at a time: the same length columns and histogram, exactly."""
    one, chunked = reports["full"], reports["chunked"]
    columns = [*KEYS, "texts", "tokens", "chars", "bytes", *distribution_columns(CONTEXTS)]
    pd.testing.assert_frame_equal(chunked[columns], one[columns], check_exact=True)
    pd.testing.assert_frame_equal(chunked.attrs["lengths"], one.attrs["lengths"], check_exact=True)


def test_lengths_mode_counts_what_the_engine_counts(
    flores: Path, toks: dict[str, Tokenizer], reports: dict[str, pd.DataFrame]
) -> None:
    fast, full = reports["lengths"], reports["full"]
    assert list(fast.columns) == list(full.columns) and fast.attrs["metrics"] == "lengths"
    assert (
        "transliterated" not in set(fast.slice_kind)
        and set(fast.segmenter) == {""}
        and set(fast["pivot"]) == {""}
    )
    for name, tok in toks.items():  # token totals: a plain count with the engine
        for lang in LANGS:
            got = fast[(fast.tokenizer == name) & (fast.slice == lang)]["tokens"].item()
            assert got == sum(len(ids) for ids in tok.encode_batch(_texts(flores, lang))), (name, lang)
    same = full.merge(fast[KEYS], on=KEYS)  # the full report's rows of the slices both have
    assert len(same) == len(fast)
    pd.testing.assert_frame_equal(fast[KEYS + SHARED], same[KEYS + SHARED], check_exact=True)
    uncounted = [c for c in REPORT_COLUMNS if c not in (*KEYS, *SHARED, "segmenter")] + ["premium_pairs"]
    assert fast[uncounted].isna().all().all()
    pd.testing.assert_frame_equal(fast.attrs["lengths"], full.attrs["lengths"].merge(fast[KEYS], on=KEYS))


def test_lengths_csv_chart_and_tables(tmp_path: Path, reports: dict[str, pd.DataFrame]) -> None:
    df = reports["full"]
    written = write_report(df, tmp_path / "r")
    hist = pd.read_csv(written["lengths_csv"])
    assert tuple(hist.columns) == HISTOGRAM_COLUMNS and (hist.bin_lo < hist.bin_hi).all()
    sums = hist.groupby(KEYS, sort=False)["documents"].sum().rename("texts").reset_index()
    pd.testing.assert_frame_equal(sums, df[[*KEYS, "texts"]], check_dtype=False)
    assert (tmp_path / "r" / "lengths.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "alt='lengths'" in (tmp_path / "r" / "report.html").read_text("utf-8")
    md = to_markdown(df)
    assert md.count("Tokens per document:") == 2 and "docs > 128" in md and "| fertility |" in md
    fast_md = to_markdown(reports["lengths"])
    assert "Tokens per document:" in fast_md and "| fertility |" not in fast_md
    text = format_summary(reports["lengths"])
    assert len(text.splitlines()) == 2 and "tokens/doc p99" in text and "over 128" in text
    assert "tokens/doc p99" in format_summary(df) and "premium vs eng_Latn" in format_summary(df)


def test_lengths_mode_keeps_no_token_id_histogram(flores: Path, toks: dict[str, Tokenizer]) -> None:
    """Lengths mode counts no token ids: no slice holds a histogram of vocabulary size, merged or not; the
    full mode keeps one of at least the vocabulary size."""
    part = CorpusPart("hin_Deva", "language", "hin_Deva", "hin", "Deva", align="flores")
    texts = _texts(flores, "hin_Deva")[:20]
    got = {}
    for mode in ("full", "lengths"):
        counter = ChunkCounter(
            toks, pivot=None, segmenter=get_segmenter("icu"), options=CountOptions(metrics=mode),
            slice_config=SliceConfig(translit=False),
        )  # fmt: skip
        got[mode] = counter.count(part, texts, list(range(len(texts))))
    assert got["lengths"] and len(got["lengths"]) == len(got["full"])
    for (name, _, full), (_, _, fast) in zip(got["full"], got["lengths"], strict=True):
        assert full.id_counts is not None and len(full.id_counts) >= toks[name].vocab_size
        assert fast.id_counts is None and fast.tokens == full.tokens
        assert fast.merge(fast).id_counts is None
    chunk = lengths_only_counts(0, np.array([3, 5, 7]), np.array([9, 9, 9]), np.array([9, 9, 9]))
    one = SliceCounts.of(chunk, [0, 2], part="p", vocab_size=10**6, langs={"x": 2}, scripts={"Latn": 2})
    assert one.id_counts is None and one.tokens == 10
    row = one.close("p", 3, n_boot=0, seed=0).finish(
        vocab_size=10**6, level=0.95, renyi_alpha=2.5, roundtrip=False
    )
    assert math.isnan(row["renyi_efficiency"]) and row["tokens"] == 10


def test_lengths_mode_table(reports: dict[str, pd.DataFrame]) -> None:
    """``report_table`` of a lengths report: tokens and tokens per document per tokenizer, no fertility."""
    df = reports["lengths"]
    lines = report_table(df).splitlines()
    assert "fertility" not in lines[0] and "premium" not in lines[0]
    for header in ("bpe tokens", "unigram tokens", "tok/doc", "p99", "docs > 128", "tok > 16"):
        assert header in lines[0], header
    for name in ("bpe", "unigram"):
        assert lines[0].count("tok/doc") == 2 and name in lines[0]
    for lang in LANGS:
        line = next(row for row in lines if f" {lang} " in row)
        rows = df[df.slice == lang]
        assert line.split()[2] == str(rows.texts.iloc[0])
        for r in rows.itertuples():
            assert f" {r.tokens} " in f"{line} " and f"{r.tokens_per_doc_mean:.1f}" in line
    assert "–" not in "\n".join(lines[2:]) and "premium" in report_table(reports["full"])


def test_config_checks() -> None:
    with pytest.raises(ConfigError, match="'full' or 'lengths'"):
        ReportConfig(metrics="fast")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="sorted"):
        ReportConfig(contexts=(128, 64))
    assert ReportConfig().contexts == DEFAULT_CONTEXTS and ReportConfig(contexts=[8, 9]).contexts == (8, 9)  # type: ignore[arg-type]


def test_cli_lengths_mode(
    tmp_path: Path, flores: Path, toks: dict[str, Tokenizer], capsys: pytest.CaptureFixture[str]
) -> None:
    path = toks["bpe"].save(tmp_path / "bpe")
    argv = ["fertility", "--quiet", "--tokenizer", str(path), "--corpus", str(flores), "--metrics", "lengths"]
    assert cli.main([*argv, "--context", "64", "--context", "128", "--out", str(tmp_path / "a")]) == 0
    assert "tokens/doc p99" in capsys.readouterr().out
    csv = pd.read_csv(tmp_path / "a" / "report.csv")
    assert {"share_docs_over_64", "share_tokens_over_128", "tokens_per_doc_p99"} <= set(csv.columns)
    assert not any(c.endswith("_2048") for c in csv.columns) and csv["fertility"].isna().all()
    assert (tmp_path / "a" / "lengths.csv").is_file()
    assert cli.main([*argv, "--context", "64,128", "--table", "--out", str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    assert "tok/doc" in out and "docs > 128" in out and "fertility" not in out
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "b" / "report.csv"), csv)
    with pytest.raises(SystemExit):
        cli.main([*argv, "--context", "lots", "--out", str(tmp_path / "c")])
    assert "--context" in capsys.readouterr().err


def test_a_pivot_absent_from_a_parallel_corpus_is_an_error_in_every_mode(
    tmp_path: Path, flores: Path, toks: dict[str, Tokenizer], capsys: pytest.CaptureFixture[str]
) -> None:
    """One rule, whatever the metrics: ``--pivot xyz_Latn`` on a parallel folder without it is the same
    one-line error with ``--metrics lengths`` as in full mode, never a silent exit 0."""
    path = toks["bpe"].save(tmp_path / "bpe")
    argv = ["fertility", "--quiet", "--tokenizer", str(path), "--corpus", str(flores), "--pivot", "xyz_Latn"]
    errors = []
    for mode in ("lengths", "full"):
        assert cli.main([*argv, "--metrics", mode, "--out", str(tmp_path / mode)]) == 2
        errors.append(capsys.readouterr().err)
        assert not (tmp_path / mode).exists()
    assert errors[0] == errors[1]
    assert errors[0] == (
        "tokenloom: error: pivot 'xyz_Latn' is not in the parallel part of the corpus; choose one of "
        "eng_Latn, hin_Deva, rus_Cyrl, zho_Hans (--pivot)\n"
    )
    corpus = load_corpus(flores)  # counted in this process: the same rule
    for mode in ("lengths", "full"):
        with pytest.raises(ConfigError, match="pivot 'xyz_Latn' is not in the parallel part"):
            fertility_report(toks, corpus, pivot="xyz_Latn", config=ReportConfig(metrics=mode))  # type: ignore[arg-type]
    lengths = fertility_report(toks, flores, pivot="hin_Deva", config=ReportConfig(metrics="lengths"))
    assert lengths.attrs["pivot"] == "" and (lengths["pivot"] == "").all()  # checked, but no premiums


def test_a_table_of_mixed_languages_is_encoded_in_joint_calls_that_start_small(
    flores: Path, toks: dict[str, Tokenizer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A JSON Lines table whose languages interleave row by row: with the engine on a thread, the chunks of
    all its parts go to the engine together, a task's first call an eighth of ``LENGTHS_BATCH`` texts and
    each next one twice the last; the report is the one of a chunk-by-chunk count without a thread."""
    import json

    rows = [(lang, text) for lang in LANGS for text in _texts(flores, lang)] * 3  # 1,800 rows
    rows = [rows[i] for i in np.random.default_rng(0).permutation(len(rows))]
    (tmp_path / "mix.jsonl").write_text(
        "".join(json.dumps({"text": t, "lang": lang}) + "\n" for lang, t in rows), encoding="utf-8"
    )
    calls: list[int] = []
    count_tokens = Tokenizer.count_tokens

    def counted(self: Tokenizer, texts: Any, *args: Any, **kw: Any) -> Any:
        calls.append(len(texts))
        return count_tokens(self, texts, *args, **kw)

    monkeypatch.setattr(Tokenizer, "count_tokens", counted)
    bpe = {"bpe": toks["bpe"]}

    def report(prefetch: bool) -> pd.DataFrame:
        return fertility_report(bpe, tmp_path, config=ReportConfig(metrics="lengths", prefetch=prefetch))

    joint = report(True)
    joint_calls, calls[:] = list(calls), []
    alone = report(False)
    assert joint_calls == [1024, 776]  # 4 languages in each call; 1,024 = LENGTHS_BATCH >> 3
    assert len(calls) > len(joint_calls) and sum(calls) == len(rows)  # a call per part's chunk
    pd.testing.assert_frame_equal(joint, alone, check_exact=True)
    pd.testing.assert_frame_equal(joint.attrs["lengths"], alone.attrs["lengths"], check_exact=True)
    assert joint[joint.slice_kind == "language"]["texts"].tolist() == [450] * 4
