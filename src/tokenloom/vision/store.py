"""How preprocessed images are stored: fixed-size eval crops or variable-size full views.

Two kinds of shard (``PreprocessConfig.store``):

* ``"eval"``: the eval transform (resize the shorter side, center crop ``S``); a shard is one
  ``uint8 [n, 3, S, S]`` ``.npy`` array and a row is addressed by its position ``row``. For evaluation sets.
* ``"full"``: the whole image, resized (never enlarged) so that its longer side is at most ``max_side``,
  aspect ratio kept. A shard is one flat ``uint8 [sum(3·h·w)]`` ``.npy`` buffer; each row records its
  ``offset`` into the buffer and its ``shape`` ``[3, h, w]`` (in the shard's ``.jsonl`` and the manifest).
  Train transforms (RandomResizedCrop on the full view) or eval transforms (resize + center crop) apply
  when reading. The default for training data.

Both are plain ``.npy`` files, so ``numpy.load(..., mmap_mode="r")`` maps them and a row is a view.
With an encoding other than raw (``encoding.py``), a shard of either kind is one flat buffer of encoded
images and each row records its ``offset`` and ``nbytes``; :func:`row_image` decodes it.
This module neither decodes files nor writes them (``shards.py``), nor augments (``transforms.py``).

Shape legend: ``C`` channels (3), ``H, W`` decoded size, ``h, w`` stored size, ``S`` eval crop side.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from tokenloom.errors import ConfigError
from tokenloom.vision.encoding import decode_stored
from tokenloom.vision.transforms import TransformConfig, eval_transform

if TYPE_CHECKING:
    import torch

__all__ = ["FullView", "StoreKind", "fit_within", "make_store_transform", "pack", "row_image", "row_view"]

StoreKind = Literal["full", "eval"]
STORE_KINDS: tuple[str, ...] = ("full", "eval")


def fit_within(height: int, width: int, max_side: int) -> tuple[int, int]:
    """The stored size of an ``height × width`` image: longer side ``<= max_side``, aspect kept, never enlarged.

    ``fit_within(1600, 2400, 320) == (213, 320)``; ``fit_within(56, 75, 320) == (56, 75)``.
    """
    if height < 1 or width < 1 or max_side < 1:
        raise ConfigError(f"sizes must be positive, got {height}x{width}, max_side={max_side}")
    longer = max(height, width)
    if longer <= max_side:
        return height, width
    scale = max_side / longer
    return max(1, round(height * scale)), max(1, round(width * scale))


class FullView:
    """``uint8 [3, H, W] -> uint8 [3, h, w]``: antialiased bilinear resize so the longer side fits ``max_side``."""

    def __init__(self, max_side: int) -> None:
        if max_side < 1:
            raise ConfigError(f"max_side must be positive, got {max_side}")
        self.max_side = max_side
        # JPEGs decode at full scale: the stored shorter side depends on the aspect ratio, unknown before
        # the header is read, and a draft decode below it would lose detail
        self.decode_size: int | None = None

    @property
    def key(self) -> tuple[str, int]:
        return ("full", self.max_side)

    def __call__(self, image: torch.Tensor) -> torch.Tensor:
        from torchvision.transforms import v2

        h, w = fit_within(int(image.shape[-2]), int(image.shape[-1]), self.max_side)
        if (h, w) == tuple(image.shape[-2:]):
            return image.contiguous()
        resized = v2.functional.resize(image, [h, w], antialias=True)  # [3, h, w]
        return resized.contiguous()


class _EvalCrop:
    """The eval transform without normalize, with the ``key`` / ``decode_size`` the preprocessor reads."""

    def __init__(self, size: int) -> None:
        self.transform = eval_transform(TransformConfig(size=size, normalize=False))
        self.decode_size = self.transform.decode_size
        self.size = size

    @property
    def key(self) -> tuple[str, int]:
        return ("eval", self.size)

    def __call__(self, image: torch.Tensor) -> torch.Tensor:
        return self.transform(image)  # [3, S, S] uint8


def make_store_transform(store: StoreKind, *, size: int, max_side: int) -> FullView | _EvalCrop:
    """The per-image transform a preprocessing run of kind ``store`` applies before storing."""
    if store == "full":
        return FullView(max_side)
    if store == "eval":
        return _EvalCrop(size)
    raise ConfigError(f"store must be one of {STORE_KINDS}, got {store!r}")


def pack(arrays: Sequence[np.ndarray], *, store: StoreKind, size: int) -> tuple[np.ndarray, list[int]]:
    """One shard's array and each image's offset: eval ``[n, 3, S, S]`` (offset = row), full flat uint8."""

    if store == "eval":
        stacked = np.stack(arrays) if arrays else np.zeros((0, 3, size, size), np.uint8)  # [n, 3, S, S]
        return stacked, list(range(len(arrays)))
    offsets, total = [], 0
    for a in arrays:
        offsets.append(total)
        total += a.size
    flat = np.concatenate([a.reshape(-1) for a in arrays]) if arrays else np.zeros(0, np.uint8)
    return flat.astype(np.uint8, copy=False), offsets  # [sum(3·h·w)]


def row_view(shard: np.ndarray, row: dict[str, Any]) -> np.ndarray:
    """The stored image of manifest ``row`` as a view into the (memory-mapped) ``shard`` array."""
    if "offset" not in row:
        return shard[row["row"]]  # [3, S, S]
    shape = tuple(int(v) for v in row["shape"])
    start = int(row["offset"])
    stop = start + math.prod(shape)
    if shard.ndim != 1 or stop > shard.shape[0]:
        raise ConfigError(
            f"shard {row['shard']!r} does not hold row {row['row']} (offset {start}, shape {shape}); "
            "the folder is damaged: rerun `tokenloom images preprocess` into a new folder"
        )
    return shard[start:stop].reshape(shape)  # [3, h, w]


def row_image(shard: np.ndarray, row: dict[str, Any]) -> np.ndarray:
    """The image of manifest ``row`` as uint8 ``[3, h, w]``: a view into the shard (raw rows), or the
    decoded image (encoded rows; planar or a channels-last view, as the decoder writes it)."""
    encoding = row.get("encoding", "raw")  # rows of runs before encodings existed are raw
    if encoding == "raw":
        return row_view(shard, row)
    start, nbytes = int(row["offset"]), int(row["nbytes"])
    if shard.ndim != 1 or start + nbytes > shard.shape[0]:
        raise ConfigError(
            f"shard {row['shard']!r} does not hold row {row['row']} (offset {start}, {nbytes} bytes); "
            "the folder is damaged: rerun `tokenloom images preprocess` into a new folder"
        )
    shape = tuple(int(v) for v in row["shape"])
    return decode_stored(shard[start : start + nbytes], encoding, shape)  # [3, h, w]
