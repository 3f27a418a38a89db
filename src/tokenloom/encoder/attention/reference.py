"""The reference attention: the explicit computation every other path is tested against.

    scores  = (q @ kᵀ) · scale                       [B, H, N, M]   (scale defaults to 1/√D)
    scores += additive mask   (bool masks: −inf where False; causal: −inf where j > i + (M − N))
    weights = softmax(scores − rowmax)                (stable; a row with every key masked → all zeros)
    out     = dropout(weights) @ v                    [B, H, N, Dv]

It materializes the full ``[B, H, N, M]`` score matrix (N·M·H·4 bytes per batch item in fp32: 2 GiB at
N = 8192, H = 8) — that is the point of a reference, and the reason the other paths exist. Low-precision
inputs (fp16 / bf16) are computed in fp32 and the output cast back. Grouped-query k/v are repeated to
H heads (query head h uses key/value head h // (H // Hkv)). Gradients come from autograd; fully
masked rows get zero weights and finite (zero) gradients because the softmax denominator is guarded.

It does not dispatch, tile or fuse anything (see ``tiled``, ``sdpa``, ``triton_kernel``).

Shapes: ``B`` batch, ``H`` query heads, ``Hkv`` key/value heads, ``N`` queries, ``M`` keys,
``D`` head width of q/k, ``Dv`` head width of v.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from tokenloom.encoder.attention._common import (
    Dims,
    KeyRestriction,
    causal_tile,
    check_inputs,
    repeat_kv,
    resolve,
)

__all__ = ["attention_weights", "reference_attention", "reference_path"]


def _compute_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.promote_types(dtype, torch.float32)  # fp16/bf16 -> fp32; fp32/fp64 unchanged


def attention_weights(
    q: Tensor,
    k: Tensor,
    mask: Tensor | None = None,
    *,
    causal: bool = False,
    scale: float | None = None,
) -> Tensor:
    """Attention weights ``[B, H, N, M]`` (rows sum to 1, or to 0 where every key is masked), in fp32+."""
    dims, mask4 = check_inputs(q, k, k, mask, scale=scale, dropout_p=0.0)
    return _weights(q, k, dims, mask4, causal)


def _weights(q: Tensor, k: Tensor, dims: Dims, mask4: Tensor | None, causal: bool) -> Tensor:
    ct = _compute_dtype(q.dtype)
    k_rep = repeat_kv(k.to(ct), dims.G)  # [B, Hkv, M, D] -> [B, H, M, D]
    scores = (q.to(ct) @ k_rep.transpose(-2, -1)) * dims.scale  # [B, H, N, M]
    if mask4 is not None:
        if mask4.dtype == torch.bool:
            scores = scores.masked_fill(~mask4, float("-inf"))
        else:
            scores = scores + mask4.to(ct)
    if causal:
        allowed = causal_tile(0, dims.N, 0, dims.M, dims.M - dims.N, q.device)  # [N, M]
        scores = scores.masked_fill(~allowed, float("-inf"))
    # Stable softmax. A row whose every score is -inf has max -inf: shift it by 0 instead (exp -> 0),
    # and divide by 1 instead of its zero sum, so its weights are exactly 0 and gradients stay finite.
    row_max = scores.amax(dim=-1, keepdim=True).detach()  # [B, H, N, 1]
    row_max = torch.where(torch.isneginf(row_max), torch.zeros_like(row_max), row_max)
    exp = torch.exp(scores - row_max)  # [B, H, N, M]
    total = exp.sum(dim=-1, keepdim=True)  # [B, H, N, 1]
    total = torch.where(total > 0, total, torch.ones_like(total))
    return exp / total


def reference_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    *,
    causal: bool = False,
    scale: float | None = None,
    dropout_p: float = 0.0,
) -> Tensor:
    """``softmax(q kᵀ · scale + mask) @ v`` → ``[B, H, N, Dv]`` in q's dtype (see the module docstring)."""
    dims, keys = resolve(q, k, v, mask, causal=causal, scale=scale, dropout_p=dropout_p)
    return reference_path(q, k, v, dims, keys, dropout_p=dropout_p)


def reference_path(
    q: Tensor, k: Tensor, v: Tensor, dims: Dims, keys: KeyRestriction, *, dropout_p: float
) -> Tensor:
    """The reference computation of a validated call (every restriction applied as one dense mask)."""
    weights = _weights(q, k, dims, keys.dense(dims, q.device, with_pattern=True), keys.causal)  # [B, H, N, M]
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p, training=True)
    v_rep = repeat_kv(v.to(weights.dtype), dims.G)  # [B, Hkv, M, Dv] -> [B, H, M, Dv]
    return (weights @ v_rep).to(q.dtype)  # [B, H, N, Dv]
