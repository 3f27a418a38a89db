"""``TrainerConfig`` and ``train_tokenizer()``: BPE or unigram, on the HF ``tokenizers`` or ``sentencepiece``
engine, with byte fallback and a lossless SentencePiece-style treatment of whitespace; and byte-level BPE
(``algorithm="bytelevel-bpe"``, GPT-2 / tiktoken style) on the HF ``tokenizers`` engine.

For BPE and unigram both engines get equivalent settings:

- whitespace becomes the meta-symbol U+2581 with **no dummy prefix** and no whitespace clean-up, so
  ``decode(encode(s)) == s``; training splits at whitespace so merges stay inside words unless
  ``split_words=False``;
- normalization "none" (sentencepiece rule ``identity``), "nfc" (HF ``normalizers.NFC``; sentencepiece has
  no built-in NFC rule, so a rule table of canonical compositions and singleton mappings is compiled in —
  exact for text made of fully composed or fully decomposed characters) or "nfkc" (HF ``NFKC``,
  sentencepiece ``nfkc``); sentencepiece's rules never reorder combining marks, so on marks out of
  canonical order ("a\\u0307\\u0323", Arabic shadda before a vowel sign) the engines differ
  (docs/tokenizers.md, "Normalization is visible");
- byte fallback: the 256 ``<0x00>..<0xFF>`` pieces sit right after the special tokens; with the HF engine
  they are added to the trained model as ordinary vocabulary entries (``_hf_build.byte_fallback_model``);
- the characters that spell special and byte pieces are always in the alphabet (sentencepiece
  ``required_chars``, HF ``initial_alphabet``) so literal ``"<s>"`` or ``"<0x41>"`` in text stays text.

``engine="auto"`` picks sentencepiece for both algorithms: on a 40.6 MB multilingual corpus (FLORES-200
devtest plus the test data's ``corpora/train``) the raw engines took 5.3 s (spm BPE) vs 25.4 s (HF BPE) and 73 s (spm unigram) vs 595 s (HF unigram), with
less memory; a sentencepiece tokenizer is saved with an id-for-id identical ``tokenizer.json`` as well.

Byte-level BPE splits text with a regular expression (``pretokenizer``: "gpt2", "cl100k", "llama3",
"o200k" — the default — or a pattern of one's own, see ``bytelevel.py``; ``split_digits`` makes every digit
its own piece), maps each UTF-8 byte to one of 256 characters and learns merges inside the pieces. Its
alphabet is all 256 bytes, so it needs no ``<unk>`` (none is added), no byte pieces and no
``character_coverage``: ``byte_fallback`` is inherent (``byte_fallback=False`` and ``split_words=False`` are
refused) and, with normalization "none", ``decode(encode(s)) == s`` for every string ("nfc"/"nfkc" are
allowed but then change the text). Special tokens take ids ``0..k-1``, the bytes the next 256 ids, then
merge ``i`` id ``k + 256 + i``; ``max_piece_length`` counts bytes and is unlimited by default, as in
GPT-2 / tiktoken vocabularies. The tokenizer saves to tiktoken's format too
(``Tokenizer.save(path, formats=("tokenizer.json", "tiktoken"))``, ``tiktoken_export.py``).

The corpus is streamed (``_stream.LineStream``): statistics, fingerprint, deterministic ``max_bytes``
sampling, held-out lines (returned by ``train_with_heldout`` for a fertility check), long lines split into chunks (counted, never dropped).
What it does not do: encode/decode/save (``tokenizer.py``), measure fertility (``tokenloom.fertility``;
the ``train`` command writes ``fertility.csv``) or read file formats other than text.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import platform
import time
from dataclasses import dataclass
from typing import Literal

from tokenloom._fields import check_bools, check_ints, check_numbers, check_seed
from tokenloom.errors import ConfigError, VocabSizeError
from tokenloom.text._engines import check_not_empty, train_bytelevel, train_hf, train_spm
from tokenloom.text._hf_build import BYTE_PIECES, spelling_chars
from tokenloom.text._stream import CorpusInput, LineStream
from tokenloom.text.bytelevel import Pretokenizer, resolve_pattern
from tokenloom.text.sources import Errors
from tokenloom.text.tokenizer import Tokenizer

__all__ = ["TrainResult", "TrainerConfig", "train_tokenizer", "train_with_heldout"]

log = logging.getLogger(__name__)

Algorithm = Literal["bpe", "unigram", "bytelevel-bpe"]
EngineChoice = Literal["auto", "hf", "sentencepiece"]
Normalization = Literal["none", "nfc", "nfkc"]

AUTO_ENGINE: dict[str, str] = {"bpe": "sentencepiece", "unigram": "sentencepiece", "bytelevel-bpe": "hf"}
DEFAULT_PRETOKENIZER = "o200k"  # bytelevel-bpe: letter classes include combining marks (see bytelevel.py)
BYTELEVEL_ALPHABET = 256
# int fields, with an example value for messages
_INT_FIELDS = {
    "vocab_size": 8000, "seed": 0, "max_bytes": 10**8, "max_line_bytes": 16384, "threads": 0,
    "max_piece_length": 16, "verify_sample": 2000,
}  # fmt: skip


@dataclass(frozen=True)
class TrainerConfig:
    """Everything that decides the trained tokenizer (recorded in ``tokenloom.json``)."""

    algorithm: Algorithm = "bpe"  # "bpe" | "unigram" | "bytelevel-bpe"
    engine: EngineChoice = (
        "auto"  # "auto" (bpe, unigram: sentencepiece; bytelevel-bpe: hf) | "hf" | "sentencepiece"
    )
    vocab_size: int = 8000  # total vocabulary: special tokens + byte pieces + learned pieces
    byte_fallback: bool = True  # 256 <0xNN> pieces in the vocabulary; unseen characters encode as bytes
    #                             (bytelevel-bpe: inherent, its alphabet is the 256 bytes)
    normalization: Normalization = "none"  # "none" (lossless) | "nfc" | "nfkc"
    special_tokens: tuple[str, ...] = (
        "<unk>",
        "<s>",
        "</s>",
        "<pad>",
    )  # ids 0.. in this order; <unk> added if absent (not for bytelevel-bpe, which never needs one)
    seed: int = 0  # seeds sampling, held-out split and the engines' random generators; 0 <= seed < 2**32
    max_bytes: int | None = None  # train on at most this many bytes, sampled deterministically (None: all)
    split_words: bool = True  # pre-split at whitespace so merges stay inside words (bytelevel-bpe: the
    #                           pretokenizer pattern decides)
    pretokenizer: str | None = None  # bytelevel-bpe only: "gpt2" | "cl100k" | "llama3" | "o200k" | a regex;
    #                                  None = "o200k"
    split_digits: bool = False  # bytelevel-bpe only: every digit a piece of its own
    heldout: float = 0.01  # fraction of lines held out for the fertility table (0 disables it)
    errors: Errors = "strict"  # invalid UTF-8: "strict" raises, "replace" substitutes U+FFFD and counts
    max_line_bytes: int = 16384  # longer lines are split into chunks (sentencepiece max_sentence_length)
    character_coverage: float = 0.9995  # sentencepiece: share of characters that must be pieces (rest: bytes)
    max_piece_length: int | None = None  # longest piece; None = 16 characters (bpe, unigram) or no limit
    #                                      (bytelevel-bpe, where it counts bytes)
    threads: int = 0  # engine threads; 0 = all CPUs (sentencepiece unigram results depend on it: fix it
    #                   for artifacts that are byte-identical across machines)
    verify_sample: int = 2000  # training lines kept to verify the sentencepiece → tokenizer.json export
    allow_smaller_vocab: bool = False  # a corpus that gives fewer than vocab_size pieces: False raises
    #                                    VocabSizeError; True keeps the smaller tokenizer (a warning is logged)

    def __post_init__(self) -> None:
        choices = {
            "algorithm": ("bpe", "unigram", "bytelevel-bpe"),
            "engine": ("auto", "hf", "sentencepiece"),
            "normalization": ("none", "nfc", "nfkc"),
            "errors": ("strict", "replace"),
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ConfigError(f"TrainerConfig.{name}={getattr(self, name)!r}; choose one of {allowed}")
        check_ints(self, _INT_FIELDS, optional=("max_bytes", "max_piece_length"))
        check_numbers(self, {"heldout": 0.01, "character_coverage": 0.9995})
        check_bools(self, ("byte_fallback", "split_words", "split_digits", "allow_smaller_vocab"))
        check_seed(self.seed, name="TrainerConfig.seed")
        object.__setattr__(self, "special_tokens", tuple(self.special_tokens))
        if not all(isinstance(t, str) and t for t in self.special_tokens):
            raise ConfigError(f"special_tokens must be non-empty strings, got {self.special_tokens!r}")
        if len(set(self.special_tokens)) != len(self.special_tokens):
            raise ConfigError(f"special_tokens contains duplicates: {self.special_tokens!r}")
        clash = [t for t in self.special_tokens if t in BYTE_PIECES]
        if clash:
            raise ConfigError(f"special token {clash[0]!r} collides with a byte piece; rename it")
        if self.vocab_size < self.min_vocab_size:
            raise ConfigError(
                f"vocab_size={self.vocab_size!r} is too small: at least {self.min_vocab_size} are needed for "
                f"{len(self.resolved_special_tokens)} special tokens, 256 byte characters (bytelevel-bpe) or "
                f"{256 if self.byte_fallback else 0} byte pieces and the {len(self.required_chars)} characters "
                "that spell them, plus one learned piece "
                "(the corpus alphabet may need more)"
            )
        if self.max_bytes is not None and self.max_bytes <= 0:
            raise ConfigError(f"max_bytes must be a positive int or None, got {self.max_bytes!r}")
        if not 0.0 <= self.heldout < 0.5:
            raise ConfigError(f"heldout must be in [0, 0.5), got {self.heldout!r}")
        if not 0.9 <= self.character_coverage <= 1.0:
            raise ConfigError(f"character_coverage must be in [0.9, 1], got {self.character_coverage!r}")
        if self.max_line_bytes < 256:
            raise ConfigError(f"max_line_bytes must be at least 256, got {self.max_line_bytes!r}")
        for name in ("max_piece_length", "verify_sample"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigError(f"TrainerConfig.{name} must be a positive int, got {value!r}")
        if self.threads < 0:
            raise ConfigError(f"threads must be >= 0 (0 = all CPUs), got {self.threads!r}")
        self._check_bytelevel()

    def _check_bytelevel(self) -> None:
        """Options that exist for one kind of algorithm only are refused for the other, with the fix."""
        if self.algorithm != "bytelevel-bpe":
            if self.pretokenizer is not None or self.split_digits:
                raise ConfigError(
                    f"pretokenizer and split_digits apply to algorithm='bytelevel-bpe' only, not "
                    f"{self.algorithm!r}; drop them or choose algorithm='bytelevel-bpe'"
                )
            return
        if self.engine == "sentencepiece":
            raise ConfigError(
                "algorithm='bytelevel-bpe' runs on the tokenizers engine only; pass engine='hf' or 'auto'"
            )
        if not self.byte_fallback:
            raise ConfigError(
                "byte_fallback=False does not apply to bytelevel-bpe: its alphabet is the 256 bytes, so every "
                "string is spelled without <unk>; leave byte_fallback=True"
            )
        if not self.split_words:
            raise ConfigError(
                "split_words=False does not apply to bytelevel-bpe: the pretokenizer pattern decides where "
                "merges stop; pass a pattern of your own as pretokenizer= instead"
            )
        self.resolved_pretokenizer  # noqa: B018  # a pattern that cannot be used fails here, named

    @property
    def resolved_engine(self) -> Literal["hf", "sentencepiece"]:
        """The engine that trains: ``auto`` resolved by :data:`AUTO_ENGINE`."""
        return AUTO_ENGINE[self.algorithm] if self.engine == "auto" else self.engine  # type: ignore[return-value]

    @property
    def resolved_special_tokens(self) -> tuple[str, ...]:
        """Special tokens with ``<unk>`` first when it was not listed (bpe and unigram need one; byte-level
        BPE spells everything with its bytes and gets exactly the listed tokens)."""
        if "<unk>" in self.special_tokens or self.algorithm == "bytelevel-bpe":
            return self.special_tokens
        return ("<unk>", *self.special_tokens)

    @property
    def resolved_pretokenizer(self) -> Pretokenizer:
        """The byte-level pre-tokenizer: name, pattern used (``bytelevel.resolve_pattern``), split_digits."""
        name = DEFAULT_PRETOKENIZER if self.pretokenizer is None else self.pretokenizer
        return resolve_pattern(name, split_digits=self.split_digits)

    @property
    def resolved_max_piece_length(self) -> int | None:
        """``max_piece_length``, or its default: 16 characters for bpe/unigram, no limit for bytelevel-bpe."""
        if self.max_piece_length is not None or self.algorithm == "bytelevel-bpe":
            return self.max_piece_length
        return 16

    @property
    def required_chars(self) -> str:
        """Characters always kept in the alphabet (they spell the special and byte pieces; none are needed
        for bytelevel-bpe, whose alphabet is the 256 bytes)."""
        if self.algorithm == "bytelevel-bpe":
            return ""
        return spelling_chars(self.resolved_special_tokens, byte_fallback=self.byte_fallback)

    @property
    def min_vocab_size(self) -> int:
        """Static lower bound on ``vocab_size`` (the corpus alphabet can raise it; engines then say so)."""
        if self.algorithm == "bytelevel-bpe":
            return len(self.resolved_special_tokens) + BYTELEVEL_ALPHABET + 1
        return (
            len(self.resolved_special_tokens)
            + (256 if self.byte_fallback else 0)
            + len(self.required_chars)
            + 1
        )

    @property
    def resolved_threads(self) -> int:
        return self.threads or os.cpu_count() or 1


def _versions() -> dict[str, str]:
    from importlib.metadata import version  # no engine import just for its version (memory, start-up)

    from tokenloom import __version__

    return {
        "tokenloom": __version__,
        "tokenizers": version("tokenizers"),
        "sentencepiece": version("sentencepiece"),
        "python": platform.python_version(),
    }


def _bytelevel_record(cfg: TrainerConfig) -> dict[str, object]:
    if cfg.algorithm != "bytelevel-bpe":
        return {}
    pre = cfg.resolved_pretokenizer
    return {
        "byte_fallback": "byte_level",
        "pretokenizer": {"name": pre.name, "pattern": pre.pattern, "split_digits": pre.split_digits},
    }


@dataclass(frozen=True)
class TrainResult:
    """What a training run produced: the tokenizer and the lines it held out (never trained on)."""

    tokenizer: Tokenizer
    heldout: tuple[tuple[str, str], ...]  # (source name, text) of held-out lines, for a fertility table


def train_tokenizer(
    corpus: CorpusInput,
    *,
    algorithm: Algorithm = "bpe",
    engine: EngineChoice = "auto",
    vocab_size: int = 8000,
    byte_fallback: bool = True,
    normalization: Normalization = "none",
    special_tokens: tuple[str, ...] = ("<unk>", "<s>", "</s>", "<pad>"),
    seed: int = 0,
    max_bytes: int | None = None,
    heldout: float = 0.01,
    errors: Errors = "strict",
    pretokenizer: str | None = None,
    split_digits: bool = False,
    allow_smaller_vocab: bool = False,
    config: TrainerConfig | None = None,
    quiet: bool = False,
) -> Tokenizer:
    """Train a tokenizer on ``corpus``: path(s), folder(s) or glob(s) (a str, a PathLike, or a list/tuple of
    them), or any other iterable of str (e.g. ``iter(texts)``; each item is split on newlines).

    The keyword arguments are :class:`TrainerConfig` fields; pass ``config=`` instead to give them all at once.
    The returned :class:`Tokenizer` carries ``record`` (config, corpus statistics, versions, timing); the
    ``heldout`` share of lines is kept out of training (:func:`train_with_heldout` returns those lines, e.g.
    for ``tokenloom.fertility_by_source``). Progress bars are drawn on a terminal unless ``quiet``.

    ``algorithm="bytelevel-bpe"`` trains GPT-2 / tiktoken-style byte-level BPE on the ``tokenizers`` engine,
    lossless on every string: ``pretokenizer`` is "gpt2", "cl100k", "llama3" (the same regex as "cl100k"),
    "o200k" (default: unlike cl100k's ``\\p{L}+`` its letter classes include combining marks, so Devanagari or
    Tamil words are not cut at every vowel sign) or a regular expression of your own; ``split_digits=True``
    makes every digit its own piece (such a tokenizer cannot be saved in tiktoken's format, which has one
    regex). Save with ``formats=("tokenizer.json", "tiktoken")`` to get ``tokenizer.tiktoken`` too.

    A corpus too small for ``vocab_size`` (nothing more to learn) raises
    :class:`~tokenloom.errors.VocabSizeError` naming the size reached, for every engine and algorithm;
    ``allow_smaller_vocab=True`` keeps that smaller tokenizer instead, named after its real size, and logs a
    warning.
    """
    cfg = config or TrainerConfig(
        algorithm=algorithm,
        engine=engine,
        vocab_size=vocab_size,
        byte_fallback=byte_fallback,
        normalization=normalization,
        special_tokens=tuple(special_tokens),
        seed=seed,
        max_bytes=max_bytes,
        heldout=heldout,
        errors=errors,
        pretokenizer=pretokenizer,
        split_digits=split_digits,
        allow_smaller_vocab=allow_smaller_vocab,
    )
    return train_with_heldout(corpus, cfg, quiet=quiet).tokenizer


def train_with_heldout(corpus: CorpusInput, config: TrainerConfig, *, quiet: bool = False) -> TrainResult:
    """:func:`train_tokenizer` with a config, returning the held-out lines too (see :class:`TrainResult`)."""
    cfg = config
    stream = LineStream(
        corpus,
        errors=cfg.errors,
        max_bytes=cfg.max_bytes,
        seed=cfg.seed,
        heldout=cfg.heldout,
        max_line_bytes=cfg.max_line_bytes,
        sample_size=cfg.verify_sample,
        quiet=quiet,
    )
    engine_name = cfg.resolved_engine
    start = time.perf_counter()
    if cfg.algorithm == "bytelevel-bpe":
        train = train_bytelevel
    else:
        train = train_spm if engine_name == "sentencepiece" else train_hf
    tok = train(stream, cfg, quiet=quiet)
    seconds = time.perf_counter() - start
    check_not_empty(stream)
    if stream.split_lines:
        log.warning(
            "%d lines longer than %d bytes were split into %d chunks for training (nothing dropped)",
            stream.split_lines,
            cfg.max_line_bytes,
            stream.split_chunks,
        )
    tok.record = {
        "format": "tokenloom-tokenizer/1",
        "config": {**dataclasses.asdict(cfg), "special_tokens": list(cfg.special_tokens)},
        "resolved": {
            "engine": engine_name,
            "special_tokens": list(cfg.resolved_special_tokens),
            "threads": cfg.resolved_threads,
            "max_piece_length": cfg.resolved_max_piece_length,
            **_bytelevel_record(cfg),
        },
        "corpus": stream.summary(),
        "versions": _versions(),
        # volatile: the only part of the saved folder that differs between identical runs
        "training": {
            "seconds": round(seconds, 3),
            # throughput of what the engine trained on (a max_bytes sample, held-out lines excluded)
            "mb_per_s": round(stream.train_bytes / 1e6 / max(seconds, 1e-9), 3),
        },
    }
    if tok.vocab_size < cfg.vocab_size:  # nothing more to learn: one rule for every engine
        where = f"{cfg.algorithm} on {engine_name}"
        if not cfg.allow_smaller_vocab:
            raise VocabSizeError(cfg.vocab_size, tok.vocab_size, where=where, tokenizer=tok)
        log.warning(
            "vocab_size=%d: %s reached only %d pieces (nothing more to learn from this text); keeping the "
            "smaller tokenizer %s (allow_smaller_vocab=True)",
            cfg.vocab_size, where, tok.vocab_size, tok.name,
        )  # fmt: skip
    return TrainResult(tok, tuple(stream.heldout_records) if cfg.heldout > 0 else ())
