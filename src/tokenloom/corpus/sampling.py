"""Language-aware training samples: each language's share of a byte budget, drawn deterministically across
the whole corpus in two passes.

Used when a training asks for ``max_bytes``, ``language_sampling`` other than 1 or ``parity-bpe``
(otherwise ``stream.stream_lines`` streams the corpus once):

1. **census** — read every line once (the corpus plan, ``tasks.read_task``, as every other consumer), with its language: a table's
   ``lang`` / ``language`` column (with ``script`` / ``language_script`` when given separately), else a
   FLORES-style file name ``<lang>_<Script>.txt``. Per language it keeps the UTF-8 size of every non-empty
   line (4 bytes a line, never the text), after the held-out draw. The read statistics and fingerprint
   cover the whole corpus.
2. **shares** — the budget ``B`` (``max_bytes``, at most the corpus; a larger one is the whole corpus, with
   a note saying what was drawn: all of it, or each language's bytes used of available) is split as ``t_l = B * n_l**alpha / sum_k n_k**alpha`` (``n_l``: bytes available). A language
   whose share exceeds its text is repeated (whole passes, then a sample), as sampling languages with a
   temperature does; ``alpha=1`` without a budget is the corpus as it is.
3. **draw** — per language, a random permutation of its lines (``numpy`` PCG64 seeded with the seed and
   the language's rank) and the prefix whose bytes come closest to the remainder of ``t_l``: every file
   and shard contributes, not the first bytes read, and the bytes drawn are within one line of ``t_l``.
4. **second pass** — read again and yield the drawn lines (each as often as drawn), split at
   ``max_line_bytes`` like the single-pass stream.

Unlabelled lines are one group (``"und"``) for a plain budget; ``language_sampling`` and ``parity-bpe``
need every line labelled and say which file is not. What it does not do: train (``_engines.py``,
``_parity.py``).
"""

from __future__ import annotations

import hashlib
import logging
import random
from array import array
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from tokenloom.corpus.parts import UNLABELLED
from tokenloom.corpus.records import Columns, SourceStats
from tokenloom.corpus.stream import MAX_HELDOUT, Spread, StreamStats, TrainingCorpus, split_long, stream_lines
from tokenloom.errors import CorpusError

if TYPE_CHECKING:
    from tokenloom.text.train_config import TrainerConfig

__all__ = [
    "UNLABELLED", "Draw", "language_shares", "needs_census", "sampled_lines", "texts_only",
    "training_lines",
]  # fmt: skip

log = logging.getLogger(__name__)


def needs_census(cfg: TrainerConfig) -> bool:
    """Whether training reads the corpus in two passes (this module) rather than once (``stream``)."""
    return cfg.max_bytes is not None or cfg.language_sampling != 1.0 or cfg.algorithm == "parity-bpe"


@dataclass
class _Census:
    """Pass 1: per language the size of each non-empty line (0: held out), the held-out lines, the stats."""

    sizes: dict[str, array[int]] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)  # a file of each language, for messages
    heldout: list[tuple[str, str]] = field(default_factory=list)
    held: int = 0
    stats: SourceStats = field(default_factory=SourceStats)
    fingerprint: str = ""
    unlabelled: str | None = None  # a source with unlabelled lines


def _label(label: str | None, source: str, census: _Census) -> str:
    if label is None:
        census.unlabelled = census.unlabelled or source
        return UNLABELLED
    return label


def _census(corpus: TrainingCorpus, cfg: TrainerConfig) -> _Census:
    census, digest, holder = _Census(), hashlib.sha256(), random.Random(cfg.seed + 1)
    columns = Columns(cfg.text_column)
    for source, label, line in corpus.labelled_lines(cfg.errors, census.stats, columns):
        encoded = line.encode("utf-8")
        digest.update(encoded + b"\n")
        lang = _label(label, source, census)
        sizes = census.sizes.get(lang)
        if sizes is None:
            sizes = census.sizes[lang] = array("I")
            census.sources[lang] = source
        if not line:
            continue
        if cfg.heldout > 0.0 and holder.random() < cfg.heldout:
            census.held += 1
            if len(census.heldout) < MAX_HELDOUT:
                census.heldout.append((source, line))
            sizes.append(0)
            continue
        sizes.append(len(encoded))
    census.fingerprint = digest.hexdigest()
    return census


def language_shares(available: dict[str, int], alpha: float, budget: int) -> dict[str, int]:
    """Bytes of each language: ``budget * n_l**alpha / sum_k n_k**alpha`` rounded (``alpha=0``: uniform)."""
    weights = {lang: float(n) ** alpha if n > 0 else 0.0 for lang, n in available.items()}
    total = sum(weights.values())
    return {lang: round(budget * w / total) for lang, w in weights.items()}


@dataclass(frozen=True)
class Draw:
    """What was drawn of one language: whole passes over its lines, and the lines of one more partial pass."""

    copies: int
    extra: np.ndarray  # uint8 per line: 1 = drawn once more
    available: int
    used: int


def _draw(sizes: np.ndarray, target: int, rng: np.random.Generator) -> Draw:
    """Lines of one language whose bytes come closest to ``target`` (whole passes, then a random prefix)."""
    available = int(sizes.sum())
    copies, rest = divmod(target, available) if available else (0, 0)
    extra = np.zeros(len(sizes), dtype=np.uint8)
    if rest:
        order = rng.permutation(len(sizes))  # (lines,)
        cum = np.cumsum(sizes[order], dtype=np.int64)  # (lines,) bytes of each prefix
        k = int(np.searchsorted(cum, rest))  # cum[k-1] < rest <= cum[k]
        below = int(cum[k - 1]) if k else 0
        take = k + 1 if k < len(cum) and int(cum[k]) - rest < rest - below else k
        extra[order[:take]] = 1
        rest = int(cum[take - 1]) if take else 0
    return Draw(copies, extra, available, copies * available + rest)


def _plan(census: _Census, cfg: TrainerConfig, corpus: TrainingCorpus) -> dict[str, Draw]:
    labelled = cfg.language_sampling != 1.0 or cfg.algorithm == "parity-bpe"
    if labelled and census.unlabelled is not None:
        raise CorpusError(
            f"{census.unlabelled} has lines with no language: name files <lang>_<Script>.txt (eng_Latn.txt) or "
            "give tables a lang column — language_sampling and parity-bpe sample by language"
        )
    arrays = {lang: np.frombuffer(s, dtype=np.uint32).astype(np.int64) for lang, s in census.sizes.items()}
    available = {lang: int(a.sum()) for lang, a in arrays.items()}
    empty = sorted(lang for lang, n in available.items() if n == 0)
    if labelled and empty and len(empty) < len(available):
        raise CorpusError(
            f"language {empty[0]} ({census.sources[empty[0]]}) has no text to train on; add text or leave it out"
        )
    total = sum(available.values())
    budget = total if cfg.max_bytes is None else min(cfg.max_bytes, total)
    if budget == total and cfg.language_sampling == 1.0:
        plan = {
            lang: Draw(1, np.zeros(len(a), np.uint8), available[lang], available[lang])
            for lang, a in arrays.items()
        }
    else:
        targets = language_shares(available, cfg.language_sampling, budget)
        plan = {
            lang: _draw(arrays[lang], targets[lang], np.random.default_rng([cfg.seed, rank]))
            for rank, lang in enumerate(sorted(arrays))
        }
    if cfg.max_bytes is not None and cfg.max_bytes > total:
        log.warning(
            "max_bytes=%d is more than the %d training bytes of corpus %s: %s",
            cfg.max_bytes, total, corpus.name, _drawn(plan, cfg.language_sampling),
        )  # fmt: skip
    return plan


def _drawn(plan: dict[str, Draw], alpha: float) -> str:
    """What a budget over the whole corpus trains on: all of it, or the per-language draw that shares it."""
    if all(d.used == d.available for d in plan.values()):
        return "training on all of it"
    each = ", ".join(f"{lang} {d.used:,} of {d.available:,}" for lang, d in sorted(plan.items()))
    return (
        f"the corpus is resampled by language_sampling={alpha:g}, {sum(d.used for d in plan.values()):,} bytes "
        f"drawn (bytes used of available per language: {each})"
    )


def sampled_lines(
    corpus: TrainingCorpus, cfg: TrainerConfig, *, quiet: bool = True
) -> Generator[tuple[str, str], None, StreamStats]:
    """(language, line) of the drawn training lines (module docstring); returns the :class:`StreamStats`,
    whose ``languages`` say per language the bytes available and used."""
    if (
        corpus.texts is not None and iter(corpus.texts) is corpus.texts
    ):  # read twice: keep a one-shot iterator
        corpus = TrainingCorpus(texts=list(corpus.texts))
    census = _census(corpus, cfg)
    plan = _plan(census, cfg, corpus)
    spread, limit = Spread(cfg.verify_sample), cfg.max_line_bytes
    position = dict.fromkeys(plan, 0)
    lines = size = split = chunks = 0
    for _, label, line in corpus.labelled_lines(cfg.errors, SourceStats(), Columns(cfg.text_column)):
        if not line:
            continue
        lang = label if label is not None else UNLABELLED
        draw, i = plan[lang], position[lang]
        position[lang] = i + 1
        times = (draw.copies + int(draw.extra[i])) if census.sizes[lang][i] else 0
        if not times:
            continue
        pieces = split_long(line, limit)
        if len(pieces) > 1:
            split, chunks = split + times, chunks + times * len(pieces)
        for _ in range(times):
            for piece in pieces:
                spread.add(piece)
                lines, size = lines + 1, size + len(piece.encode("utf-8"))
                yield lang, piece
    if lines == 0:
        if census.held:
            raise CorpusError(
                f"corpus {corpus.name}: every non-empty line was held out; pass heldout=0 for tiny corpora"
            )
        raise CorpusError(f"corpus {corpus.name} is empty: no non-empty lines to train on")
    languages = {
        lang: {"bytes_available": d.available, "bytes_used": d.used} for lang, d in sorted(plan.items())
    }
    return StreamStats(
        census.stats.as_dict(), tuple(p.name for p in corpus.files), census.fingerprint, lines, size, split,
        chunks, census.held, tuple(census.heldout), tuple(spread.items[: spread.size]), languages,
    )  # fmt: skip


def texts_only(pairs: Generator[tuple[str, str], None, StreamStats]) -> Generator[str, None, StreamStats]:
    """The lines of :func:`sampled_lines` without their languages (for single-stream engines)."""
    while True:
        try:
            _, line = next(pairs)
        except StopIteration as stop:
            stats: StreamStats = stop.value
            return stats
        yield line


def training_lines(
    corpus: TrainingCorpus, cfg: TrainerConfig, *, quiet: bool
) -> Generator[str, None, StreamStats]:
    """The lines an engine trains on: drawn by language (:func:`sampled_lines`) when the config asks for a
    budget or language sampling, else the corpus streamed once (``stream.stream_lines``)."""
    if needs_census(cfg):
        return texts_only(sampled_lines(corpus, cfg, quiet=quiet))
    return stream_lines(corpus, cfg, quiet=quiet)
