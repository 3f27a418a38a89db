"""``attention(q, k, v, mask, *, causal, scale, dropout_p, impl)``: one entry point over four paths.

Conventions (identical in every path, tested against ``reference``):

- ``q [B, H, N, D]``, ``k [B, Hkv, M, D]``, ``v [B, Hkv, M, Dv]`` with ``H % Hkv == 0`` (multi-head,
  grouped-query, multi-query); query head ``h`` uses key/value head ``h // (H // Hkv)``.
- ``mask``: **bool, True = may attend**, or float **additive** (0 / −inf), broadcastable to ``[B, H, N, M]``.
  PyTorch's opposite polarity (True = ignore) must be converted with
  ``tokenloom.encoder.masks.from_ignore_mask`` — see that module for builders and converters.
- ``causal=True`` with ``N ≠ M``: queries are the last N of M positions (KV cache), so query ``i`` may
  attend key ``j`` iff ``j ≤ i + (M − N)``. Combined with ``mask`` by logical AND.
- A query row whose every key is masked returns **zeros** (never NaN), with finite gradients.
- ``scale`` defaults to ``1/√D``; ``dropout_p`` drops attention weights (pass 0.0 in eval).

Paths (``impl``):

- ``"reference"``: explicit scores → softmax → weights @ v; materializes ``[B, H, N, M]``.
- ``"tiled"``: exact online softmax over query × key tiles, O(tile²) extra memory, recomputing backward.
- ``"sdpa"``: ``torch.nn.functional.scaled_dot_product_attention`` with these conventions; it records
  which SDPA backend ran (``last_sdpa_kernel()``).
- ``"triton"``: a FlashAttention-style Triton forward kernel (CUDA, or CPU under ``TRITON_INTERPRET=1``);
  its backward recomputes through the tiled path.
- ``"auto"``: ``"sdpa"`` when one of SDPA's fused kernels (flash / efficient / cudnn; on CPU, flash —
  which takes bool and float masks, GQA, fp32/fp64/bf16/fp16) accepts the inputs. When only SDPA's math
  fallback would (e.g. dropout on CPU, or a value width ≠ key width), that fallback materializes the
  scores: it is used while they fit in ``AUTO_TILED_BYTES`` (B·H·N·M·4 bytes), and ``"tiled"`` above.
  ``"triton"`` is never chosen automatically: on CUDA, SDPA's kernels are faster and have a fused backward.

Sparse patterns (``pattern=``, a ``tokenloom.encoder.patterns.Pattern``, ANDed with ``mask`` and ``causal``):
``"reference"`` and ``"sdpa"`` apply its dense mask; ``"tiled"`` computes only the tiles the pattern allows
(the work follows its edges); ``"auto"`` chooses ``"tiled"``; ``"triton"`` has no block-layout kernel yet,
so a pattern call routes to ``"tiled"`` and ``last_impl()`` says so.

``last_impl()`` names the path the latest call (in this thread) took.

Shapes: ``B`` batch, ``H`` query heads, ``Hkv`` key/value heads, ``N`` queries, ``M`` keys, ``D`` head width.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Literal

import torch
from torch import Tensor

from tokenloom.encoder.attention._common import check_inputs
from tokenloom.encoder.attention.reference import attention_weights, reference_attention

if TYPE_CHECKING:
    from tokenloom.encoder.patterns import Pattern

__all__ = [
    "AUTO_TILED_BYTES",
    "IMPLS",
    "Impl",
    "attention",
    "attention_weights",
    "last_impl",
    "last_sdpa_kernel",
    "reference_attention",
]

logger = logging.getLogger(__name__)

Impl = Literal["auto", "reference", "sdpa", "tiled", "triton"]
IMPLS: tuple[str, ...] = ("auto", "reference", "sdpa", "tiled", "triton")

# "auto": when no fused SDPA kernel accepts the inputs and the scores would exceed this many bytes
# (B*H*N*M*4), use "tiled" instead of SDPA's score-materializing math path.
AUTO_TILED_BYTES = 1 << 30

_state = threading.local()


def last_impl() -> str | None:
    """The path (``"reference" | "sdpa" | "tiled" | "triton"``) of the latest ``attention`` call in this thread."""
    return getattr(_state, "impl", None)


def last_sdpa_kernel() -> str | None:
    """The SDPA backend of the latest ``impl="sdpa"`` call in this thread (``"flash"``, ``"efficient"``,
    ``"cudnn"``, ``"math"``, …; see ``tokenloom.encoder.attention.sdpa``)."""
    from tokenloom.encoder.attention import sdpa

    return sdpa.last_kernel()


def attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    *,
    causal: bool = False,  # True: query i may attend key j iff j <= i + (M - N)
    scale: float | None = None,  # None: 1 / sqrt(head_dim)
    dropout_p: float = 0.0,  # dropout on the attention weights; pass 0.0 in eval
    pattern: Pattern | None = None,  # sparse pattern (tokenloom.encoder.patterns), ANDed with mask and causal
    impl: Impl = "auto",  # which path computes it (see the module docstring)
) -> Tensor:
    """Scaled dot-product attention ``[B, H, N, Dv]`` with tokenloom's conventions (module docstring)."""
    if impl not in IMPLS:
        raise ValueError(f"impl must be one of {', '.join(IMPLS)}; got {impl!r}")
    dims, _ = check_inputs(q, k, v, mask, scale=scale, dropout_p=dropout_p)
    chosen = "sdpa" if impl == "auto" else impl
    if pattern is not None:
        out, ran = _with_pattern(
            q, k, v, mask, pattern, impl, causal=causal, scale=scale, dropout_p=dropout_p
        )
        _state.impl = ran
        logger.debug("attention impl=%s pattern=%s q=%s k=%s", ran, pattern, tuple(q.shape), tuple(k.shape))
        return out
    if dims.N == 0 or dims.M == 0:
        _state.impl = chosen
        # no queries or no keys: every row is fully masked -> zeros; "+ 0 * sums" keeps the graph
        # so that gradients are zeros rather than missing
        zeros = torch.zeros(dims.B, dims.H, dims.N, dims.Dv, dtype=q.dtype, device=q.device)
        return zeros + 0.0 * (q.sum() + k.sum() + v.sum())
    if chosen == "reference":
        out = reference_attention(q, k, v, mask, causal=causal, scale=scale, dropout_p=dropout_p)
    elif chosen == "tiled":
        from tokenloom.encoder.attention.tiled import tiled_attention

        out = tiled_attention(q, k, v, mask, causal=causal, scale=scale, dropout_p=dropout_p)
    elif chosen == "sdpa" and impl == "auto":
        from tokenloom.encoder.attention.sdpa import NoFusedKernel, sdpa_attention
        from tokenloom.encoder.attention.tiled import tiled_attention

        small = dims.B * dims.H * dims.N * dims.M * 4 <= AUTO_TILED_BYTES
        try:
            out = sdpa_attention(
                q, k, v, mask, causal=causal, scale=scale, dropout_p=dropout_p, allow_math=small
            )
        except NoFusedKernel:  # only the math path would take it, and its scores are too big
            chosen = "tiled"
            out = tiled_attention(q, k, v, mask, causal=causal, scale=scale, dropout_p=dropout_p)
    elif chosen == "sdpa":
        from tokenloom.encoder.attention.sdpa import sdpa_attention

        out = sdpa_attention(q, k, v, mask, causal=causal, scale=scale, dropout_p=dropout_p)
    else:
        from tokenloom.encoder.attention.triton_kernel import triton_attention

        out = triton_attention(q, k, v, mask, causal=causal, scale=scale, dropout_p=dropout_p)
    _state.impl = chosen
    logger.debug("attention impl=%s q=%s k=%s", chosen, tuple(q.shape), tuple(k.shape))
    return out


def _with_pattern(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None,
    pattern: Pattern,
    impl: Impl,
    *,
    causal: bool,
    scale: float | None,
    dropout_p: float,
) -> tuple[Tensor, str]:
    """Pattern routing: reference/sdpa take its dense mask; tiled (also for auto and triton) its tile layout."""
    from tokenloom.encoder.patterns import Pattern

    if not isinstance(pattern, Pattern):
        raise TypeError(
            f"pattern must be a tokenloom.encoder.patterns.Pattern (e.g. patterns.window(256)), "
            f"got {type(pattern).__name__}; parse a CLI spelling with patterns.parse_pattern('window:512')"
        )
    n, m = q.shape[-2], k.shape[-2]
    if impl == "reference" or impl == "sdpa":
        dense = pattern.merge_mask(mask, n, m, q.device)  # [N, M] or broadcast [B|1, H|1, N, M]
        return attention(q, k, v, dense, causal=causal, scale=scale, dropout_p=dropout_p, impl=impl), impl
    if impl == "triton":
        logger.info("the Triton kernel takes no block layout: pattern %s runs on the tiled path", pattern)
    from tokenloom.encoder.attention.tiled import tiled_attention

    if n == 0 or m == 0:
        return attention(
            q, k, v, mask, causal=causal, scale=scale, dropout_p=dropout_p, impl="tiled"
        ), "tiled"
    out = tiled_attention(
        q, k, v, mask, causal=causal, scale=scale, dropout_p=dropout_p,
        block_q=pattern.block, block_k=pattern.block, pattern=pattern,
    )  # fmt: skip
    return out, "tiled"
