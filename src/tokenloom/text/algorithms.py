"""The tokenizer algorithms and engines, and :func:`resolve_engine`, the one rule that turns
``engine="auto"`` into an engine.

``engine="auto"`` means the fastest engine that can train what is asked: sentencepiece for bpe and unigram
(on a 40.6 MB multilingual corpus the raw engines took 5.3 s (spm BPE) vs 25.4 s (HF BPE) and 73 s (spm
unigram) vs 595 s (HF unigram), with less memory), the tokenizers engine (``hf``) for parity-bpe, the only
one that trains it — and ``hf`` for bpe when smaller vocabularies are to be cut from the trained one
(``cut=True``, as a vocabulary sweep does: only the tokenizers engine learns merges in an order whose
prefixes are the smaller vocabularies, ``bpe_cut.py``). For bytelevel-bpe the trainer depends on the
split pattern and settings (:func:`bytelevel_trainer`): gigatoken (GPT-2's pattern), rustbpe (any other
pattern) or the tokenizers engine; :func:`resolve_engine` alone, knowing no pattern, answers ``hf``.

What it does not do: hold the other training settings (:mod:`tokenloom.text.train_config`) or train. It
imports no engine.
"""

from __future__ import annotations

import importlib.util
from typing import Literal, get_args

from tokenloom.errors import ConfigError

__all__ = [
    "AUTO_ENGINE",
    "BYTELEVEL_ALPHABET",
    "BYTE_LEVEL",
    "ENCODE_ENGINES",
    "FAST_TRAINERS",
    "Algorithm",
    "EncodeEngine",
    "Engine",
    "EngineChoice",
    "Normalization",
    "Variant",
    "bytelevel_trainer",
    "resolve_engine",
]

Algorithm = Literal["bpe", "unigram", "bytelevel-bpe", "parity-bpe"]
Variant = Literal["base", "window"]
Engine = Literal["hf", "sentencepiece", "gigatoken", "rustbpe"]
EngineChoice = Literal["auto", "hf", "sentencepiece", "gigatoken", "rustbpe"]
FAST_TRAINERS = ("gigatoken", "rustbpe")  # byte-level BPE only (tokenloom.text._fast_train)
Normalization = Literal["none", "nfc", "nfkc"]
# which engine computes token ids of a trained or loaded tokenizer (tokenloom.text.backends.dispatch)
EncodeEngine = Literal["auto", "gigatoken", "reference"]
ENCODE_ENGINES: tuple[str, ...] = get_args(EncodeEngine)

AUTO_ENGINE: dict[str, Engine] = {
    "bpe": "sentencepiece", "unigram": "sentencepiece", "bytelevel-bpe": "hf", "parity-bpe": "hf",
}  # fmt: skip
BYTE_LEVEL = ("bytelevel-bpe", "parity-bpe")  # byte-level BPE: the 256 bytes are the alphabet
BYTELEVEL_ALPHABET = 256


def resolve_engine(algorithm: str, engine: str = "auto", *, cut: bool = False) -> Engine:
    """The engine that trains ``algorithm`` when ``engine`` is asked (see the module docstring for "auto");
    ``cut``: smaller BPE vocabularies will be cut from the trained one. ConfigError for a pair that does
    not train."""
    if algorithm not in AUTO_ENGINE:
        raise ConfigError(f"algorithm={algorithm!r}; choose one of {tuple(AUTO_ENGINE)}")
    if engine not in get_args(EngineChoice):
        raise ConfigError(f"engine={engine!r}; choose one of {get_args(EngineChoice)}")
    if algorithm in BYTE_LEVEL and engine == "sentencepiece":
        raise ConfigError(
            f"algorithm={algorithm!r} runs on the tokenizers engine only; pass engine='hf' or 'auto'"
        )
    if engine in FAST_TRAINERS and algorithm != "bytelevel-bpe":
        raise ConfigError(
            f"engine={engine!r} trains algorithm='bytelevel-bpe' only, not {algorithm!r}; pass engine='auto'"
        )
    if engine != "auto":
        return engine  # type: ignore[return-value]  # checked above
    return "hf" if cut and algorithm == "bpe" else AUTO_ENGINE[algorithm]


def bytelevel_trainer(engine: str, *, pattern: str, unsupported: str | None) -> tuple[Engine, str]:
    """The trainer of ``bytelevel-bpe`` when ``engine`` is asked, and why: ``pattern`` is the split pattern's
    name (``"custom"`` for a regex), ``unsupported`` names a setting the fast trainers do not take
    (normalization, split_digits, max_piece_length) or is ``None``. ``"auto"`` picks the fastest trainer
    whose result is the Hugging Face engine's (gigatoken, GPT-2's pattern: the same merges in the same
    order) or, for other patterns, rustbpe: deterministic, the same most-frequent-pair rule with equal-count
    ties broken in another order (FLORES-200 devtest tokens +0.00% at 16k for o200k and cl100k; −0.17% on a
    corpus of 500 MB of repeated sentences, where equal counts are everywhere; docs/tokenizers-internals.md),
    else the tokenizers engine; a fast trainer that is not
    installed is skipped. ConfigError when a fast trainer is asked for a configuration it cannot train."""
    if engine in FAST_TRAINERS:
        if unsupported is not None:
            raise ConfigError(
                f"engine={engine!r} cannot train with {unsupported}; pass engine='hf' or 'auto'"
            )
        if engine == "gigatoken" and pattern != "gpt2":
            raise ConfigError(
                f"engine='gigatoken' trains with GPT-2's split pattern only, not {pattern!r}; pass "
                "pretokenizer='gpt2', engine='rustbpe' (any pattern) or engine='auto'"
            )
        return engine, f"engine={engine!r} asked"  # type: ignore[return-value]  # one of FAST_TRAINERS
    if engine != "auto":
        return "hf", f"engine={engine!r} asked"
    if unsupported is not None:
        return "hf", f"auto: the fast trainers do not take {unsupported}; the tokenizers engine trains"
    if pattern == "gpt2" and importlib.util.find_spec("gigatoken") is not None:
        return (
            "gigatoken",
            "auto: GPT-2's split pattern, on which gigatoken learns the tokenizers engine's merges",
        )
    if importlib.util.find_spec("rustbpe") is not None:
        return "rustbpe", (
            f"auto: split pattern {pattern!r}, on which rustbpe learns the tokenizers engine's merges in another "
            "order of equal-count ties, deterministic (not identical: engine='hf' for the same merges)"
        )
    return (
        "hf",
        "auto: neither gigatoken nor rustbpe is installed (pip install gigatoken rustbpe); the tokenizers engine "
        "trains",
    )
