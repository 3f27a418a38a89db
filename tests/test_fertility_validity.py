"""Validity (pairs with > 10% unknown characters flagged and left out of the summary), the normalized
sequence length against a reference tokenizer, and the numbers slices, on FLORES-200 text."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from tokenloom.fertility import metrics
from tokenloom.fertility.report import ReportConfig, fertility_report
from tokenloom.fertility.slices import number_texts
from tokenloom.fertility.summary import format_summary, gini, summarize
from tokenloom.text.tokenizer import load_tokenizer

LANGS = ("eng_Latn", "fra_Latn", "deu_Latn", "hin_Deva", "tha_Thai")
LINES = 60


@pytest.fixture(scope="module")
def corpus(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    src = shared_dir / "corpora" / "flores200" / "devtest"
    folder = tmp_path_factory.mktemp("valid")
    texts = {}
    for code in LANGS:
        texts[code] = (src / f"{code}.txt").read_text("utf-8").splitlines()[:LINES]
        (folder / f"{code}.txt").write_text("\n".join(texts[code]) + "\n", encoding="utf-8")
    return {"folder": folder, "texts": texts}


@pytest.fixture(scope="module")
def tiny(corpus: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A character-level BPE over the ASCII letters and digits only, no byte fallback: every other
    character is its unknown token."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    chars = [chr(c) for c in range(33, 127)]
    vocab = {"[UNK]": 0, **{c: i + 1 for i, c in enumerate(chars)}}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    path = tmp_path_factory.mktemp("tiny") / "tiny.json"
    tok.save(str(path))
    return path


@pytest.fixture(scope="module")
def uni(corpus: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Path:
    import sentencepiece as spm

    lines = [t for ts in corpus["texts"].values() for t in ts]
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=model, vocab_size=800, model_type="unigram",
        byte_fallback=True, character_coverage=0.99, hard_vocab_limit=False, minloglevel=2,
    )  # fmt: skip
    path = tmp_path_factory.mktemp("uni") / "uni.model"
    path.write_bytes(model.getvalue())
    return path


def _row(df: pd.DataFrame, name: str, kind: str, label: str) -> pd.Series:
    sel = df[(df.tokenizer == name) & (df.slice_kind == kind) & (df.slice == label)]
    assert len(sel) == 1, (name, kind, label)
    return sel.iloc[0]


def test_pairs_with_unknown_characters_are_flagged_and_left_out(
    corpus: dict[str, Any], tiny: Path, uni: Path
) -> None:
    from tokenizers import Tokenizer

    df = fertility_report({"tiny": tiny, "uni": uni}, corpus["folder"], config=ReportConfig(n_boot=0))
    raw = Tokenizer.from_file(str(tiny))
    for code in LANGS:  # unknown characters: those an [UNK] token's offsets cover, from the raw engine
        texts = corpus["texts"][code]
        unknown = sum(
            len({p for (s, e), i in zip(enc.offsets, enc.ids, strict=True) if i == 0 for p in range(s, e)})
            for enc in raw.encode_batch(texts)
        )
        r = _row(df, "tiny", "language", code)
        assert r.unk_char_rate == unknown / sum(map(len, texts))
        assert bool(r.valid) == (unknown / sum(map(len, texts)) <= 0.1)
    assert [bool(_row(df, "tiny", "language", c).valid) for c in LANGS] == [True, True, True, False, False]
    assert all(bool(_row(df, "uni", "language", c).valid) for c in LANGS)  # byte fallback: nothing unknown
    summary = {s.tokenizer: s for s in summarize(df)}
    kept = {s.tokenizer: s for s in summarize(df, include_invalid=True)}
    assert summary["tiny"].left_out == ("hin_Deva", "tha_Thai") and summary["uni"].left_out == ()
    assert (summary["tiny"].languages, kept["tiny"].languages) == (2, 4)
    valid = [float(_row(df, "tiny", "language", c).premium_mean) for c in ("fra_Latn", "deu_Latn")]
    assert summary["tiny"].gini == gini(valid) and summary["tiny"].worst_premium == max(valid)
    text = format_summary(df)
    assert (
        "invalid pairs left out of the premium statistics: 2 (> 10% unknown characters: hin_Deva, tha_Thai)"
        in text
    )
    assert "invalid pairs" not in format_summary(df, include_invalid=True)
    strict = fertility_report(
        {"tiny": tiny}, corpus["folder"], translit=False, config=ReportConfig(n_boot=0, max_unk_chars=0.0)
    )
    assert not strict[strict.slice_kind == "language"].valid.any()  # every language has some unknown char


def test_reference_against_itself_is_exactly_one(corpus: dict[str, Any], uni: Path, tiny: Path) -> None:
    tok = load_tokenizer(uni)
    cfg = ReportConfig(n_boot=200, seed=3)
    df = fertility_report({"uni": tok, "tiny": tiny}, corpus["folder"], reference=tok, config=cfg)
    mine = df[df.tokenizer == "uni"]
    assert (mine.nsl == 1.0).all() and (mine.nsl_lo == 1.0).all() and (mine.nsl_hi == 1.0).all()
    assert (df.reference == "uni").all()
    # against another tokenizer: Σ tokens / Σ reference tokens, and on one part the interval is
    # metrics.bootstrap_ratio of the per-text counts (the report's stratified bootstrap on one stratum)
    texts = corpus["texts"]["hin_Deva"]
    ours = np.array([len(ids) for ids in load_tokenizer(tiny).encode_batch(texts)])
    ref = np.array([len(ids) for ids in tok.encode_batch(texts)])
    r = _row(df, "tiny", "language", "hin_Deva")
    assert (r.nsl, r.nsl_lo, r.nsl_hi) == metrics.bootstrap_ratio(ours, ref, n_boot=200, seed=3)
    plain = fertility_report({"uni": tok}, corpus["folder"], config=ReportConfig(n_boot=0))
    assert plain.nsl.isna().all() and (plain.reference == "").all()


def test_numbers_slices(corpus: dict[str, Any], uni: Path) -> None:
    df = fertility_report({"uni": uni}, corpus["folder"], translit=False, config=ReportConfig(n_boot=0))
    tok = load_tokenizer(uni)
    for code in ("eng_Latn", "hin_Deva"):
        made = number_texts(corpus["texts"][code])
        assert all(t == "" or t.replace(" ", "").isdigit() for t in made)
        r = _row(df, "uni", "numbers", f"{code}_numbers")
        assert r.texts == LINES and r.tokens == sum(map(len, tok.encode_batch(made)))
        assert r.numbers == sum(len(t.split()) for t in made) == _row(df, "uni", "language", code).numbers
        assert 0.0 <= r.number_place_value_rate <= 1.0 and 0.0 <= r.number_boundary_f1 <= 1.0
        assert np.isnan(r.premium_mean)  # not aligned with the pivot
    assert number_texts(["in 2019 and 1,500", "none"]) == ["2019 1 500", ""]
    off = fertility_report({"uni": uni}, corpus["folder"], numbers=False, config=ReportConfig(n_boot=0))
    assert "numbers" not in set(off.slice_kind)
