"""What a vocabulary sweep is asked and what it gives back: :class:`SweepConfig`, :class:`SweepResult`,
the :class:`TrainingRecord` of each table row, and vocabulary sizes as they are usually quoted
(:func:`parse_vocab_sizes`: ``"8k,32000"``).

Shared by :mod:`tokenloom.fertility.sweep` (which trains and evaluates) and
:mod:`tokenloom.fertility.sweep_writers` (which writes the files); it imports neither, and does no work.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TypedDict

from tokenloom._fields import check_bools, check_ints, check_seed
from tokenloom.corpus.load import Corpus
from tokenloom.corpus.records import BATCH_ERRORS, Errors, check_errors
from tokenloom.errors import ConfigError
from tokenloom.text.algorithms import AUTO_ENGINE, Engine, resolve_engine
from tokenloom.text.train_config import TrainerConfig

if TYPE_CHECKING:
    import pandas as pd

    from tokenloom.text.tokenizer import Tokenizer

__all__ = [
    "EvalCorpus",
    "SweepAlgorithm",
    "SweepConfig",
    "SweepEngine",
    "SweepResult",
    "TrainCorpus",
    "TrainingRecord",
    "parse_vocab_sizes",
    "sweep_name",
]

SweepAlgorithm = Literal["bpe", "unigram", "bytelevel-bpe", "parity-bpe"]
SweepEngine = Literal["auto", "hf", "sentencepiece"]
# the training corpus: files, folders or globs (read once per training, so not an iterator)
TrainCorpus = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]
# the evaluation corpus: the same, or a loaded Corpus (tokenloom.corpus.load.load_corpus)
EvalCorpus = str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | Corpus


@dataclass(frozen=True)
class SweepConfig:
    """What a vocabulary sweep trains, how it evaluates, and the model it prices the results for."""

    algorithms: tuple[SweepAlgorithm, ...] = ("bpe", "unigram")  # trained for every size
    vocab_sizes: tuple[int, ...] = (8000, 16000, 32000, 64000)  # trained for every algorithm
    engine: SweepEngine = "auto"  # "auto": bpe, bytelevel-bpe -> hf (cut shortcut), unigram -> sentencepiece
    shortcut: bool = (
        True  # cut smaller (byte-level) BPE vocabularies from the largest (tokenizers engine only)
    )
    pivot: str = "eng_Latn"  # premiums and the reference context are the pivot language's
    translit: bool = False  # also report generated transliterated slices (slower)
    preset: str = "vit-b16"  # EncoderConfig preset whose width, depth and heads price the results
    context: int = 4096  # reference context: the pivot's content in this many tokens of the first tokenizer
    dtype: str = "bf16"  # bytes of embeddings and the KV cache
    tied: bool = True  # output layer shares the embedding matrix
    max_bytes: int | None = None  # deterministic sample of the training corpus (None: all of it)
    seed: int = 0  # training seed, 0 <= seed < 2**32
    language_sampling: float = (
        1.0  # each language's share of the training bytes ~ n_l**alpha (every algorithm)
    )
    dev: str | None = None  # parity-bpe's parallel development set (needed when parity-bpe is swept)
    pretokenizer: str | None = None  # byte-level split pattern: a name or a regex (None: "o200k")
    allow_smaller_vocab: bool = False  # a size the corpus cannot fill: a "not trained" row (False), or
    #                                    the smaller tokenizer kept once, under its real size (True)
    errors: Errors = BATCH_ERRORS  # bad input in the training and evaluation corpora: "skip" sets it aside,
    #                                counted; "strict" stops at the first; "replace" substitutes U+FFFD

    def __post_init__(self) -> None:
        if not self.algorithms:
            raise ConfigError("a sweep needs at least one algorithm, e.g. algorithms=('bpe', 'unigram')")
        unknown = [a for a in self.algorithms if a not in AUTO_ENGINE]
        if unknown:
            raise ConfigError(f"unknown algorithm {unknown[0]!r}; choose from {tuple(AUTO_ENGINE)}")
        sizes = self.vocab_sizes
        if not sizes or any(isinstance(v, bool) or not isinstance(v, int) or v <= 0 for v in sizes):
            raise ConfigError(f"vocab_sizes must be positive ints, got {sizes!r}")
        if len(set(sizes)) != len(sizes) or len(set(self.algorithms)) != len(self.algorithms):
            raise ConfigError(f"duplicate algorithms or sizes: {self.algorithms!r}, {sizes!r}")
        if self.engine not in ("auto", "hf", "sentencepiece"):
            raise ConfigError(f"engine must be 'auto', 'hf' or 'sentencepiece', got {self.engine!r}")
        if not isinstance(self.context, int) or self.context <= 0:
            raise ConfigError(f"context must be a positive int, got {self.context!r}")
        check_ints(self, {"seed": 0})
        check_bools(self, ("shortcut", "translit", "tied", "allow_smaller_vocab"))
        check_seed(self.seed, name="SweepConfig.seed")
        check_errors(self.errors)
        if ("parity-bpe" in self.algorithms) != (self.dev is not None):
            raise ConfigError(
                "parity-bpe is swept with dev= (a parallel development set, --dev CORPUS) and dev= only applies "
                "to parity-bpe; give both or neither"
            )
        if self.pretokenizer is not None and not {"bytelevel-bpe", "parity-bpe"} & set(self.algorithms):
            raise ConfigError(
                "pretokenizer applies to bytelevel-bpe and parity-bpe only; add one to algorithms or drop it"
            )

    def engine_for(self, algorithm: SweepAlgorithm) -> Engine:
        """The engine that trains ``algorithm`` in this sweep: the trainer's resolution of ``"auto"`` for
        vocabularies that may be cut from a larger one (BPE on the tokenizers engine, so that
        ``tokenloom.text.bpe_cut`` applies; unigram on sentencepiece; byte-level BPE on the trainer its split
        pattern gets, every one of which learns merges in an order whose prefixes are the smaller
        vocabularies)."""
        if algorithm == "bytelevel-bpe":
            return TrainerConfig(
                algorithm=algorithm, engine=self.engine, pretokenizer=self.pretokenizer
            ).resolved_engine
        return resolve_engine(algorithm, self.engine, cut=True)


class TrainingRecord(TypedDict):
    """How one row of a sweep's table was made (``how``: ``"trained"``, ``"cut from <name>"``,
    ``"not trained: <reason>"``, ...), on which engine, in how many seconds, at which vocabulary size."""

    how: str
    engine: str
    seconds: float
    vocab_size: int


@dataclass
class SweepResult:
    """The tokenizers (``{name: Tokenizer}``, names like ``bpe-32k``), the report and the derived tables;
    ``training`` has every row of the table (sizes that were not trained too), in order."""

    config: SweepConfig
    tokenizers: dict[str, Tokenizer]
    report: pd.DataFrame
    table: pd.DataFrame
    languages: pd.DataFrame
    training: dict[str, TrainingRecord] = field(default_factory=dict)  # name -> how it was made


def sweep_name(algorithm: str, vocab_size: int) -> str:
    """A sweep's name for a tokenizer: ``bpe-32k`` for a multiple of 1000, ``bpe-6377`` otherwise."""
    return f"{algorithm}-{vocab_size // 1000}k" if vocab_size % 1000 == 0 else f"{algorithm}-{vocab_size}"


def parse_vocab_sizes(text: str) -> tuple[int, ...]:
    """``"8k,16k,32000"`` → ``(8000, 16000, 32000)``: ``k`` is 1000, as vocabulary sizes are usually quoted;
    anything else is a :class:`~tokenloom.errors.ConfigError` naming the bad part."""
    sizes = []
    for part in text.split(","):
        item = part.strip().lower()
        scale = 1000 if item.endswith("k") else 1
        digits = item[:-1] if item.endswith("k") else item
        if not digits.isdigit() or int(digits) == 0:
            raise ConfigError(f"vocabulary size {part!r} is not a positive number like 8k or 32000")
        sizes.append(int(digits) * scale)
    return tuple(sizes)
