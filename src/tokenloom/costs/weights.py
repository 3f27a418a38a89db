"""Parameter counts of an encoder and the bytes its weights take.

Pure functions over integers (and an :class:`~tokenloom.encoder.config.EncoderConfig`), with the
conventions of :mod:`tokenloom.costs.formulas`: exact integer bytes, ``ceil(elements × bytes_per_element)``
(int4 packs two values per byte); ``d`` model width, ``f`` MLP hidden width, ``H`` / ``Hkv`` query and
key/value heads, ``D`` head width, ``V`` vocabulary size. ``encoder_params`` equals the parameter count of
``Encoder(config)`` (tested).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tokenloom.costs._check import check_count
from tokenloom.costs.formulas import tensor_bytes

if TYPE_CHECKING:
    from tokenloom.encoder.config import EncoderConfig

__all__ = ["embedding_params", "encoder_param_breakdown", "encoder_params", "weight_bytes"]


def weight_bytes(
    params: int | float,
    dtype: str | float,
    *,
    group_size: int | None = None,
    scale_dtype: str | float = "fp16",
) -> int:
    """Bytes of ``params`` weights stored at ``s`` bytes each, plus their quantization scales if grouped.

    ``params·s``, and with ``group_size`` ``g`` one scale per group of ``g`` weights stored at ``scale_dtype``:
    ``params·s + ceil(params / g)·s_scale`` (symmetric group-wise quantization as in GPTQ, Frantar et al.
    2023, and AWQ, Lin et al. 2024; an asymmetric format's zero points would add as much again).
    Assumptions: weights only (no optimizer state, gradients or framework overhead).
    Worked examples: 70e9 parameters at 2 bytes → 140 GB (decimal; 130.4 GiB); at int4 with groups of
    128 and fp16 scales → 35 GB + 1.09375 GB = 36.09375 GB (4.125 bits per weight).
    """
    if isinstance(params, float) and params.is_integer():
        params = int(params)  # 70e9 is a float literal
    count = check_count("params", params)
    values = tensor_bytes(count, dtype)
    if group_size is None:
        return values
    groups = -(-count // check_count("group_size", group_size))  # ceil
    return values + tensor_bytes(groups, scale_dtype)


def encoder_param_breakdown(config: EncoderConfig) -> dict[str, int]:
    """Parameters of ``Encoder(config)`` per component, summed over all blocks (plus the final norm).

    Keys: ``norms`` (2 per block), ``qkv``, ``out``, ``mlp``, ``final_norm``. Per block: LayerNorm has
    weight and bias (2d), RMSNorm a weight (d); q ``d·H·D``, k and v ``d·Hkv·D`` each, plus ``H·D + 2·Hkv·D``
    biases if ``qkv_bias``; output ``H·D·d`` (+ d if ``proj_bias``); MLP GELU ``2·d·f`` (+ f + d), SwiGLU
    ``3·d·f`` (+ 2f + d). RoPE has no parameters; front ends, absolute positions and heads are separate
    modules and not counted (the shapes of timm's ViT blocks, Dosovitskiy et al. 2021; ``Encoder`` builds
    exactly these parameters).
    With ``cross_attention`` a key ``cross`` is added: per block a norm, q ``d·H·D``, k and v
    ``d_mem·Hkv·D`` each (``d_mem = cross_width``), output ``H·D·d``, and the same biases as self-attention.
    """
    d, h, hkv = config.width, config.heads, config.resolved_kv_heads
    hd, f, depth = config.resolved_head_dim, config.resolved_mlp_hidden, config.depth
    norm = 2 * d if config.norm == "layernorm" else d
    qkv = d * h * hd + 2 * d * hkv * hd + ((h * hd + 2 * hkv * hd) if config.qkv_bias else 0)
    out = h * hd * d + (d if config.proj_bias else 0)
    if config.mlp == "gelu":
        mlp = 2 * d * f + ((f + d) if config.proj_bias else 0)
    else:
        mlp = 3 * d * f + ((2 * f + d) if config.proj_bias else 0)
    breakdown = {
        "norms": depth * 2 * norm,
        "qkv": depth * qkv,
        "out": depth * out,
        "mlp": depth * mlp,
        "final_norm": norm if config.final_norm else 0,
    }
    if config.cross_attention:
        dm = config.cross_width or d
        cross_qkv = d * h * hd + 2 * dm * hkv * hd + ((h * hd + 2 * hkv * hd) if config.qkv_bias else 0)
        breakdown["cross"] = depth * (norm + cross_qkv + out)
    return breakdown


def embedding_params(vocab_size: int, d_model: int, *, tied: bool = True) -> int:
    """Parameters of a token embedding ``[V, d]`` and the output layer that maps back to the vocabulary.

    ``V·d`` when the output layer reuses the embedding matrix (``tied=True``, as GPT-2 and T5 do), ``2·V·d``
    when it has its own (no output bias counted). Per token the output layer costs ``2·d·V`` forward FLOPs
    (:func:`~tokenloom.costs.formulas.linear_flops`); the embedding lookup costs none.
    """
    v = check_count("vocab_size", vocab_size)
    d = check_count("d_model", d_model)
    return v * d * (1 if tied else 2)


def encoder_params(config: EncoderConfig) -> int:
    """Parameters of the encoder stack ``Encoder(config)``: the sum of :func:`encoder_param_breakdown`.

    Equals ``sum(p.numel() for p in Encoder(config).parameters())`` (tested). ViT-B/16: 12 blocks of
    7,087,872 = 85,054,464, + 1,536 for the final LayerNorm = 85,056,000.
    """
    return sum(encoder_param_breakdown(config).values())
