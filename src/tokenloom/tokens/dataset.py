"""``TokenShardDataset``: token shards read by memory map as fixed windows or packed rows, resumably.

Opening a folder reads its manifest and checks every shard file's size (``checksums=True``: SHA-256
too), so a truncated ``.ds`` or ``.ds.index`` is an error naming the file, and a ``tokenizer`` given is
compared with the one that wrote the shards. Samples (numpy ``int64``; ``N`` = ``seq_len``):

- ``packing="windows"``: ``{"input_ids": [N + 1]}``, consecutive windows of each shard's tokens
  (nanoGPT-style; datatrove's ``DatatroveFileDataset`` cuts the same windows);
- ``packing="documents"``: ``{"input_ids": [N], "segment_ids": [N], "positions": [N]}``, rows of whole
  documents (``packing.py``; padding: id 0, segment -1), so the encoder attends only within a document;
  ``language=`` keeps only one language's documents (per-language evaluation).

Map-style: ``len(ds)`` samples, ``ds[i]`` in stored order. Iterable: ``iter(ds)`` yields this rank's
share of the epoch's order — a permutation drawn from ``(seed, epoch)`` (stored order without
``shuffle``), rank ``r`` of ``world_size`` taking positions ``r, r + W, ...``: disjoint across ranks,
every sample once per epoch. :meth:`state_dict` / :meth:`load_state_dict` hold the epoch and the place
in it, so an interrupted epoch resumes exactly; :meth:`batches` stacks samples into ``[B, ...]``.
Tokens are read from memory maps: no copy of a shard, one small array per sample.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import numpy as np

from tokenloom.errors import ConfigError
from tokenloom.text.tokenizer import Tokenizer
from tokenloom.tokens.manifest import check_files, read_manifest, tokenizer_fingerprint
from tokenloom.tokens.packing import RowTable, Span, batch_rows, pack_rows, row_arrays, row_table

__all__ = ["Packing", "TokenShardDataset"]

Packing = Literal["windows", "documents"]


class TokenShardDataset:
    """Samples of a token shard folder (see the module docstring)."""

    def __init__(
        self,
        folder: str | os.PathLike[str],
        *,
        seq_len: int,
        split: Literal["train", "validation"] = "train",
        packing: Packing = "windows",
        seed: int = 0,
        shuffle: bool = True,
        rank: int = 0,
        world_size: int = 1,
        language: str | None = None,
        tokenizer: Tokenizer | None = None,
        checksums: bool = False,
    ) -> None:
        if not isinstance(seq_len, int) or seq_len < 1:
            raise ConfigError(f"seq_len must be a positive int, got {seq_len!r}")
        if packing not in ("windows", "documents"):
            raise ConfigError(f"packing must be 'windows' or 'documents', got {packing!r}")
        if not (isinstance(world_size, int) and world_size >= 1 and 0 <= rank < world_size):
            raise ConfigError(
                f"rank must be in 0..world_size-1 and world_size >= 1, got rank={rank}, world_size={world_size}"
            )
        if language is not None and packing == "windows":
            raise ConfigError("language= needs packing='documents' (windows cross document boundaries)")
        self.folder = Path(folder)
        self.manifest = read_manifest(self.folder)
        check_files(self.folder, self.manifest, checksums=checksums)
        if tokenizer is not None:
            mine = tokenizer_fingerprint(tokenizer, None)["fingerprint"]
            if mine != self.manifest["tokenizer"]["fingerprint"]:
                raise ConfigError(
                    f"{self.folder} was written by tokenizer {self.manifest['tokenizer']['name']!r}, not by "
                    f"{tokenizer.name!r}; load the tokenizer it names or tokenize the corpus with this one"
                )
        self.seq_len, self.packing, self.seed, self.shuffle = seq_len, packing, seed, shuffle
        self.rank, self.world_size, self.language = rank, world_size, language
        dtype = np.dtype(self.manifest["settings"]["dtype"])
        self._tokens: list[np.ndarray] = []
        self._starts: list[np.ndarray] = []
        self._docs: list[np.ndarray] = []
        for shard in (s for s in self.manifest["shards"] if s["split"] == split):
            base = self.folder / shard["name"]
            tokens = np.memmap(f"{base}.ds", dtype=dtype, mode="r") if shard["tokens"] else np.zeros(0, dtype)
            ends = np.fromfile(f"{base}.ds.index", dtype="<u8").astype(np.int64)
            if len(ends) != shard["documents"] or (len(ends) and ends[-1] != len(tokens)):
                raise ConfigError(
                    f"{base}.ds.index does not match {base}.ds; tokenize the corpus again into {self.folder}"
                )
            self._tokens.append(tokens)
            self._starts.append(np.concatenate([[0], ends]))
            self._docs.append(np.load(f"{base}.ds.docs.npy", allow_pickle=False))
        self._index = self._plan()
        self.epoch, self.position = 0, 0

    def _plan(self) -> list[Any]:
        """Windows: (shard, first token) per sample; rows: (shard, spans) per sample. The same plan as
        arrays for :meth:`batches`: each sample's shard, and per shard its windows (a view ``[windows,
        N + 1]``) or its rows (:class:`~tokenloom.tokens.packing.RowTable`)."""
        if self.packing == "windows":
            w = self.seq_len + 1
            self._views: list[np.ndarray] = [
                t[: len(t) // w * w].reshape(-1, w) for t in self._tokens
            ]  # [windows, N + 1]
            self._local = np.concatenate([np.arange(len(v)) for v in self._views] or [np.zeros(0, np.int64)])
            self._shard_of = np.repeat(np.arange(len(self._views)), [len(v) for v in self._views])
            return [(s, k * w) for s, t in enumerate(self._tokens) for k in range(len(t) // w)]
        rows: list[Any] = []
        self._tables: list[RowTable] = []
        counts: list[int] = []
        for s, starts in enumerate(self._starts):
            keep = np.arange(len(starts) - 1)
            if self.language is not None:
                keep = keep[self._docs[s]["lang"] == self.language]
            lengths = (starts[1:] - starts[:-1])[keep]
            shard_rows = [
                [(int(keep[d]), a, b) for d, a, b in row] for row in pack_rows(lengths.tolist(), self.seq_len)
            ]
            self._tables.append(row_table(shard_rows, starts[:-1]))
            counts.append(len(shard_rows))
            rows += [(s, row) for row in shard_rows]
        self._local = np.concatenate([np.arange(n) for n in counts] or [np.zeros(0, np.int64)])
        self._shard_of = np.repeat(np.arange(len(counts)), counts)
        return rows

    def __len__(self) -> int:
        return len(self._index)

    def __getitem__(self, i: int) -> dict[str, np.ndarray]:
        if not -len(self) <= i < len(self):
            raise IndexError(f"sample {i} of a dataset of {len(self)}")
        shard, where = self._index[i]
        tokens = self._tokens[shard]
        if self.packing == "windows":
            return {"input_ids": np.asarray(tokens[where : where + self.seq_len + 1], dtype=np.int64)}
        spans: list[Span] = where
        ids = np.zeros(self.seq_len, dtype=np.int64)  # [N]
        at, starts = 0, self._starts[shard]
        for doc, a, b in spans:
            ids[at : at + b - a] = tokens[starts[doc] + a : starts[doc] + b]
            at += b - a
        segments, positions = row_arrays(spans, self.seq_len)
        return {"input_ids": ids, "segment_ids": segments, "positions": positions}

    def order(self, epoch: int) -> np.ndarray:
        """This rank's sample indices of ``epoch``, in the order they are yielded."""
        n = len(self)
        full = np.random.default_rng([self.seed, epoch]).permutation(n) if self.shuffle else np.arange(n)
        return full[self.rank :: self.world_size]

    def set_epoch(self, epoch: int) -> None:
        self.epoch, self.position = epoch, 0

    def __iter__(self) -> Iterator[dict[str, np.ndarray]]:
        mine = self.order(self.epoch)
        while self.position < len(mine):
            i = int(mine[self.position])
            self.position += 1
            yield self[i]
        self.epoch, self.position = self.epoch + 1, 0

    def batches(self, batch_size: int) -> Iterator[dict[str, np.ndarray]]:
        """This rank's samples of the epoch stacked ``[B, ...]`` (the last batch may be smaller): the
        samples ``iter`` yields, gathered a batch at a time (:meth:`batch`); the state moves a batch at a time."""
        mine = self.order(self.epoch)
        while self.position < len(mine):
            take = mine[self.position : self.position + batch_size]
            self.position += len(take)
            yield self.batch(take)
        self.epoch, self.position = self.epoch + 1, 0

    def batch(self, indices: np.ndarray) -> dict[str, np.ndarray]:
        """Samples ``indices [B]`` stacked ``[B, ...]``, equal to stacking ``self[i]`` (the reference) but
        read with one gather per shard: windows are rows of a shard's ``[windows, N + 1]`` view, packed
        rows come from their :class:`~tokenloom.tokens.packing.RowTable`."""
        indices, n = np.asarray(indices, dtype=np.int64), len(self)  # [B]
        if len(indices) and not (-n <= indices.min() and indices.max() < n):
            raise IndexError(f"samples {indices.min()}..{indices.max()} of a dataset of {n}")
        indices = indices % max(n, 1)  # [B]: negative indices count from the end, as ds[i] does
        shards, local = self._shard_of[indices], self._local[indices]  # [B], [B]
        if self.packing == "windows":
            ids = np.empty((len(indices), self.seq_len + 1), dtype=np.int64)  # [B, N + 1]
            for s in np.unique(shards):
                ids[shards == s] = self._views[s][local[shards == s]]
            return {"input_ids": ids}
        ids = np.zeros((len(indices), self.seq_len), dtype=np.int64)  # [B, N]
        segments, positions = np.empty_like(ids), np.empty_like(ids)  # [B, N]
        for s in np.unique(shards):
            mask = shards == s
            seg, pos, offsets = batch_rows(self._tables[s], local[mask], self.seq_len)
            ids[mask] = np.where(seg >= 0, self._tokens[s][offsets], 0)
            segments[mask], positions[mask] = seg, pos
        return {"input_ids": ids, "segment_ids": segments, "positions": positions}

    def state_dict(self) -> dict[str, int]:
        return {
            "epoch": self.epoch,
            "position": self.position,
            "seed": self.seed,
            "rank": self.rank,
            "world_size": self.world_size,
            "samples": len(self),
        }

    def load_state_dict(self, state: dict[str, int]) -> None:
        """Go back to the place :meth:`state_dict` saved (same seed, rank, world size and samples)."""
        now = {"seed": self.seed, "rank": self.rank, "world_size": self.world_size, "samples": len(self)}
        for key, value in now.items():
            if state.get(key) != value:
                raise ConfigError(
                    f"the saved state has {key}={state.get(key)} but this dataset has {value}; open the "
                    "dataset with the settings and shards the state was saved with"
                )
        self.epoch, self.position = int(state["epoch"]), int(state["position"])
