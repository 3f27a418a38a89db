"""``TrainerConfig``: every setting of a tokenizer training, its default, its meaning and where it applies.

Each field is declared once, with ``field(metadata=...)`` carrying its help text (the ``tokenloom train``
flags are generated from the fields, ``_commands/train.py``) and, for a setting of some algorithms or
engines only, the rule saying where it applies. A value other than the default where a setting does not
apply is refused when the config is built, naming the fix: the byte-level pre-tokenizer and digit splitting
belong to ``bytelevel-bpe``; ``byte_fallback=False`` and ``split_words=False`` to bpe and unigram;
``character_coverage`` to bpe (either engine) and sentencepiece unigram; ``dev``, ``ratios``, ``variant``,
``global_merges``, ``window_size`` and ``alpha`` to ``parity-bpe``. So a config that exists is a combination
that trains (``parity-bpe`` also needs ``dev`` or ``ratios``: checked when training, against the corpus).

The algorithms, the engines and the rule that turns ``engine="auto"`` into an engine are in
:mod:`tokenloom.text.algorithms`; the checks that read several fields at once are in
:mod:`tokenloom.text.train_checks`. What it does not do: read corpora or train (``train.py``). It imports
no engine.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, Literal, TypedDict, get_args, get_origin, get_type_hints

from tokenloom._fields import check_bools, check_ints, check_numbers, check_seed
from tokenloom.corpus.records import BATCH_ERRORS, ERRORS_HELP, Errors
from tokenloom.errors import ConfigError
from tokenloom.text._hf_build import BYTE_PIECES, spelling_chars
from tokenloom.text._train_values import parse_size
from tokenloom.text.algorithms import (
    BYTE_LEVEL,
    BYTELEVEL_ALPHABET,
    Algorithm,
    Engine,
    EngineChoice,
    Normalization,
    Variant,
    bytelevel_trainer,
    resolve_engine,
)
from tokenloom.text.bytelevel import Pretokenizer, resolve_pattern
from tokenloom.text.train_checks import check_parity, check_ranges, check_special_tokens

__all__ = ["BYTE_PIECES", "TrainerConfig", "TrainerSettings", "choices", "parse_size"]

DEFAULT_PRETOKENIZER = "o200k"  # bytelevel-bpe: letter classes include combining marks (see bytelevel.py)
# int fields, with an example value for messages
_INT_FIELDS = {
    "vocab_size": 8000, "seed": 0, "max_bytes": 10**8, "max_line_bytes": 16384, "threads": 0,
    "max_piece_length": 16, "verify_sample": 2000, "global_merges": 0, "window_size": 100,
}  # fmt: skip


def _about(
    help_text: str,
    *,
    applies: Callable[[TrainerConfig], bool] | None = None,
    refused: str = "",
    metavar: str | None = None,
) -> dict[str, Any]:
    """A field's metadata: its help text and, for a setting of some algorithms or engines only, where it
    applies (``applies``) and the message (``refused``, formatted with ``cfg``) for a non-default value
    elsewhere; ``metavar`` names the value in ``--help``."""
    return {"help": help_text, "applies": applies, "refused": refused, "metavar": metavar}


def _bytelevel(cfg: TrainerConfig) -> bool:
    return cfg.algorithm in BYTE_LEVEL


def _not_bytelevel(cfg: TrainerConfig) -> bool:
    return cfg.algorithm not in BYTE_LEVEL


def _parity(cfg: TrainerConfig) -> bool:
    return cfg.algorithm == "parity-bpe"


def _has_coverage(cfg: TrainerConfig) -> bool:
    return cfg.resolved_engine == "sentencepiece" or cfg.algorithm == "bpe"


_BYTELEVEL_ONLY = (
    "pretokenizer and split_digits apply to algorithm='bytelevel-bpe' or 'parity-bpe' only, not "
    "{cfg.algorithm!r}; drop them or choose one of those"
)
_PARITY_ONLY = (
    "dev, ratios, variant, global_merges, window_size and alpha apply to algorithm='parity-bpe' only, not "
    "{cfg.algorithm!r}; drop them or pass algorithm='parity-bpe'"
)


@dataclass(frozen=True)
class TrainerConfig:
    """Everything that decides the trained tokenizer (recorded in ``tokenloom.json``); each field's help
    text is in its metadata (``tokenloom train --help`` shows them)."""

    algorithm: Algorithm = field(
        default="bpe",
        metadata=_about(
            "bpe | unigram | bytelevel-bpe (GPT-2 / tiktoken-style byte-level BPE) | parity-bpe (byte-level, "
            "each merge to the language that compresses worst on a parallel dev set)"
        ),
    )
    engine: EngineChoice = field(
        default="auto",
        metadata=_about(
            "auto (sentencepiece for bpe and unigram; for bytelevel-bpe gigatoken with the gpt2 pattern, rustbpe "
            "with others, hf where a setting needs it; hf for parity-bpe) | hf | sentencepiece | gigatoken | "
            "rustbpe (the last two: bytelevel-bpe only)"
        ),
    )
    vocab_size: int = field(
        default=8000, metadata=_about("total vocabulary: special tokens + byte pieces + learned pieces")
    )
    byte_fallback: bool = field(
        default=True,
        metadata=_about(
            "256 <0xNN> pieces in the vocabulary, unseen characters encode as bytes (without: <unk>)",
            applies=_not_bytelevel,
            refused="byte_fallback=False does not apply to bytelevel-bpe: its alphabet is the 256 bytes, so every "
            "string is spelled without <unk>; leave byte_fallback=True",
        ),
    )
    normalization: Normalization = field(default="none", metadata=_about("none (lossless) | nfc | nfkc"))
    special_tokens: tuple[str, ...] = field(
        default=("<unk>", "<s>", "</s>", "<pad>"),
        metadata=_about(
            "special tokens, ids 0.. in this order; <unk> is added if absent (not for bytelevel-bpe)",
            metavar="T",
        ),
    )
    seed: int = field(
        default=0, metadata=_about("seed of sampling, the held-out split and the engines, 0 <= seed < 2**32")
    )
    max_bytes: int | None = field(
        default=None,
        metadata=_about(
            "train on a deterministic sample of this many bytes drawn across the whole corpus (every file and "
            "language contributes), e.g. 2GB, 500MB or 1000000 (None: all)",
            metavar="SIZE",
        ),
    )
    split_words: bool = field(
        default=True,
        metadata=_about(
            "pre-split at whitespace so merges stay inside words",
            applies=_not_bytelevel,
            refused="split_words=False does not apply to bytelevel-bpe: the pretokenizer pattern decides where "
            "merges stop; pass a pattern of your own as pretokenizer= instead",
        ),
    )
    pretokenizer: str | None = field(
        default=None,
        metadata=_about(
            "bytelevel-bpe split pattern: gpt2, cl100k, llama3 (= cl100k), o200k or a regex (None: o200k)",
            applies=_bytelevel,
            refused=_BYTELEVEL_ONLY,
            metavar="NAME|REGEX",
        ),
    )
    split_digits: bool = field(
        default=False,
        metadata=_about(
            "bytelevel-bpe: every digit a piece of its own", applies=_bytelevel, refused=_BYTELEVEL_ONLY
        ),
    )
    heldout: float = field(
        default=0.01, metadata=_about("fraction of lines held out for the fertility table (0 disables it)")
    )
    errors: Errors = field(default=BATCH_ERRORS, metadata=_about(ERRORS_HELP))
    text_column: str = field(
        default="text",
        metadata=_about(
            "the column of a table (JSONL, CSV, Parquet, DataFrame, dataset) to train on", metavar="COLUMN"
        ),
    )
    max_line_bytes: int = field(
        default=16384, metadata=_about("longer lines are split into chunks for training (none dropped)")
    )
    character_coverage: float = field(
        default=0.9995,
        metadata=_about(
            "bpe (both engines) and sentencepiece unigram: share of the training text's characters that must "
            "be pieces, the most frequent first (the rest: bytes)",
            applies=_has_coverage,
            refused="character_coverage applies to bpe (either engine) and to unigram on sentencepiece, not to "
            "{cfg.algorithm} on {cfg.resolved_engine} (byte-level BPE spells every character with bytes; HF's "
            "unigram trainer keeps every character); drop it or pass engine='sentencepiece' (bpe, unigram)",
        ),
    )
    max_piece_length: int | None = field(
        default=None,
        metadata=_about(
            "longest piece; None: 16 characters (bpe, unigram) or no limit (bytelevel-bpe, counts bytes)"
        ),
    )
    threads: int = field(
        default=0,
        metadata=_about(
            "engine threads, 0 = all CPUs (sentencepiece unigram results depend on it: fix it for artifacts)"
        ),
    )
    verify_sample: int = field(
        default=2000, metadata=_about("training lines kept to verify exports (tokenizer.json, tiktoken)")
    )
    allow_smaller_vocab: bool = field(
        default=False,
        metadata=_about(
            "a corpus that gives fewer than vocab_size pieces: keep the smaller tokenizer (else an error)"
        ),
    )

    language_sampling: float = field(
        default=1.0,
        metadata=_about(
            "alpha: each language's share of the training bytes is p_l ~ n_l**alpha (1: the corpus as it is, "
            "0: uniform over languages; XLM-R and mT5 use 0.3); needs a labelled corpus",
            metavar="ALPHA",
        ),
    )
    dev: str | None = field(
        default=None,
        metadata=_about(
            "parity-bpe: a parallel development set (line i is the same sentence in every language), read "
            "like the training corpus; its languages must be the training languages",
            applies=_parity,
            refused=_PARITY_ONLY,
            metavar="CORPUS",
        ),
    )
    ratios: tuple[str, ...] = field(
        default=(),
        metadata=_about(
            "parity-bpe without dev: target compression per language, LANG=R (one per training language; "
            "raise a language's R to give it more merges)",
            applies=_parity,
            refused=_PARITY_ONLY,
            metavar="LANG=R",
        ),
    )
    variant: Variant = field(
        default="base",
        metadata=_about(
            "parity-bpe: base (every merge to the worst-compressed language) | window (moving-window "
            "balancing, window_size and alpha)",
            applies=_parity,
            refused=_PARITY_ONLY,
        ),
    )
    global_merges: int = field(
        default=0,
        metadata=_about(
            "parity-bpe: plain BPE merges learned first, before parity selection (more: fewer total tokens, "
            "less parity)",
            applies=_parity,
            refused=_PARITY_ONLY,
        ),
    )
    window_size: int = field(
        default=100,
        metadata=_about(
            "parity-bpe window variant: the moving window, in merges", applies=_parity, refused=_PARITY_ONLY
        ),
    )
    alpha: float = field(
        default=2.0,
        metadata=_about(
            "parity-bpe window variant: its alpha parameter", applies=_parity, refused=_PARITY_ONLY
        ),
    )

    def __post_init__(self) -> None:
        for name, allowed in choices().items():
            if getattr(self, name) not in allowed:
                raise ConfigError(f"TrainerConfig.{name}={getattr(self, name)!r}; choose one of {allowed}")
        if isinstance(self.max_bytes, str):
            object.__setattr__(self, "max_bytes", parse_size(self.max_bytes))
        check_ints(self, _INT_FIELDS, optional=("max_bytes", "max_piece_length"))
        check_numbers(
            self, {"heldout": 0.01, "character_coverage": 0.9995, "language_sampling": 0.3, "alpha": 2.0}
        )
        dev, ratios = check_parity(self)
        object.__setattr__(self, "dev", dev)
        object.__setattr__(self, "ratios", ratios)
        check_bools(self, ("byte_fallback", "split_words", "split_digits", "allow_smaller_vocab"))
        check_seed(self.seed, name="TrainerConfig.seed")
        if not isinstance(self.text_column, str) or not self.text_column:
            raise ConfigError(f"TrainerConfig.text_column={self.text_column!r}; give a column name")
        object.__setattr__(self, "special_tokens", check_special_tokens(self.special_tokens))
        check_ranges(self)
        resolve_engine(self.algorithm, self.engine)
        for f in fields(self):
            applies = f.metadata["applies"]
            if applies is not None and getattr(self, f.name) != f.default and not applies(self):
                raise ConfigError(f.metadata["refused"].format(cfg=self))
        if self.algorithm in BYTE_LEVEL:
            self.resolved_pretokenizer  # noqa: B018  # a pattern that cannot be used fails here, named
            self.engine_choice  # noqa: B018  # a fast trainer asked for what it cannot train fails here

    @property
    def resolved_ratios(self) -> dict[str, float]:
        """``ratios`` as {language: target compression}."""
        return {lang: float(r) for lang, _, r in (item.partition("=") for item in self.ratios)}

    @property
    def resolved_engine(self) -> Engine:
        """The engine that trains (:func:`resolve_engine`; for bytelevel-bpe :func:`bytelevel_trainer`)."""
        return self.engine_choice[0]

    @property
    def engine_choice(self) -> tuple[Engine, str]:
        """The engine that trains and why (the reason is recorded in ``tokenloom.json``)."""
        engine = resolve_engine(self.algorithm, self.engine)
        if self.algorithm != "bytelevel-bpe":
            return engine, f"engine={self.engine!r}" + (f" (auto: {engine})" if self.engine == "auto" else "")
        pre = self.resolved_pretokenizer
        unsupported = [
            f"normalization={self.normalization!r}" if self.normalization != "none" else "",
            "split_digits=True" if pre.split_digits else "",
            f"max_piece_length={self.max_piece_length}" if self.max_piece_length is not None else "",
        ]
        return bytelevel_trainer(
            self.engine, pattern=pre.name, unsupported=", ".join(u for u in unsupported if u) or None
        )

    @property
    def resolved_special_tokens(self) -> tuple[str, ...]:
        """Special tokens with ``<unk>`` first when it was not listed (bpe and unigram need one; byte-level
        BPE spells everything with its bytes and gets exactly the listed tokens)."""
        if "<unk>" in self.special_tokens or self.algorithm in BYTE_LEVEL:
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
        if self.max_piece_length is not None or self.algorithm in BYTE_LEVEL:
            return self.max_piece_length
        return 16

    @property
    def required_chars(self) -> str:
        """Characters always kept in the alphabet (they spell the special and byte pieces; none are needed
        for bytelevel-bpe, whose alphabet is the 256 bytes)."""
        if self.algorithm in BYTE_LEVEL:
            return ""
        return spelling_chars(self.resolved_special_tokens, byte_fallback=self.byte_fallback)

    @property
    def min_vocab_size(self) -> int:
        """Static lower bound on ``vocab_size`` (the corpus alphabet can raise it; engines then say so)."""
        if self.algorithm in BYTE_LEVEL:
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


@functools.cache
def choices() -> dict[str, tuple[str, ...]]:
    """The fields that take one of a few strings (a ``Literal`` type), with those strings."""
    hints = get_type_hints(TrainerConfig)
    return {
        f.name: get_args(hints[f.name]) for f in fields(TrainerConfig) if get_origin(hints[f.name]) is Literal
    }


class TrainerSettings(TypedDict, total=False):
    """The :class:`TrainerConfig` fields as keyword arguments, for type checkers (``train_tokenizer(corpus,
    **settings)``); the dataclass holds the defaults and checks the values, a test keeps the two alike."""

    algorithm: Algorithm
    engine: EngineChoice
    vocab_size: int
    byte_fallback: bool
    normalization: Normalization
    special_tokens: tuple[str, ...]
    seed: int
    max_bytes: int | None
    split_words: bool
    pretokenizer: str | None
    split_digits: bool
    heldout: float
    errors: Errors
    text_column: str
    max_line_bytes: int
    character_coverage: float
    max_piece_length: int | None
    threads: int
    verify_sample: int
    allow_smaller_vocab: bool
    language_sampling: float
    dev: str | None
    ratios: tuple[str, ...]
    variant: Variant
    global_merges: int
    window_size: int
    alpha: float
