"""The cost model: what an encoder costs in FLOPs, attention-score memory, KV-cache bytes and weights.

``formulas`` holds the pure formulas (integers in, integers out; no torch, numpy or pandas), ``weights``
the parameter counts and weight bytes, ``language_model`` a language model's parameters and FLOPs, and
``training`` what one training step holds in memory; all four
are re-exported here; ``tables`` builds the CLI's tables from them, ``languages`` is what a language with a
given token premium costs (pandas only for fertility reports) and ``plots`` draws them (matplotlib,
imported on use).
"""

from __future__ import annotations

from tokenloom.costs.formulas import (
    DTYPE_BYTES,
    DType,
    EncoderFlops,
    attention_edges,
    attention_flops,
    bytes_per_element,
    encoder_flops,
    encoder_kv_cache_bytes,
    format_bytes,
    format_count,
    kv_cache_bytes,
    linear_flops,
    mlp_flops,
    projection_flops,
    score_bytes,
    tensor_bytes,
    vit_patch_dim,
    vit_tokens,
)
from tokenloom.costs.language_model import LanguageModelFlops, lm_flops, lm_param_breakdown, lm_params
from tokenloom.costs.training import TrainingMemory, block_activation_bytes, training_memory
from tokenloom.costs.weights import embedding_params, encoder_param_breakdown, encoder_params, weight_bytes

__all__ = [
    "DTYPE_BYTES",
    "DType",
    "EncoderFlops",
    "LanguageModelFlops",
    "TrainingMemory",
    "attention_edges",
    "attention_flops",
    "block_activation_bytes",
    "bytes_per_element",
    "embedding_params",
    "encoder_flops",
    "encoder_kv_cache_bytes",
    "encoder_param_breakdown",
    "encoder_params",
    "format_bytes",
    "format_count",
    "kv_cache_bytes",
    "linear_flops",
    "lm_flops",
    "lm_param_breakdown",
    "lm_params",
    "mlp_flops",
    "projection_flops",
    "score_bytes",
    "tensor_bytes",
    "training_memory",
    "vit_patch_dim",
    "vit_tokens",
    "weight_bytes",
]
