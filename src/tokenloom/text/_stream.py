"""The training-line stream: corpus inputs → the lines an engine trains on, with statistics on the side.

What it does, in one pass and without holding the corpus in memory:

- reads files (``sources.iter_lines``) or an iterable of strings (each item split on ``\\n``);
- counts what was read (files, bytes, lines, characters) and fingerprints it (SHA-256 of the lines);
- samples deterministically when ``max_bytes`` is set: for files, each line is kept with probability
  ``max_bytes / total file bytes`` from a ``random.Random(seed)``; for an iterable (size unknown) the first
  ``max_bytes`` are used; either way training stops once ``max_bytes`` have been kept;
- holds out a fraction of lines (``heldout``) for the fertility check, as (source name, text) records,
  at most ``MAX_HELDOUT`` of them;
- splits lines longer than ``max_line_bytes`` into chunks (at a space near the limit when there is one,
  else at a character boundary), counting the lines split and the chunks made — nothing is dropped;
- keeps an evenly spread sample of up to ``sample_size`` training lines (every k-th line, k doubling as the
  corpus grows) to verify exports against.

Empty lines are counted but not passed to the engine. What it does not do: talk to an engine.
"""

from __future__ import annotations

import hashlib
import os
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tokenloom._progress import show_progress
from tokenloom.errors import CorpusError
from tokenloom.text.sources import Errors, SourceStats, iter_lines, resolve_inputs

__all__ = ["MAX_HELDOUT", "CorpusInput", "LineStream", "split_long"]

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


@dataclass
class LineStream:
    """An iterable of training lines over ``corpus``; iterate once, then read the statistics."""

    corpus: CorpusInput
    errors: Errors = "strict"  # invalid UTF-8: "strict" raises CorpusError, "replace" substitutes and counts
    max_bytes: int | None = None  # deterministic sampling cap (None: everything)
    seed: int = 0  # seed of the max_bytes sampling and held-out generators
    heldout: float = 0.0  # fraction of lines held out from training
    max_line_bytes: int = 16384  # longer lines are split into chunks
    sample_size: int = 2000  # training lines kept (evenly spread) for export verification
    quiet: bool = True  # no progress bar
    stats: SourceStats = field(default_factory=SourceStats)
    files: list[Path] = field(default_factory=list)
    train_lines: int = 0  # lines (or chunks) given to the engine
    train_bytes: int = 0  # their UTF-8 bytes
    split_lines: int = 0  # lines longer than max_line_bytes
    split_chunks: int = 0  # chunks those lines became
    heldout_records: list[tuple[str, str]] = field(default_factory=list)
    heldout_lines: int = 0
    sample: list[str] = field(default_factory=list)
    _hash: Any = field(default_factory=hashlib.sha256, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.corpus, str | os.PathLike) or (
            isinstance(self.corpus, list | tuple)
            and all(isinstance(x, str | os.PathLike) for x in self.corpus)
        ):
            items = [self.corpus] if isinstance(self.corpus, str | os.PathLike) else list(self.corpus)
            for item in items:
                text = os.fspath(item)
                if isinstance(item, str) and not Path(text).exists() and (" " in text or "\n" in text):
                    raise CorpusError(
                        f"corpus path {text[:60]!r} does not exist; strings in a list or tuple are paths — "
                        "to train on texts pass an iterator, e.g. iter(texts)"
                    )
            self.files = resolve_inputs(items)

    @property
    def fingerprint(self) -> str:
        """SHA-256 of the lines read (``\\n``-terminated UTF-8), available after iteration."""
        return self._hash.hexdigest()

    def _sources(self) -> Iterator[tuple[str, str]]:
        if self.files:
            for path in self.files:
                for line in iter_lines(path, errors=self.errors, stats=self.stats):
                    yield path.name, line
            return
        assert not isinstance(self.corpus, str | os.PathLike)  # a path became self.files in __post_init__
        for number, item in enumerate(self.corpus, start=1):
            if not isinstance(item, str):
                raise CorpusError(
                    f"corpus item #{number} is {type(item).__name__}, not str; pass texts or paths"
                )
            for line in item.split("\n"):
                self.stats.lines += 1
                self.stats.bytes += len(line.encode("utf-8")) + 1
                self.stats.chars += len(line)
                yield "<texts>", line

    def __iter__(self) -> Iterator[str]:
        sampler = random.Random(self.seed)
        holder = random.Random(self.seed + 1)
        sample, stride = self.sample, 1
        keep_p = 1.0
        if self.max_bytes is not None and self.files:
            total = sum(p.stat().st_size for p in self.files)
            keep_p = min(1.0, self.max_bytes / max(total, 1))
        bar = None
        if show_progress(self.quiet):
            from tqdm.auto import tqdm

            total_bytes = sum(p.stat().st_size for p in self.files) if self.files else None
            bar = tqdm(
                total=total_bytes, unit="B", unit_scale=True, desc="reading corpus", dynamic_ncols=True
            )
        seen_bytes = 0
        update = self._hash.update
        try:
            for source, line in self._sources():
                encoded = line.encode("utf-8")
                update(encoded + b"\n")
                if bar is not None:
                    seen_bytes += len(encoded) + 1
                    if seen_bytes >= 1 << 20:
                        bar.update(seen_bytes)
                        seen_bytes = 0
                if not line:
                    continue
                if self.max_bytes is not None:
                    if self.train_bytes >= self.max_bytes:
                        continue  # keep reading: statistics and fingerprint cover the whole corpus
                    if keep_p < 1.0 and sampler.random() >= keep_p:
                        continue
                if self.heldout > 0.0 and holder.random() < self.heldout:
                    self.heldout_lines += 1
                    if len(self.heldout_records) < MAX_HELDOUT:
                        self.heldout_records.append((source, line))
                    continue
                chunks = (
                    [line] if len(encoded) <= self.max_line_bytes else split_long(line, self.max_line_bytes)
                )
                if len(chunks) > 1:
                    self.split_lines += 1
                    self.split_chunks += len(chunks)
                for chunk in chunks:
                    if self.train_lines % stride == 0:  # every stride-th line, thinned as the corpus grows
                        sample.append(chunk)
                        if len(sample) >= 2 * self.sample_size:
                            del sample[1::2]
                            stride *= 2
                    self.train_lines += 1
                    self.train_bytes += len(chunk.encode("utf-8")) if len(chunks) > 1 else len(encoded)
                    yield chunk
        finally:
            del sample[self.sample_size :]
            if bar is not None:
                bar.update(seen_bytes)
                bar.close()

    def summary(self) -> dict[str, Any]:
        """Corpus statistics for ``tokenloom.json`` (deterministic: no paths, no timings)."""
        return {
            **self.stats.as_dict(),
            "file_names": [p.name for p in self.files],
            "fingerprint": f"sha256:{self.fingerprint}",
            "train_lines": self.train_lines,
            "train_bytes": self.train_bytes,
            "split_lines": self.split_lines,
            "split_chunks": self.split_chunks,
            "heldout_lines": self.heldout_lines,
        }
