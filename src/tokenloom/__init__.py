"""tokenloom: tokenizers, multilingual token-length slices, ViT image tokens, and one encoder for both.

The public API is listed in ``__all__`` and imported lazily: ``import tokenloom`` is cheap and pulls in
neither torch nor pandas until a name that needs them is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tokenloom._lazy import lazy_exports
from tokenloom._version import __version__

# public name -> module that defines it (imported on first access)
_LAZY: dict[str, str] = {
    # errors
    "TokenloomError": "tokenloom.errors",
    "ConfigError": "tokenloom.errors",
    "CorpusError": "tokenloom.errors",
    "TokenizerError": "tokenloom.errors",
    "ImageDecodeError": "tokenloom.errors",
    # tokenizer trainers and the Tokenizer
    "train_tokenizer": "tokenloom.text.train",
    "TrainerConfig": "tokenloom.text.train",
    "Tokenizer": "tokenloom.text.tokenizer",
    "load_tokenizer": "tokenloom.text.tokenizer",
    "as_tokenizer": "tokenloom.text.adapt",
    # fertility and multilingual slice reports
    "fertility_report": "tokenloom.fertility.report",
    "fertility_by_source": "tokenloom.fertility.report",
    "write_report": "tokenloom.fertility.writers",
    "ReportConfig": "tokenloom.fertility.report",
    "load_corpus": "tokenloom.text.corpus",
    "Corpus": "tokenloom.text.corpus",
    # encoder configuration
    "EncoderConfig": "tokenloom.encoder.config",
    # cost model: pure formulas, no torch
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
    # encoder: attention
    "attention": "tokenloom.encoder.attention",
    # encoder: model, front ends, timm conversion
    "Encoder": "tokenloom.encoder.model",
    "TextEmbed": "tokenloom.encoder.embed",
    "ImageEmbed": "tokenloom.encoder.embed",
    "PatchEmbed": "tokenloom.encoder.embed",
    "from_timm": "tokenloom.encoder.timm_compat",
    # images: decode, transforms, patches, datasets, sharded preprocessing
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
    # token shards: a corpus tokenized once, read as windows or packed rows
    "TokenizeConfig": "tokenloom.tokens.config",
    "TokenizeSummary": "tokenloom.tokens.job",
    "tokenize_corpus": "tokenloom.tokens.job",
    "TokenShardDataset": "tokenloom.tokens.dataset",
}

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time _LAZY imports each name on first use
    from tokenloom.costs import (
        EncoderFlops,
        TrainingMemory,
        attention_flops,
        bytes_per_element,
        encoder_flops,
        encoder_kv_cache_bytes,
        encoder_param_breakdown,
        encoder_params,
        format_bytes,
        format_count,
        kv_cache_bytes,
        linear_flops,
        mlp_flops,
        projection_flops,
        score_bytes,
        tensor_bytes,
        training_memory,
        vit_patch_dim,
        vit_tokens,
        weight_bytes,
    )
    from tokenloom.encoder.attention import attention
    from tokenloom.encoder.config import EncoderConfig
    from tokenloom.encoder.embed import ImageEmbed, PatchEmbed, TextEmbed
    from tokenloom.encoder.model import Encoder
    from tokenloom.encoder.timm_compat import from_timm
    from tokenloom.errors import ConfigError, CorpusError, ImageDecodeError, TokenizerError, TokenloomError
    from tokenloom.fertility.report import ReportConfig, fertility_by_source, fertility_report
    from tokenloom.fertility.writers import write_report
    from tokenloom.text.adapt import as_tokenizer
    from tokenloom.text.corpus import Corpus, load_corpus
    from tokenloom.text.tokenizer import Tokenizer, load_tokenizer
    from tokenloom.text.train import TrainerConfig, train_tokenizer
    from tokenloom.tokens.config import TokenizeConfig
    from tokenloom.tokens.dataset import TokenShardDataset
    from tokenloom.tokens.job import TokenizeSummary, tokenize_corpus
    from tokenloom.vision.data import ImageDataset, ShardDataset, build_loader
    from tokenloom.vision.export import export_webdataset
    from tokenloom.vision.io import DecodeConfig, load_image
    from tokenloom.vision.patches import patchify, unpatchify
    from tokenloom.vision.shards import PreprocessConfig, preprocess_images
    from tokenloom.vision.train import TrainConfig, train_vit
    from tokenloom.vision.transforms import TransformConfig, eval_transform, train_transform

__all__ = [
    "ConfigError",
    "Corpus",
    "CorpusError",
    "DecodeConfig",
    "Encoder",
    "EncoderConfig",
    "EncoderFlops",
    "ImageDataset",
    "ImageDecodeError",
    "ImageEmbed",
    "PatchEmbed",
    "PreprocessConfig",
    "ReportConfig",
    "ShardDataset",
    "TextEmbed",
    "TokenShardDataset",
    "TokenizeConfig",
    "TokenizeSummary",
    "Tokenizer",
    "TokenizerError",
    "TokenloomError",
    "TrainConfig",
    "TrainerConfig",
    "TrainingMemory",
    "TransformConfig",
    "__version__",
    "as_tokenizer",
    "attention",
    "attention_flops",
    "build_loader",
    "bytes_per_element",
    "encoder_flops",
    "encoder_kv_cache_bytes",
    "encoder_param_breakdown",
    "encoder_params",
    "eval_transform",
    "export_webdataset",
    "fertility_by_source",
    "fertility_report",
    "format_bytes",
    "format_count",
    "from_timm",
    "kv_cache_bytes",
    "linear_flops",
    "load_corpus",
    "load_image",
    "load_tokenizer",
    "mlp_flops",
    "patchify",
    "preprocess_images",
    "projection_flops",
    "score_bytes",
    "tensor_bytes",
    "tokenize_corpus",
    "train_tokenizer",
    "train_transform",
    "train_vit",
    "training_memory",
    "unpatchify",
    "vit_patch_dim",
    "vit_tokens",
    "weight_bytes",
    "write_report",
]


__getattr__, __dir__ = lazy_exports(globals(), _LAZY)
