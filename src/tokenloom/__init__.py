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
    "load_corpus": "tokenloom.corpus.load",
    "Corpus": "tokenloom.corpus.load",
    # a classifier judged by slice: metrics with intervals, paired models, cascades, selection bias
    "evaluate_slices": "tokenloom.evaluate.evaluation",
    "EvalConfig": "tokenloom.evaluate.config",
    "Evaluation": "tokenloom.evaluate.evaluation",
    "evaluate_cascade": "tokenloom.evaluate.cascade",
    "ScoreStage": "tokenloom.evaluate.cascade",
    "KeywordStage": "tokenloom.evaluate.cascade",
    "StageCost": "tokenloom.evaluate.cascade",
    "selection_estimates": "tokenloom.evaluate.selection",
    "flip_rates": "tokenloom.evaluate.transforms",
    "write_evaluation": "tokenloom.evaluate.writers",
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
    "lm_params": "tokenloom.costs",
    "lm_flops": "tokenloom.costs",
    "LanguageModelFlops": "tokenloom.costs",
    # encoder: attention
    "attention": "tokenloom.encoder.attention",
    # encoder: model, front ends, timm conversion
    "Encoder": "tokenloom.encoder.model",
    "TextEmbed": "tokenloom.encoder.embed",
    "ImageEmbed": "tokenloom.encoder.embed",
    "PatchEmbed": "tokenloom.encoder.embed",
    "from_timm": "tokenloom.encoder.timm_compat",
    # language model and bits per byte
    "LanguageModelConfig": "tokenloom.encoder.config",
    "LanguageModel": "tokenloom.encoder.lm",
    "ScoreConfig": "tokenloom.lm.scoring",
    "evaluate_bpb": "tokenloom.lm.bpb",
    "byte_entropy": "tokenloom.lm.baseline",
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
    from tokenloom.corpus.load import Corpus, load_corpus
    from tokenloom.costs import (
        EncoderFlops,
        LanguageModelFlops,
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
        lm_flops,
        lm_params,
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
    from tokenloom.encoder.config import EncoderConfig, LanguageModelConfig
    from tokenloom.encoder.embed import ImageEmbed, PatchEmbed, TextEmbed
    from tokenloom.encoder.lm import LanguageModel
    from tokenloom.encoder.model import Encoder
    from tokenloom.encoder.timm_compat import from_timm
    from tokenloom.errors import ConfigError, CorpusError, ImageDecodeError, TokenizerError, TokenloomError
    from tokenloom.evaluate.cascade import KeywordStage, ScoreStage, StageCost, evaluate_cascade
    from tokenloom.evaluate.config import EvalConfig
    from tokenloom.evaluate.evaluation import Evaluation, evaluate_slices
    from tokenloom.evaluate.selection import selection_estimates
    from tokenloom.evaluate.transforms import flip_rates
    from tokenloom.evaluate.writers import write_evaluation
    from tokenloom.fertility.report import ReportConfig, fertility_by_source, fertility_report
    from tokenloom.fertility.writers import write_report
    from tokenloom.lm.baseline import byte_entropy
    from tokenloom.lm.bpb import evaluate_bpb
    from tokenloom.lm.scoring import ScoreConfig
    from tokenloom.text.adapt import as_tokenizer
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
    "EvalConfig",
    "Evaluation",
    "ImageDataset",
    "ImageDecodeError",
    "ImageEmbed",
    "KeywordStage",
    "LanguageModel",
    "LanguageModelConfig",
    "LanguageModelFlops",
    "PatchEmbed",
    "PreprocessConfig",
    "ReportConfig",
    "ScoreConfig",
    "ScoreStage",
    "ShardDataset",
    "StageCost",
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
    "byte_entropy",
    "bytes_per_element",
    "encoder_flops",
    "encoder_kv_cache_bytes",
    "encoder_param_breakdown",
    "encoder_params",
    "eval_transform",
    "evaluate_bpb",
    "evaluate_cascade",
    "evaluate_slices",
    "export_webdataset",
    "fertility_by_source",
    "fertility_report",
    "flip_rates",
    "format_bytes",
    "format_count",
    "from_timm",
    "kv_cache_bytes",
    "linear_flops",
    "lm_flops",
    "lm_params",
    "load_corpus",
    "load_image",
    "load_tokenizer",
    "mlp_flops",
    "patchify",
    "preprocess_images",
    "projection_flops",
    "score_bytes",
    "selection_estimates",
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
    "write_evaluation",
    "write_report",
]


__getattr__, __dir__ = lazy_exports(globals(), _LAZY)
