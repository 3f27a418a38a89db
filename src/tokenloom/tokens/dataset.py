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
Tokens are read from memory maps, a batch at a time (:meth:`batch`, ``gather.py``): a few array operations
a batch, no per-sample Python; ``reference.py`` keeps the plain per-sample reading as the oracle.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import numpy as np

from tokenloom.errors import ConfigError
from tokenloom.text.tokenizer import Tokenizer
from tokenloom.tokens.gather import RowReader, WindowReader
from tokenloom.tokens.manifest import check_files, read_manifest, tokenizer_fingerprint
from tokenloom.tokens.packing import plan_rows

__all__ = ["Packing", "TokenShardDataset"]

Packing = Literal["windows", "documents"]
# token slots read at once by ``batches``: small batches are read several at a time (a read much larger
# than this leaves the caches and is slower per slot)
READ_SLOTS = 1 << 17


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
        self._reader = self._open_reader()
        self.epoch, self.position = 0, 0

    def _open_reader(self) -> WindowReader | RowReader:
        """The batch reader; rows are planned once, as arrays, from the ``.ds.index`` ends."""
        if self.packing == "windows":
            return WindowReader(self._tokens, self.seq_len + 1)
        plans = []
        for s, starts in enumerate(self._starts):
            lengths = starts[1:] - starts[:-1]  # [D]
            if self.language is not None:
                lengths = np.where(self._docs[s]["lang"] == self.language, lengths, 0)
            plans.append(plan_rows(lengths, self.seq_len))
        return RowReader(self._tokens, self._starts, plans, self.seq_len, contiguous=self.language is None)

    def __len__(self) -> int:
        return len(self._reader)

    def __getitem__(self, i: int) -> dict[str, np.ndarray]:
        if not -len(self) <= i < len(self):
            raise IndexError(f"sample {i} of a dataset of {len(self)}")
        return {k: v[0] for k, v in self._reader.batch(np.array([i % len(self)], dtype=np.int64)).items()}

    def batch(self, indices: np.ndarray) -> dict[str, np.ndarray]:
        """Samples ``indices [B]`` stacked ``[B, ...]`` (equal to stacking ``self[i]``; negative indices
        count from the end), read as one batch."""
        idx, n = np.asarray(indices, dtype=np.int64).reshape(-1), len(self)  # [B]
        if len(idx) and (idx.min() < -n or idx.max() >= n):
            bad = idx[(idx < -n) | (idx >= n)][0]
            raise IndexError(f"sample {bad} of a dataset of {n}; pass indices in -{n}..{n - 1}")
        return self._reader.batch(idx % max(n, 1))

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
        """This rank's samples of the epoch stacked ``[B, ...]`` (the last batch may be smaller). Batches
        are read :data:`READ_SLOTS` token slots at a time (:meth:`batch`; several small batches at once,
        each then a view of its rows): a batch's arrays are its own rows, whatever is read with them. The
        state moves as with :meth:`__iter__`: past a batch once it is yielded, to the next epoch with the
        epoch's last (short) batch."""
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigError(f"batch_size must be a positive int, got {batch_size!r}")
        mine = self.order(self.epoch)
        ahead = batch_size * max(1, READ_SLOTS // (batch_size * self.seq_len))  # samples read at once
        while True:
            read = mine[self.position : self.position + ahead]  # [k * B]
            if len(read) == 0:
                self.epoch, self.position = self.epoch + 1, 0
                return
            rows = self._reader.batch(read)  # [k * B, ...]
            for at in range(0, len(read), batch_size):
                batch = {name: v[at : at + batch_size] for name, v in rows.items()}  # [B, ...]
                self.position += len(batch["input_ids"])
                if len(batch["input_ids"]) < batch_size:  # the epoch's last, short batch
                    self.epoch, self.position = self.epoch + 1, 0
                    yield batch
                    return
                yield batch

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
