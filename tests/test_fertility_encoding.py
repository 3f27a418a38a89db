"""tokenloom.fertility.encoding: the engine batch path equals the Tokenizer-contract reference path.

The reference here is genuine: ``path="reference"`` never takes the piece-width route (nothing is patched)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import tokenloom
from tokenloom.fertility import metrics
from tokenloom.fertility.encoding import encode_part, engine_of
from tokenloom.fertility.report import ReportConfig, fertility_report
from tokenloom.text.tokenizer import load_tokenizer


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


@pytest.mark.parametrize("widths", [True, False], ids=["piece-widths", "engine-offsets"])
@pytest.mark.parametrize("algorithm", ["bpe", "unigram"])
def test_engine_path_equals_reference(
    saved: dict[str, Path], default_corpus: Path, algorithm: str, widths: bool
) -> None:
    """Both engine routes: offsets as running sums of piece widths (ids-only engine calls), and the
    engine's own offsets (tokenizers whose normalization rules the widths out)."""
    tok = load_tokenizer(saved[algorithm if widths else f"{algorithm}-nfkc"])
    assert engine_of(tok) is not None
    assert (tok.piece_widths() is not None) == widths
    texts = _texts(default_corpus)
    bases = metrics.text_bases(texts)
    ref = encode_part(tok, texts, bases, path="reference")
    fast = encode_part(tok, texts, bases, path="engine", batch_size=7)
    assert (ref.path, fast.path) == ("reference", "engine")
    assert np.array_equal(fast.lengths, ref.lengths)
    assert np.array_equal(fast.ids, ref.ids)
    assert np.array_equal(fast.offsets, ref.offsets)
    assert ref.decoded is not None and ref.roundtrip is not None
    assert np.array_equal(ref.roundtrip, [d == t for d, t in zip(ref.decoded, texts, strict=True)])
    assert np.array_equal(fast.roundtrip, ref.roundtrip)  # decoded, or by the rule of the piece widths
    assert not ref.roundtrip.all()  # "▁" in a text decodes as a space: the rule is exercised both ways
    assert (fast.decoded is None) == widths or fast.decoded == ref.decoded
    assert any(i in tok.byte_fallback_ids for i in fast.ids.tolist())  # byte runs were exercised


def test_engine_path_on_real_flores(saved: dict[str, Path], shared_dir: Path) -> None:
    src = shared_dir / "corpora" / "flores200" / "devtest"
    texts = [
        t
        for code in ("asm_Beng", "ckb_Arab", "zho_Hant", "shn_Mymr")
        for t in (src / f"{code}.txt").read_text("utf-8").splitlines()[:150]
    ]
    bases = metrics.text_bases(texts)
    for algorithm in ("bpe", "unigram"):
        tok = load_tokenizer(saved[algorithm])
        ref = encode_part(tok, texts, bases, path="reference")
        fast = encode_part(tok, texts, bases, path="engine")
        assert np.array_equal(fast.ids, ref.ids) and np.array_equal(fast.offsets, ref.offsets), algorithm
        assert np.array_equal(fast.roundtrip, ref.roundtrip), algorithm
        normalized = load_tokenizer(saved[f"{algorithm}-nfkc"])  # the engine's offsets
        assert normalized.piece_widths() is None
        ref = encode_part(normalized, texts, bases, path="reference")
        slow = encode_part(normalized, texts, bases, path="engine")
        assert np.array_equal(slow.ids, ref.ids) and np.array_equal(slow.offsets, ref.offsets), algorithm
        assert np.array_equal(slow.roundtrip, ref.roundtrip), algorithm


def test_report_is_the_same_on_both_paths(saved: dict[str, Path], default_corpus: Path) -> None:
    toks = {name: load_tokenizer(saved[name]) for name in ("bpe", "unigram", "bpe-nfkc")}
    auto = fertility_report(toks, default_corpus, config=ReportConfig(n_boot=50))
    serial = ReportConfig(n_boot=50, encode_path="reference", prefetch=False)  # no background thread
    ref = fertility_report(toks, default_corpus, config=serial)  # no piece-width route anywhere
    pd.testing.assert_frame_equal(auto, ref)


def test_foreign_sentencepiece_model_takes_the_engine_path(
    saved: dict[str, Path], default_corpus: Path
) -> None:
    """A bare .model (no verified export) still has sentencepiece's own batch calls, equal to the reference."""
    tok = load_tokenizer(saved["unigram"] / "tokenizer.model")
    assert engine_of(tok) is tok.backend
    texts = _texts(default_corpus)
    bases = metrics.text_bases(texts)
    ref = encode_part(tok, texts, bases, path="reference")
    fast = encode_part(tok, texts, bases, batch_size=5)
    assert fast.path == "engine"
    assert np.array_equal(fast.ids, ref.ids) and np.array_equal(fast.offsets, ref.offsets)
    assert np.array_equal(fast.roundtrip, ref.roundtrip)


def test_object_without_engine_uses_the_reference_path(saved: dict[str, Path]) -> None:
    inner = load_tokenizer(saved["bpe"])

    class Foreign:  # the Tokenizer contract without an engine handle
        name, engine, vocab_size = "foreign", "other", inner.vocab_size
        byte_fallback_ids, unk_id = inner.byte_fallback_ids, inner.unk_id

        def encode_batch_with_offsets(self, texts: list[str]) -> list:
            return inner.encode_batch_with_offsets(texts)

        def decode(self, ids: list[int]) -> str:
            return inner.decode(ids)

    tok = Foreign()
    assert engine_of(tok) is None
    enc = encode_part(tok, ["hello world"], np.zeros(1, dtype=np.int64))
    assert enc.path == "reference"
    assert enc.ids.tolist() == inner.encode("hello world")
    with pytest.raises(ValueError, match="no engine batch path"):
        encode_part(tok, ["x"], np.zeros(1, dtype=np.int64), path="engine")
