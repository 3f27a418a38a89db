"""A model judged on held-out text with the framing of its token shards, and its tokenizer checked.

Oracle: one direct forward pass per document (``[start] + ids`` within one window), summed by hand
into bits per byte per language.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from tokenloom.encoder import EncoderConfig, LanguageModel, LanguageModelConfig
from tokenloom.errors import ConfigError
from tokenloom.lm import LmEvalConfig, read_documents
from tokenloom.lm.runs import evaluate_model, run_tokenizer, scoring_ids
from tokenloom.text.tokenizer import Tokenizer, load_tokenizer
from tokenloom.text.train import train_tokenizer
from tokenloom.tokens import TokenizeConfig, tokenize_corpus
from tokenloom.tokens.manifest import read_manifest

LANGS = ("eng_Latn", "rus_Cyrl", "hin_Deva")


@pytest.fixture(scope="session")
def heldout(default_corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three languages' first 4 lines of the small parallel corpus."""
    folder = tmp_path_factory.mktemp("heldout")
    for lang in LANGS:
        lines = (default_corpus / f"{lang}.txt").read_text(encoding="utf-8").splitlines()[:4]
        (folder / f"{lang}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


@pytest.fixture(scope="session")
def shards(default_corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A tiny byte-level BPE tokenizer (saved) and its token shards of the small corpus, EOS-framed."""
    root = tmp_path_factory.mktemp("run")
    tok = train_tokenizer(default_corpus, algorithm="bytelevel-bpe", vocab_size=300, heldout=0, quiet=True)
    tok_dir = tok.save(root / "tok")
    tokenize_corpus(default_corpus, tok_dir, root / "shards", config=TokenizeConfig(bos="auto", eos="auto"))
    return tok_dir, root / "shards"


def tiny_model(vocab: int, context: int) -> LanguageModel:
    torch.manual_seed(0)
    enc = EncoderConfig(width=16, depth=1, heads=2, causal=True, attn_impl="reference")
    return LanguageModel(LanguageModelConfig(vocab_size=vocab, encoder=enc, context=context)).double()


def test_scoring_ids_follow_the_shards_framing() -> None:
    assert scoring_ids({"bos_id": 1, "eos_id": 2}) == (1, 2)
    assert scoring_ids({"bos_id": None, "eos_id": 2}) == (2, 2)  # the separator before the next document
    assert scoring_ids({"bos_id": 7, "eos_id": None}) == (7, None)
    with pytest.raises(ConfigError, match="no BOS or EOS"):
        scoring_ids({"bos_id": None, "eos_id": None})


def test_bpb_per_language_equals_direct_forward_passes(shards: tuple[Path, Path], heldout: Path) -> None:
    tok_dir, folder = shards
    tok = load_tokenizer(tok_dir)
    settings = read_manifest(folder)["settings"]
    eos = settings["eos_id"]
    model = tiny_model(tok.vocab_size, context=512).eval()
    df = evaluate_model(model, tok, heldout, settings, LmEvalConfig(n_boot=0))
    docs = read_documents(heldout)
    bits: dict[str, float] = {}
    nbytes: dict[str, int] = {}
    with torch.no_grad():
        for text, lang in zip(docs.texts, docs.languages, strict=True):
            seq = [eos, *tok.encode(text)]
            assert len(seq) <= 512  # one window: the scorer's answer is one forward pass
            logp = torch.log_softmax(model(torch.tensor([seq])), dim=-1)[0]  # [N, V]
            nats = -sum(float(logp[t - 1, seq[t]]) for t in range(1, len(seq)))
            bits[lang] = bits.get(lang, 0.0) + nats / math.log(2)
            nbytes[lang] = nbytes.get(lang, 0) + len(text.encode("utf-8"))
    rows = df[df["slice_kind"] == "language"].set_index("slice")
    assert sorted(rows.index) == sorted(LANGS)
    for lang in LANGS:
        assert rows.loc[lang, "bpb"] == pytest.approx(bits[lang] / nbytes[lang], rel=1e-10)
        assert rows.loc[lang, "bytes"] == nbytes[lang]
    assert df.attrs["bos_id"] == eos and df.attrs["context"] == 512 and not df.attrs["score_eos"]
    with_end = evaluate_model(model, tok, heldout, settings, LmEvalConfig(n_boot=0, score_eos=True))
    assert (with_end["bits"] > df["bits"]).all()  # the end token's bits are added to every slice


def test_the_run_tokenizer_is_checked_against_the_shards(
    shards: tuple[Path, Path], default_corpus: Path, tmp_path: Path
) -> None:
    tok_dir, folder = shards
    entry = read_manifest(folder)["tokenizer"]
    assert isinstance(run_tokenizer(tmp_path, entry, tok_dir), Tokenizer)
    with pytest.raises(ConfigError, match="holds no copy of its tokenizer"):
        run_tokenizer(tmp_path, entry)
    load_tokenizer(tok_dir).save(tmp_path / "tokenizer")
    assert run_tokenizer(tmp_path, entry).vocab_size == 300  # the run's own copy
    other = train_tokenizer(default_corpus, algorithm="bytelevel-bpe", vocab_size=280, heldout=0, quiet=True)
    with pytest.raises(ConfigError, match="is not the one that wrote the run's token shards"):
        run_tokenizer(tmp_path, entry, other)
