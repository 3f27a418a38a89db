"""TrainerConfig is the one home of every training setting: keyword overrides, the CLI flags, the typed
keywords and the engine rule all come from it."""

from __future__ import annotations

import argparse
import dataclasses
import typing

import pytest

from tokenloom._commands.train import add_config_arguments, config_from_args
from tokenloom.errors import ConfigError
from tokenloom.text.algorithms import resolve_engine
from tokenloom.text.train import configure, train_tokenizer
from tokenloom.text.train_config import TrainerConfig, TrainerSettings

# one flag setting each field to a value other than its default (with what that value needs beside it)
CLI_VALUES: dict[str, tuple[list[str], object]] = {
    "algorithm": (["--algorithm", "unigram"], "unigram"),
    "engine": (["--engine", "hf"], "hf"),
    "vocab_size": (["--vocab-size", "3000"], 3000),
    "byte_fallback": (["--no-byte-fallback"], False),
    "normalization": (["--normalization", "nfkc"], "nfkc"),
    "special_tokens": (["--special-token", "<s>", "--special-token", "<x>"], ("<s>", "<x>")),
    "seed": (["--seed", "7"], 7),
    "max_bytes": (["--max-bytes", "2GB"], 2 * 10**9),
    "split_words": (["--no-split-words"], False),
    "pretokenizer": (["--algorithm", "bytelevel-bpe", "--pretokenizer", "gpt2"], "gpt2"),
    "split_digits": (["--algorithm", "bytelevel-bpe", "--split-digits"], True),
    "heldout": (["--heldout", "0.2"], 0.2),
    "errors": (["--errors", "replace"], "replace"),
    "text_column": (["--text-column", "body"], "body"),
    "max_line_bytes": (["--max-line-bytes", "4096"], 4096),
    "character_coverage": (["--character-coverage", "0.99"], 0.99),
    "max_piece_length": (["--max-piece-length", "8"], 8),
    "threads": (["--threads", "2"], 2),
    "verify_sample": (["--verify-sample", "10"], 10),
    "allow_smaller_vocab": (["--allow-smaller-vocab"], True),
    "language_sampling": (["--language-sampling", "0.3"], 0.3),
    "dev": (["--algorithm", "parity-bpe", "--dev", "flores/dev"], "flores/dev"),
    "ratios": (["--algorithm", "parity-bpe", "--ratio", "hin_Deva=2.5", "--ratio", "eng_Latn=1"],
               ("eng_Latn=1.0", "hin_Deva=2.5")),
    "variant": (["--algorithm", "parity-bpe", "--variant", "window"], "window"),
    "global_merges": (["--algorithm", "parity-bpe", "--global-merges", "8000"], 8000),
    "window_size": (["--algorithm", "parity-bpe", "--window-size", "50"], 50),
    "alpha": (["--algorithm", "parity-bpe", "--alpha", "1.5"], 1.5),
}  # fmt: skip


def _parse(argv: list[str]) -> TrainerConfig:
    parser = argparse.ArgumentParser()
    add_config_arguments(parser)
    return config_from_args(parser.parse_args(argv))


def test_every_field_is_reachable_from_the_cli() -> None:
    assert set(CLI_VALUES) == {f.name for f in dataclasses.fields(TrainerConfig)}
    for name, (argv, value) in CLI_VALUES.items():
        assert value != getattr(TrainerConfig(), name), name
        assert getattr(_parse(argv), name) == value, name


def test_every_cli_default_is_the_dataclass_default() -> None:
    assert _parse([]) == TrainerConfig()
    parser = argparse.ArgumentParser()
    add_config_arguments(parser)
    for action in parser._actions:
        if action.dest in CLI_VALUES:
            assert action.default is argparse.SUPPRESS, action.dest  # a flag not given: the field's default
            shown = getattr(TrainerConfig, action.dest)
            shown = " ".join(shown) if isinstance(shown, tuple) else shown
            assert action.help is not None and action.help.endswith(f"default: {shown}"), action.dest


def test_typed_keywords_are_the_fields() -> None:
    assert typing.get_type_hints(TrainerSettings) == typing.get_type_hints(TrainerConfig)


def test_keywords_override_and_must_agree_with_a_given_config() -> None:
    assert configure(vocab_size=3000) == TrainerConfig(vocab_size=3000)
    cfg = TrainerConfig(vocab_size=3000, seed=4)
    assert configure(cfg) == cfg
    assert configure(cfg, vocab_size=3000, special_tokens=["<unk>", "<s>", "</s>", "<pad>"]) == cfg  # type: ignore[typeddict-item]
    with pytest.raises(ConfigError, match=r"vocab_size=4000 contradicts the given config's vocab_size=3000"):
        configure(cfg, vocab_size=4000)
    with pytest.raises(ConfigError, match="contradicts"):
        train_tokenizer(iter(["some text"]), config=cfg, seed=5)
    with pytest.raises(TypeError, match=r"unknown training setting 'vocab'.*vocab_size, byte_fallback"):
        train_tokenizer(iter(["some text"]), vocab=3000)  # type: ignore[call-arg]
    with pytest.raises(ConfigError, match="apply to algorithm='bytelevel-bpe' or 'parity-bpe' only"):
        configure(cfg, pretokenizer="gpt2")  # the result is validated as a whole


def test_character_coverage_belongs_to_bpe_and_sentencepiece() -> None:
    assert TrainerConfig(character_coverage=0.99).resolved_engine == "sentencepiece"
    assert TrainerConfig(engine="hf", character_coverage=0.99).character_coverage == 0.99
    with pytest.raises(ConfigError, match=r"character_coverage applies to bpe .* not to unigram on hf"):
        TrainerConfig(algorithm="unigram", engine="hf", character_coverage=0.99)
    with pytest.raises(ConfigError, match="not to bytelevel-bpe on hf"):
        TrainerConfig(algorithm="bytelevel-bpe", engine="hf", character_coverage=0.99)


def test_one_engine_rule() -> None:
    assert [resolve_engine(a) for a in ("bpe", "unigram", "bytelevel-bpe")] == ["sentencepiece"] * 2 + ["hf"]
    # a sweep cuts smaller BPE vocabularies from one training: only the tokenizers engine allows that
    assert [resolve_engine(a, cut=True) for a in ("bpe", "unigram", "bytelevel-bpe")] == [
        "hf", "sentencepiece", "hf",
    ]  # fmt: skip
    assert resolve_engine("bpe", "sentencepiece", cut=True) == "sentencepiece"  # asked for: kept
    with pytest.raises(ConfigError, match="tokenizers engine only"):
        resolve_engine("bytelevel-bpe", "sentencepiece")
    with pytest.raises(ConfigError, match="algorithm='wordpiece'"):
        resolve_engine("wordpiece")
    with pytest.raises(ConfigError, match="engine='spm'"):
        resolve_engine("bpe", "spm")
