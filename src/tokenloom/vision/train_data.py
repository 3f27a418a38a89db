"""Data for :mod:`tokenloom.vision.train`: a held-out split, a resumable distributed sampler, loaders.

* :func:`split_indices`: the held-out rows are a fixed random subset (seeded, ``val_fraction`` of them),
  so every process and every resumed run sees the same split.
* :class:`StepSampler`: epoch ``e`` is a permutation seeded by ``(seed, e)``, cut into global batches of
  ``batch`` (the tail that does not fill one is dropped); rank ``r`` of ``world`` takes rows
  ``[r·batch/world, (r+1)·batch/world)`` of each global batch, so K processes see exactly the images
  of one process, split. ``start`` skips the first global batches (resume). Each sample's augmentation
  seed depends on ``(seed, epoch, index)`` only. Per epoch, the ranks together draw every row of the
  first ``(n // batch) · batch`` places of the permutation exactly once and none of the other ``n % batch``
  (a different tail each epoch); the order does not depend on ``world``.
* :func:`resized_step`: where a run with another global batch stands after the same progress.
* The eval sampler gives rank ``r`` the rows ``r, r + world, ...`` in order (all rows, no padding).

Shape legend: ``B`` per-process batch, ``G`` global batch.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from tokenloom.errors import ConfigError
from tokenloom.vision.data import collate
from tokenloom.vision.transforms import IMAGENET_MEAN, IMAGENET_STD, normalize

if TYPE_CHECKING:
    import torch

__all__ = [
    "StepSampler",
    "Subset",
    "build_loaders",
    "eval_order",
    "resized_step",
    "split_indices",
    "to_device",
]


def split_indices(n: int, val_fraction: float, seed: int) -> tuple[list[int], list[int]]:
    """``(train, held_out)`` row indices: a seeded ``val_fraction`` of ``range(n)`` is held out (sorted)."""
    import torch

    k = round(n * val_fraction)
    if val_fraction > 0 and k == 0:
        k = 1
    if k >= n:
        raise ConfigError(f"val_fraction={val_fraction} holds out all {n} images; use a smaller fraction")
    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed + 7919)).tolist()
    held = sorted(order[:k])
    chosen = set(held)
    return [i for i in range(n) if i not in chosen], held


class Subset:
    """Rows ``indices`` of a dataset taking ``(index, seed)`` keys."""

    def __init__(self, dataset: Any, indices: Sequence[int]) -> None:
        self.dataset, self.indices = dataset, list(indices)

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, key: tuple[int, int | None]) -> Any:
        i, seed = key
        return self.dataset[(self.indices[i], seed)] if seed is not None else self.dataset[self.indices[i]]


def _sample_seed(seed: int, epoch: int, index: int) -> int:
    base = (seed * 0x9E3779B1 + epoch * 0x85EBCA77) % (1 << 62)
    return (base + index * 0x27D4EB2F) % (1 << 62)


class StepSampler:
    """``(index, seed)`` pairs of this rank's share of each global batch; see the module docstring."""

    def __init__(self, n: int, *, batch: int, rank: int, world: int, seed: int) -> None:
        if batch % world:
            raise ConfigError(f"the global batch {batch} must be divisible by the {world} processes")
        if n < batch:
            raise ConfigError(
                f"{n} training images are fewer than one global batch of {batch}; lower --batch-size"
            )
        self.n, self.batch, self.rank, self.world, self.seed = n, batch, rank, world, seed
        self.epoch, self.start = 0, 0

    @property
    def steps_per_epoch(self) -> int:
        return self.n // self.batch

    def set_epoch(self, epoch: int, start: int = 0) -> None:
        self.epoch, self.start = epoch, start

    def __len__(self) -> int:
        return (self.steps_per_epoch - self.start) * (self.batch // self.world)

    def __iter__(self) -> Iterator[tuple[int, int]]:
        import torch

        g = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch)
        order = torch.randperm(self.n, generator=g).tolist()
        per = self.batch // self.world
        for b in range(self.start, self.steps_per_epoch):
            lo = b * self.batch + self.rank * per
            for i in order[lo : lo + per]:
                yield i, _sample_seed(self.seed, self.epoch, i)


def resized_step(step: int, *, n: int, old: int, new: int) -> int:
    """The step of a run with global batch ``new`` at the epoch and place in that epoch's order that
    ``step`` reaches with global batch ``old`` (``n`` training rows), rounded down to a whole batch:
    the images of at most one ``new`` batch are seen twice."""
    epoch, done = divmod(step, n // old)  # done: global batches of this epoch already taken
    return epoch * (n // new) + done * old // new


def eval_order(n: int, rank: int, world: int) -> list[tuple[int, None]]:
    return [(i, None) for i in range(rank, n, world)]


def build_loaders(
    train_set: Any, eval_set: Any, *, batch: int, rank: int, world: int, seed: int, workers: int
) -> tuple[Any, StepSampler, Any]:
    """``(train_loader, its StepSampler, eval_loader)``; batches are ``(images, labels, rejects)``."""
    import torch
    from torch.utils.data import DataLoader

    sampler = StepSampler(len(train_set), batch=batch, rank=rank, world=world, seed=seed)
    per = batch // world
    # worker seeds come from the loaders' own generators: iterating never advances the global torch RNG
    common: dict[str, Any] = {"num_workers": workers, "collate_fn": collate}
    if workers:
        # the samplers run in this process, so persistent workers still follow set_epoch
        common.update(persistent_workers=True, prefetch_factor=4)
    train = DataLoader(
        train_set,
        batch_size=per,
        sampler=sampler,
        generator=torch.Generator(),
        **common,
    )
    evaluation = DataLoader(
        eval_set,
        batch_size=per,
        sampler=eval_order(len(eval_set), rank, world),
        generator=torch.Generator(),
        **common,
    )
    return train, sampler, evaluation


def to_device(
    batch: tuple[Any, Any, Any], device: torch.device, *, normalize_on_device: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(images, labels)`` on ``device``; with ``normalize_on_device`` the uint8 images ``[B, 3, S, S]``
    are normalized there (ImageNet mean / std, the loader-side transform's defaults) to float32."""
    images, labels, rejects = batch
    if rejects or images is None:  # shards hold only decoded images: a reject here is a bug
        raise RuntimeError(f"unexpected rejected items in a shard batch: {rejects}")
    non_blocking = device.type == "cuda"
    images = images.to(device, non_blocking=non_blocking)  # [B, 3, S, S]
    if normalize_on_device:
        images = normalize(images, IMAGENET_MEAN, IMAGENET_STD)  # uint8 -> float32 [B, 3, S, S]
    return images, labels.to(device, non_blocking=non_blocking)
