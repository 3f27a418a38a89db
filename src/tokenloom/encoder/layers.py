"""Transformer building blocks: norms, GELU MLP, SwiGLU, self- and cross-attention (MHA/GQA/MQA, RoPE), Block.

Every block is configured by one ``EncoderConfig``; its parameters are exactly those counted by the cost
model (``tokenloom.costs.encoder_param_breakdown``): two norms (LayerNorm ``2d`` | RMSNorm ``d`` each), a fused ``qkv``
projection ``d -> (H + 2·Hkv)·D`` (same count as separate q, k, v), an output projection ``H·D -> d``, and
the MLP (GELU: ``fc1, fc2``; SwiGLU: ``w1, w3, w2``). RoPE has no parameters.

``qkv`` rows are laid out ``[q heads | k heads | v heads]``, each head contiguous — the layout of timm's
``Attention.qkv`` and of ``nn.MultiheadAttention.in_proj_weight``, so their weights load by copying.

Attention itself is ``tokenloom.encoder.attention.attention`` (masks: bool, True = may attend). Attention
dropout is passed as ``config.attn_dropout`` in training and as ``0.0`` explicitly in eval.

For decoding with a KV cache a ``LayerKV`` (one layer's keys and values) can be handed to the attention
module: new keys/values are appended to it and the queries attend over everything cached (RoPE positions
continue from the cached length). This module holds no embeddings and no stack (see ``model.py``).

``CrossAttention`` reads queries from one sequence and keys/values from another (the *memory*, e.g. image
patch tokens for text queries), with ``nn.MultiheadAttention``'s ``kdim``/``vdim`` (``config.cross_width``)
and separate ``q``, ``k``, ``v`` projections; ``config.cross_attention`` adds it to every ``Block`` as a
sub-block between self-attention and the MLP (``nn.TransformerDecoderLayer``'s order).

Shape legend: ``B`` batch, ``N`` new tokens (queries), ``M`` keys (cached + new), ``d`` width, ``H`` query
heads, ``Hkv`` key/value heads, ``D`` head width, ``f`` MLP hidden width.
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from tokenloom.encoder.attention import Impl, attention
from tokenloom.encoder.config import EncoderConfig
from tokenloom.encoder.masks import combine, key_padding
from tokenloom.encoder.positions import RotaryEmbedding

__all__ = [
    "Block",
    "CrossAttention",
    "GeluMlp",
    "LayerKV",
    "RMSNorm",
    "SelfAttention",
    "SwiGLU",
    "make_mlp",
    "make_norm",
]


class RMSNorm(nn.Module):
    """RMSNorm (Zhang & Sennrich 2019): ``x / sqrt(mean(x²) + eps) * weight``; ``d`` parameters, no bias.

    Computed in float32 and cast back to the input dtype.
    """

    def __init__(self, dim: int, *, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)  # [..., d]
        return (xf * self.weight.float()).to(x.dtype)

    def extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, eps={self.eps}"


def make_norm(kind: Literal["layernorm", "rmsnorm"], dim: int, *, eps: float) -> nn.Module:
    """``nn.LayerNorm(dim, eps)`` (2d parameters) or ``RMSNorm(dim, eps)`` (d parameters)."""
    if kind == "layernorm":
        return nn.LayerNorm(dim, eps=eps)
    if kind == "rmsnorm":
        return RMSNorm(dim, eps=eps)
    raise ValueError(f"norm kind must be 'layernorm' or 'rmsnorm', got {kind!r}")


class GeluMlp(nn.Module):
    """``fc2(GELU(fc1(x)))`` with the exact (erf) GELU, as in ViT / timm ``Mlp`` / ``nn.TransformerEncoderLayer``."""

    def __init__(self, dim: int, hidden: int, *, bias: bool = True) -> None:
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden, bias=bias)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, dim, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))  # [B, N, d] -> [B, N, f] -> [B, N, d]


class SwiGLU(nn.Module):
    """``w2(SiLU(w1 x) * w3 x)`` (Shazeer 2020); three ``d×f`` matrices, so f ≈ 8d/3 matches a 4d GELU MLP."""

    def __init__(self, dim: int, hidden: int, *, bias: bool = True) -> None:
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=bias)  # gate
        self.w3 = nn.Linear(dim, hidden, bias=bias)  # up
        self.w2 = nn.Linear(hidden, dim, bias=bias)  # down

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))  # [B, N, f] gated -> [B, N, d]


def make_mlp(config: EncoderConfig) -> nn.Module:
    """The MLP of ``config``: ``GeluMlp`` or ``SwiGLU`` with ``config.resolved_mlp_hidden`` hidden units."""
    cls = GeluMlp if config.mlp == "gelu" else SwiGLU
    return cls(config.width, config.resolved_mlp_hidden, bias=config.proj_bias)


class LayerKV:
    """One layer's cached keys and values ``[B, Hkv, M, D]`` each; grows by concatenation (no slack)."""

    def __init__(self) -> None:
        self.k: torch.Tensor | None = None
        self.v: torch.Tensor | None = None
        # [B] valid positions per row when the rows are ragged (prompts of different lengths), else None
        self.lengths: torch.Tensor | None = None

    @property
    def length(self) -> int:
        """M, the number of cached positions."""
        return 0 if self.k is None else self.k.shape[-2]

    @property
    def nbytes(self) -> int:
        """Bytes held by keys and values."""
        if self.k is None or self.v is None:
            return 0
        return self.k.numel() * self.k.element_size() + self.v.numel() * self.v.element_size()

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Add ``[B, Hkv, N, D]`` new keys/values; returns all of them ``[B, Hkv, M + N, D]``."""
        if self.k is None or self.v is None:
            self.k, self.v = k, v
        else:
            self.k = torch.cat((self.k, k), dim=-2)  # [B, Hkv, M + N, D]
            self.v = torch.cat((self.v, v), dim=-2)
        return self.k, self.v

    def write_at_lengths(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Ragged rows: write one new key/value ``[B, Hkv, 1, D]`` at each row's own length (growing the
        buffer when a row reaches its end); returns the buffers ``[B, Hkv, M, D]``. ``lengths`` is not
        advanced here (the caller knows which rows hold a real token)."""
        assert self.lengths is not None
        if self.k is None or int(self.lengths.max()) >= self.k.shape[-2]:  # a row is full: grow by one slot
            self.append(torch.zeros_like(k), torch.zeros_like(v))
        assert self.k is not None and self.v is not None
        index = self.lengths.view(-1, 1, 1, 1).expand(-1, k.shape[1], 1, k.shape[-1])  # [B, Hkv, 1, D]
        self.k = self.k.scatter(2, index, k)
        self.v = self.v.scatter(2, index, v)
        return self.k, self.v


class SelfAttention(nn.Module):
    """Multi-head self-attention with grouped key/value heads, optional RoPE and causal masking."""

    def __init__(self, config: EncoderConfig) -> None:
        super().__init__()
        self.heads = config.heads
        self.kv_heads = config.resolved_kv_heads
        self.head_dim = config.resolved_head_dim
        self.causal = config.causal
        self.attn_dropout = config.attn_dropout
        self.impl = config.attn_impl
        q_dim, kv_dim = self.heads * self.head_dim, self.kv_heads * self.head_dim
        self.split = (q_dim, kv_dim, kv_dim)
        self.qkv = nn.Linear(config.width, q_dim + 2 * kv_dim, bias=config.qkv_bias)
        self.proj = nn.Linear(q_dim, config.width, bias=config.proj_bias)
        self.rope = (
            RotaryEmbedding(self.head_dim, base=config.rope_base) if config.position == "rope" else None
        )

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor | None = None,
        *,
        kv_cache: LayerKV | None = None,
        key_lengths: torch.Tensor | None = None,
        segment_ids: torch.Tensor | None = None,
        positions: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``x [B, N, d] -> [B, N, d]``. ``mask`` broadcastable to ``[B, H, N, M]`` (True = may attend);
        ``key_lengths [B]`` (padding) and ``segment_ids [B, N]`` (packing) as in ``attention``.
        ``positions`` (``[N]`` or ``[B, N]``): the RoPE position of each query/key (default: consecutive,
        continuing after the cache), e.g. each packed document's own ``0..n-1``.

        With ``kv_cache`` the new keys/values are appended to it and the queries (the last N positions)
        attend over all ``M`` cached positions. A cache with ragged rows (``kv_cache.lengths``, set by a
        prefill with ``key_lengths``) takes one token per row, written at that row's own position.
        """
        b, n, _ = x.shape
        q, k, v = self.qkv(x).split(self.split, dim=-1)  # [B, N, H*D], [B, N, Hkv*D] x2
        q = q.view(b, n, self.heads, self.head_dim).transpose(1, 2)  # [B, H, N, D]
        k = k.view(b, n, self.kv_heads, self.head_dim).transpose(1, 2)  # [B, Hkv, N, D]
        v = v.view(b, n, self.kv_heads, self.head_dim).transpose(1, 2)  # [B, Hkv, N, D]
        ragged = kv_cache is not None and kv_cache.lengths is not None
        causal = self.causal and not ragged  # ragged: one query per row, it sees all its row's keys
        if self.rope is not None:
            start = 0 if kv_cache is None else kv_cache.length
            if positions is None:
                positions = torch.arange(start, start + n, device=x.device)  # [N]
            if ragged:
                assert kv_cache is not None and kv_cache.lengths is not None
                positions = kv_cache.lengths[:, None]  # [B, 1]: each row's next position
            q, k = self.rope(q, k, positions)
        if ragged:
            assert kv_cache is not None and kv_cache.lengths is not None
            k, v = kv_cache.write_at_lengths(k, v)  # [B, Hkv, M, D]
            key_lengths = kv_cache.lengths + 1
        elif kv_cache is not None:
            k, v = kv_cache.append(k, v)  # [B, Hkv, M, D]
            if key_lengths is not None:
                kv_cache.lengths = key_lengths.clone()
        out = attention(
            q,
            k,
            v,
            mask,
            causal=causal,
            key_lengths=key_lengths,
            segment_ids=segment_ids,
            dropout_p=self.attn_dropout if self.training else 0.0,
            impl=self.impl,
        )  # [B, H, N, D]
        out = out.transpose(1, 2).reshape(b, n, self.heads * self.head_dim)  # [B, N, H*D]
        return self.proj(out)  # [B, N, d]


class CrossAttention(nn.Module):
    """Queries from ``x [B, N, d]``, keys and values from ``memory [B, M, d_mem]``; grouped key/value heads.

    No RoPE and no causal mask (the two sequences have no shared positions). ``key_lengths [B]`` marks the
    memory's padding: key ``j`` of sequence ``b`` is attended iff ``j < key_lengths[b]``.
    """

    def __init__(self, config: EncoderConfig) -> None:
        super().__init__()
        self.heads = config.heads
        self.kv_heads = config.resolved_kv_heads
        self.head_dim = config.resolved_head_dim
        self.attn_dropout = config.attn_dropout
        self.impl: Impl = config.attn_impl
        memory_width = config.cross_width or config.width
        q_dim, kv_dim = self.heads * self.head_dim, self.kv_heads * self.head_dim
        self.q = nn.Linear(config.width, q_dim, bias=config.qkv_bias)
        self.k = nn.Linear(memory_width, kv_dim, bias=config.qkv_bias)
        self.v = nn.Linear(memory_width, kv_dim, bias=config.qkv_bias)
        self.proj = nn.Linear(q_dim, config.width, bias=config.proj_bias)

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        *,
        key_lengths: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``x [B, N, d], memory [B, M, d_mem] -> [B, N, d]``; ``mask`` broadcastable to ``[B, H, N, M]``."""
        if memory.dim() != 3 or memory.shape[0] != x.shape[0] or memory.shape[-1] != self.k.in_features:
            raise ValueError(
                f"memory must be [B={x.shape[0]}, M, {self.k.in_features}] (cross_width), got shape "
                f"{tuple(memory.shape)}"
            )
        b, n, _ = x.shape
        m = memory.shape[1]
        q = self.q(x).view(b, n, self.heads, self.head_dim).transpose(1, 2)  # [B, N, H*D] -> [B, H, N, D]
        k = self.k(memory).view(b, m, self.kv_heads, self.head_dim).transpose(1, 2)  # [B, Hkv, M, D]
        v = self.v(memory).view(b, m, self.kv_heads, self.head_dim).transpose(1, 2)  # [B, Hkv, M, D]
        if key_lengths is not None:
            mask = combine(mask, key_padding(key_lengths, m, device=x.device))  # [B, 1|H, 1|N, M]
        out = attention(
            q, k, v, mask, dropout_p=self.attn_dropout if self.training else 0.0, impl=self.impl
        )  # [B, H, N, D]
        out = out.transpose(1, 2).reshape(b, n, self.heads * self.head_dim)  # [B, N, H*D]
        return self.proj(out)  # [B, N, d]


class Block(nn.Module):
    """One transformer block.

    ``placement="pre"``:  ``x = x + drop(attn(norm1(x)))``; ``x = x + drop(mlp(norm2(x)))``
    ``placement="post"``: ``x = norm1(x + drop(attn(x)))``; ``x = norm2(x + drop(mlp(x)))``

    With ``config.cross_attention`` a cross-attention sub-block over ``memory`` sits between the two
    (``x = x + drop(cross(norm_cross(x), memory))`` pre-norm; ``x = norm_cross(x + drop(cross(x, memory)))``
    post-norm), as in ``nn.TransformerDecoderLayer``.
    """

    def __init__(self, config: EncoderConfig) -> None:
        super().__init__()
        self.pre = config.placement == "pre"
        self.norm1 = make_norm(config.norm, config.width, eps=config.norm_eps)
        self.attn = SelfAttention(config)
        self.norm2 = make_norm(config.norm, config.width, eps=config.norm_eps)
        self.mlp = make_mlp(config)
        self.drop = nn.Dropout(config.dropout) if config.dropout > 0 else nn.Identity()
        # optional cross-attention sub-block (self -> cross -> MLP)
        self.norm_cross = (
            make_norm(config.norm, config.width, eps=config.norm_eps) if config.cross_attention else None
        )
        self.cross = CrossAttention(config) if config.cross_attention else None

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor | None = None,
        *,
        kv_cache: LayerKV | None = None,
        key_lengths: torch.Tensor | None = None,
        segment_ids: torch.Tensor | None = None,
        memory: torch.Tensor | None = None,  # [B, M, d_mem] for the cross-attention sub-block
        memory_lengths: torch.Tensor | None = None,  # [B] valid memory positions (the rest is padding)
        positions: torch.Tensor | None = None,  # [N] or [B, N] RoPE positions (default: consecutive)
    ) -> torch.Tensor:
        """``x [B, N, d] -> [B, N, d]``."""
        if self.pre:
            h = self.attn(
                self.norm1(x), mask, kv_cache=kv_cache, key_lengths=key_lengths, segment_ids=segment_ids,
                positions=positions,
            )  # fmt: skip
            x = x + self.drop(h)
            x = self._cross(x, memory, memory_lengths)
            return x + self.drop(self.mlp(self.norm2(x)))
        h = self.attn(
            x, mask, kv_cache=kv_cache, key_lengths=key_lengths, segment_ids=segment_ids, positions=positions
        )
        x = self.norm1(x + self.drop(h))
        x = self._cross(x, memory, memory_lengths)
        return self.norm2(x + self.drop(self.mlp(x)))

    def _cross(
        self, x: torch.Tensor, memory: torch.Tensor | None, lengths: torch.Tensor | None
    ) -> torch.Tensor:
        """The cross-attention sub-block (identity when the block has none)."""
        if self.cross is None or self.norm_cross is None:
            if memory is not None:
                raise ValueError(
                    "this block has no cross-attention: build it with EncoderConfig(cross_attention=True)"
                )
            return x
        if memory is None:
            raise ValueError(
                "a block with cross-attention needs memory=[B, M, cross_width] (e.g. image patch tokens)"
            )
        if self.pre:
            return x + self.drop(self.cross(self.norm_cross(x), memory, key_lengths=lengths))
        return self.norm_cross(x + self.drop(self.cross(x, memory, key_lengths=lengths)))
