"""tokenloom: tokenizers, multilingual token-length slices, ViT image tokens, and one encoder for both.

The public API is listed in ``__all__`` and imported lazily: ``import tokenloom`` is cheap and pulls in
neither torch nor pandas until a name that needs them is used.
"""

from __future__ import annotations

from tokenloom._lazy import lazy_exports

__version__ = "0.1.0"

# public name -> module that defines it (imported on first access)
_LAZY: dict[str, str] = {
    # errors
    "TokenloomError": "tokenloom.errors",
    "ConfigError": "tokenloom.errors",
    "CorpusError": "tokenloom.errors",
    "TokenizerError": "tokenloom.errors",
    "ImageDecodeError": "tokenloom.errors",
    # tokenizer trainers and the Tokenizer (tokenizer engineer)
    "train_tokenizer": "tokenloom.text.train",
    "TrainerConfig": "tokenloom.text.train",
    "Tokenizer": "tokenloom.text.tokenizer",
    "load_tokenizer": "tokenloom.text.tokenizer",
    # fertility and multilingual slice reports (fertility engineer)
    "fertility_report": "tokenloom.fertility.report",
    "fertility_by_source": "tokenloom.fertility.report",
    "write_report": "tokenloom.fertility.report",
    "ReportConfig": "tokenloom.fertility.report",
    "load_corpus": "tokenloom.text.corpus",
    "Corpus": "tokenloom.text.corpus",
    # encoder configuration
    "EncoderConfig": "tokenloom.encoder.config",
    # cost model (costs engineer): pure formulas, no torch
    "attention_flops": "tokenloom.costs",
    "projection_flops": "tokenloom.costs",
    "mlp_flops": "tokenloom.costs",
    "linear_flops": "tokenloom.costs",
    "encoder_flops": "tokenloom.costs",
    "training_memory": "tokenloom.costs",
    "TrainingMemory": "tokenloom.costs",
    "EncoderFlops": "tokenloom.costs",
    "encoder_params": "tokenloom.costs",
    "encoder_param_breakdown": "tokenloom.costs",
    "encoder_kv_cache_bytes": "tokenloom.costs",
    "score_bytes": "tokenloom.costs",
    "tensor_bytes": "tokenloom.costs",
    "kv_cache_bytes": "tokenloom.costs",
    "weight_bytes": "tokenloom.costs",
    "bytes_per_element": "tokenloom.costs",
    "vit_tokens": "tokenloom.costs",
    "vit_patch_dim": "tokenloom.costs",
    "format_bytes": "tokenloom.costs",
    "format_count": "tokenloom.costs",
    # encoder: attention (attention engineer)
    "attention": "tokenloom.encoder.attention",
    # encoder: model, front ends, timm conversion (encoder-model engineer)
    "Encoder": "tokenloom.encoder.model",
    "TextEmbed": "tokenloom.encoder.embed",
    "ImageEmbed": "tokenloom.encoder.embed",
    "PatchEmbed": "tokenloom.encoder.embed",
    "from_timm": "tokenloom.encoder.timm_compat",
    # images: decode, transforms, patches, datasets, sharded preprocessing (image engineer)
    "load_image": "tokenloom.vision.io",
    "DecodeConfig": "tokenloom.vision.io",
    "TransformConfig": "tokenloom.vision.transforms",
    "eval_transform": "tokenloom.vision.transforms",
    "train_transform": "tokenloom.vision.transforms",
    "patchify": "tokenloom.vision.patches",
    "unpatchify": "tokenloom.vision.patches",
    "ImageDataset": "tokenloom.vision.data",
    "ShardDataset": "tokenloom.vision.data",
    "build_loader": "tokenloom.vision.data",
    "PreprocessConfig": "tokenloom.vision.shards",
    "preprocess_images": "tokenloom.vision.shards",
    "export_webdataset": "tokenloom.vision.export",
    "TrainConfig": "tokenloom.vision.train",
    "train_vit": "tokenloom.vision.train",
}

__all__ = ["__version__", *_LAZY]


__getattr__, __dir__ = lazy_exports(globals(), _LAZY)
