"""tokenloom.text.offsets: ``Tokenizer.encode_flat`` equals the definition (real FLORES text), and the byte-run rule.

The definition (``tokenloom.fertility.reference``) is the engine's own offsets with byte runs split text by
text (plain Python); the flat batch is the piece-width route for unnormalized tokenizers and the engine's
offsets split vectorized otherwise. Nothing is patched to pick a route: the tokenizers' own settings decide it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tokenloom
from tokenloom.fertility import reference
from tokenloom.fertility.reference import fix_byte_runs
from tokenloom.text.backends.sentencepiece import SentencePieceBackend, read_model
from tokenloom.text.offsets import split_byte_runs
from tokenloom.text.tokenizer import Tokenizer

FLORES_CODES = ("asm_Beng", "ckb_Arab", "zho_Hant", "shn_Mymr", "amh_Ethi", "kor_Hang", "eng_Latn")


@pytest.fixture(scope="module")
def tokenizers(default_corpus: Path) -> dict[str, Tokenizer]:
    """Small vocabularies trained on the default corpus, so FLORES text needs many byte pieces."""
    toks = {}
    for algorithm, engine in (("bpe", "hf"), ("unigram", "sentencepiece")):
        for normalization in ("none", "nfkc"):
            toks[f"{algorithm}-{engine}-{normalization}"] = tokenloom.train_tokenizer(
                default_corpus, algorithm=algorithm, engine=engine, vocab_size=1000, heldout=0.0,
                normalization=normalization,  # type: ignore[arg-type]
            )  # fmt: skip
    return toks


@pytest.fixture(scope="module")
def flores(shared_dir: Path) -> list[str]:
    src = shared_dir / "corpora" / "flores200" / "devtest"
    texts = [t for code in FLORES_CODES for t in (src / f"{code}.txt").read_text("utf-8").splitlines()[:120]]
    return [
        *texts,
        "",
        " ",
        "a\u2581b",
        "e\u0301\u0301 \U0001f468\u200d\U0001f469\u200d\U0001f467 x\U0001e900y",
    ]


def _dummy_prefix_model(tok: Tokenizer) -> Tokenizer:
    """``tok``'s sentencepiece model rewritten through ``sentencepiece_model_pb2`` with a dummy prefix."""
    import sentencepiece as spm

    proto = read_model(tok.backend.model)  # type: ignore[attr-defined]
    proto.normalizer_spec.add_dummy_prefix = True
    data = proto.SerializeToString()
    sp = spm.SentencePieceProcessor()
    sp.LoadFromSerializedProto(data)
    return Tokenizer(name="dummy-prefix", backend=SentencePieceBackend(sp, data))


@pytest.mark.slow
def test_fast_equals_reference_on_flores(tokenizers: dict[str, Tokenizer], flores: list[str]) -> None:
    dummy = _dummy_prefix_model(tokenizers["unigram-sentencepiece-none"])  # sentencepiece adds a character
    cases = {**tokenizers, "unigram-sentencepiece-dummy-prefix": dummy}
    for name, tok in cases.items():
        fast = tok.encode_flat(flores)
        assert (fast.widths is not None) == name.endswith("-none"), name  # which route the fast path took
        ref = reference.encode_with_offsets(tok, flores)
        want = reference.encode_flat(tok, flores).offsets  # [T, 2] whole-batch coordinates
        diff = int(np.abs(fast.offsets - want).max()) if fast.offsets.shape == want.shape else -1
        print(f"{name}: {len(flores)} texts, {len(want)} tokens, max offset difference {diff}")
        assert diff == 0, name
        assert fast.pairs() == ref, name
        assert tok.encode_batch_with_offsets(flores) == ref, name
        assert tok.encode_flat(flores, batch_size=37).pairs() == ref, name  # several engine calls
        assert [ids for ids, _ in ref] == tok.encode_batch(flores), name
        assert any(set(ids) & tok.byte_fallback_ids for ids, _ in ref), name  # byte runs were exercised


def test_offsets_cover_the_text_they_index(tokenizers: dict[str, Tokenizer], flores: list[str]) -> None:
    """Unnormalized tokenizers: each non-byte piece spells its span (▁ for a space), byte pieces one char."""
    tok = tokenizers["bpe-hf-none"]
    for text, (ids, offsets) in zip(flores[:200], tok.encode_batch_with_offsets(flores[:200]), strict=True):
        for i, (start, end) in zip(ids, offsets, strict=True):
            piece = tok.backend.id_to_piece(i)
            if i in tok.byte_fallback_ids:  # one of the bytes of the one character it carries
                assert end == start + 1 and piece is not None
                assert int(piece[3:5], 16) in text[start].encode("utf-8"), (text, piece)
            else:
                assert text[start:end].replace(" ", "\u2581") == piece, (text, piece)


def test_fix_byte_runs_known_answer() -> None:
    # "aé€": é (2 bytes) and € (3 bytes) as one byte run whose pieces all carry the run's span [1, 3)
    text, ids = "aé€", [10, 1, 2, 3, 4, 5]
    offsets = [(0, 1)] + [(1, 3)] * 5
    assert fix_byte_runs(ids, offsets, text, {1, 2, 3, 4, 5}) == [
        (0, 1),
        (1, 2),
        (1, 2),
        (2, 3),
        (2, 3),
        (2, 3),
    ]
    # a run whose piece count does not match the bytes (normalization changed the text) keeps its span
    assert fix_byte_runs(ids[:4], offsets[:4], text, {1, 2, 3}) == [(0, 1), (1, 3), (1, 3), (1, 3)]
    assert fix_byte_runs([7], [(0, 1)], "a", set()) == [(0, 1)]


def test_split_byte_runs_known_answer() -> None:
    # "aé€" with é (2 bytes) and € (3 bytes) as one byte run whose pieces all carry the run's span [1, 3)
    texts = ["aé€"]
    ids = np.array([10, 1, 2, 3, 4, 5])
    offsets = np.array([[0, 1]] + [[1, 3]] * 5)
    out = split_byte_runs(texts, ids, offsets, np.array([6]), {1, 2, 3, 4, 5})
    assert out.tolist() == [[0, 1], [1, 2], [1, 2], [2, 3], [2, 3], [2, 3]]
    # a run whose piece count does not match the bytes (normalization changed the text) keeps its span
    out = split_byte_runs(texts, ids[:4], offsets[:4], np.array([4]), {1, 2, 3})
    assert out.tolist() == [[0, 1], [1, 3], [1, 3], [1, 3]]
    # second text: coordinates are end to end (text 1 starts at 3 + 1)
    out = split_byte_runs(
        ["ab", "é"],
        np.array([7, 8, 1, 2]),
        np.array([[0, 1], [1, 2], [3, 4], [3, 4]]),
        np.array([2, 2]),
        {1, 2},
    )
    assert out.tolist() == [[0, 1], [1, 2], [3, 4], [3, 4]]
