"""Images into ViT tokens: robust decode, transforms, patches, datasets and sharded preprocessing.

Names are imported lazily (torch, torchvision and PIL load on first use):

* ``io``: :func:`load_image`, :class:`DecodeConfig`
* ``transforms``: :class:`TransformConfig`, :func:`eval_transform`, :func:`train_transform`,
  :func:`plain_transform` (RandomResizedCrop + flip as one uint8 step: ``crops``)
* ``patches``: :func:`patchify`, :func:`unpatchify` (``PatchEmbed`` lives in ``tokenloom.encoder``)
* ``data``: :class:`ImageDataset` (``from_folder`` / ``from_list`` / ``from_csv``), :class:`ShardDataset`,
  :func:`build_loader`
* ``shards``: :func:`preprocess_images`, :class:`PreprocessConfig` (``store="full"`` whole views or
  ``"eval"`` crops, see ``store``; ``encoding`` raw / jpeg / webp / png, see ``encoding``),
  :func:`read_manifest`
* ``export``: :func:`export_webdataset`
* ``train``: :func:`train_vit`, :class:`TrainConfig`, :func:`build_classifier`
  (its building blocks: ``optim`` — parameter groups, schedule, losses, mixing — and ``train_data`` —
  held-out split, distributed sampler, loaders)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tokenloom._lazy import lazy_exports

_LAZY: dict[str, str] = {
    "DecodeConfig": "tokenloom.vision.io",
    "load_image": "tokenloom.vision.io",
    "TransformConfig": "tokenloom.vision.transforms",
    "eval_transform": "tokenloom.vision.transforms",
    "train_transform": "tokenloom.vision.transforms",
    "plain_transform": "tokenloom.vision.transforms",
    "patchify": "tokenloom.vision.patches",
    "unpatchify": "tokenloom.vision.patches",
    "ImageDataset": "tokenloom.vision.data",
    "ShardDataset": "tokenloom.vision.data",
    "build_loader": "tokenloom.vision.data",
    "PreprocessConfig": "tokenloom.vision.shards",
    "preprocess_images": "tokenloom.vision.shards",
    "read_manifest": "tokenloom.vision.shards",
    "export_webdataset": "tokenloom.vision.export",
    "TrainConfig": "tokenloom.vision.train",
    "build_classifier": "tokenloom.vision.train",
    "train_vit": "tokenloom.vision.train",
}

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time _LAZY imports each name on first use
    from tokenloom.vision.data import ImageDataset, ShardDataset, build_loader
    from tokenloom.vision.export import export_webdataset
    from tokenloom.vision.io import DecodeConfig, load_image
    from tokenloom.vision.patches import patchify, unpatchify
    from tokenloom.vision.shards import PreprocessConfig, preprocess_images, read_manifest
    from tokenloom.vision.train import TrainConfig, build_classifier, train_vit
    from tokenloom.vision.transforms import TransformConfig, eval_transform, plain_transform, train_transform

__all__ = [
    "DecodeConfig",
    "ImageDataset",
    "PreprocessConfig",
    "ShardDataset",
    "TrainConfig",
    "TransformConfig",
    "build_classifier",
    "build_loader",
    "eval_transform",
    "export_webdataset",
    "load_image",
    "patchify",
    "plain_transform",
    "preprocess_images",
    "read_manifest",
    "train_transform",
    "train_vit",
    "unpatchify",
]


__getattr__, __dir__ = lazy_exports(globals(), _LAZY)
