"""Train / eval image transforms on uint8 tensors (torchvision.transforms.v2), normalizing only at the end.

* eval: resize the shorter side to ``resize_size`` (default ``floor(size / crop_pct)``, 256 for 224, as in
  timm), center crop ``size``;
* train: ``RandomResizedCrop(size, scale=(0.08, 1), ratio=(3/4, 4/3))``, horizontal flip with probability
  ``hflip``, optional RandAugment or TrivialAugmentWide. With bilinear interpolation (the default) the
  crop, its one antialiased resize and the flip run as one uint8 step (``crops.py``; equal to torchvision
  v2's ``resized_crop`` + ``horizontal_flip`` for the same box); other filters use torchvision v2;
* none (:func:`plain_transform`): no geometry, for images already at their size (preprocessed shards);
* then float32 conversion and normalization with ``mean`` / ``std`` (ImageNet by default), fused into one
  subtract-and-multiply (``normalize_reference`` is the plain ``v2.ToDtype`` + ``v2.Normalize`` it equals).

Every geometric and colour step runs on ``uint8 [3, H, W]`` tensors (channels-last views included), so
the pipeline works equally on freshly decoded images and on preprocessed uint8 shards.

Determinism: ``transform(image, seed=s)`` draws its random parameters from generators seeded with ``s``
alone (a :class:`random.Random` for the crop box and flip, torch's CPU generator for RandAugment, saved and
restored), so a sample's augmentation depends only on its seed — not on worker count, order or batch.
Without ``seed`` one seed is drawn from the global torch RNG (``torch.manual_seed`` fixes it).

:meth:`ImageTransform.load` decodes a file with the JPEG draft size this transform allows
(``decode_size``) and applies the transform. This module does not decode by itself nor patchify.

Shape legend: ``C`` channels (3), ``H, W`` input size, ``S`` output side (``size``).
"""

from __future__ import annotations

import functools
import math
import random
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from tokenloom.errors import ConfigError
from tokenloom.vision.crops import crop_params, resized_crop_flip
from tokenloom.vision.io import load_image

if TYPE_CHECKING:
    import torch

    from tokenloom.vision.io import DecodeConfig, ImageSource

__all__ = [
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "ImageTransform",
    "TransformConfig",
    "eval_transform",
    "normalize",
    "normalize_reference",
    "plain_transform",
    "train_transform",
]

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

AutoAugment = Literal["none", "randaugment", "trivialaugment"]
TransformKind = Literal["train", "eval", "none"]
Interpolation = Literal["bilinear", "bicubic", "nearest"]


@dataclass(frozen=True)
class TransformConfig:
    """Settings for :func:`eval_transform` and :func:`train_transform`."""

    size: int = 224  # output side S (square crop)
    crop_pct: float = 0.875  # eval: size / resize_size (the ImageNet convention 224/256)
    resize_size: int | None = None  # eval: shorter side before the center crop; None: floor(size / crop_pct)
    scale: tuple[float, float] = (0.08, 1.0)  # train: RandomResizedCrop area fraction range
    ratio: tuple[float, float] = (3 / 4, 4 / 3)  # train: RandomResizedCrop aspect-ratio range
    hflip: float = 0.5  # train: probability of a horizontal flip
    auto_augment: AutoAugment = "none"  # train: optional RandAugment / TrivialAugmentWide on uint8
    randaugment_ops: int = 2  # train: RandAugment num_ops
    randaugment_magnitude: int = 9  # train: RandAugment magnitude (0..30)
    interpolation: Interpolation = "bilinear"  # resize filter (antialiased for bilinear/bicubic)
    mean: tuple[float, float, float] = IMAGENET_MEAN  # per-channel mean in [0, 1] units
    std: tuple[float, float, float] = IMAGENET_STD  # per-channel std in [0, 1] units
    normalize: bool = True  # False: output stays uint8 [3, S, S] (e.g. for preprocessed shards)
    draft: bool = True  # let ImageTransform.load decode JPEGs at reduced scale (>= decode_size)

    def __post_init__(self) -> None:
        if not isinstance(self.size, int) or self.size < 1:
            raise ConfigError(f"size must be a positive int, got {self.size!r}")
        if not 0.0 < self.crop_pct <= 1.0:
            raise ConfigError(f"crop_pct must be in (0, 1], got {self.crop_pct!r}")
        if self.resize_size is not None and (
            not isinstance(self.resize_size, int) or self.resize_size < self.size
        ):
            raise ConfigError(
                f"resize_size must be an int >= size={self.size} or None, got {self.resize_size!r}"
            )
        lo, hi = self.scale
        if not 0.0 < lo <= hi <= 1.0:
            raise ConfigError(f"scale must satisfy 0 < lo <= hi <= 1, got {self.scale!r}")
        rlo, rhi = self.ratio
        if not 0.0 < rlo <= rhi:
            raise ConfigError(f"ratio must satisfy 0 < lo <= hi, got {self.ratio!r}")
        if not 0.0 <= self.hflip <= 1.0:
            raise ConfigError(f"hflip is a probability in [0, 1], got {self.hflip!r}")
        if self.auto_augment not in ("none", "randaugment", "trivialaugment"):
            raise ConfigError(
                f"auto_augment must be 'none', 'randaugment' or 'trivialaugment', got {self.auto_augment!r}"
            )
        if self.interpolation not in ("bilinear", "bicubic", "nearest"):
            raise ConfigError(
                f"interpolation must be 'bilinear', 'bicubic' or 'nearest', got {self.interpolation!r}"
            )
        if len(self.mean) != 3 or len(self.std) != 3 or any(s <= 0 for s in self.std):
            raise ConfigError(
                f"mean and std need 3 values each, std > 0; got mean={self.mean}, std={self.std}"
            )

    @property
    def eval_resize(self) -> int:
        """The shorter side eval resizes to before cropping."""
        return self.resize_size if self.resize_size is not None else math.floor(self.size / self.crop_pct)


def normalize_reference(
    images: torch.Tensor, mean: tuple[float, ...], std: tuple[float, ...]
) -> torch.Tensor:
    """uint8 -> float32 in [0, 1] -> (x - mean) / std, with torchvision's own ops."""
    import torch
    from torchvision.transforms import v2

    scaled = v2.functional.to_dtype(images, torch.float32, scale=True)
    return v2.functional.normalize(scaled, list(mean), list(std))


def normalize(images: torch.Tensor, mean: tuple[float, ...], std: tuple[float, ...]) -> torch.Tensor:
    """Fast path of :func:`normalize_reference`: ``(x - 255·mean) · 1/(255·std)``, contiguous float32.

    ``images``: uint8 ``[..., 3, H, W]`` on any device (a loader's CPU image, or a batch on the GPU with
    ``normalize_on_device``). A cast into a fresh contiguous float32 tensor, then two in-place passes
    (faster than a mixed-dtype subtract). Planar input is over twice as fast as channels-last input.
    Equal to the reference up to float rounding (~1e-6).
    """
    import torch

    if images.dtype != torch.uint8:
        raise TypeError(f"normalize expects uint8 images, got {images.dtype}")
    m, inv = _constants(tuple(mean), tuple(std))  # [3, 1, 1] each
    if images.device != m.device:
        m, inv = m.to(images.device), inv.to(images.device)
    out = torch.empty(images.shape, dtype=torch.float32, device=images.device)  # contiguous [..., 3, S, S]
    return out.copy_(images).sub_(m).mul_(inv)


@functools.lru_cache(maxsize=16)
def _constants(mean: tuple[float, ...], std: tuple[float, ...]) -> tuple[torch.Tensor, torch.Tensor]:
    """``255·mean`` and ``1/(255·std)`` as float32 ``[3, 1, 1]`` CPU tensors (built once per pair)."""
    import torch

    m = torch.tensor([255.0 * v for v in mean], dtype=torch.float32).view(3, 1, 1)  # [3, 1, 1]
    inv = torch.tensor([1.0 / (255.0 * v) for v in std], dtype=torch.float32).view(3, 1, 1)  # [3, 1, 1]
    return m, inv


class ImageTransform:
    """A callable ``uint8 [3, H, W] -> float32 [3, S, S]`` (or uint8 when ``config.normalize`` is False)."""

    def __init__(self, config: TransformConfig, *, kind: TransformKind) -> None:
        from torchvision.transforms import v2

        if kind not in ("train", "eval", "none"):
            raise ConfigError(f"kind must be 'train', 'eval' or 'none', got {kind!r}")
        self.config = config
        self.kind: TransformKind = kind
        self.train = kind == "train"
        interp = {
            "bilinear": v2.InterpolationMode.BILINEAR,
            "bicubic": v2.InterpolationMode.BICUBIC,
            "nearest": v2.InterpolationMode.NEAREST,
        }[config.interpolation]
        steps: list[object] = []
        self.decode_size: int | None  # shorter side a JPEG may be draft-decoded down to (None: full size)
        # train + bilinear: crop, resize and flip are one uint8 step before ``geometry`` (see crops.py)
        self.fused_crop = kind == "train" and config.interpolation == "bilinear"
        if kind == "train":
            if not self.fused_crop:
                steps.append(
                    v2.RandomResizedCrop(
                        config.size, scale=config.scale, ratio=config.ratio, interpolation=interp
                    )
                )
                if config.hflip > 0:
                    steps.append(v2.RandomHorizontalFlip(config.hflip))
            if config.auto_augment == "randaugment":
                steps.append(v2.RandAugment(config.randaugment_ops, config.randaugment_magnitude))
            elif config.auto_augment == "trivialaugment":
                steps.append(v2.TrivialAugmentWide())
            # decode at >= S: a full-image crop keeps all its detail; small crops are upsampled either way
            self.decode_size = config.size
        elif kind == "eval":
            steps.append(v2.Resize(config.eval_resize, interpolation=interp, antialias=True))
            steps.append(v2.CenterCrop(config.size))
            self.decode_size = config.eval_resize
        else:  # "none": images are already S x S (preprocessed shards); only the final normalize
            steps.append(v2.Identity())
            self.decode_size = None
        self.geometry = v2.Compose(steps or [v2.Identity()])

    def __call__(self, image: torch.Tensor, *, seed: int | None = None) -> torch.Tensor:
        import torch

        if image.dtype != torch.uint8 or image.dim() != 3 or image.shape[0] != 3:
            raise ValueError(
                f"transforms expect an RGB uint8 image [3, H, W], got {image.dtype} {tuple(image.shape)}; "
                "decode with tokenloom.vision.load_image"
            )
        if self.fused_crop:
            if seed is None:
                seed = int(torch.randint(0, 1 << 62, ()).item())  # from the global RNG
            image = self._crop_flip(image, random.Random(seed))  # [3, H, W] -> [3, S, S] uint8
            if self.config.auto_augment == "none":
                return self._finish(image)  # nothing else to draw from torch's generator
        if seed is not None and self.train:
            # seed only the CPU generator the v2 transforms draw from (torch.manual_seed would also queue
            # lazy CUDA seeding, which records a stack trace per call) and restore it afterwards
            generator = torch.default_generator
            saved = generator.get_state()
            generator.manual_seed(seed)
            try:
                out = self.geometry(image)  # [3, S, S] uint8
            finally:
                generator.set_state(saved)
        else:
            out = self.geometry(image)  # [3, S, S] uint8
        return self._finish(out)

    def _crop_flip(self, image: torch.Tensor, rng: random.Random) -> torch.Tensor:
        """RandomResizedCrop + flip in one uint8 step (box and flip drawn from ``rng``): ``[3, S, S]``."""
        c = self.config
        box = crop_params(int(image.shape[1]), int(image.shape[2]), c.scale, c.ratio, rng)
        flip = c.hflip > 0 and rng.random() < c.hflip
        return resized_crop_flip(image, box, c.size, flip)

    def _finish(self, out: torch.Tensor) -> torch.Tensor:
        if not self.config.normalize:
            return out.contiguous()
        return normalize(out, self.config.mean, self.config.std)  # [3, S, S] float32

    def load(
        self,
        source: ImageSource,
        *,
        seed: int | None = None,
        decode: DecodeConfig | None = None,
        name: str | None = None,
    ) -> torch.Tensor:
        """Decode ``source`` (JPEG draft to ``decode_size`` when ``config.draft``) and transform it."""
        target = self.decode_size if self.config.draft else None  # "none": full decode, no resize follows
        return self(load_image(source, target_size=target, config=decode, name=name), seed=seed)

    def with_normalize(self, on: bool) -> ImageTransform:
        """The same transform with the final normalize switched on or off."""
        return ImageTransform(replace(self.config, normalize=on), kind=self.kind)

    def __repr__(self) -> str:
        return f"ImageTransform({self.kind}, {self.geometry}, normalize={self.config.normalize})"


def eval_transform(config: TransformConfig | None = None) -> ImageTransform:
    """Resize shorter side, center crop, normalize (see :class:`TransformConfig`)."""
    return ImageTransform(config or TransformConfig(), kind="eval")


def train_transform(config: TransformConfig | None = None) -> ImageTransform:
    """RandomResizedCrop, flip, optional RandAugment/TrivialAugment, normalize (see :class:`TransformConfig`)."""
    return ImageTransform(config or TransformConfig(), kind="train")


def plain_transform(config: TransformConfig | None = None) -> ImageTransform:
    """No geometry, only the final normalize: for images already at their final size (shards)."""
    return ImageTransform(config or TransformConfig(), kind="none")
