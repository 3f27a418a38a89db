"""``train_tokenizer()`` (settings: ``TrainerConfig``, ``train_config.py``): BPE or unigram, on the HF ``tokenizers`` or ``sentencepiece``
engine, with byte fallback and a lossless SentencePiece-style treatment of whitespace; and byte-level BPE
(``algorithm="bytelevel-bpe"``, GPT-2 / tiktoken style) on the HF ``tokenizers`` engine, gigatoken (GPT-2's
split pattern: the same merges) or rustbpe (any pattern), ``_fast_train.py``; ``engine="auto"`` picks by
``algorithms.bytelevel_trainer`` and records the engine and the reason in ``tokenloom.json``.

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

``engine="auto"`` picks sentencepiece for both algorithms (``algorithms.resolve_engine``, with the
measurements); a sentencepiece tokenizer is saved with an id-for-id identical ``tokenizer.json`` as well.

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

Parity-aware byte-level BPE (``algorithm="parity-bpe"``, ``_parity.py``) gives each merge to the language
that compresses worst on a parallel ``dev`` set (or furthest below its ``ratios`` target); the tokenizer is
laid out, saved and exported like ``bytelevel-bpe``. ``character_coverage`` limits the alphabet of BPE on
either engine (``_coverage.py`` for the tokenizers engine). A ``max_bytes`` budget or ``language_sampling``
(``p_l ~ n_l**alpha``) is drawn by language in two passes (``corpus.sampling``).

The corpus is streamed (``_stream.stream_lines``), its files read as ``load_corpus`` reads them
(``reader.py``: a table's ``text`` column, a text file's lines): statistics, fingerprint, deterministic
``max_bytes`` sampling, held-out lines (returned by ``train_with_heldout`` for a fertility check), long
lines split into chunks (counted, never dropped). What it does not do: encode/decode/save
(``tokenizer.py``) or measure fertility (``tokenloom.fertility.heldout`` writes ``fertility.csv``).
"""

from __future__ import annotations

import dataclasses
import logging
import platform
import time
from dataclasses import dataclass
from importlib.metadata import version
from typing import Unpack

from tokenloom._version import __version__
from tokenloom.corpus.stream import CorpusInput, StreamStats, TrainingCorpus
from tokenloom.errors import ConfigError, VocabSizeError
from tokenloom.text._engines import train_bytelevel, train_hf, train_spm
from tokenloom.text._fast_train import train_gigatoken, train_rustbpe
from tokenloom.text._parity import train_parity
from tokenloom.text.algorithms import AUTO_ENGINE, FAST_TRAINERS, resolve_engine
from tokenloom.text.tokenizer import Tokenizer
from tokenloom.text.train_config import TrainerConfig, TrainerSettings

__all__ = [
    "AUTO_ENGINE",
    "TrainResult",
    "TrainerConfig",
    "TrainerSettings",
    "configure",
    "resolve_engine",
    "train_tokenizer",
    "train_with_heldout",
]

log = logging.getLogger(__name__)


def _versions(engine: str) -> dict[str, str]:
    fast = {engine: version(engine)} if engine in FAST_TRAINERS else {}
    return {
        "tokenloom": __version__,
        "tokenizers": version("tokenizers"),
        "sentencepiece": version("sentencepiece"),
        **fast,
        "python": platform.python_version(),
    }


def _bytelevel_record(cfg: TrainerConfig) -> dict[str, object]:
    if cfg.algorithm not in ("bytelevel-bpe", "parity-bpe"):
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


def configure(config: TrainerConfig | None = None, **overrides: Unpack[TrainerSettings]) -> TrainerConfig:
    """``config`` (default: ``TrainerConfig()``) with ``overrides`` applied by ``dataclasses.replace`` (so
    validated as a whole). Given a ``config``, an override may only repeat one of its values: one that
    differs is a ConfigError (which of the two was meant?). A name that is no field is a TypeError."""
    names = [f.name for f in dataclasses.fields(TrainerConfig)]
    unknown = sorted(set(overrides) - set(names))
    if unknown:
        raise TypeError(
            f"unknown training setting {unknown[0]!r}; the settings are the TrainerConfig fields: "
            f"{', '.join(names)}"
        )
    settings = dataclasses.replace(config or TrainerConfig(), **overrides)
    if config is not None:
        for name, value in overrides.items():
            if getattr(settings, name) != getattr(config, name):
                raise ConfigError(
                    f"{name}={value!r} contradicts the given config's {name}={getattr(config, name)!r}; pass "
                    f"one of them, e.g. config=dataclasses.replace(config, {name}={value!r})"
                )
    return settings


def train_tokenizer(
    corpus: CorpusInput,
    *,
    config: TrainerConfig | None = None,
    quiet: bool = False,
    **overrides: Unpack[TrainerSettings],
) -> Tokenizer:
    """Train a tokenizer on ``corpus``: path(s), folder(s) or glob(s) (a str, a PathLike, or a list/tuple of
    them), or any other iterable of str (e.g. ``iter(texts)``; each item is split on newlines) or of dicts,
    a pandas DataFrame or a ``datasets`` dataset (trained on the ``text_column``). Files are read as
    :func:`~tokenloom.corpus.load.load_corpus` reads them: every format and codec, tables by their text column.

    The settings are :class:`TrainerConfig`'s fields, given as keywords (``vocab_size=4000``) or all at once
    as ``config=`` (keywords beside a config may only repeat its values, :func:`configure`).
    The returned :class:`Tokenizer` carries ``record`` (config, corpus statistics, versions, timing); the
    ``heldout`` share of lines is kept out of training (:func:`train_with_heldout` returns those lines, e.g.
    for ``tokenloom.fertility_by_source``). Progress bars are drawn on a terminal unless ``quiet``.

    ``algorithm="bytelevel-bpe"`` trains GPT-2 / tiktoken-style byte-level BPE (``engine``: "auto" —
    gigatoken for GPT-2's pattern, rustbpe for others, the ``tokenizers`` engine where a setting needs it —,
    "gigatoken", "rustbpe" or "hf"), lossless on every string: ``pretokenizer`` is "gpt2", "cl100k", "llama3" (the same regex as "cl100k"),
    "o200k" (default: unlike cl100k's ``\\p{L}+`` its letter classes include combining marks, so Devanagari or
    Tamil words are not cut at every vowel sign) or a regular expression of your own; ``split_digits=True``
    makes every digit its own piece (such a tokenizer cannot be saved in tiktoken's format, which has one
    regex). Save with ``formats=("tokenizer.json", "tiktoken")`` to get ``tokenizer.tiktoken`` too.

    A corpus too small for ``vocab_size`` (nothing more to learn) raises
    :class:`~tokenloom.errors.VocabSizeError` naming the size reached, for every engine and algorithm;
    ``allow_smaller_vocab=True`` keeps that smaller tokenizer instead, named after its real size, and logs a
    warning.
    """
    return train_with_heldout(corpus, configure(config, **overrides), quiet=quiet).tokenizer


def train_with_heldout(corpus: CorpusInput, config: TrainerConfig, *, quiet: bool = False) -> TrainResult:
    """:func:`train_tokenizer` with a config, returning the held-out lines too (see :class:`TrainResult`)."""
    cfg = config
    source = TrainingCorpus.of(corpus)  # paths are checked before any engine starts
    engine_name, why = cfg.engine_choice
    if cfg.algorithm == "bytelevel-bpe" and cfg.engine == "auto":
        log.info("bytelevel-bpe trains on %s (%s)", engine_name, why)
    start = time.perf_counter()
    if cfg.algorithm == "parity-bpe":
        train = train_parity
    elif cfg.algorithm == "bytelevel-bpe":
        train = {"gigatoken": train_gigatoken, "rustbpe": train_rustbpe}.get(engine_name, train_bytelevel)
    else:
        train = train_spm if engine_name == "sentencepiece" else train_hf
    tok, stats = train(source, cfg, quiet=quiet)
    seconds = time.perf_counter() - start
    if stats.split_lines:
        log.warning(
            "%d lines longer than %d bytes were split into %d chunks for training (nothing dropped)",
            stats.split_lines,
            cfg.max_line_bytes,
            stats.split_chunks,
        )
    tok.record = _record(cfg, stats, seconds)
    if tok.vocab_size < cfg.vocab_size:  # nothing more to learn: one rule for every engine
        where = f"{cfg.algorithm} on {engine_name}"
        if not cfg.allow_smaller_vocab:
            raise VocabSizeError(cfg.vocab_size, tok.vocab_size, where=where, tokenizer=tok)
        log.warning(
            "vocab_size=%d: %s reached only %d pieces (nothing more to learn from this text); keeping the "
            "smaller tokenizer %s (allow_smaller_vocab=True)",
            cfg.vocab_size, where, tok.vocab_size, tok.name,
        )  # fmt: skip
    return TrainResult(tok, stats.heldout if cfg.heldout > 0 else ())


def _record(cfg: TrainerConfig, stats: StreamStats, seconds: float) -> dict[str, object]:
    """What ``tokenloom.json`` says of a training: config, resolved settings, corpus, versions, timing."""
    return {
        "format": "tokenloom-tokenizer/1",
        "config": {
            **dataclasses.asdict(cfg),
            "special_tokens": list(cfg.special_tokens),
            "ratios": list(cfg.ratios),
        },
        "resolved": {
            "engine": cfg.resolved_engine,
            "engine_reason": cfg.engine_choice[1],
            "special_tokens": list(cfg.resolved_special_tokens),
            "threads": cfg.resolved_threads,
            "max_piece_length": cfg.resolved_max_piece_length,
            **_bytelevel_record(cfg),
        },
        "corpus": stats.summary(),
        "versions": _versions(cfg.resolved_engine),
        # volatile: the only part of the saved folder that differs between identical runs
        "training": {
            "seconds": round(seconds, 3),
            # throughput of what the engine trained on (a max_bytes sample, held-out lines excluded)
            "mb_per_s": round(stats.train_bytes / 1e6 / max(seconds, 1e-9), 3),
        },
    }
