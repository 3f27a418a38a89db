"""ViT training from preprocessed shards: one process, or DistributedDataParallel under ``torchrun``.

:func:`train_vit` builds :func:`build_classifier` (``ImageEmbed`` + ``Encoder`` + linear head) and trains it
on a :class:`~tokenloom.vision.data.ShardDataset` with train transforms (RandomResizedCrop on the stored
full view, flip, optional RandAugment / TrivialAugment), AdamW with decoupled weight decay (none on norms,
biases, positions, class token), cosine schedule with linear warmup, label smoothing, optional
mixup / cutmix, gradient clipping, and bf16 autocast on CUDA. Every epoch it evaluates on a held-out split
(eval transform: resize + center crop) and logs top-1 and loss; every ``log_every`` steps it logs images/s,
loss, learning rate and the fraction of time spent waiting for data (see ``_trainlog.py``).

Distributed: under ``torchrun`` (``WORLD_SIZE > 1``) each process joins a process group (gloo on CPU,
nccl on CUDA) and takes its share of each global batch (``train_data.StepSampler``); only rank 0 prints,
writes the log and checkpoints. With the same global batch and seed, K processes follow one process's
loss curve up to float rounding (gradients are averaged over equal shares).

Checkpoints (``_checkpoint.py``) every ``checkpoint_every`` steps and at the end; ``resume=True`` continues
from ``out/checkpoint.pt``: an interrupted run, resumed with the same number of processes, ends with weights
bitwise equal (on CPU) to an uninterrupted run, in one process and under ``torchrun``. A checkpoint written
with another global batch or number of processes is refused unless ``allow_resize=True``. This module does
not preprocess images.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from tokenloom.encoder.config import EncoderConfig
from tokenloom.errors import ConfigError
from tokenloom.training import distribute
from tokenloom.vision._loop import Loop, TrainResult
from tokenloom.vision.data import ShardDataset
from tokenloom.vision.train_data import Subset, split_indices
from tokenloom.vision.transforms import AutoAugment, TransformConfig, eval_transform, train_transform

if TYPE_CHECKING:
    from torch import nn

__all__ = ["TrainConfig", "TrainResult", "build_classifier", "train_vit"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainConfig:
    """Settings of one training run (all but ``workers``, ``log_every``, ``checkpoint_every`` and ``device``
    must match when resuming; ``batch_size`` may change with ``allow_resize``)."""

    encoder: EncoderConfig = field(
        default_factory=lambda: EncoderConfig.preset("vit-ti16")
    )  # the block stack
    image_size: int = 224  # training / eval crop side S
    patch_size: int = 16  # ViT patch side P
    pool: Literal["token", "avg"] = "token"  # class token or mean of patch tokens before the head
    epochs: int = 10  # passes over the training split
    max_steps: int | None = None  # stop after this many optimizer steps (None: epochs × steps per epoch)
    batch_size: int = 64  # global batch (split evenly across processes)
    lr: float = 1e-3  # peak learning rate (after warmup)
    min_lr_ratio: float = 0.01  # cosine floor as a fraction of lr
    warmup_steps: int = 0  # linear warmup steps
    weight_decay: float = 0.05  # decoupled (AdamW), on weight matrices only
    label_smoothing: float = 0.1  # ε of the smoothed one-hot targets
    mixup: float = 0.0  # Beta α of mixup (0: off)
    cutmix: float = 0.0  # Beta α of cutmix (0: off)
    clip_grad: float | None = 1.0  # max global gradient norm (None: no clipping)
    auto_augment: AutoAugment = "none"  # "randaugment" / "trivialaugment" on top of crop + flip
    val_fraction: float = 0.1  # held-out fraction of the shards when no eval_data is given
    seed: int = 0  # model init, split, shuffling, augmentation, mixing
    workers: int = 2  # DataLoader worker processes per training process
    log_every: int = 10  # steps per progress line / CSV row
    checkpoint_every: int = 0  # steps between checkpoints (0: only at the end)
    amp: bool = True  # bf16 autocast on CUDA (CPU runs stay fp32)
    # the loader yields uint8 batches and the training step normalizes them on the device (4x fewer bytes
    # through workers, pinned memory and the host-to-device copy); bitwise the same inputs as without
    normalize_on_device: bool = False
    device: str = "auto"  # "auto": cuda when available (cuda:LOCAL_RANK under torchrun), else cpu

    def __post_init__(self) -> None:
        if not isinstance(self.encoder, EncoderConfig):
            raise ConfigError(f"encoder must be an EncoderConfig, got {type(self.encoder).__name__}")
        for name in ("image_size", "patch_size", "epochs", "batch_size", "log_every"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ConfigError(f"TrainConfig.{name} must be a positive int, got {value!r}")
        if self.image_size % self.patch_size:
            raise ConfigError(
                f"image_size={self.image_size} must be a multiple of patch_size={self.patch_size}"
            )
        for name in ("warmup_steps", "checkpoint_every", "workers"):
            if getattr(self, name) < 0:
                raise ConfigError(f"TrainConfig.{name} must be >= 0, got {getattr(self, name)!r}")
        if self.max_steps is not None and self.max_steps < 1:
            raise ConfigError(f"max_steps must be positive or None, got {self.max_steps}")
        if not (self.lr > 0 and 0 <= self.min_lr_ratio <= 1 and self.weight_decay >= 0):
            raise ConfigError("need lr > 0, 0 <= min_lr_ratio <= 1 and weight_decay >= 0")
        if not 0 <= self.label_smoothing < 1 or self.mixup < 0 or self.cutmix < 0:
            raise ConfigError("need 0 <= label_smoothing < 1 and mixup, cutmix >= 0 (Beta α; 0 = off)")
        if not 0 <= self.val_fraction < 1:
            raise ConfigError(f"val_fraction must be in [0, 1), got {self.val_fraction}")
        if self.clip_grad is not None and self.clip_grad <= 0:
            raise ConfigError(f"clip_grad must be positive or None, got {self.clip_grad}")
        if self.pool not in ("token", "avg"):
            raise ConfigError(f"pool must be 'token' or 'avg', got {self.pool!r}")

    def settings(self) -> dict[str, Any]:
        """What a resumed run must share with the run it continues."""
        out = asdict(self)
        for key in ("workers", "log_every", "checkpoint_every", "device", "normalize_on_device"):
            out.pop(key)
        return out


def build_classifier(config: TrainConfig, num_classes: int) -> nn.Module:
    """``ImageClassifier(ImageEmbed, Encoder(config.encoder), Linear(width, num_classes))``, head zero-init."""
    from torch import nn

    from tokenloom.encoder.model import Encoder, ImageClassifier, ImageEmbed

    enc = config.encoder
    position = enc.position if enc.position in ("learned", "sinusoidal") else "none"
    embed = ImageEmbed(
        image_size=config.image_size,
        patch_size=config.patch_size,
        width=enc.width,
        class_token=config.pool == "token",
        position=position,
    )
    head = nn.Linear(enc.width, num_classes)
    nn.init.zeros_(head.weight)  # the first loss is exactly log(K)
    nn.init.zeros_(head.bias)
    return ImageClassifier(embed, Encoder(enc), head, pool=config.pool)


def _datasets(config: TrainConfig, data: Path, eval_data: Path | None) -> tuple[Any, Any, int]:
    tcfg = TransformConfig(
        size=config.image_size, auto_augment=config.auto_augment, normalize=not config.normalize_on_device
    )
    train_all = ShardDataset(data, transform=train_transform(tcfg))
    labels = [int(r["label"]) for r in train_all.rows]
    if min(labels) < 0:
        raise ConfigError(f"{data}: images without a label (-1); preprocess a class folder or a labelled CSV")
    if eval_data is not None:
        held_out = ShardDataset(eval_data, transform=eval_transform(tcfg))
        train_set: Any = Subset(train_all, range(len(train_all)))
        eval_set: Any = Subset(held_out, range(len(held_out)))
        labels += [int(r["label"]) for r in held_out.rows]
    else:
        keep, held = split_indices(len(train_all), config.val_fraction, config.seed)
        train_set = Subset(train_all, keep)
        eval_set = Subset(ShardDataset(data, transform=eval_transform(tcfg)), held)
    return train_set, eval_set, max(labels) + 1


def train_vit(
    data: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    config: TrainConfig | None = None,
    eval_data: str | os.PathLike[str] | None = None,
    resume: bool = False,
    allow_resize: bool = False,
    quiet: bool = False,
    on_step: Any = None,
) -> TrainResult:
    """Train on the preprocessed folder ``data``; log, checkpoints and plot go to ``out``.

    ``eval_data``: a preprocessed folder to evaluate on (default: a held-out ``val_fraction`` of ``data``).
    ``resume``: continue from ``out/checkpoint.pt``; it must have been written with the same global batch
    and number of processes, unless ``allow_resize`` (then the run goes on from the same epoch and place
    in it, not exactly).
    ``on_step(step)`` runs after each optimizer step and checkpoint (a hook for tests and fault injection).
    """
    config = config or TrainConfig()
    rank, world, local_rank = distribute.join()  # the process group lives until this call returns
    try:  # the model and its DDP wrapper live in _run's frame, gone before the group is left
        return _run(config, Path(data), eval_data, Path(out), (rank, world, local_rank), quiet=quiet,
                    resume=resume, allow_resize=allow_resize, on_step=on_step)  # fmt: skip
    finally:
        distribute.leave(world)


def _run(
    config: TrainConfig,
    data: Path,
    eval_data: str | os.PathLike[str] | None,
    out: Path,
    place: tuple[int, int, int],
    *,
    quiet: bool,
    resume: bool,
    allow_resize: bool,
    on_step: Any,
) -> TrainResult:
    """One process's run, ``place`` = (rank, world, local rank) in a joined process group."""
    import torch

    rank, world, local_rank = place
    device = distribute.pick_device(config.device, local_rank)
    train_set, eval_set, classes = _datasets(config, data, None if eval_data is None else Path(eval_data))
    torch.manual_seed(config.seed)  # the same initial weights in every process
    model = build_classifier(config, classes)
    loop = Loop(config, out, model, train_set, eval_set, classes, rank=rank, world=world, device=device)
    loop.quiet = quiet or rank != 0
    if resume:
        loop.resume(allow_resize=allow_resize)
    start = time.perf_counter()
    result = loop.run(on_step=on_step)
    logger.debug("training took %.1f s", time.perf_counter() - start)
    return result
