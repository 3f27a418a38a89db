"""Parity-aware byte-level BPE (``algorithm="parity-bpe"``) on the ``tokenizers`` engine's
``ParityBpeTrainer`` (Foroutan et al. 2025): at each merge step the merge goes to the language that
currently compresses worst on a parallel development set (``dev``), or furthest below its target
(``ratios``).

The tokenizer is a byte-level BPE like ``bytelevel-bpe`` — the same pre-tokenizer (``bytelevel.py``), the
same layout (special tokens ``0..k-1``, the 256 byte characters, merge ``i`` at id ``k + 256 + i``), so it
is lossless on every string and exports to tiktoken's format — only the order of its merges differs.

What it does: one training iterator per language, from the language-labelled draw of ``corpus.sampling``
(FLORES-style files or a language column; ``language_sampling`` and ``max_bytes`` apply), held in memory
per language (the engine counts words per language); the dev set read by the same reader and checked:
its languages are the training languages and every language has the same number of lines (parallel).
What it does not do: evaluate (``tokenloom.fertility``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Generator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokenloom._progress import show_progress
from tokenloom.corpus.records import Columns, SourceStats
from tokenloom.corpus.sampling import sampled_lines
from tokenloom.corpus.stream import StreamStats, TrainingCorpus
from tokenloom.errors import ConfigError, CorpusError
from tokenloom.text._engines import bytelevel_tokenizer
from tokenloom.text.backends.hf import HFBackend
from tokenloom.text.tokenizer import Tokenizer

if TYPE_CHECKING:
    from tokenloom.text.train_config import TrainerConfig

__all__ = ["read_dev", "train_parity"]


def _by_language(
    pairs: Generator[tuple[str, str], None, StreamStats],
) -> tuple[dict[str, list[str]], StreamStats]:
    lines: dict[str, list[str]] = {}
    while True:
        try:
            lang, line = next(pairs)
        except StopIteration as stop:
            return lines, stop.value
        lines.setdefault(lang, []).append(line)


def read_dev(
    dev: str, cfg: TrainerConfig, languages: list[str]
) -> tuple[dict[str, list[str]], dict[str, Any]]:
    """The dev set's lines per language, checked against the training ``languages`` (module docstring),
    and its record (files, languages, lines per language, fingerprint)."""
    if not set("*?[") & set(dev) and not Path(dev).exists():  # a glob says itself what it matches
        raise CorpusError(
            f"dev folder {dev!r} does not exist (dev=, --dev); give the parallel development set — a folder "
            "of <lang>_<Script>.txt files, one sentence per line, in the training languages — and check the "
            "spelling and the working folder"
        )
    corpus = TrainingCorpus.of(dev)
    lines: dict[str, list[str]] = {}
    digest = hashlib.sha256()
    for source, lang, line in corpus.labelled_lines(cfg.errors, SourceStats(), Columns(cfg.text_column)):
        if lang is None:
            raise CorpusError(
                f"dev set {dev}: {source} has lines with no language; name files <lang>_<Script>.txt or give "
                "a lang column, as in the training corpus"
            )
        lines.setdefault(lang, []).append(line)
        digest.update(f"{lang}\t{line}\n".encode())
    missing = sorted(set(languages) - set(lines))
    extra = sorted(set(lines) - set(languages))
    if missing or extra:
        what = f"lacks {', '.join(missing)} of the training languages" if missing else ""
        what += (" and " if missing and extra else "") + (
            f"has {', '.join(extra)}, not in training" if extra else ""
        )
        raise ConfigError(
            f"dev set {dev} {what}; give the dev set and the training corpus the same languages"
        )
    counts = {lang: len(texts) for lang, texts in lines.items()}
    empty = [lang for lang, texts in lines.items() if not any(texts)]
    if empty:
        raise CorpusError(f"dev set {dev}: language {empty[0]} has no text; give it the parallel lines")
    if len(set(counts.values())) > 1:
        (short, n_short), (long, n_long) = min(counts.items(), key=_count), max(counts.items(), key=_count)
        raise CorpusError(
            f"dev set {dev} is not parallel: {long} has {n_long} lines, {short} {n_short}; line i must be the "
            "same sentence in every language (cut every file to the same lines)"
        )
    record = {
        "files": [p.name for p in corpus.files],
        "languages": sorted(lines),
        "lines_per_language": next(iter(counts.values())),
        "fingerprint": f"sha256:{digest.hexdigest()}",
    }
    return lines, record


def _count(item: tuple[str, int]) -> tuple[int, str]:
    return item[1], item[0]


def _targets(cfg: TrainerConfig, languages: list[str]) -> list[float]:
    ratios = cfg.resolved_ratios
    if not ratios:
        raise ConfigError(
            "algorithm='parity-bpe' needs dev= (a parallel development set, --dev CORPUS) or ratios= (a target "
            "per language, --ratio LANG=R); without either it stays close to plain BPE"
        )
    missing, extra = sorted(set(languages) - set(ratios)), sorted(set(ratios) - set(languages))
    if missing or extra:
        raise ConfigError(
            f"ratios name {', '.join(extra) or 'no extra language'} and lack {', '.join(missing) or 'none'} of "
            f"the training languages {', '.join(languages)}; give one LANG=R per training language"
        )
    return [ratios[lang] for lang in languages]


def _relayout(hf: Any, specials: list[str]) -> Any:
    """Specials ``0..k-1``, the 256 byte characters in the engine's order, merge ``i`` at ``k + 256 + i``."""
    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers import models

    data = json.loads(hf.to_str())
    pairs = [m.split(" ", 1) if isinstance(m, str) else m for m in data["model"]["merges"]]
    merges = [(str(a), str(b)) for a, b in pairs]
    merged = ["".join(m) for m in merges]
    fixed = set(specials) | set(merged)
    alphabet = [p for p, _ in sorted(data["model"]["vocab"].items(), key=lambda kv: kv[1]) if p not in fixed]
    order = specials + alphabet + merged
    if len(set(order)) != len(order):
        raise AssertionError("the parity trainer produced a piece twice")
    out = HFTokenizer(models.BPE({p: i for i, p in enumerate(order)}, merges, ignore_merges=True))
    out.normalizer, out.pre_tokenizer, out.decoder = hf.normalizer, hf.pre_tokenizer, hf.decoder
    out.add_special_tokens(specials)
    return out


def train_parity(corpus: TrainingCorpus, cfg: TrainerConfig, *, quiet: bool) -> tuple[Tokenizer, StreamStats]:
    from tokenizers import pre_tokenizers, trainers

    by_lang, stats = _by_language(sampled_lines(corpus, cfg, quiet=quiet))
    languages = sorted(by_lang)
    dev, record = read_dev(cfg.dev, cfg, languages) if cfg.dev is not None else (None, {})
    specials = list(cfg.resolved_special_tokens)
    hf = bytelevel_tokenizer(cfg)
    limit = cfg.resolved_max_piece_length
    trainer = trainers.ParityBpeTrainer(
        num_merges=max(cfg.vocab_size - len(specials) - 256, 0),
        variant=cfg.variant,
        global_merges=cfg.global_merges,
        window_size=cfg.window_size,
        alpha=cfg.alpha,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        max_token_length=None if limit is None else limit + 1,  # as bytelevel-bpe (``_engines.py``)
        show_progress=show_progress(quiet),
    )
    train = [iter(by_lang[lang]) for lang in languages]
    if dev is not None:
        trainer.train_from_iterator(
            hf, train_iterators=train, dev_iterators=[iter(dev[lang]) for lang in languages]
        )
    else:
        trainer.train_from_iterator(hf, train_iterators=train, ratio=_targets(cfg, languages))
    hf = _relayout(hf, specials)
    size = hf.get_vocab_size(with_added_tokens=True)
    tok = Tokenizer(name=f"{cfg.algorithm}-hf-{size}", backend=HFBackend(hf), verify_texts=stats.sample)
    return tok, replace(stats, dev=record)
