"""Images into ViT tokens: robust decode, transforms, patches, datasets and sharded preprocessing.

Names are imported lazily (torch, torchvision and PIL load on first use):

* ``io``: :func:`load_image`, :class:`DecodeConfig`
* ``transforms``: :class:`TransformConfig`, :func:`eval_transform`, :func:`train_transform`,
  :func:`plain_transform`
* ``patches``: :func:`patchify`, :func:`unpatchify` (``PatchEmbed`` lives in ``tokenloom.encoder``)
* ``data``: :class:`ImageDataset` (``from_folder`` / ``from_list`` / ``from_csv``), :class:`ShardDataset`,
  :func:`build_loader`
* ``shards``: :func:`preprocess_images`, :class:`PreprocessConfig` (``store="full"`` whole views or
  ``"eval"`` crops, see ``store``), :func:`read_manifest`
* ``export``: :func:`export_webdataset`
* ``train``: :func:`train_vit`, :class:`TrainConfig`, :func:`build_classifier`
"""

from __future__ import annotations

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

__all__ = sorted(_LAZY)


__getattr__, __dir__ = lazy_exports(globals(), _LAZY)
