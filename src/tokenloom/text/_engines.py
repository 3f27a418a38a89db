"""The engine back ends of ``train_tokenizer``: sentencepiece and HF ``tokenizers`` training with the
equivalent settings described in ``train.py``, byte-level BPE on HF ``tokenizers`` (pre-tokenizer from
``bytelevel.py``), plus the engine-specific error translation.

What it does: turns a corpus (``corpus.stream.TrainingCorpus``, read by ``corpus.stream.stream_lines``) and a
``TrainerConfig`` into a :class:`~tokenloom.text.tokenizer.Tokenizer` and the stream's statistics; an
exception raised while streaming the corpus (invalid UTF-8, a corpus with nothing to train on) always
surfaces, even when the engine calls the stream from native code; engine errors about the
vocabulary size become ``ConfigError`` naming the bound (``VocabSizeError`` when the corpus gives fewer pieces
than asked: ``train.py`` checks the other engines' results the same way). What it does not do: read files,
record statistics or save.
"""

from __future__ import annotations

import functools
import io
import logging
import re
import tempfile
import unicodedata
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokenloom._progress import show_progress
from tokenloom.corpus.records import Columns, Errors, SourceStats
from tokenloom.corpus.sampling import training_lines
from tokenloom.corpus.stream import StreamStats, TrainingCorpus
from tokenloom.errors import ConfigError, CorpusError, VocabSizeError
from tokenloom.text._coverage import char_counts, covering_alphabet
from tokenloom.text._hf_build import META, byte_fallback_model, decoder
from tokenloom.text.backends.hf import HFBackend
from tokenloom.text.backends.sentencepiece import SentencePieceBackend
from tokenloom.text.bytelevel import build_pre_tokenizer
from tokenloom.text.tokenizer import Tokenizer

if TYPE_CHECKING:
    from tokenloom.text.train_config import TrainerConfig

__all__ = ["Trained", "TrainingFeed", "bytelevel_tokenizer", "train_bytelevel", "train_hf", "train_spm"]

log = logging.getLogger(__name__)

_SPM_META = {"<unk>": "unk", "<s>": "bos", "</s>": "eos", "<pad>": "pad"}


@functools.cache
def _nfc_rule_tsv() -> str:
    """A sentencepiece normalization rule table approximating NFC (see module docstring)."""
    rows = []
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        ch = chr(cp)
        nfc = unicodedata.normalize("NFC", ch)
        if nfc != ch:
            rows.append((ch, nfc))  # singletons and compatibility-excluded characters
        nfd = unicodedata.normalize("NFD", ch)
        if nfd != ch and nfc == ch:
            rows.append((nfd, ch))  # a decomposed sequence composes back
    return "".join(
        " ".join(f"{ord(c):X}" for c in src) + "\t" + " ".join(f"{ord(c):X}" for c in dst) + "\n"
        for src, dst in rows
    )


Trained = tuple[Tokenizer, StreamStats]


class TrainingFeed:
    """The training lines, for an engine that calls them from native code: iterated once, it keeps the
    exception raised while streaming (an engine may swallow it) and the stream's statistics at its end."""

    def __init__(self, lines: Generator[str, None, StreamStats]) -> None:
        self._lines: Generator[str, None, StreamStats] | None = lines
        self.error: BaseException | None = None
        self._stats: StreamStats | None = None

    def __iter__(self) -> Iterator[str]:
        lines, self._lines = self._lines, None
        if lines is None:
            raise RuntimeError("the training lines are read once; this engine asked for them twice")
        try:
            self._stats = yield from lines
        except BaseException as exc:
            self.error = exc
            raise

    def raise_error(self) -> None:
        """Raise what the stream raised, if anything (never train on part of a corpus silently)."""
        if self.error is not None:
            raise self.error from None  # the stream's error, not the engine's report of it

    def stats(self) -> StreamStats:
        """The statistics of the whole corpus, after the engine read every line."""
        self.raise_error()
        if self._stats is None:
            raise RuntimeError("the engine stopped before the end of the corpus")
        return self._stats


def train_spm(corpus: TrainingCorpus, cfg: TrainerConfig, *, quiet: bool) -> Trained:
    import sentencepiece as spm

    names = cfg.resolved_special_tokens
    options: dict[str, Any] = {
        "model_type": cfg.algorithm,
        "vocab_size": cfg.vocab_size,
        "character_coverage": cfg.character_coverage,
        "byte_fallback": cfg.byte_fallback,
        "add_dummy_prefix": False,
        "remove_extra_whitespaces": False,
        "allow_whitespace_only_pieces": True,
        "split_by_whitespace": cfg.split_words,
        "max_sentence_length": cfg.max_line_bytes,
        "max_sentencepiece_length": cfg.resolved_max_piece_length,
        "input_sentence_size": 0,  # use every streamed line (sampling is ours: max_bytes)
        "shuffle_input_sentence": False,
        "num_threads": cfg.resolved_threads,
        "required_chars": cfg.required_chars,
        "hard_vocab_limit": not cfg.allow_smaller_vocab,  # False: the engine's own soft limit, a smaller model
        "minloglevel": 2,  # the engine's trainer log stays quiet, --verbose or not (tokenloom logs its own)
    }
    for meta in _SPM_META.values():
        options[f"{meta}_id"] = -1
    controls = []
    for i, token in enumerate(names):
        special = _SPM_META.get(token)
        if special:
            options[f"{special}_id"], options[f"{special}_piece"] = i, token
        else:
            controls.append(token)
    if controls:
        options["control_symbols"] = controls
    spm.set_random_generator_seed(cfg.seed)
    feed = TrainingFeed(training_lines(corpus, cfg, quiet=quiet))
    model = io.BytesIO()
    with tempfile.TemporaryDirectory(prefix="tokenloom-spm-") as tmp:
        if cfg.normalization == "nfc":
            rule = Path(tmp) / "nfc.tsv"
            rule.write_text(_nfc_rule_tsv(), encoding="utf-8")
            options["normalization_rule_tsv"] = str(rule)
        else:
            options["normalization_rule_name"] = {"none": "identity", "nfkc": "nfkc"}[cfg.normalization]
        try:
            spm.SentencePieceTrainer.train(sentence_iterator=iter(feed), model_writer=model, **options)
        except Exception as exc:
            feed.raise_error()
            raise _spm_error(exc, cfg) from None
    stats = feed.stats()
    data = model.getvalue()
    sp = spm.SentencePieceProcessor()
    sp.LoadFromSerializedProto(data)
    tok = Tokenizer(
        name=f"{cfg.algorithm}-sentencepiece-{sp.get_piece_size()}",
        backend=SentencePieceBackend(sp, data),
        verify_texts=stats.sample,
    )
    return tok, stats


def _spm_error(exc: Exception, cfg: TrainerConfig) -> Exception:
    message = str(exc)
    small = re.search(r"smaller than required_chars\. (\d+) vs (\d+)", message)
    if small:
        return ConfigError(
            f"vocab_size={cfg.vocab_size} is too small for this corpus: sentencepiece needs at least "
            f"{small.group(2)} (special tokens, byte pieces and the characters covering "
            f"character_coverage={cfg.character_coverage}); raise vocab_size or lower character_coverage"
        )
    high = re.search(r"Vocabulary size too high \((\d+)\)\. Please set it to a value <= (\d+)", message)
    if high:  # the engine's hard limit (allow_smaller_vocab=False): the same error as the other engines give
        return VocabSizeError(cfg.vocab_size, int(high.group(2)), where=f"{cfg.algorithm} on sentencepiece")
    return CorpusError(f"sentencepiece training failed: {message.strip().splitlines()[-1]}")


def _batches(lines: Any, size: int = 1000) -> Iterator[list[str]]:
    """Lists of lines: HF accepts batches, which saves a Python → Rust crossing per line."""
    batch: list[str] = []
    for line in lines:
        batch.append(line)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _alphabet_too_large(corpus: TrainingCorpus, cfg: TrainerConfig) -> ConfigError:
    """HF's UnigramTrainer needs a piece for every distinct character: say how many (files are re-read)."""

    chars = set(cfg.required_chars)
    errors: Errors = "skip" if cfg.errors == "skip" else "replace"  # a message: never raise while counting
    for _, line in corpus.lines(errors, SourceStats(), Columns(cfg.text_column)):
        chars.update(line)
    fixed = len(cfg.resolved_special_tokens) + (256 if cfg.byte_fallback else 0)
    need = f"at least {fixed + len(chars) + 1}" if corpus.files else "more"
    return ConfigError(
        f"vocab_size={cfg.vocab_size} is too small for this corpus: HF's unigram trainer keeps every distinct "
        f"character as a piece ({len(chars)} here, when read from files) besides {fixed} special and byte pieces; "
        f"raise vocab_size to {need}, or use the sentencepiece engine, whose character_coverage leaves rare "
        "characters to byte fallback"
    )


def _alphabet_limit(corpus: TrainingCorpus, cfg: TrainerConfig) -> dict[str, Any]:
    """``limit_alphabet`` for ``character_coverage`` (``_coverage.py``; none at 1.0: every character)."""
    if cfg.character_coverage >= 1.0:
        return {}
    lines = TrainingFeed(training_lines(corpus, cfg, quiet=True))
    counts = char_counts(lines, cfg.normalization)
    lines.stats()  # the stream's errors, if any
    return {"limit_alphabet": len(covering_alphabet(counts, cfg.character_coverage, cfg.required_chars))}


def train_hf(corpus: TrainingCorpus, cfg: TrainerConfig, *, quiet: bool) -> Trained:
    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers import models, normalizers, pre_tokenizers, trainers

    names = list(cfg.resolved_special_tokens)
    budget = cfg.vocab_size - (256 if cfg.byte_fallback else 0)
    alphabet = sorted(cfg.required_chars)
    if cfg.algorithm == "bpe":
        raw = HFTokenizer(models.BPE(unk_token="<unk>"))
        if cfg.character_coverage < 1.0 and corpus.texts is not None and iter(corpus.texts) is corpus.texts:
            corpus = TrainingCorpus(texts=list(corpus.texts))  # read twice (the alphabet, then the training)
        trainer: trainers.Trainer = trainers.BpeTrainer(
            vocab_size=budget,
            special_tokens=names,
            initial_alphabet=alphabet,
            **_alphabet_limit(corpus, cfg),
            max_token_length=cfg.resolved_max_piece_length,
            show_progress=show_progress(quiet),
        )
    else:
        raw = HFTokenizer(models.Unigram())
        trainer = trainers.UnigramTrainer(
            vocab_size=budget,
            special_tokens=names,
            unk_token="<unk>",
            initial_alphabet=alphabet,
            max_piece_length=cfg.resolved_max_piece_length,
            show_progress=show_progress(quiet),
        )
    normalizer = {"none": None, "nfc": normalizers.NFC(), "nfkc": normalizers.NFKC()}[cfg.normalization]
    pre = pre_tokenizers.Metaspace(replacement=META, prepend_scheme="never", split=cfg.split_words)
    if normalizer is not None:
        raw.normalizer = normalizer
    raw.pre_tokenizer = pre
    stats = _train_raw(raw, trainer, corpus, cfg, quiet=quiet)
    model = byte_fallback_model(raw, special_tokens=names, byte_fallback=cfg.byte_fallback, unk_token="<unk>")
    hf = HFTokenizer(model)
    if normalizer is not None:
        hf.normalizer = normalizer
    hf.pre_tokenizer = pre
    hf.decoder = decoder()
    size = hf.get_vocab_size(with_added_tokens=True)
    if size > cfg.vocab_size:
        raise ConfigError(
            f"vocab_size={cfg.vocab_size} is too small for this corpus: the special tokens, byte pieces and the "
            f"corpus alphabet already need {size}; raise vocab_size to at least {size} or lower character_coverage="
            f"{cfg.character_coverage} (rarer characters are left to byte fallback)"
        )
    return Tokenizer(name=f"{cfg.algorithm}-hf-{size}", backend=HFBackend(hf)), stats


def _train_raw(
    raw: Any, trainer: Any, corpus: TrainingCorpus, cfg: TrainerConfig, *, quiet: bool
) -> StreamStats:
    """``raw.train_from_iterator`` over the corpus's lines, engine errors translated (see module doc)."""
    feed = TrainingFeed(training_lines(corpus, cfg, quiet=quiet))
    try:
        raw.train_from_iterator(_batches(feed), trainer=trainer)
    except BaseException as exc:
        feed.raise_error()
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise
        if "not large enough to contain all chars" in str(exc):
            raise _alphabet_too_large(corpus, cfg) from None
        raise CorpusError(f"tokenizers training failed: {str(exc).strip()[:300]}") from None
    return feed.stats()


def bytelevel_tokenizer(cfg: TrainerConfig) -> Any:
    """An untrained byte-level BPE ``tokenizers.Tokenizer`` with ``cfg``'s normalizer, pre-tokenizer and the
    byte-level decoder; ``ignore_merges`` makes a pre-token that is in the vocabulary one token."""
    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers import decoders, models, normalizers

    hf = HFTokenizer(models.BPE(ignore_merges=True))
    normalizer = {"none": None, "nfc": normalizers.NFC(), "nfkc": normalizers.NFKC()}[cfg.normalization]
    if normalizer is not None:
        hf.normalizer = normalizer
    hf.pre_tokenizer = build_pre_tokenizer(cfg.resolved_pretokenizer)
    hf.decoder = decoders.ByteLevel()
    return hf


def train_bytelevel(corpus: TrainingCorpus, cfg: TrainerConfig, *, quiet: bool) -> Trained:
    """Byte-level BPE (``bytelevel.py``): special tokens get ids 0..k-1, the 256 byte characters k..k+255,
    merge ``i`` id ``k + 256 + i``; ``ignore_merges`` makes a pre-token that is in the vocabulary one token,
    as tiktoken does."""
    from tokenizers import pre_tokenizers, trainers

    hf = bytelevel_tokenizer(cfg)
    limit = cfg.resolved_max_piece_length  # bytes; None: no limit
    trainer = trainers.BpeTrainer(
        vocab_size=cfg.vocab_size,
        special_tokens=list(cfg.resolved_special_tokens),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=show_progress(quiet),
        max_token_length=None if limit is None else limit + 1,  # the trainer keeps pieces shorter than this
    )
    stats = _train_raw(hf, trainer, corpus, cfg, quiet=quiet)
    size = hf.get_vocab_size(with_added_tokens=True)  # smaller when no pair was left to merge (train.py)
    return Tokenizer(
        name=f"{cfg.algorithm}-hf-{size}", backend=HFBackend(hf), verify_texts=stats.sample
    ), stats
