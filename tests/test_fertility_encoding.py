"""``Tokenizer.encode_flat`` (the flat batch reports count from) equals its definition, text by text.

The definition is ``tokenloom.fertility.reference.encode_flat``: the engine's own offsets with byte runs split
text by text, and ``decode`` per text; it never takes the piece-width route (nothing is patched)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tokenloom
from tokenloom.errors import ConfigError
from tokenloom.fertility import reference
from tokenloom.fertility.report import ReportConfig, fertility_report
from tokenloom.text.adapt import as_tokenizer
from tokenloom.text.offsets import FlatBatch
from tokenloom.text.tokenizer import Tokenizer, load_tokenizer


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory, default_corpus: Path) -> dict[str, Path]:
    """Tokenizers trained and saved by tokenloom: BPE on the HF engine, unigram on sentencepiece; without
    normalization (offsets from piece widths) and with NFKC (``<algorithm>-nfkc``: the engine's offsets)."""
    out = tmp_path_factory.mktemp("saved")
    paths = {}
    for algorithm, engine in (("bpe", "hf"), ("unigram", "sentencepiece")):
        for normalization, suffix in (("none", ""), ("nfkc", "-nfkc")):
            tok = tokenloom.train_tokenizer(
                default_corpus, algorithm=algorithm, engine=engine, vocab_size=1200, heldout=0.0,
                normalization=normalization,  # type: ignore[arg-type]
            )  # fmt: skip
            paths[algorithm + suffix] = tok.save(out / (algorithm + suffix))
    return paths


def _texts(default_corpus: Path) -> list[str]:
    texts = [t for p in sorted(default_corpus.glob("*.txt")) for t in p.read_text("utf-8").splitlines()]
    # rare characters the small vocabularies lack: byte-fallback runs of 2-, 3- and 4-byte characters
    return [*texts, "Ꭰ Ᏹ ꔀ 𞤀 — ǅ ẞ ŉ", "👨‍👩‍👧 x😀y", "", " ", "e\u0301\u0301 ▁tab\there"]


def _same(fast: FlatBatch, ref: FlatBatch) -> None:
    assert np.array_equal(fast.lengths, ref.lengths)
    assert np.array_equal(fast.ids, ref.ids)
    assert np.array_equal(fast.offsets, ref.offsets)
    assert np.array_equal(fast.bases, ref.bases)
    assert fast.roundtrip is not None and ref.roundtrip is not None
    assert np.array_equal(fast.roundtrip, ref.roundtrip)  # decoded, or by the rule of the piece widths


@pytest.mark.parametrize("widths", [True, False], ids=["piece-widths", "engine-offsets"])
@pytest.mark.parametrize("algorithm", ["bpe", "unigram"])
def test_flat_batch_equals_reference(
    saved: dict[str, Path], default_corpus: Path, algorithm: str, widths: bool
) -> None:
    """Both routes: offsets as running sums of piece widths (ids-only engine calls), and the engine's own
    offsets (tokenizers whose normalization rules the widths out)."""
    tok = load_tokenizer(saved[algorithm if widths else f"{algorithm}-nfkc"])
    assert (tok.piece_widths() is not None) == widths
    texts = _texts(default_corpus)
    ref = reference.encode_flat(tok, texts, decode=True)
    fast = tok.encode_flat(texts, decode=True, batch_size=7)
    assert (fast.widths is not None) == widths  # which route it took
    _same(fast, ref)
    assert ref.roundtrip is not None
    assert ref.roundtrip.tolist() == [
        tok.decode(i) == t for (i, _), t in zip(fast.pairs(), texts, strict=True)
    ]
    assert not ref.roundtrip.all()  # "▁" in a text decodes as a space: the rule is exercised both ways
    assert any(i in tok.byte_fallback_ids for i in fast.ids.tolist())  # byte runs were exercised
    assert tok.encode_flat(texts).roundtrip is None  # not asked


@pytest.mark.slow
def test_flat_batch_on_real_flores(saved: dict[str, Path], shared_dir: Path) -> None:
    src = shared_dir / "corpora" / "flores200" / "devtest"
    texts = [
        t
        for code in ("asm_Beng", "ckb_Arab", "zho_Hant", "shn_Mymr")
        for t in (src / f"{code}.txt").read_text("utf-8").splitlines()[:150]
    ]
    for name in ("bpe", "unigram", "bpe-nfkc", "unigram-nfkc"):  # piece widths; the engine's offsets
        tok = load_tokenizer(saved[name])
        assert (tok.piece_widths() is None) == name.endswith("-nfkc")
        _same(tok.encode_flat(texts, decode=True), reference.encode_flat(tok, texts, decode=True))


class _Reference:
    """The Tokenizer contract kept by an object, on the definition (a report through it is the reference)."""

    def __init__(self, tok: Tokenizer) -> None:
        self.tok = tok
        self.name, self.engine, self.algorithm = tok.name, tok.engine, tok.algorithm
        self.vocab_size, self.unk_id = tok.vocab_size, tok.unk_id
        self.byte_fallback_ids, self.capabilities = tok.byte_fallback_ids, tok.capabilities

    def encode_batch_with_offsets(self, texts: list[str]) -> list:
        return reference.encode_with_offsets(self.tok, texts)

    def decode(self, ids: list[int]) -> str:
        return self.tok.decode(ids)

    def normalize(self, text: str) -> str:
        return self.tok.normalize(text)


def test_report_equals_the_report_on_the_reference(saved: dict[str, Path], default_corpus: Path) -> None:
    toks = {name: load_tokenizer(saved[name]) for name in ("bpe", "unigram", "bpe-nfkc")}
    fast = fertility_report(toks, default_corpus, config=ReportConfig(n_boot=50))
    defined = {name: _Reference(tok) for name, tok in toks.items()}
    ref = fertility_report(defined, default_corpus, config=ReportConfig(n_boot=50, prefetch=False))
    pd.testing.assert_frame_equal(fast, ref)


def test_encode_path_is_refused_with_what_to_do() -> None:
    with pytest.raises(ConfigError, match=r"no encode_path any more.*drop the argument"):
        ReportConfig(encode_path="reference")


def test_foreign_sentencepiece_model_equals_reference(saved: dict[str, Path], default_corpus: Path) -> None:
    """A bare .model (no verified export) still has sentencepiece's own batch calls, equal to the reference."""
    tok = load_tokenizer(saved["unigram"] / "tokenizer.model")
    texts = _texts(default_corpus)
    _same(tok.encode_flat(texts, decode=True, batch_size=5), reference.encode_flat(tok, texts, decode=True))


def test_object_keeping_the_contract_becomes_a_tokenizer(saved: dict[str, Path]) -> None:
    inner = load_tokenizer(saved["bpe"])

    class Foreign:  # the Tokenizer contract without an engine
        name, engine, vocab_size = "foreign", "other", inner.vocab_size
        byte_fallback_ids, unk_id = inner.byte_fallback_ids, inner.unk_id

        def encode_batch_with_offsets(self, texts: Sequence[str]) -> list:
            return inner.encode_batch_with_offsets(texts)

        def decode(self, ids: list[int]) -> str:
            return inner.decode(ids)

    tok = as_tokenizer(Foreign())
    assert (tok.name, tok.engine, tok.vocab_size) == ("foreign", "other", inner.vocab_size)
    assert not tok.capabilities.normalizer  # it has no normalize: the rate is reported missing
    texts = ["hello world", "ᎠᏍᎦᏯ 𞤀 naïve"]
    _same(tok.encode_flat(texts, decode=True), inner.encode_flat(texts, decode=True))
    assert tok.encode_batch_with_offsets(texts) == inner.encode_batch_with_offsets(texts)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(exclude_categories=("Cs",))), max_size=8))
def test_sentencepiece_normalize_without_the_engine_equals_the_engine(
    saved: dict[str, Path], shared_dir: Path, texts: list[str]
) -> None:
    """The identity normalizer (tokenloom's default) is computed without calling sentencepiece per text; it
    equals the engine's ``normalize`` on FLORES-200 devtest lines, edge strings and random text of all planes."""
    src = shared_dir / "corpora" / "flores200" / "devtest"
    flores = [t for code in ("eng_Latn", "tha_Thai", "jpn_Jpan") for t in (src / f"{code}.txt").read_text("utf-8").splitlines()[:50]]  # fmt: skip
    edges = [
        "",
        " ",
        "  a  b ",
        "\u2581x\u2581 ",
        "\t\r\n\x0b\x0c\x85\u3000\u00a0",
        "\x00a\x00",
        "\U0010ffff",
    ]
    for name in ("unigram", "unigram-nfkc"):
        backend = load_tokenizer(saved[name]).backend
        assert backend._plain_normalizer == (name == "unigram")
        batch = [*flores, *edges, *texts]
        assert backend.normalize_batch(batch) == [str(t) for t in backend.handle.normalize(batch)]
