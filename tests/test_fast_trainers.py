"""Byte-level BPE on the fast trainers against the tokenizers engine (the oracle).

gigatoken (GPT-2's split pattern) must give the tokenizers engine's tokenizer exactly — merges in order,
ids on FLORES-200 devtest, the tiktoken export; rustbpe (any pattern) must give a tokenizer that is lossless,
exported id for id (tokenizer.json and tiktoken), deterministic, and within 0.1% of the tokenizers engine's
devtest tokens, its merges the same set to within a few percent. ``engine="auto"`` must pick them only where
that holds and say when it falls back.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenloom import train_tokenizer
from tokenloom.errors import ConfigError
from tokenloom.text.tiktoken_export import tiktoken_encoding_kwargs
from tokenloom.text.tokenizer import Tokenizer, load_tokenizer
from tokenloom.text.train_config import TrainerConfig

pytest.importorskip("gigatoken")
pytest.importorskip("rustbpe")
tiktoken = pytest.importorskip("tiktoken")

LANGS = ("eng_Latn", "deu_Latn", "rus_Cyrl", "ell_Grek", "arb_Arab", "hin_Deva", "tam_Taml", "tha_Thai")
LANGS += ("zho_Hans", "kor_Hang")
VOCAB = 3000
PATTERNS = {"o200k": "o200k", "cl100k": "cl100k", "custom": r"\p{L}+|\p{N}|[^\s\p{L}\p{N}]+|\s+"}


def _flores(shared_dir: Path, split: str, n: int) -> list[str]:
    folder = shared_dir / "corpora" / "flores200" / split
    return [line for lang in LANGS for line in (folder / f"{lang}.txt").read_text("utf-8").splitlines()[:n]]


@pytest.fixture(scope="module")
def train_lines(shared_dir: Path) -> list[str]:
    return _flores(shared_dir, "dev", 300)


@pytest.fixture(scope="module")
def devtest(shared_dir: Path) -> list[str]:
    return _flores(shared_dir, "devtest", 150)


def _train(lines: list[str], **kw: Any) -> Tokenizer:
    return train_tokenizer(
        iter(lines), algorithm="bytelevel-bpe", vocab_size=VOCAB, heldout=0, quiet=True, **kw
    )


def _merges(tok: Tokenizer) -> list[tuple[str, str]]:
    return [tuple(m) for m in json.loads(tok.hf_export().to_str())["model"]["merges"]]


@pytest.fixture(scope="module")
def gpt2(train_lines: list[str]) -> dict[str, Tokenizer]:
    return {e: _train(train_lines, pretokenizer="gpt2", engine=e) for e in ("hf", "gigatoken", "auto")}


def test_gigatoken_gives_the_tokenizers_engines_tokenizer(
    gpt2: dict[str, Tokenizer], devtest: list[str], tmp_path: Path
) -> None:
    hf, fast, auto = gpt2["hf"], gpt2["gigatoken"], gpt2["auto"]
    assert fast.record["resolved"]["engine"] == auto.record["resolved"]["engine"] == "gigatoken"
    assert hf.record["resolved"]["engine"] == "hf"
    merges = _merges(hf)
    assert len(merges) == VOCAB - 4 - 256 and _merges(fast) == merges  # every merge, in order
    assert fast.hf_export().to_str() == hf.hf_export().to_str()  # the whole tokenizer.json
    assert fast.with_engine("reference").encode_batch(devtest) == hf.with_engine("reference").encode_batch(
        devtest
    )
    folders = {
        name: tok.save(tmp_path / name, formats=("tokenizer.json", "tiktoken")) for name, tok in gpt2.items()
    }
    ranks = {name: (folder / "tokenizer.tiktoken").read_bytes() for name, folder in folders.items()}
    assert ranks["gigatoken"] == ranks["hf"]
    encoding = tiktoken.Encoding(**tiktoken_encoding_kwargs(folders["gigatoken"]))
    assert encoding.encode_ordinary_batch(devtest) == hf.with_engine("reference").encode_batch(devtest)


@pytest.fixture(scope="module")
def patterns(train_lines: list[str]) -> dict[str, dict[str, Tokenizer]]:
    return {
        name: {e: _train(train_lines, pretokenizer=pre, engine=e) for e in ("hf", "rustbpe")}
        for name, pre in PATTERNS.items()
    }


@pytest.mark.parametrize("pre", ["o200k", "cl100k", "custom"])
def test_rustbpe_is_within_a_tenth_of_a_percent_and_the_same_merges(
    patterns: dict[str, dict[str, Tokenizer]], devtest: list[str], pre: str
) -> None:
    pair = patterns[pre]
    hf, fast = pair["hf"], pair["rustbpe"]
    assert fast.vocab_size == hf.vocab_size == VOCAB
    same = len(set(_merges(hf)) & set(_merges(fast))) / len(_merges(hf))
    tokens = {name: sum(map(len, tok.encode_batch(devtest))) for name, tok in pair.items()}
    change = tokens["rustbpe"] / tokens["hf"] - 1
    print(
        f"{pre}: {same:.2%} of merges shared; devtest tokens hf {tokens['hf']} rustbpe {tokens['rustbpe']} ({change:+.4%})"
    )
    assert same >= 0.95
    assert abs(change) <= 0.001


@pytest.mark.parametrize("pre", ["o200k", "cl100k", "custom"])
def test_rustbpe_tokenizer_is_exported_id_for_id_and_deterministic(
    patterns: dict[str, dict[str, Tokenizer]],
    train_lines: list[str],
    devtest: list[str],
    tmp_path: Path,
    pre: str,
) -> None:
    tok = patterns[pre]["rustbpe"]
    assert tok.record["resolved"]["engine"] == "rustbpe" and "rustbpe" in tok.record["versions"]
    folder = tok.save(tmp_path / "tok", formats=("tokenizer.json", "tiktoken"), strict=True)
    saved = json.loads((folder / "tokenloom.json").read_text("utf-8"))
    assert "skipped_formats" not in saved and saved["tiktoken"]["verified_texts"] > 0
    want = tok.with_engine("reference").encode_batch(devtest)
    assert load_tokenizer(folder, engine="reference").encode_batch(devtest) == want  # tokenizer.json
    encoding = tiktoken.Encoding(**tiktoken_encoding_kwargs(folder))
    assert encoding.encode_ordinary_batch(devtest) == want  # tiktoken
    assert all(text == back for text, back in zip(devtest, tok.decode_batch(want), strict=True))
    again = _train(train_lines, pretokenizer=PATTERNS[pre], engine="rustbpe")
    assert again.hf_export().to_str() == tok.hf_export().to_str()


@settings(max_examples=40, deadline=None)
@given(st.text(st.characters(blacklist_categories=("Cs",)), max_size=60))
def test_rustbpe_tokenizer_is_lossless(patterns: dict[str, dict[str, Tokenizer]], text: str) -> None:
    tok = patterns["o200k"]["rustbpe"]
    assert tok.decode(tok.encode(text)) == text


def test_auto_picks_the_fast_trainers_where_they_hold_and_says_when_it_falls_back(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, default_corpus: Path
) -> None:
    assert TrainerConfig(algorithm="bytelevel-bpe", pretokenizer="gpt2").engine_choice[0] == "gigatoken"
    for pre in (None, "cl100k", r"\w+|\s+"):
        assert TrainerConfig(algorithm="bytelevel-bpe", pretokenizer=pre).resolved_engine == "rustbpe"
    engine, why = TrainerConfig(algorithm="bytelevel-bpe", split_digits=True).engine_choice
    assert engine == "hf" and "do not take split_digits=True" in why
    assert TrainerConfig(algorithm="bytelevel-bpe", normalization="nfc").resolved_engine == "hf"
    assert TrainerConfig(algorithm="bytelevel-bpe", engine="hf").resolved_engine == "hf"
    assert TrainerConfig(algorithm="parity-bpe", ratios=("eng_Latn=1",)).resolved_engine == "hf"
    with pytest.raises(ConfigError, match="GPT-2's split pattern only"):
        TrainerConfig(algorithm="bytelevel-bpe", engine="gigatoken")
    with pytest.raises(ConfigError, match="cannot train with split_digits=True"):
        TrainerConfig(algorithm="bytelevel-bpe", engine="rustbpe", split_digits=True)
    with pytest.raises(ConfigError, match="trains algorithm='bytelevel-bpe' only"):
        TrainerConfig(algorithm="bpe", engine="rustbpe")
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name in ("gigatoken", "rustbpe") else real(name, *a),
    )
    with caplog.at_level(logging.INFO, logger="tokenloom.text.train"):
        tok = train_tokenizer(
            default_corpus, algorithm="bytelevel-bpe", vocab_size=400, heldout=0, quiet=True
        )
    assert tok.record["resolved"]["engine"] == "hf"
    assert "neither gigatoken nor rustbpe is installed" in tok.record["resolved"]["engine_reason"]
    assert "bytelevel-bpe trains on hf (auto: neither gigatoken nor rustbpe is installed" in caplog.text


def test_an_asked_trainer_that_is_missing_names_the_package(
    monkeypatch: pytest.MonkeyPatch, default_corpus: Path
) -> None:
    for name, pre in (("rustbpe", "o200k"), ("gigatoken", "gpt2")):
        monkeypatch.setitem(sys.modules, name, None)  # as if not installed
        with pytest.raises(
            ConfigError, match=f"needs the {name} package, which is not installed; pip install {name}"
        ):
            train_tokenizer(
                default_corpus,
                algorithm="bytelevel-bpe",
                pretokenizer=pre,
                engine=name,
                vocab_size=400,
                quiet=True,
            )
