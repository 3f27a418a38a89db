"""The training-line stream: a corpus → the lines an engine trains on, and the statistics of what was read.

:func:`stream_lines` is a generator: it yields the training lines and, once they are all consumed, returns
a frozen :class:`StreamStats` (``stats = yield from stream_lines(...)``); a generator runs once, so every
line is read once and the statistics describe exactly the lines given. In one pass, without holding the
corpus in memory, it:

- reads the corpus plan (``tasks.plan_files``, one task per file) through
  :meth:`TrainingCorpus.labelled_texts`, the one reader of a training corpus (the two-pass sampling and
  parity-aware BPE read its lines too, with each line's language, by :meth:`TrainingCorpus.labelled_lines`),
  a batch of texts at a time: a file by ``columnar.read_task_batches`` as every consumer reads it (a text
  file's lines, a table's text column — ``text`` unless ``text_column`` says otherwise — a code file
  whole, any of them compressed), an in-memory corpus by ``records.iter_object_items`` (strings, dicts, a
  DataFrame, a ``datasets`` dataset; read ahead at most ``BATCH_ROWS`` texts or :data:`BATCH_CHARS`
  characters); every text is split on ``\\n``; bad input is raised or, with ``errors="skip"``, set aside and
  counted (``records.py``);
- counts what was read (files, bytes, lines, characters) and fingerprints it (SHA-256 of the lines);
- (a ``max_bytes`` budget or ``language_sampling`` is drawn in two passes by ``sampling.py`` instead);
- holds out a fraction of lines (``heldout``) for the fertility check, as (source name, text) records,
  at most ``MAX_HELDOUT`` of them;
- splits lines longer than ``max_line_bytes`` into chunks (at a space near the limit when there is one,
  else at a character boundary), counting the lines split and the chunks made — nothing is dropped;
- keeps an evenly spread sample of up to ``verify_sample`` training lines (every k-th line, k doubling as
  the corpus grows) to verify exports against;
- raises :class:`~tokenloom.errors.CorpusError` at the end when no line is left to train on.

Empty lines are counted but not yielded. What it does not do: talk to an engine (``_engines.py``).
"""

from __future__ import annotations

import hashlib
import os
import random
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from tqdm.auto import tqdm

from tokenloom._progress import show_progress
from tokenloom.corpus.columnar import read_task_batches
from tokenloom.corpus.formats import reader_for
from tokenloom.corpus.formats.batches import BATCH_ROWS
from tokenloom.corpus.parts import cell_label, file_label, record_label
from tokenloom.corpus.records import (
    DEFAULT_COLUMNS,
    MEMORY_SOURCE,
    Columns,
    Errors,
    SourceStats,
    iter_object_items,
)
from tokenloom.corpus.sources import LeftOut, is_paths, record_left_out
from tokenloom.corpus.tasks import FilePlan, plan_files
from tokenloom.errors import CorpusError

if TYPE_CHECKING:
    from tokenloom.text.train_config import TrainerConfig

__all__ = [
    "MAX_HELDOUT", "CorpusInput", "Spread", "StreamStats", "TrainingCorpus", "split_long", "stream_lines",
]  # fmt: skip

BATCH_CHARS = 1 << 20  # an in-memory corpus is read ahead at most this many characters (or BATCH_ROWS texts)
MAX_HELDOUT = 20_000  # at most this many held-out records are kept (enough for a fertility table)
CorpusInput = str | os.PathLike[str] | Iterable[Any]


def split_long(line: str, max_bytes: int) -> list[str]:
    """Chunks of ``line`` of at most ``max_bytes`` UTF-8 bytes each, preferring to cut before a space."""
    data = line.encode("utf-8")
    if len(data) <= max_bytes:
        return [line]
    chunks: list[str] = []
    start = 0
    while len(data) - start > max_bytes:
        cut = start + max_bytes
        while cut > start and (data[cut] & 0xC0) == 0x80:  # never cut inside a UTF-8 sequence
            cut -= 1
        space = data.rfind(b" ", start + max_bytes // 2, cut)
        if space > start:
            cut = space
        chunks.append(data[start:cut].decode("utf-8"))
        start = cut
    chunks.append(data[start:].decode("utf-8"))
    return chunks


@dataclass(frozen=True)
class TrainingCorpus:
    """What a training reads: the corpus plan of its files (``tasks.plan_files``, one task per file, found
    by :func:`TrainingCorpus.of`) or an iterable of str."""

    plan: FilePlan = field(default_factory=lambda: FilePlan(()))
    texts: Iterable[Any] | None = None  # read once, item by item

    @classmethod
    def of(cls, corpus: CorpusInput) -> TrainingCorpus:
        """Path(s), folder(s) or glob(s) — a str, a PathLike or a list/tuple of them (``sources.is_paths``)
        — or any other iterable of str. A missing path that looks like a sentence says how to pass texts."""
        if not is_paths(corpus):
            return cls(texts=cast(Iterable[Any], corpus))
        return cls(plan=plan_files(corpus, chunk_bytes=None))  # read in one process: a task per file

    @property
    def files(self) -> tuple[Path, ...]:
        """The files read, in order."""
        return self.plan.files

    @property
    def left_out(self) -> tuple[LeftOut, ...]:
        """The files a folder search did not take (recorded as rejects when read)."""
        return self.plan.left_out

    @property
    def name(self) -> str:
        """The corpus as named in messages."""
        if self.texts is not None:
            return "the given texts"
        return ", ".join(str(p) for p in self.files[:3]) + (" ..." if len(self.files) > 3 else "")

    def lines(
        self, errors: Errors, stats: SourceStats, columns: Columns = DEFAULT_COLUMNS
    ) -> Iterator[tuple[str, str]]:
        """(source name, line) of every line, counted in ``stats`` (:meth:`labelled_lines` without labels)."""
        for source, _, line in self.labelled_lines(errors, stats, columns):
            yield source, line

    def labelled_lines(
        self, errors: Errors, stats: SourceStats, columns: Columns = DEFAULT_COLUMNS
    ) -> Iterator[tuple[str, str | None, str]]:
        """(source name, language or None, line) of every line, counted in ``stats``: every text of
        :meth:`labelled_texts` split on ``\\n``."""
        for source, labels, texts in self.labelled_texts(errors, stats, columns):
            for label, text in zip(labels, texts, strict=True):
                for line in text.split("\n"):
                    yield source, label, line

    def labelled_texts(
        self, errors: Errors, stats: SourceStats, columns: Columns = DEFAULT_COLUMNS
    ) -> Iterator[tuple[str, list[str | None], list[str]]]:
        """(source name, languages or None, texts): consecutive texts of one source, a batch at a time,
        counted in ``stats`` (every ``\\n``-separated line of a text as a line). The files a folder search
        left out come first (``sources.record_left_out``), then every task of the plan in plan order, read
        a batch of rows at a time as every reader reads it (``columnar.read_task_batches``). The language
        is a table row's label, else a FLORES-style file name's."""
        record_left_out(self.plan.left_out, errors, stats)
        if self.texts is None:
            for task in self.plan.tasks:
                name, label = task.path.name, file_label(task.path)
                table = reader_for(task.path).kind == "table"
                for batch in read_task_batches(task, columns=columns, errors=errors, stats=stats):
                    labels = (
                        [
                            cell_label(lang, script, label)
                            for lang, script in zip(batch.langs, batch.scripts, strict=True)
                        ]
                        if table
                        else [label] * len(batch.texts)
                    )
                    yield name, labels, batch.texts
            return
        texts, labels, size = [], [], 0
        for _, item in iter_object_items(self.texts, columns=columns, errors=errors, stats=stats):
            text = item if isinstance(item, str) else item.text
            texts.append(text)
            labels.append(None if isinstance(item, str) else record_label(item, None))
            size += len(text)
            if len(texts) >= BATCH_ROWS or size >= BATCH_CHARS:
                yield MEMORY_SOURCE, labels, _counted(texts, stats)
                texts, labels, size = [], [], 0
        if texts:
            yield MEMORY_SOURCE, labels, _counted(texts, stats)


def _counted(texts: list[str], stats: SourceStats) -> list[str]:
    """``texts``, their lines (split on ``\\n``), bytes and characters counted in ``stats``."""
    newlines = sum(text.count("\n") for text in texts)
    stats.lines += len(texts) + newlines
    stats.bytes += sum(len(text.encode("utf-8")) for text in texts) + len(texts)
    stats.chars += sum(map(len, texts)) - newlines
    return texts


@dataclass(frozen=True)
class StreamStats:
    """What one pass of :func:`stream_lines` read, trained on, split and held out."""

    read: dict[str, int]  # SourceStats.as_dict(): files, lines, bytes, chars, replacements
    file_names: tuple[str, ...]
    fingerprint: str  # SHA-256 of the lines read (``\n``-terminated UTF-8)
    train_lines: int  # lines (or chunks) given to the engine
    train_bytes: int  # their UTF-8 bytes
    split_lines: int  # lines longer than max_line_bytes
    split_chunks: int  # chunks those lines became
    heldout_lines: int
    heldout: tuple[tuple[str, str], ...]  # (source name, line), at most MAX_HELDOUT
    sample: tuple[str, ...]  # evenly spread training lines, for export verification
    # per language: bytes available and used (a draw by language, ``sampling.py``; empty otherwise)
    languages: dict[str, dict[str, int]] = field(default_factory=dict)
    dev: dict[str, Any] = field(default_factory=dict)  # parity-bpe: the development set read

    def summary(self) -> dict[str, Any]:
        """Corpus statistics for ``tokenloom.json`` (deterministic: no paths, no timings)."""
        return {
            **self.read,
            "file_names": list(self.file_names),
            "fingerprint": f"sha256:{self.fingerprint}",
            "train_lines": self.train_lines,
            "train_bytes": self.train_bytes,
            "split_lines": self.split_lines,
            "split_chunks": self.split_chunks,
            "heldout_lines": self.heldout_lines,
            **({"languages": self.languages} if self.languages else {}),
            **({"dev": self.dev} if self.dev else {}),
        }


class Spread:
    """An evenly spread sample of at most ``size`` items: every stride-th, the stride doubling as they come."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.items: list[str] = []
        self.stride = 1
        self.seen = 0

    def add(self, item: str) -> None:
        if self.seen % self.stride == 0:
            self.items.append(item)
            if len(self.items) >= 2 * self.size:
                del self.items[1::2]
                self.stride *= 2
        self.seen += 1


def _read(
    corpus: TrainingCorpus, cfg: TrainerConfig, stats: SourceStats, digest: Any, *, quiet: bool
) -> Iterator[tuple[str, list[str], int]]:
    """(source, texts, their lines' UTF-8 bytes) of every batch of texts, every line hashed into ``digest``
    (``\\n``-terminated: a text and a ``\\n``), a progress bar on a terminal unless ``quiet``."""
    bar = None
    if show_progress(quiet):
        total = sum(p.stat().st_size for p in corpus.files) if corpus.texts is None else None
        bar = tqdm(total=total, unit="B", unit_scale=True, desc="reading corpus", dynamic_ncols=True)
    try:
        for source, _, texts in corpus.labelled_texts(cfg.errors, stats, Columns(cfg.text_column)):
            if not texts:
                continue
            encoded = "\n".join(texts).encode("utf-8")
            digest.update(encoded)
            digest.update(b"\n")
            if bar is not None:
                bar.update(len(encoded) + 1)
            yield source, texts, len(encoded) - encoded.count(b"\n")
    finally:
        if bar is not None:
            bar.close()


def stream_lines(
    corpus: TrainingCorpus, cfg: TrainerConfig, *, quiet: bool = True
) -> Generator[str, None, StreamStats]:
    """The training lines of ``corpus`` under ``cfg`` (``seed``, ``heldout``, ``errors``,
    ``max_line_bytes``, ``verify_sample``); returns the :class:`StreamStats` (see the module docstring).
    Bytes are counted a batch of texts at a time: every line's, less those held out or split (whose
    chunks count instead); only a line of more than ``max_line_bytes / 4`` characters is encoded to see
    whether it fits."""
    stats, digest, spread = SourceStats(), hashlib.sha256(), Spread(cfg.verify_sample)
    holder, limit, share = random.Random(cfg.seed + 1), cfg.max_line_bytes, cfg.heldout
    quarter = limit // 4  # a line of at most this many characters has at most ``limit`` UTF-8 bytes
    heldout: list[tuple[str, str]] = []
    held = lines = size = split = chunks = 0
    for source, texts, text_bytes in _read(corpus, cfg, stats, digest, quiet=quiet):
        size += text_bytes
        for text in texts:
            for line in text.split("\n"):
                if not line:
                    continue
                if share > 0.0 and holder.random() < share:
                    held += 1
                    size -= len(line.encode("utf-8"))
                    if len(heldout) < MAX_HELDOUT:
                        heldout.append((source, line))
                    continue
                if len(line) <= quarter or len(line.encode("utf-8")) <= limit:
                    spread.add(line)
                    lines += 1
                    yield line
                    continue
                pieces = split_long(line, limit)
                split, chunks = split + 1, chunks + len(pieces)
                size -= len(line.encode("utf-8"))
                for chunk in pieces:
                    spread.add(chunk)
                    lines, size = lines + 1, size + len(chunk.encode("utf-8"))
                    yield chunk
    if lines == 0:
        if held:
            raise CorpusError(
                f"corpus {corpus.name}: every non-empty line was held out; pass heldout=0 for tiny corpora"
            )
        raise CorpusError(f"corpus {corpus.name} is empty: no non-empty lines to train on")
    names = tuple(p.name for p in corpus.files)
    return StreamStats(
        stats.as_dict(), names, digest.hexdigest(), lines, size, split, chunks, held, tuple(heldout),
        tuple(spread.items[: spread.size]),
    )  # fmt: skip
