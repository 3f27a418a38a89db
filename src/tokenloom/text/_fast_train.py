"""Byte-level BPE on the fast trainers: gigatoken (GPT-2's split pattern) and rustbpe (any split pattern).

Both learn merges from the same stream of training lines the tokenizers engine would get
(``_sampling.training_lines``: sampling, held-out lines, long lines in chunks), and both results become an
ordinary tokenloom tokenizer by :func:`bytelevel_from_merges`: the Hugging Face trainer's layout — special
tokens ``0..k-1``, the 256 byte characters ``k..k+255`` in character order, merge ``i`` id
``k + 256 + i`` — with the config's split pattern and decoder. That tokenizer is encoded by the
tokenizers engine, saved, exported (tokenizer.json, tiktoken) and verified like every other.

- gigatoken's ``train_bpe`` splits text with GPT-2's pattern only and breaks ties between equally frequent
  pairs as the Hugging Face trainer does: its merges are the HF engine's, in order. Lines are handed over
  as one buffer separated by the byte 0xFF, which UTF-8 text never contains, so no pre-token spans two lines.
- rustbpe's trainer takes any pattern (the ``regex`` crate's fancy-regex, which reads tokenloom's named
  patterns as Oniguruma does). It breaks ties another way, so its merges are the HF engine's to within a
  few percent, in another order among equal counts; it returns tiktoken ranks, whose merges
  :func:`~tokenloom.text.ranks.recover_merges` reads back.

Neither normalizes, splits digits apart or limits piece length: ``algorithms.trainer_for`` sends such
configurations to the tokenizers engine. What it does not do: choose the trainer (``algorithms``) or check
exports (``tokenizer.py``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from tokenloom.corpus.sampling import training_lines
from tokenloom.corpus.stream import TrainingCorpus
from tokenloom.errors import ConfigError, CorpusError, TokenizerError
from tokenloom.text._engines import Trained, TrainingFeed, bytelevel_tokenizer
from tokenloom.text.backends.hf import HFBackend
from tokenloom.text.ranks import BYTE_CHARS, recover_merges, spell
from tokenloom.text.tokenizer import Tokenizer

if TYPE_CHECKING:
    from tokenloom.text.train_config import TrainerConfig

__all__ = ["bytelevel_from_merges", "quiet_native_output", "train_gigatoken", "train_rustbpe"]

_SEPARATOR = b"\xff"  # between training lines: never a byte of UTF-8 text


def bytelevel_from_merges(merges: Sequence[tuple[bytes, bytes]], cfg: TrainerConfig) -> Any:
    """A trained byte-level BPE ``tokenizers.Tokenizer`` with the Hugging Face trainer's layout (module
    docstring); TokenizerError when a merge joins pieces that are not in the vocabulary yet."""
    from tokenizers import models

    specials = list(cfg.resolved_special_tokens)
    vocab = {piece: i for i, piece in enumerate(specials + sorted(BYTE_CHARS.values()))}
    pairs = []
    for number, (left, right) in enumerate(merges):
        a, b = spell(left), spell(right)
        if a not in vocab or b not in vocab:
            raise TokenizerError(f"merge #{number} ({left!r}, {right!r}) joins a piece not learned before it")
        vocab.setdefault(a + b, len(vocab))
        pairs.append((a, b))
    hf = bytelevel_tokenizer(cfg)
    hf.model = models.BPE(vocab, pairs, ignore_merges=True)
    hf.add_special_tokens(specials)
    return hf


def _import(name: str) -> Any:
    try:
        return __import__(name)
    except ImportError:
        raise ConfigError(
            f"engine={name!r} needs the {name} package, which is not installed; pip install {name} (a "
            "dependency of tokenloom that this environment lacks), or pass engine='hf'"
        ) from None


@contextlib.contextmanager
def quiet_native_output() -> Iterator[None]:
    """gigatoken's trainer prints its progress to the process's stdout and stderr (file descriptors 1 and
    2, not Python's streams): send both to /dev/null meanwhile; its errors still come back as exceptions."""
    try:
        saved = [os.dup(1), os.dup(2)]
    except OSError:  # no such descriptors (an embedded interpreter): nothing to silence
        yield
        return
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 1)
            os.dup2(null.fileno(), 2)
            yield
    finally:
        for fd, copy in zip((1, 2), saved, strict=True):
            os.dup2(copy, fd)
            os.close(copy)


def _finish(
    merges: Sequence[tuple[bytes, bytes]], feed: TrainingFeed, cfg: TrainerConfig, engine: str
) -> Trained:
    stats = feed.stats()
    hf = bytelevel_from_merges(merges, cfg)
    size = hf.get_vocab_size(with_added_tokens=True)
    tok = Tokenizer(name=f"{cfg.algorithm}-{engine}-{size}", backend=HFBackend(hf), verify_texts=stats.sample)
    return tok, stats


def _budget(cfg: TrainerConfig) -> int:
    """The trainers' vocabulary: 256 bytes + merges (the special tokens are added afterwards)."""
    return cfg.vocab_size - len(cfg.resolved_special_tokens)


def train_gigatoken(corpus: TrainingCorpus, cfg: TrainerConfig, *, quiet: bool) -> Trained:
    """Byte-level BPE with GPT-2's split pattern on gigatoken's trainer (module docstring)."""
    gigatoken = _import("gigatoken")
    feed = TrainingFeed(training_lines(corpus, cfg, quiet=quiet))
    data = _SEPARATOR.join(line.encode("utf-8") for line in feed)
    feed.raise_error()
    try:
        with quiet_native_output():
            _, merges = gigatoken.train_bpe(data, _budget(cfg), [], separator=_SEPARATOR)
    except BaseException as exc:  # a Rust panic is a BaseException
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise
        raise CorpusError(f"gigatoken training failed: {str(exc).strip()[:300]}") from None
    return _finish([(bytes(a), bytes(b)) for a, b in merges], feed, cfg, "gigatoken")


def train_rustbpe(corpus: TrainingCorpus, cfg: TrainerConfig, *, quiet: bool) -> Trained:
    """Byte-level BPE with any split pattern on rustbpe's trainer (module docstring)."""
    rustbpe = _import("rustbpe")
    feed = TrainingFeed(training_lines(corpus, cfg, quiet=quiet))
    trainer = rustbpe.Tokenizer()
    try:
        trainer.train_from_iterator(iter(feed), _budget(cfg), pattern=cfg.resolved_pretokenizer.pattern)
    except BaseException as exc:
        feed.raise_error()
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise
        raise CorpusError(f"rustbpe training failed: {str(exc).strip()[:300]}") from None
    ranks = {bytes(token): int(rank) for token, rank in trainer.get_mergeable_ranks()}
    return _finish(recover_merges(ranks), feed, cfg, "rustbpe")
