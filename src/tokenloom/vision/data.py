"""Image datasets, a DataLoader builder, and memory-mapped reading of preprocessed shards.

* :class:`ImageDataset` decodes and transforms items found by ``listing.py`` (``from_folder`` with class
  subfolders, ``from_list``, ``from_csv``); :class:`ShardDataset` reads the uint8 shards written
  by :func:`tokenloom.vision.shards.preprocess_images` memory-mapped and feeds them to the same transforms.
  Both yield ``(pixels [3, S, S], label)`` or, with ``output="patches"``, ``(tokens [N, K], label)``.
* Corrupt files: ``on_error="raise"`` raises :class:`ImageDecodeError`; ``"skip"`` returns a
  :class:`Rejected` record instead, which :func:`build_loader`'s loader drops from the batch and keeps in
  ``loader.rejects`` (so nothing is lost silently, even from worker processes).

Augmentation seeds come from the loader's sampler as ``(index, seed)`` pairs, so results do not depend on
the number of workers. This module does not write shards (``shards.py``) nor define transforms.

Shape legend: ``B`` batch, ``S`` image side, ``N`` patches, ``K = 3·P·P`` values per patch.
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np

from tokenloom.errors import ConfigError, ImageDecodeError
from tokenloom.vision.io import error_kind, load_image
from tokenloom.vision.listing import ImageItem, list_csv, list_file, list_folder
from tokenloom.vision.shards import read_manifest, read_settings
from tokenloom.vision.store import row_image
from tokenloom.vision.transforms import eval_transform, plain_transform

if TYPE_CHECKING:
    import torch

    from tokenloom.vision.io import DecodeConfig
    from tokenloom.vision.transforms import ImageTransform

__all__ = ["ImageDataset", "ImageLoader", "Rejected", "ShardDataset", "build_loader", "collate"]

logger = logging.getLogger(__name__)

OnError = Literal["skip", "raise"]
Output = Literal["pixels", "patches"]


@dataclass(frozen=True)
class Rejected:
    """An item that could not be read; ``kind`` is a short category (e.g. ``"truncated"``)."""

    index: int
    path: str
    label: int
    kind: str
    reason: str


def _short_reason(exc: BaseException, label: str) -> str:
    message = str(exc)
    return message[len(label) + 2 :] if message.startswith(label + ": ") else message


class _BaseDataset:
    """Shared ``__getitem__`` plumbing: seeds, output format, reject handling."""

    transform: ImageTransform
    output: Output
    patch_size: int
    on_error: OnError

    def _finish(self, image: torch.Tensor, seed: int | None) -> torch.Tensor:
        out = self.transform(image, seed=seed)  # [3, S, S]
        if self.output == "patches":
            from tokenloom.vision.patches import patchify

            return patchify(out, self.patch_size)  # [3, S, S] -> [N, K]
        return out

    @staticmethod
    def _split_key(key: int | tuple[int, int]) -> tuple[int, int | None]:
        return (key[0], key[1]) if isinstance(key, tuple) else (int(key), None)


def _check_common(output: str, on_error: str, patch_size: int) -> None:
    if output not in ("pixels", "patches"):
        raise ConfigError(f"output must be 'pixels' or 'patches', got {output!r}")
    if on_error not in ("skip", "raise"):
        raise ConfigError(f"on_error must be 'skip' or 'raise', got {on_error!r}")
    if patch_size < 1:
        raise ConfigError(f"patch_size must be positive, got {patch_size}")


class ImageDataset(_BaseDataset):
    """Decode + transform a list of :class:`ImageItem`; map-style (``len``, ``[i]`` or ``[(i, seed)]``)."""

    def __init__(
        self,
        items: Sequence[ImageItem | tuple[str | os.PathLike[str], int]],
        *,
        transform: ImageTransform | None = None,
        output: Output = "pixels",
        patch_size: int = 16,
        on_error: OnError = "skip",
        decode: DecodeConfig | None = None,
        classes: Sequence[str] = (),
    ) -> None:
        _check_common(output, on_error, patch_size)
        self.items = [ImageItem(Path(p), int(lab)) for p, lab in items]
        self.transform = transform or eval_transform()
        self.output = output
        self.patch_size = patch_size
        self.on_error = on_error
        self.decode = decode
        self.classes = list(classes)

    @classmethod
    def from_folder(cls, root: str | os.PathLike[str], **options: Any) -> ImageDataset:
        """Class subfolders of ``root`` (sorted) become labels 0..K-1; see :func:`list_folder`."""
        items, classes, ignored = list_folder(root)
        if ignored:
            logger.info("%s: ignoring %d files without an image extension", root, len(ignored))
        return cls(items, classes=classes, **options)

    @classmethod
    def from_list(cls, path: str | os.PathLike[str], **options: Any) -> ImageDataset:
        """A text file with one image path per line (labels -1)."""
        return cls(list_file(path), **options)

    @classmethod
    def from_csv(cls, path: str | os.PathLike[str], **options: Any) -> ImageDataset:
        """A CSV with ``path,label`` columns."""
        items, classes = list_csv(path)
        return cls(items, classes=classes, **options)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, key: int | tuple[int, int]) -> tuple[torch.Tensor, int] | Rejected:
        index, seed = self._split_key(key)
        item = self.items[index]
        target = self.transform.decode_size if self.transform.config.draft else None
        try:
            image = load_image(item.path, target_size=target, config=self.decode)  # [3, H, W] uint8
        except ImageDecodeError as exc:
            if self.on_error == "raise":
                raise
            return Rejected(
                index, str(item.path), item.label, error_kind(exc), _short_reason(exc, str(item.path))
            )
        return self._finish(image, seed), item.label


class ShardDataset(_BaseDataset):
    """Preprocessed uint8 shards (``preprocess_images`` output folder), memory-mapped, through a transform.

    Reads both store kinds (see :mod:`tokenloom.vision.store`) and every stored encoding (raw, jpeg, webp,
    png: decoded on read, uint8 all the same; see :mod:`tokenloom.vision.encoding`). ``transform`` defaults to
    :func:`~tokenloom.vision.transforms.plain_transform` (normalize only) for eval crops and to
    :func:`~tokenloom.vision.transforms.eval_transform` (resize + center crop) for full views; a
    :func:`~tokenloom.vision.transforms.train_transform` applies RandomResizedCrop and its other
    augmentations to the stored images (on full views: to the whole image).
    Shards are opened lazily in each process (safe with DataLoader workers).

    Indexing: ``ds[i]`` (negative ``i`` counts from the end) or ``ds[(i, seed)]`` gives one sample; an
    index out of range raises ``IndexError`` naming it and the length. ``ds[a:b:c]`` returns a
    ``ShardDataset`` view of those rows (nothing is decoded or copied; shards stay shared), which works
    wherever the full dataset does, including :func:`build_loader` — like ``torch.utils.data.Subset``.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        transform: ImageTransform | None = None,
        output: Output = "pixels",
        patch_size: int = 16,
    ) -> None:
        _check_common(output, "raise", patch_size)
        self.root = Path(root)
        self.rows = read_manifest(self.root)  # one dict per stored image, in shard order
        if not self.rows:
            raise ConfigError(
                f"{self.root}: no preprocessed shards found; run `tokenloom images preprocess` first"
            )
        settings = read_settings(self.root)
        self.encoding: str = settings.get("encoding", "raw")
        # plans before format 3 name no store: full views are the rows carrying buffer offsets
        self.store = settings.get("store") or ("full" if "offset" in self.rows[0] else "eval")
        self.transform = transform or (eval_transform() if self.store == "full" else plain_transform())
        self.output = output
        self.patch_size = patch_size
        self.on_error = "raise"
        self._maps: dict[str, Any] = {}

    def __len__(self) -> int:
        return len(self.rows)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_maps"] = {}  # memory maps are reopened in each worker
        return state

    def _shard(self, name: str) -> Any:
        array = self._maps.get(name)
        if array is None:
            # copy-on-write map: readable like "r", and torch can wrap its views (nothing ever writes to it)
            array = np.load(self.root / "shards" / name, mmap_mode="c")  # [n, 3, S, S] or flat uint8
            self._maps[name] = array
        return array

    def _row(self, index: int) -> dict[str, Any]:
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(
                f"ShardDataset indices are ints, (int, seed) pairs or slices, got {type(index).__name__}"
            )
        n = len(self.rows)
        if not -n <= index < n:
            raise IndexError(
                f"index {index} is out of range for a ShardDataset of length {n} (valid: 0..{n - 1})"
            )
        return self.rows[index]

    def _view(self, part: slice) -> ShardDataset:
        view = object.__new__(ShardDataset)
        view.__dict__.update(self.__dict__)
        view.rows = self.rows[part]  # shares transform and open memory maps
        return view

    def _stored(self, index: int) -> torch.Tensor:
        """The stored image uint8 ``[3, h, w]``: a view into the memory map (raw) or the decoded image."""
        import torch

        row = self._row(index)
        return torch.from_numpy(row_image(self._shard(row["shard"]), row))  # [3, h, w], writable

    def uint8(self, index: int) -> torch.Tensor:
        """The stored image ``[3, S, S]`` (eval crops) or ``[3, h, w]`` (full views) uint8, copied out.

        Encoded rows are decoded (``[3, h, w]``, contiguous like a raw row)."""
        import torch

        return self._stored(index).clone(memory_format=torch.contiguous_format)  # [3, h, w]

    @overload
    def __getitem__(self, key: slice) -> ShardDataset: ...
    @overload
    def __getitem__(self, key: int | tuple[int, int]) -> tuple[torch.Tensor, int]: ...
    def __getitem__(self, key: int | tuple[int, int] | slice) -> tuple[torch.Tensor, int] | ShardDataset:
        if isinstance(key, slice):
            return self._view(key)
        index, seed = self._split_key(key)
        stored = self._stored(index)  # a view into the memory map for raw rows
        out = self._finish(stored, seed)
        if out.untyped_storage().data_ptr() == stored.untyped_storage().data_ptr():
            out = out.clone()  # a transform that passed the view through: never hand out the map itself
        return out, int(self._row(index)["label"])


class _SeededSampler:
    """Yields ``(index, seed)``: a per-epoch permutation (or order) and a per-sample augmentation seed."""

    def __init__(self, n: int, *, shuffle: bool, seed: int) -> None:
        self.n, self.shuffle, self.seed, self.epoch = n, shuffle, seed, 0

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[tuple[int, int]]:
        import torch

        if self.shuffle:
            g = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch)
            order: Sequence[int] = torch.randperm(self.n, generator=g).tolist()
        else:
            order = range(self.n)
        base = (self.seed * 0x9E3779B1 + self.epoch * 0x85EBCA77) % (1 << 62)
        for i in order:
            yield i, (base + i * 0x27D4EB2F) % (1 << 62)


def collate(batch: list[Any]) -> tuple[torch.Tensor | None, torch.Tensor | None, list[Rejected]]:
    """The loaders' ``collate_fn``: ``(images [B, ...], labels [B], rejects)`` from a list of dataset items,
    :class:`Rejected` records kept apart (``(None, None, rejects)`` when every item was rejected).

    Images are stacked by ``torch.utils.data.default_collate``, which in a loader worker process stacks
    straight into shared memory: the batch crosses to the main process without another copy (stacking into
    private memory would make the worker's queue thread copy the whole batch into shared memory again)."""
    import torch
    from torch.utils.data import default_collate

    rejects = [b for b in batch if isinstance(b, Rejected)]
    good = [b for b in batch if not isinstance(b, Rejected)]
    if not good:
        return None, None, rejects
    images = default_collate([b[0] for b in good])  # [B, 3, S, S] or [B, N, K]
    labels = torch.tensor([b[1] for b in good], dtype=torch.long)  # [B]
    return images, labels, rejects


class ImageLoader:
    """Iterates ``(images, labels)`` batches; rejected items are dropped and kept in :attr:`rejects`.

    ``rejects`` and :meth:`summary` count every pass so far: a bad file appears once per epoch.
    """

    def __init__(self, loader: Any, sampler: _SeededSampler) -> None:
        self.loader = loader
        self.sampler = sampler
        self.rejects: list[Rejected] = []
        self.seen = 0

    def set_epoch(self, epoch: int) -> None:
        """Select the shuffle order and augmentation seeds of ``epoch`` (also advanced by each pass)."""
        self.sampler.epoch = epoch

    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        for images, labels, rejects in self.loader:
            self.rejects.extend(rejects)
            if images is None:
                continue
            self.seen += len(labels)
            yield images, labels
        self.sampler.epoch += 1

    def summary(self) -> dict[str, Any]:
        """Counts so far: ``ok``, ``rejected`` and rejects per kind."""
        return {
            "ok": self.seen,
            "rejected": len(self.rejects),
            "by_kind": dict(Counter(r.kind for r in self.rejects)),
        }


def build_loader(
    dataset: ImageDataset | ShardDataset,
    *,
    batch_size: int = 64,
    shuffle: bool = False,
    num_workers: int = 0,
    pin_memory: bool = False,
    persistent_workers: bool = False,
    drop_last: bool = False,
    prefetch_factor: int | None = None,
    seed: int = 0,
) -> ImageLoader:
    """A DataLoader over ``dataset`` yielding ``(images [B,3,S,S] | tokens [B,N,K], labels [B])``.

    ``seed`` fixes the shuffle order and every sample's augmentation (per epoch), whatever ``num_workers``.
    """
    from torch.utils.data import DataLoader

    if batch_size < 1:
        raise ConfigError(f"batch_size must be positive, got {batch_size}")
    if num_workers < 0:
        raise ConfigError(f"num_workers must be >= 0, got {num_workers}")
    if persistent_workers and num_workers == 0:
        raise ConfigError("persistent_workers=True needs num_workers > 0")
    sampler = _SeededSampler(len(dataset), shuffle=shuffle, seed=seed)
    loader: DataLoader[Any] = DataLoader(
        dataset,  # type: ignore[arg-type]
        batch_size=batch_size,
        sampler=sampler,
        num_workers=num_workers,
        collate_fn=collate,
        pin_memory=pin_memory,
        drop_last=drop_last,
        persistent_workers=persistent_workers,
        prefetch_factor=prefetch_factor if num_workers > 0 else None,
    )
    return ImageLoader(loader, sampler)
