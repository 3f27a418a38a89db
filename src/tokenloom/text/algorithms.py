"""The tokenizer algorithms and engines, and :func:`resolve_engine`, the one rule that turns
``engine="auto"`` into an engine.

``engine="auto"`` means the fastest engine that can train what is asked: sentencepiece for bpe and unigram
(on a 40.6 MB multilingual corpus the raw engines took 5.3 s (spm BPE) vs 25.4 s (HF BPE) and 73 s (spm
unigram) vs 595 s (HF unigram), with less memory), the tokenizers engine (``hf``) for bytelevel-bpe and
parity-bpe, the only one that trains them — and ``hf`` for bpe when smaller vocabularies are to be cut from the trained one
(``cut=True``, as a vocabulary sweep does: only the tokenizers engine learns merges in an order whose
prefixes are the smaller vocabularies, ``bpe_cut.py``).

What it does not do: hold the other training settings (:mod:`tokenloom.text.train_config`) or train. It
imports no engine.
"""

from __future__ import annotations

from typing import Literal, get_args

from tokenloom.errors import ConfigError

__all__ = [
    "AUTO_ENGINE",
    "BYTELEVEL_ALPHABET",
    "BYTE_LEVEL",
    "ENCODE_ENGINES",
    "Algorithm",
    "EncodeEngine",
    "Engine",
    "EngineChoice",
    "Normalization",
    "Variant",
    "resolve_engine",
]

Algorithm = Literal["bpe", "unigram", "bytelevel-bpe", "parity-bpe"]
Variant = Literal["base", "window"]
Engine = Literal["hf", "sentencepiece"]
EngineChoice = Literal["auto", "hf", "sentencepiece"]
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
    if engine != "auto":
        return engine  # type: ignore[return-value]  # checked above
    return "hf" if cut and algorithm == "bpe" else AUTO_ENGINE[algorithm]
