"""tokenloom.fertility.report: known answers, oracles against the raw engines, slices, writers, CLI.

Tokenizers are built or trained with the raw ``tokenizers`` / ``sentencepiece`` engines, saved as files,
and always loaded through ``tokenloom.text.tokenizer.load_tokenizer`` (the real ``Tokenizer``).
"""

from __future__ import annotations

import io
import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from tokenloom import cli
from tokenloom.corpus.load import load_corpus
from tokenloom.errors import ConfigError, CorpusError, TokenizerError
from tokenloom.fertility import metrics, reference
from tokenloom.fertility.report import (
    REPORT_COLUMNS,
    ReportConfig,
    fertility_by_source,
    fertility_report,
    write_report,
)
from tokenloom.fertility.summary import format_summary
from tokenloom.text.tokenizer import load_tokenizer
from tokenloom.unicode import count_words, word_spans

HELLO, THAI, ZHO = "Hello, world!", "ฉันรักภาษาไทยมาก", "我爱北京天安门。"
BYTES = [f"<0x{i:02X}>" for i in range(256)]


def _hf_file(path: Path, vocab: dict[str, int], merges: list[tuple[str, str]]) -> Path:
    from tokenizers import Tokenizer, decoders, models

    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, byte_fallback=True))
    tok.decoder = decoders.Sequence([decoders.ByteFallback(), decoders.Fuse()])
    tok.save(str(path))
    return path


@pytest.fixture(scope="module")
def tiny_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tiny")
    (folder / "eng_Latn.txt").write_text(HELLO + "\n", encoding="utf-8")
    (folder / "tha_Thai.txt").write_text(THAI + "\n", encoding="utf-8")
    (folder / "zho_Hans.txt").write_text(ZHO + "\n", encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def handmade(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``char``: one token per character (identity on characters); ``hello``: plus merges H+e+l+l+o."""
    folder = tmp_path_factory.mktemp("handmade")
    chars = sorted(set(HELLO + THAI + ZHO))
    vocab = {p: i for i, p in enumerate(BYTES + chars)}
    merges = [("H", "e"), ("He", "l"), ("Hel", "l"), ("Hell", "o")]
    merged = dict(vocab)
    for a, b in merges:
        merged[a + b] = len(merged)
    return {
        "char": _hf_file(folder / "char.json", vocab, []),
        "hello": _hf_file(folder / "hello.json", merged, merges),
    }


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory, default_corpus: Path) -> dict[str, Path]:
    """A BPE tokenizer.json (raw ``tokenizers``) and a unigram .model (raw ``sentencepiece``)."""
    import sentencepiece as spm
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    folder = tmp_path_factory.mktemp("trained")
    lines = [line for f in sorted(default_corpus.glob("*.txt")) for line in f.read_text("utf-8").splitlines()]
    hf = Tokenizer(models.BPE(byte_fallback=True))
    hf.pre_tokenizer = pre_tokenizers.Metaspace()
    hf.decoder = decoders.Sequence([decoders.Metaspace(), decoders.ByteFallback(), decoders.Fuse()])
    hf.train_from_iterator(lines, trainers.BpeTrainer(vocab_size=700, special_tokens=BYTES, min_frequency=2))
    hf.save(str(folder / "bpe.json"))
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=model, vocab_size=900, model_type="unigram",
        byte_fallback=True, character_coverage=0.98, hard_vocab_limit=False, minloglevel=2,
    )  # fmt: skip
    (folder / "uni.model").write_bytes(model.getvalue())
    return {"bpe": folder / "bpe.json", "uni": folder / "uni.model"}


def row(df: pd.DataFrame, tokenizer: str, kind: str, label: str) -> pd.Series:
    sel = df[(df.tokenizer == tokenizer) & (df.slice_kind == kind) & (df.slice == label)]
    assert len(sel) == 1, (tokenizer, kind, label, sel)
    return sel.iloc[0]


def test_known_answers_identity_on_characters(tiny_corpus: Path, handmade: dict[str, Path]) -> None:
    tok = load_tokenizer(handmade["char"])
    df = fertility_report({"char": tok}, tiny_corpus)
    # hand counts: tokens = characters; ICU words: Hello | world; ฉัน | รัก | ภาษา | ไทย | มาก; 我 | 爱 | 北京 | 天安门
    expected = {
        "eng_Latn": dict(tokens=13, words=2, chars=13, bytes=13, continued=2, premium=1.0),
        "tha_Thai": dict(tokens=16, words=5, chars=16, bytes=48, continued=5, premium=16 / 13),
        "zho_Hans": dict(tokens=8, words=4, chars=8, bytes=24, continued=2, premium=8 / 13),
    }
    for label, e in expected.items():
        r = row(df, "char", "language", label)
        assert (r.texts, r.tokens, r.words, r.chars, r.bytes) == (
            1,
            e["tokens"],
            e["words"],
            e["chars"],
            e["bytes"],
        )
        assert r.chars_per_token == 1.0  # exactly: the tokenizer is the identity on characters
        assert r.fertility == e["tokens"] / e["words"]
        assert r.fertility_lo == r.fertility_hi == r.fertility  # one sentence: no spread
        assert r.continued_words == e["continued"] / e["words"]
        assert r.bytes_per_token == e["bytes"] / e["tokens"]
        assert r.premium_mean == r.premium_median == e["premium"]
        assert r.rel_kv_bytes == e["premium"] and r.rel_attention_work == pytest.approx(e["premium"] ** 2)
        assert r.byte_fallback_rate == 0.0 and r.unk_rate == 0.0
        assert r.roundtrip_exact_rate == 1.0 and r.normalization_changed_rate == 0.0
    everything = row(df, "char", "all", "all")
    assert (everything.texts, everything.tokens, everything.words, everything.chars) == (3, 37, 11, 37)
    assert everything.premium_mean == pytest.approx((1 + 16 / 13 + 8 / 13) / 3)
    assert (everything.lang, everything.script) == ("mul", "mul")
    assert row(df, "char", "script", "Thai").tokens == 16
    # Rényi efficiency of "Hello, world!": l×3, o×2 and 8 characters once, over a vocabulary of 256 + 20
    counts = np.array(list(Counter(HELLO).values()))
    assert row(df, "char", "language", "eng_Latn").renyi_efficiency == pytest.approx(
        math.log(((counts / 13) ** 2.5).sum()) / (1 - 2.5) / math.log(tok.vocab_size)
    )
    translit = row(df, "char", "transliterated", "tha_Thai_Latn-translit")
    assert translit.generated and translit.script == "Latn" and translit.byte_fallback_rate > 0
    assert set(df.segmenter) == {"icu-" + __import__("icu").ICU_VERSION}


def test_known_answer_merged_word_is_not_continued(tiny_corpus: Path, handmade: dict[str, Path]) -> None:
    df = fertility_report({"hello": handmade["hello"]}, tiny_corpus, translit=False)
    r = row(df, "hello", "language", "eng_Latn")
    # Hello | , | ▁ | w | o | r | l | d | ! -> 9 tokens; "Hello" is one token, "world" five
    assert (r.tokens, r.words, r.fertility, r.continued_words) == (9, 2, 4.5, 0.5)
    assert not (df.slice_kind == "transliterated").any()


def test_single_digit_rate_counts_only_numbers_of_two_or_more_digits(tmp_path: Path) -> None:
    """A tokenizer that splits every digit: each multi-digit number is split into single digits (rate 1,
    not the 3 of 6 numbers a denominator of every number gives); one-digit numbers count neither way."""
    text = "Room 7 costs 12 dollars and 345 cents / Call 5 or 6 or 2024"
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "eng_Latn.txt").write_text(text + "\n", encoding="utf-8")
    vocab = {p: i for i, p in enumerate(BYTES + sorted(set(text)))}
    char = _hf_file(tmp_path / "char.json", vocab, [])
    df = fertility_report({"char": char}, corpus, translit=False, config=ReportConfig(n_boot=0))
    r = row(df, "char", "language", "eng_Latn")
    assert r.numbers == 6  # 7, 12, 345, 5, 6, 2024
    assert r.number_single_digit_rate == 1.0
    assert r.number_place_value_rate == 3 / 6  # 7, 5 and 6 are on their (empty) groups
    assert r.number_boundary_f1 == 2 * 1 / (6 + 1)  # 2|024 is the one place-value boundary placed


def test_no_premiums_anywhere_when_nothing_is_aligned_with_the_pivot(
    tmp_path: Path, handmade: dict[str, Path]
) -> None:
    """The pivot's texts paired with themselves are no premiums: with no other language aligned, every
    row's premium is empty (the all and script rows too, not 1.0), as the summary says."""
    (tmp_path / "eng_Latn.txt").write_text(HELLO + "\n" + HELLO + "!\n", encoding="utf-8")
    (tmp_path / "m.jsonl").write_text(json.dumps({"text": THAI, "lang": "tha_Thai"}) + "\n", encoding="utf-8")
    df = fertility_report({"char": handmade["char"]}, tmp_path, config=ReportConfig(n_boot=0))
    assert set(df.slice_kind) >= {"all", "language", "script", "transliterated"}
    assert (df.premium_pairs == 0).all()
    for column in ("premium_mean", "premium_median", "premium_lo", "premium_hi", "rel_kv_bytes"):
        assert df[column].isna().all(), column
    assert "no premiums" in format_summary(df)
    # one aligned language is enough: the pivot's own premium and the all row are back
    (tmp_path / "fra_Latn.txt").write_text("Hello, monde!\nHello, monde!!\n", encoding="utf-8")
    df = fertility_report({"char": handmade["char"]}, tmp_path, config=ReportConfig(n_boot=0))
    assert row(df, "char", "language", "eng_Latn").premium_mean == 1.0
    assert row(df, "char", "all", "all").premium_pairs == 4
    assert "no premiums" not in format_summary(df)


def test_oracle_token_counts_equal_raw_engine(default_corpus: Path, trained: dict[str, Path]) -> None:
    import sentencepiece as spm
    from tokenizers import Tokenizer

    raw_hf = Tokenizer.from_file(str(trained["bpe"]))
    raw_sp = spm.SentencePieceProcessor(model_file=str(trained["uni"]))
    df = fertility_report(
        {"bpe": trained["bpe"], "uni": trained["uni"]}, default_corpus, config=ReportConfig(n_boot=200)
    )
    total = {"bpe": 0, "uni": 0}
    for path in sorted(default_corpus.glob("*.txt")):
        texts = path.read_text("utf-8").splitlines()
        hf_ids = [e.ids for e in raw_hf.encode_batch(texts, add_special_tokens=False)]
        sp_ids = raw_sp.encode(texts)
        for name, ids, is_byte in (
            ("bpe", hf_ids, lambda i: raw_hf.id_to_token(i).startswith("<0x")),
            ("uni", sp_ids, raw_sp.is_byte),
        ):
            r = row(df, name, "language", path.stem)
            assert r.tokens == sum(map(len, ids)), (name, path.stem)
            assert r.byte_fallback_rate * r.tokens == pytest.approx(sum(is_byte(i) for x in ids for i in x))
            assert r.words == sum(count_words(t, lang=path.stem[:3]) for t in texts)
            assert r.chars == sum(map(len, texts)) and r.texts == len(texts)
            total[name] += r.tokens
    for name in total:
        assert row(df, name, "all", "all").tokens == total[name]


def test_report_equals_per_text_reference(default_corpus: Path, trained: dict[str, Path]) -> None:
    tok = load_tokenizer(trained["uni"])
    df = fertility_report({"uni": tok}, default_corpus, translit=False, config=ReportConfig(n_boot=0))
    for label in ("eng_Latn", "tha_Thai", "jpn_Jpan", "kor_Hang"):
        texts = (default_corpus / f"{label}.txt").read_text("utf-8").splitlines()
        ref = []
        for t in texts:
            ids, offsets = tok.encode_with_offsets(t)
            ref.append(
                reference.count_text(
                    t, ids, offsets, word_spans(t, lang=label[:3]), byte_fallback_ids=tok.byte_fallback_ids,
                    unk_id=tok.unk_id, decoded=tok.decode(ids), normalized=tok.normalize(t),
                )
            )  # fmt: skip
        r = row(df, "uni", "language", label)
        assert r.tokens == sum(c.tokens for c in ref)
        assert r.continued_words == sum(c.continued for c in ref) / sum(c.words for c in ref)
        assert r.byte_fallback_rate == sum(c.byte_fallback for c in ref) / r.tokens
        assert r.roundtrip_exact_rate == sum(c.roundtrip_exact for c in ref) / len(ref)
        assert r.normalization_changed_rate == sum(c.normalization_changed for c in ref) / len(ref)
        assert math.isnan(r.fertility_lo)  # n_boot=0: no intervals


def test_pivot_premium_is_exactly_one_and_table_is_tidy(
    default_corpus: Path, trained: dict[str, Path]
) -> None:
    df = fertility_report([trained["bpe"], trained["uni"]], default_corpus, pivot="eng_Latn")
    assert list(df.columns[: len(REPORT_COLUMNS)]) == list(REPORT_COLUMNS)
    assert not df.duplicated(["tokenizer", "slice_kind", "slice"]).any()
    assert set(df.tokenizer) == {"bpe", "uni"}  # named after the files
    assert set(df.slice_kind) <= {
        "all",
        "language",
        "script",
        "code_mixed",
        "transliterated",
        "code",
        "numbers",
    }
    for name in ("bpe", "uni"):
        r = row(df, name, "language", "eng_Latn")
        assert (r.premium_mean, r.premium_median, r.premium_lo, r.premium_hi) == (1.0, 1.0, 1.0, 1.0)
        assert r.rel_kv_bytes == 1.0 and r.rel_attention_work == 1.0 and r.premium_pairs == 12
        hin = row(df, name, "language", "hin_Deva")
        assert hin.premium_lo <= hin.premium_mean <= hin.premium_hi
        assert hin.fertility_lo <= hin.fertility <= hin.fertility_hi
        assert 0 < hin.renyi_efficiency < 1
    again = fertility_report([trained["bpe"], trained["uni"]], default_corpus, pivot="eng_Latn")
    pd.testing.assert_frame_equal(df, again)  # seeded bootstrap: deterministic
    other = fertility_report([trained["bpe"]], default_corpus, pivot="deu_Latn", translit=False)
    assert row(other, "bpe", "language", "deu_Latn").premium_mean == 1.0


class _Spy:
    """A Tokenizer proxy that records which texts each batch call received."""

    def __init__(self, tok: Any) -> None:
        self._tok = tok
        self.calls: list[list[str]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tok, name)

    def encode_batch_with_offsets(self, texts: list[str]) -> Any:
        self.calls.append(list(texts))
        return self._tok.encode_batch_with_offsets(texts)


def test_streams_one_part_at_a_time(default_corpus: Path, trained: dict[str, Path]) -> None:
    spy = _Spy(load_tokenizer(trained["bpe"]))
    fertility_report(
        {"spy": spy},
        default_corpus,
        translit=False,
        numbers=False,
        config=ReportConfig(n_boot=10, batch_size=5),  # an object keeping the contract: its own offsets
    )
    owner = {}
    for path in sorted(default_corpus.glob("*.txt")):
        for t in path.read_text("utf-8").splitlines():
            owner.setdefault(t, set()).add(path.stem)
    assert spy.calls and all(len(c) <= 5 for c in spy.calls)
    for call in spy.calls:  # every batch holds texts of a single language file
        assert len(set.intersection(*(owner[t] for t in call))) >= 1
    assert (
        spy.calls[0][0] == (default_corpus / "eng_Latn.txt").read_text("utf-8").splitlines()[0]
    )  # pivot first


def test_code_mixed_code_and_labelled_slices(
    tmp_path: Path, default_corpus: Path, trained: dict[str, Path]
) -> None:
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "a.py").write_text("def add(a, b):\n    return a + b\n", encoding="utf-8")
    rows = [
        {"text": "Kal meeting है, please जल्दी आना", "lang": "hif"},
        {"text": "यह पूरा वाक्य हिंदी में है", "lang": "hif"},
        {"text": "aap kaise ho", "lang": "hin", "slice": "hin_Latn-translit"},
    ]
    (tmp_path / "mixed.jsonl").write_text(
        "\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8"
    )
    corpus = load_corpus([default_corpus, tmp_path / "code", tmp_path / "mixed.jsonl"])
    df = fertility_report({"bpe": trained["bpe"]}, corpus)
    code = row(df, "bpe", "code", "python")
    assert (code.lang, code.texts) == ("python", 1)
    mixed = row(df, "bpe", "code_mixed", "hif_Deva+Latn")  # detected: Latin and Devanagari letters
    assert mixed.texts == 1 and mixed.script == "Deva+Latn"
    assert row(df, "bpe", "transliterated", "hin_Latn-translit").texts == 1  # labelled input
    assert row(df, "bpe", "transliterated", "hin_Deva_Latn-translit").generated  # generated from hin_Deva.txt
    assert math.isnan(code.premium_mean)  # code is not aligned with the pivot
    everything = row(df, "bpe", "all", "all")
    assert everything.texts == 144 + 1 + 3  # generated transliterations are not in "all"


def test_bad_inputs(tiny_corpus: Path, handmade: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"pivot 'fra_Latn' is not in the parallel part.*eng_Latn"):
        fertility_report([handmade["char"]], tiny_corpus, pivot="fra_Latn")
    with pytest.raises(TokenizerError, match="does not exist"):
        fertility_report([tmp_path / "missing.json"], tiny_corpus)
    with pytest.raises(ConfigError, match="is not a tokenizer"):
        fertility_report({"x": 42}, tiny_corpus)
    with pytest.raises(ConfigError, match="no tokenizers given"):
        fertility_report({}, tiny_corpus)
    with pytest.raises(CorpusError, match="does not exist"):
        fertility_report([handmade["char"]], tmp_path / "nowhere")
    with pytest.raises(ConfigError, match="level"):
        ReportConfig(level=95)
    with pytest.raises(ConfigError, match="chunk_size must be a positive int, got 0"):
        ReportConfig(chunk_size=0)
    # pivot=None: no premiums at all
    df = fertility_report([handmade["char"]], tiny_corpus, pivot=None, translit=False)
    assert df.premium_mean.isna().all()


def test_replace_mode_counts_bad_bytes(tmp_path: Path, handmade: dict[str, Path]) -> None:
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "eng_Latn.txt").write_bytes(b"Hello\xff, world!\n")
    with pytest.raises(CorpusError, match=r"line 1 \(byte offset 5\)"):
        fertility_report([handmade["char"]], tmp_path / "c", errors="strict")
    df = fertility_report([handmade["char"]], tmp_path / "c", errors="replace")
    assert df.attrs["replaced"] == 1
    # U+FFFD is not in the vocabulary: 13 character tokens + 3 byte pieces
    assert row(df, "char", "language", "eng_Latn").byte_fallback_rate == 3 / 16


def test_a_batch_job_sets_bad_input_aside_by_default(tmp_path: Path, handmade: dict[str, Path]) -> None:
    """One bad line never stops a report: by default it is set aside and counted on the summary line;
    ``errors="strict"`` stops at it."""
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "eng_Latn.txt").write_bytes(b"Hello, world!\nHello\xff, world!\nHello!\n")
    df = fertility_report([handmade["char"]], tmp_path / "c")
    assert row(df, "char", "language", "eng_Latn").texts == 2
    assert [(r["unit"], r["number"], r["documents"]) for r in df.attrs["rejects"]] == [("line", 2, 1)]
    summary = format_summary(df).splitlines()[-1]
    assert summary.startswith("bad input: 1 document and 0 files set aside; rejects.csv; first: ")
    assert "eng_Latn.txt: line 2: " in summary
    # the reject says what became of the line, not the advice that only fits a run it stopped
    reason = df.attrs["rejects"][0]["reason"]
    assert reason == (
        "byte offset 19: invalid UTF-8 (bytes ff: invalid start byte); set aside; errors='replace' "
        "(--errors replace) would keep it with U+FFFD, counted"
    )
    with pytest.raises(
        CorpusError, match=r"eng_Latn.txt: line 2 \(byte offset 19\).*; pass errors='replace'"
    ):
        fertility_report([handmade["char"]], tmp_path / "c", errors="strict")


def test_fertility_by_source_for_trainers(default_corpus: Path, trained: dict[str, Path]) -> None:
    tok = load_tokenizer(trained["bpe"])
    records = [
        (p.name, t) for p in sorted(default_corpus.glob("*.txt")) for t in p.read_text("utf-8").splitlines()
    ]
    records.append(("notes.txt", "unlabelled Latin text"))
    df = fertility_by_source(tok, records)
    assert set(df.slice_kind) == {"all", "language", "script"}
    assert "notes" not in set(df.slice)  # no <lang>_<Script> name: only in its script and "all" rows
    assert row(df, "bpe", "script", "Latn").texts == 4 * 12 + 1
    assert row(df, "bpe", "all", "all").tokens == sum(len(tok.encode(t)) for _, t in records)
    assert row(df, "bpe", "language", "tha_Thai").fertility > 0


@pytest.mark.slow
def test_writers_and_cli(
    default_corpus: Path, trained: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report"
    argv = ["fertility", "--quiet", "--tokenizer", str(trained["bpe"]), "--tokenizer", str(trained["uni"])]
    argv += ["--corpus", str(default_corpus), "--out", str(out)]
    assert cli.main(argv) == 0
    printed = capsys.readouterr().out
    assert "hin_Deva_Latn-translit" not in printed  # the summary, not every row
    assert printed.count("most expensive languages") == 2 and "report.html" in printed
    assert "premium vs eng_Latn over 11 languages" in printed
    assert cli.main([*argv[:-1], str(tmp_path / "report-table"), "--table"]) == 0
    printed = capsys.readouterr().out
    assert "eng_Latn" in printed and "hin_Deva_Latn-translit" in printed and "Gini" in printed
    names = {p.name for p in out.iterdir()}
    assert {
        "report.csv",
        "report.md",
        "report.html",
        "fertility.png",
        "premium.png",
        "byte_fallback.png",
        "comparison.png",
        "lengths.png",
        "lengths.csv",
        "rejects.csv",
        "strr.png",
        "vocabulary.png",
        "vocab_overlap.csv",
    } <= names
    csv = pd.read_csv(out / "report.csv")
    assert list(csv.columns[: len(REPORT_COLUMNS)]) == list(REPORT_COLUMNS)
    assert set(csv.tokenizer) == {"bpe", "uni"}
    page = (out / "report.html").read_text("utf-8")
    assert page.count("data:image/png;base64,") == 7 and "<table id='rows'>" in page
    assert "<table id='perturbations'>" not in page  # no perturbed slices unless asked
    assert (out / "premium.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| language | eng_Latn |" in (out / "report.md").read_text("utf-8")
    overlap = pd.read_csv(out / "vocab_overlap.csv")
    assert len(overlap) == 2 * 12 * 11 // 2 and set(overlap.columns) >= {"shared_ids", "jaccard"}
    more = [
        *argv[:-1],
        str(tmp_path / "report-more"),
        "--reference",
        str(trained["bpe"]),
        "--perturb",
        "case,ocr",
    ]
    assert cli.main(more) == 0
    assert "STRR (words kept as one token) median" in capsys.readouterr().out
    df = pd.read_csv(tmp_path / "report-more" / "report.csv")
    assert set(df[df.slice_kind == "perturbed"].slice.str.rsplit("_", n=1).str[-1]) == {
        "case-perturbed", "ocr-perturbed",
    }  # fmt: skip
    assert (df[df.tokenizer == "bpe"].nsl == 1.0).all()
    page = (tmp_path / "report-more" / "report.html").read_text("utf-8")
    assert "<table id='perturbations'>" in page and "<th>case</th><th>ocr</th>" in page
    assert cli.main([*argv[:-1], str(tmp_path / "bad"), "--perturb", "noise"]) != 0
    assert "error: unknown perturbation 'noise'; choose from diacritics" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()  # refused before any work
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temp files left behind
    # --no-translit and the whitespace segmenter
    argv = ["fertility", "--quiet", "--tokenizer", str(trained["bpe"]), "--corpus", str(default_corpus)]
    assert cli.main([*argv, "--no-translit", "--segmenter", "whitespace", "--out", str(tmp_path / "r2")]) == 0
    csv2 = pd.read_csv(tmp_path / "r2" / "report.csv")
    assert "transliterated" not in set(csv2.slice_kind) and set(csv2.segmenter) == {"whitespace"}
    assert cli.main([*argv, "--pivot", "xxx_Latn", "--out", str(tmp_path / "r3")]) == 2
    assert "pivot 'xxx_Latn'" in capsys.readouterr().err
    # an existing --out folder is refused before any work, and replaced with --overwrite
    before = (tmp_path / "r2" / "report.csv").read_bytes()
    assert cli.main([*argv, "--out", str(tmp_path / "r2")]) == 2
    assert (
        f"output folder {str(tmp_path / 'r2')!r} already exists; pass --overwrite" in capsys.readouterr().err
    )
    assert (tmp_path / "r2" / "report.csv").read_bytes() == before
    assert cli.main([*argv, "--no-translit", "--out", str(tmp_path / "r2"), "--overwrite"]) == 0
    csv3 = pd.read_csv(tmp_path / "r2" / "report.csv")
    assert set(csv3.segmenter) != {"whitespace"} and "transliterated" not in set(csv3.slice_kind)
    (tmp_path / "afile").write_text("x", encoding="utf-8")
    assert cli.main([*argv, "--out", str(tmp_path / "afile"), "--overwrite"]) == 2
    assert "is a file" in capsys.readouterr().err


def test_write_report_direct(tiny_corpus: Path, handmade: dict[str, Path], tmp_path: Path) -> None:
    df = fertility_report({"char": handmade["char"]}, tiny_corpus, translit=False)
    written = write_report(df, tmp_path / "w")
    assert set(written) == {
        "csv",
        "md",
        "html",
        "fertility",
        "premium",
        "byte_fallback",
        "strr",
        "vocabulary",
        "lengths",
        "lengths_csv",
        "rejects_csv",
        "vocab_overlap_csv",
    }
    assert pd.read_csv(written["csv"]).shape[0] == len(df)
    assert written["rejects_csv"].read_text("utf-8") == "source,unit,number,row_group,documents,reason\n"


def test_real_flores_languages(shared_dir: Path, trained: dict[str, Path], tmp_path: Path) -> None:
    src = shared_dir / "corpora" / "flores200" / "devtest"
    for code in ("eng_Latn", "hin_Deva", "zho_Hans"):
        (tmp_path / f"{code}.txt").write_bytes((src / f"{code}.txt").read_bytes())
    raw = load_tokenizer(trained["bpe"])
    df = fertility_report({"bpe": raw}, tmp_path, config=ReportConfig(n_boot=200))
    for code in ("eng_Latn", "hin_Deva", "zho_Hans"):
        texts = (src / f"{code}.txt").read_text("utf-8").splitlines()
        r = row(df, "bpe", "language", code)
        assert r.texts == 1012 and r.tokens == sum(map(len, raw.encode_batch(texts)))
        assert r.premium_pairs == 1012
    assert row(df, "bpe", "language", "hin_Deva").premium_mean > 1.0


def test_chunk_size_and_workers_do_not_change_the_report(
    default_corpus: Path, trained: dict[str, Path]
) -> None:
    """Parts counted in chunks of 5 texts (12 per language here), on the executor or in place, give exactly
    the report counted one part at a time."""
    toks = {"bpe": trained["bpe"], "uni": trained["uni"]}
    whole = fertility_report(toks, default_corpus, config=ReportConfig(n_boot=100, chunk_size=10**6))
    for config in (
        ReportConfig(n_boot=100, chunk_size=5),
        ReportConfig(n_boot=100, chunk_size=5, prefetch=False),
    ):
        chunked = fertility_report(toks, default_corpus, config=config)
        pd.testing.assert_frame_equal(chunked, whole, check_exact=True)


def test_intervals_equal_the_metrics_functions_on_real_flores(
    shared_dir: Path, trained: dict[str, Path], tmp_path: Path
) -> None:
    """A one-part slice's intervals are metrics.bootstrap_ratio (fertility) and metrics.premium_stats
    (premium) of its per-text counts: the report's stratified bootstrap reduces to them on one stratum."""
    src = shared_dir / "corpora" / "flores200" / "devtest"
    texts = {}
    for code in ("eng_Latn", "hin_Deva"):
        (tmp_path / f"{code}.txt").write_bytes((src / f"{code}.txt").read_bytes())
        texts[code] = (src / f"{code}.txt").read_text("utf-8").splitlines()
    tok = load_tokenizer(trained["uni"])
    cfg = ReportConfig(n_boot=300, seed=7, level=0.9, chunk_size=100)
    df = fertility_report({"uni": tok}, tmp_path, translit=False, config=cfg)
    tokens = {code: np.array([len(ids) for ids in tok.encode_batch(ts)]) for code, ts in texts.items()}
    words = np.array([count_words(t, lang="hin") for t in texts["hin_Deva"]])
    r = row(df, "uni", "language", "hin_Deva")
    fert = metrics.bootstrap_ratio(tokens["hin_Deva"], words, n_boot=300, seed=7, level=0.9)
    assert (r.fertility, r.fertility_lo, r.fertility_hi) == fert  # integer sums: exactly
    mean, median, lo, hi, pairs = metrics.premium_stats(
        tokens["hin_Deva"], tokens["eng_Latn"], n_boot=300, seed=7, level=0.9
    )
    assert (
        (r.premium_mean, r.premium_median, r.premium_pairs) == (mean, median, pairs) == (mean, median, 1012)
    )
    assert (r.premium_lo, r.premium_hi) == pytest.approx((lo, hi), rel=1e-12)  # float sums, other BLAS order
    assert lo < mean < hi
