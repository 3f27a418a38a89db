"""``attention(q, k, v, mask, *, causal, scale, key_lengths, segment_ids, window, dropout_p, impl)``.

One entry point over four paths, plus ``attention_varlen`` for packed ``[total_tokens, H, D]`` batches.

Conventions (identical in every path, tested against ``reference``):

- ``q [B, H, N, D]``, ``k [B, Hkv, M, D]``, ``v [B, Hkv, M, Dv]`` with ``H % Hkv == 0`` (multi-head,
  grouped-query, multi-query); query head ``h`` uses key/value head ``h // (H // Hkv)``.
- ``mask``: **bool, True = may attend**, or float **additive** (0 / −inf, or finite biases),
  broadcastable to ``[B, H, N, M]``. PyTorch's opposite polarity (True = ignore) must be converted with
  ``tokenloom.encoder.masks.from_ignore_mask``.
- Structured masks, never materialized by the Triton kernel (the other paths build the equivalent bool
  mask, see ``tokenloom.encoder.masks``):
  ``key_lengths [B]`` int — key ``j`` of row ``b`` is valid iff ``j < key_lengths[b]`` (right padding);
  ``segment_ids [B, N]`` int (self-attention, N == M) or a pair ``(query ids [B, N], key ids [B, M])`` —
  packed sequences: a query sees only keys with its id, a negative id is padding;
  ``window=(left, right)`` — aligned query ``i' = i + (M − N)`` sees keys ``i' − left .. i' + right``.
- ``causal=True`` with ``N ≠ M``: queries are the last N of M positions (KV cache), so query ``i`` may
  attend key ``j`` iff ``j ≤ i + (M − N)``. Every restriction is combined by logical AND.
- A query row whose every key is masked returns **zeros** (never NaN), with finite (zero) gradients.
- ``scale`` defaults to ``1/√D``; ``dropout_p`` drops attention weights (pass 0.0 in eval).

Paths (``impl``, one of ``IMPLS``): ``"reference"`` (the formula, O(N·M) memory), ``"tiled"`` (exact
online softmax in torch, skips causal / windowed key tiles), ``"sdpa"`` (torch's fused kernels; the
backend that ran is ``last_sdpa_kernel()``), ``"triton"`` (FlashAttention-2 forward and backward kernels;
CUDA, or CPU under ``TRITON_INTERPRET=1``), ``"auto"`` (see ``dispatch``). ``last_impl()`` names the
path the latest call in this thread took.

Sparse patterns (``pattern=``, a ``tokenloom.encoder.patterns.Pattern``, ANDed with ``mask``, ``causal`` and
the structural masks): ``"reference"`` and ``"sdpa"`` apply its dense mask; ``"tiled"`` computes only the
tiles the pattern allows (the work follows its edges); ``"auto"`` chooses ``"tiled"``; ``"triton"`` has no
block-layout kernel yet, so a pattern call routes to ``"tiled"`` and ``last_impl()`` says so.

Shapes: ``B`` batch, ``H`` query heads, ``Hkv`` key/value heads, ``N`` queries, ``M`` keys, ``D`` head width.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from tokenloom.encoder.attention import dispatch, sdpa
from tokenloom.encoder.attention._common import resolve
from tokenloom.encoder.attention.dispatch import AUTO_TILED_BYTES, IMPLS, last_impl
from tokenloom.encoder.attention.reference import attention_weights, reference_attention
from tokenloom.encoder.attention.varlen import attention_varlen
from tokenloom.encoder.config import AttnImpl as Impl

if TYPE_CHECKING:
    from tokenloom.encoder.patterns import Pattern

__all__ = [
    "AUTO_TILED_BYTES",
    "IMPLS",
    "Impl",
    "attention",
    "attention_varlen",
    "attention_weights",
    "last_impl",
    "last_sdpa_kernel",
    "reference_attention",
]

logger = logging.getLogger(__name__)


def last_sdpa_kernel() -> str | None:
    """The SDPA backend of the latest SDPA call in this thread (``"flash"``, ``"efficient"``,
    ``"cudnn"``, ``"math"``, …; see ``tokenloom.encoder.attention.sdpa``)."""
    return sdpa.last_kernel()


def attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    *,
    causal: bool = False,  # True: query i may attend key j iff j <= i + (M - N)
    scale: float | None = None,  # None: 1 / sqrt(head_dim)
    key_lengths: Tensor | None = None,  # [B] int: valid (unpadded) keys per row
    segment_ids: Tensor | tuple[Tensor, Tensor] | None = None,  # [B, N] int, or ([B, N], [B, M])
    window: tuple[int, int] | None = None,  # (left, right) sliding window around the aligned query
    dropout_p: float = 0.0,  # dropout on the attention weights; pass 0.0 in eval
    pattern: Pattern | None = None,  # sparse pattern (tokenloom.encoder.patterns), ANDed with mask and causal
    impl: Impl = "auto",  # which path computes it (see the module docstring)
) -> Tensor:
    """Scaled dot-product attention ``[B, H, N, Dv]`` with tokenloom's conventions (module docstring).

    The six arguments that restrict which keys a query sees (``mask``, ``causal``, ``key_lengths``,
    ``segment_ids``, ``window``, ``pattern``) are validated once, into one ``KeyRestriction`` that the
    chosen path takes.
    """
    dispatch.check_impl(impl)
    dims, keys = resolve(
        q, k, v, mask, causal=causal, scale=scale, dropout_p=dropout_p,
        key_lengths=key_lengths, segment_ids=segment_ids, window=window, pattern=pattern,
    )  # fmt: skip
    out = dispatch.run(impl, q, k, v, dims, keys, dropout_p=dropout_p)
    if not torch.compiler.is_compiling() and logger.isEnabledFor(logging.DEBUG):  # no graph break
        logger.debug(
            "attention impl=%s pattern=%s q=%s k=%s", last_impl(), pattern, tuple(q.shape), tuple(k.shape)
        )
    return out
