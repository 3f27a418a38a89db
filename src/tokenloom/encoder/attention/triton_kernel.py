"""The Triton path: FlashAttention-2 forward and backward kernels behind ``torch.autograd``.

Launches the kernels of ``_triton_jit`` (forward) and ``_triton_bwd`` (backward); with this module they
are the only modules of tokenloom that import ``triton``. It serves padded batches ``q [B, H, N, D]``
(``triton_attention``) and packed ones ``q [total, H, D]`` with ``cu_seqlens`` (``triton_attention_varlen``,
FlashAttention's varlen layout).

- Forward: one program per (``BLOCK_M`` query rows, batch row, head) walks the key tiles with the online
  softmax (running max, running sum, rescaled fp32 accumulator) and writes the output and the row
  statistics (``_row_stats``: the max and the log of the sum, two numbers, so that a row whose additive
  bias is one large constant such as ``finfo(float32).min`` keeps the reference's weights). Causal tiles above the diagonal and tiles outside a window or past ``key_lengths`` are
  never loaded; tiles wholly inside every row's visible range run without per-element masks.
- Masks are read natively: ``key_lengths [B]`` bounds the key loop, ``segment_ids`` are compared per
  tile, ``window`` bounds the loop, a dense bool / additive mask is read tile by tile through its strides
  (broadcast dims have stride 0: never expanded in memory).
- Backward (FlashAttention-2): ``delta = rowsum(dO ∘ O)`` (one torch reduction), a dK/dV kernel over key
  tiles (summing the G query heads of a key/value head in-program: no atomics, no k/v copies) and a dQ
  kernel over query tiles, both recomputing ``P = exp(S − max − log_sum)``. Rows that see no key have
  ``max = +inf``, so P = 0 there: zero output, zero and finite gradients. Two cases are handed to
  ``tiled.tiled_backward`` instead: an additive mask that requires grad (it also returns the mask's
  gradient), and head widths above ``tuning.MAX_BACKWARD_D`` = 128 (the backward kernels' tiles do not
  fit registers without spills there; the forward kernel takes up to 256).
- Precision: fp16 / bf16 inputs with fp32 accumulation; fp32 inputs use exact fp32 products
  (``input_precision="ieee"``) unless ``precision="tf32"`` is asked for. Head widths up to 256
  (padded to a power of two). Tile sizes come from ``tuning``.
- No dropout: ``dropout_p > 0`` raises (use ``impl="tiled"`` or ``"sdpa"``).

Where it runs: CUDA tensors; or CPU tensors when ``TRITON_INTERPRET=1`` was set **before the first
call** (the kernels are defined on first use, and Triton decides interpret-or-compile then). The
interpreter runs numpy per program: correct and slow, for tests only.

Shapes: ``B`` batch, ``H`` query heads, ``Hkv`` key/value heads, ``G = H // Hkv``, ``N`` queries,
``M`` keys, ``D`` head width of q/k, ``Dv`` head width of v, ``T`` packed tokens.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace
from typing import Any, Literal

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from tokenloom.encoder.attention import tuning
from tokenloom.encoder.attention._common import (
    Dims,
    Structure,
    check_inputs,
    check_structure,
    check_window,
    merge_masks,
    structure_mask,
)
from tokenloom.encoder.attention._row_stats import RowStats

__all__ = ["interpreting", "triton_attention", "triton_attention_varlen"]

Precision = Literal["ieee", "tf32"]


def interpreting() -> bool:
    """True when ``TRITON_INTERPRET=1`` is set (Triton then runs kernels in numpy on CPU tensors)."""
    return os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "on", "yes")


def _jit() -> Any:
    from tokenloom.encoder.attention import _triton_jit

    return _triton_jit


def _jit_bwd() -> Any:
    from tokenloom.encoder.attention import _triton_bwd

    return _triton_bwd


@dataclass(frozen=True)
class _Problem:
    """Everything a launch needs besides q, k, v: sizes, layout, masks, tiles."""

    B: int  # batch rows (sequences)
    H: int
    Hkv: int
    N: int  # queries per row (varlen: the longest)
    M: int  # keys per row (varlen: the longest)
    D: int
    Dv: int
    scale: float
    causal: bool
    window: tuple[int, int] | None
    precision: str
    varlen: bool
    key_lengths: Tensor | None = None  # [B]
    cu_q: Tensor | None = None  # [B + 1] int32
    cu_k: Tensor | None = None
    q_seg: Tensor | None = None  # [B, N]
    k_seg: Tensor | None = None  # [B, M]
    mask: Tensor | None = None  # [B, H, N, M] expanded view (stride 0 on broadcast dims), bool as uint8
    mask_is_bool: bool = False
    total_q: int = 0  # packed query tokens T (varlen only)
    forward_config: tuning.KernelConfig | None = None  # None: from tuning.FORWARD
    backward_config: tuning.KernelConfig | None = None  # None: from tuning.BACKWARD

    def strides(self, x: Tensor) -> tuple[int, int, int]:
        """(batch, head, token) strides; the feature stride is 1 (``_writable``); packed tensors
        ``[T, H, D]`` have no batch stride."""
        assert x.stride(-1) == 1
        if self.varlen:
            return (0, x.stride(1), x.stride(0))
        s = x.stride()
        return (s[0], s[1], s[2])

    def stat_strides(self) -> tuple[int, int, int]:
        """Row stats are ``[B, H, N]`` (padded) or ``[H, T]`` (packed), contiguous."""
        return (0, self.total_q, 1) if self.varlen else (self.H * self.N, self.N, 1)

    def common(self, q: Tensor) -> tuple[list[Any], dict[str, Any]]:
        """Mask arguments (pointers + strides) and the constexpr flags shared by the three kernels."""
        placeholder = q  # any pointer: never read when its flag is off
        ql, qs, ks = self.key_lengths, self.q_seg, self.k_seg
        mask = self.mask
        args = [
            placeholder if ql is None else ql,
            placeholder if self.cu_q is None else self.cu_q,
            placeholder if self.cu_k is None else self.cu_k,
            placeholder if qs is None else qs,
            placeholder if ks is None else ks,
            placeholder if mask is None else mask,
        ]
        strides = [
            *((0, 0) if qs is None else qs.stride()),
            *((0, 0) if ks is None else ks.stride()),
            *((0, 0, 0, 0) if mask is None else mask.stride()),
        ]
        flags = dict(
            VARLEN=self.varlen, HAS_KLEN=ql is not None, CAUSAL=self.causal, WINDOW=self.window is not None,
            SEGMENTS=qs is not None, HAS_MASK=mask is not None, MASK_IS_BOOL=self.mask_is_bool,
            BIAS=mask is not None and not self.mask_is_bool,  # additive mask: natural-unit scores
            PRECISION=self.precision if q.dtype == torch.float32 else "tf32",
            D=self.D, DV=self.Dv, BLOCK_D=tuning.block_d(self.D), BLOCK_DV=tuning.block_d(self.Dv),
        )  # fmt: skip
        return args + strides, flags

    @property
    def left_right(self) -> tuple[int, int]:
        return self.window if self.window is not None else (0, 0)


def _dtype_name(dtype: torch.dtype) -> str:
    return {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}[dtype]


def _forward(q: Tensor, k: Tensor, v: Tensor, pb: _Problem) -> tuple[Tensor, RowStats]:
    """Output (q's dtype, padded ``[B, H, N, Dv]`` / packed ``[T, H, Dv]``) and row stats (fp32)."""
    out = torch.empty((*q.shape[:-1], pb.Dv), dtype=q.dtype, device=q.device)
    shape = (pb.B, pb.H, pb.N) if not pb.varlen else (pb.H, q.shape[0])
    stats = RowStats.empty(shape, torch.float32, q.device)
    cfg = pb.forward_config or tuning.pick(
        tuning.FORWARD, max(pb.D, pb.Dv), _dtype_name(q.dtype), pb.causal, pb.N
    )
    mask_args, flags = pb.common(q)
    left, right = pb.left_right
    grid = (triton_cdiv(pb.N, cfg.block_m), pb.B * pb.H)
    _jit().attn_fwd[grid](
        q, k, v, out, stats.max, stats.log_sum, *mask_args[:6],
        *pb.strides(q), *pb.strides(k), *pb.strides(v), *pb.strides(out), *pb.stat_strides(),
        *mask_args[6:],
        pb.H, pb.H // pb.Hkv, pb.N, pb.M, left, right, pb.scale * 1.4426950408889634, pb.scale,
        **flags, BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n,
        num_warps=cfg.num_warps, num_stages=cfg.num_stages,
    )  # fmt: skip
    return out, stats


def triton_cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _grad_like(x: Tensor) -> Tensor:
    """An uninitialized tensor with ``x``'s shape and strides (the kernels write grads at x's offsets)."""
    return torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device=x.device)


def _backward(
    q: Tensor, k: Tensor, v: Tensor, out: Tensor, stats: RowStats, do: Tensor, pb: _Problem
) -> tuple[Tensor, Tensor, Tensor]:
    do = do if do.stride() == out.stride() else do.contiguous()  # dO shares the output's strides
    out = out if out.stride(-1) == 1 else out.contiguous()
    delta = (do.float() * out.float()).sum(-1)  # [B, H, N] or [T, H]
    delta = delta if not pb.varlen else delta.t().contiguous()  # [T, H] -> [H, T], the row stats' layout
    dq, dk, dv = _grad_like(q), _grad_like(k), _grad_like(v)
    key = (max(pb.D, pb.Dv), _dtype_name(q.dtype), pb.causal, pb.N)
    cfg_q = pb.backward_config or tuning.pick(tuning.BACKWARD_DQ, *key)
    cfg_k = pb.backward_config or tuning.pick(tuning.BACKWARD_DKDV, *key)
    if pb.mask is not None and not pb.mask_is_bool and pb.backward_config is None:
        cfg_q, cfg_k = (tuning.for_bias_backward(cfg, key[1]) for cfg in (cfg_q, cfg_k))
    mask_args, flags = pb.common(q)
    left, right = pb.left_right
    strides = (*pb.strides(q), *pb.strides(k), *pb.strides(v), *pb.strides(out), *pb.stat_strides())
    G = pb.H // pb.Hkv
    scales = (pb.scale * 1.4426950408889634, pb.scale)
    _jit_bwd().attn_bwd_dq[(triton_cdiv(pb.N, cfg_q.block_m), pb.B * pb.H)](
        q, k, v, do, dq, stats.max, stats.log_sum, delta, *mask_args[:6], *strides, *mask_args[6:],
        pb.H, G, pb.N, pb.M, left, right, *scales, **flags, BLOCK_M=cfg_q.block_m, BLOCK_N=cfg_q.block_n,
        num_warps=cfg_q.num_warps, num_stages=cfg_q.num_stages,
    )  # fmt: skip
    _jit_bwd().attn_bwd_dkdv[(triton_cdiv(pb.M, cfg_k.block_n), pb.B * pb.Hkv)](
        q, k, v, do, dk, dv, stats.max, stats.log_sum, delta, *mask_args[:6], *strides, *mask_args[6:],
        pb.Hkv, G, pb.N, pb.M, left, right, *scales, **flags, BLOCK_M=cfg_k.block_m, BLOCK_N=cfg_k.block_n,
        num_warps=cfg_k.num_warps, num_stages=cfg_k.num_stages,
    )  # fmt: skip
    return dq, dk, dv


class _TritonAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, mask4, pb, torch_backward):
        out, stats = _forward(q, k, v, pb)
        ctx.pb, ctx.torch_backward = pb, torch_backward
        ctx.save_for_backward(q, k, v, out, stats.max, stats.log_sum, *(() if mask4 is None else (mask4,)))
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        q, k, v, out, row_max, log_sum, *rest = ctx.saved_tensors
        pb: _Problem = ctx.pb
        if not ctx.torch_backward:
            dq, dk, dv = _backward(q, k, v, out, RowStats(row_max, log_sum), grad_out, pb)
            return dq, dk, dv, None, None, None
        from tokenloom.encoder.attention._tile_plan import TilePlan
        from tokenloom.encoder.attention.tiled import DEFAULT_BLOCK_K, DEFAULT_BLOCK_Q, tiled_backward

        G = pb.H // pb.Hkv
        dims = Dims(B=pb.B, H=pb.H, Hkv=pb.Hkv, N=pb.N, M=pb.M, D=pb.D, Dv=pb.Dv, scale=pb.scale)
        mask4 = rest[0] if rest else None
        if pb.key_lengths is not None or pb.q_seg is not None or pb.window is not None:  # wide heads
            st = Structure(
                None if pb.key_lengths is None else pb.key_lengths.long(),
                None if pb.q_seg is None else pb.q_seg.long(),
                None if pb.k_seg is None else pb.k_seg.long(),
                pb.window,
            )
            mask4 = merge_masks(mask4, structure_mask(st, dims, q.device))  # [B|1, H|1, N|1, M]
        out5 = out.float().unflatten(1, (pb.Hkv, G))  # [B, H, N, Dv] -> [B, Hkv, G, N, Dv]
        stats5 = RowStats(*(x.unflatten(1, (pb.Hkv, G)).unsqueeze(-1) for x in (row_max, log_sum)))
        # [B, H, N] -> [B, Hkv, G, N, 1]
        plan = TilePlan(dims, pb.causal, DEFAULT_BLOCK_Q, DEFAULT_BLOCK_K)
        grads = tiled_backward(
            grad_out, q, k, v, out5, stats5, mask4, plan, mask_grad=ctx.needs_input_grad[3]
        )  # fmt: skip
        return (*grads, None, None)


def _check_runnable(q: Tensor, dropout_p: float, precision: str) -> None:
    if dropout_p > 0.0:
        raise ValueError(
            f"impl='triton' has no dropout (got dropout_p={dropout_p}); use impl='tiled' or 'sdpa', or 0.0 in eval"
        )
    if q.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise TypeError(f"impl='triton' supports fp16, bf16 and fp32 inputs, got {q.dtype}")
    if precision not in ("ieee", "tf32"):
        raise ValueError(f"precision must be 'ieee' or 'tf32', got {precision!r}")
    if q.device.type == "cpu" and not interpreting():
        raise RuntimeError(
            "impl='triton' needs CUDA tensors, or TRITON_INTERPRET=1 set before the first call to run "
            "CPU tensors in Triton's (slow) interpreter; use impl='tiled' or 'sdpa' on CPU"
        )
    if q.device.type not in ("cpu", "cuda"):
        raise RuntimeError(f"impl='triton' runs on CUDA (or CPU under TRITON_INTERPRET=1), not {q.device}")
    try:
        import triton  # noqa: F401
    except ImportError as error:
        raise RuntimeError("impl='triton' needs the triton package (pip install triton)") from error


def _writable(x: Tensor) -> Tensor:
    """``x`` when its elements are packed without gaps or overlaps (any order, feature dim last with
    stride 1: the kernels write its gradient at the same offsets), else a contiguous copy — e.g. q of a
    fused qkv projection, whose rows are interleaved with k and v."""
    span = 1 + sum((size - 1) * st for size, st in zip(x.shape, x.stride(), strict=True)) if x.numel() else 0
    dense = span == x.numel() and all(
        st > 0 or size == 1 for st, size in zip(x.stride(), x.shape, strict=True)
    )
    return x if dense and x.stride(-1) == 1 else x.contiguous()


def triton_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    *,
    causal: bool = False,
    scale: float | None = None,
    key_lengths: Tensor | None = None,  # [B] int
    segment_ids: Tensor | tuple[Tensor, Tensor] | None = None,  # [B, N] (N == M) or ([B, N], [B, M])
    window: tuple[int, int] | None = None,  # (left, right)
    dropout_p: float = 0.0,
    precision: Precision = "ieee",  # fp32 inputs only: "tf32" trades ~1e-3 accuracy for tensor-core speed
    configs: tuple[tuning.KernelConfig, tuning.KernelConfig]
    | None = None,  # (forward, backward); None: tuning
) -> Tensor:
    """Attention through the Triton kernels (module docstring) → ``[B, H, N, Dv]``."""
    dims, mask4 = check_inputs(q, k, v, mask, scale=scale, dropout_p=dropout_p)
    st = check_structure(dims, q.device, key_lengths=key_lengths, segment_ids=segment_ids, window=window)
    _check_runnable(q, dropout_p, precision)
    if mask4 is not None and max(dims.D, dims.Dv) > tuning.MAX_DENSE_MASK_D:
        raise ValueError(
            f"impl='triton' takes a dense mask only up to head width {tuning.MAX_DENSE_MASK_D} (got "
            f"{max(dims.D, dims.Dv)}); use key_lengths / segment_ids / window, or impl='tiled' / 'sdpa'"
        )
    grad = torch.is_grad_enabled()
    dense_grad = grad and mask4 is not None and mask4.is_floating_point() and mask4.requires_grad
    wide = grad and max(dims.D, dims.Dv) > tuning.MAX_BACKWARD_D and any(t.requires_grad for t in (q, k, v))
    if dense_grad and not st.empty:  # the tiled backward returns the mask's gradient: one dense mask
        mask4 = merge_masks(mask4, structure_mask(st, dims, q.device))
        st = Structure(None, None, None, None)
    q, k, v = _writable(q), _writable(k), _writable(v)
    pb = _problem(dims, st, mask4, causal=causal, precision=precision, varlen=False)
    if configs is not None:
        pb = replace(pb, forward_config=configs[0], backward_config=configs[1])
    return _TritonAttention.apply(q, k, v, mask4, pb, dense_grad or wide)


def _problem(
    dims: Dims,
    st: Structure,
    mask4: Tensor | None,
    *,
    causal: bool,
    precision: str,
    varlen: bool,
    total_q: int = 0,
) -> _Problem:
    mask = None
    if mask4 is not None:
        m = mask4.view(torch.uint8) if mask4.dtype == torch.bool else mask4  # bool read as bytes
        mask = m.expand(dims.B, dims.H, dims.N, dims.M)  # stride 0 on broadcast dims: no copy
    pb = _Problem(
        B=dims.B, H=dims.H, Hkv=dims.Hkv, N=dims.N, M=dims.M, D=dims.D, Dv=dims.Dv, scale=dims.scale,
        causal=causal, window=st.window, precision=precision, varlen=varlen,
        key_lengths=None if st.key_lengths is None else st.key_lengths.to(torch.int32).contiguous(),
        q_seg=None if st.q_segments is None else st.q_segments.to(torch.int32),
        k_seg=None if st.k_segments is None else st.k_segments.to(torch.int32),
        mask=mask, mask_is_bool=mask4 is not None and mask4.dtype == torch.bool,
    )  # fmt: skip
    return replace(pb, total_q=total_q)


def triton_attention_varlen(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    cu_seqlens_q: Tensor,
    cu_seqlens_k: Tensor,
    *,
    max_seqlen_q: int,
    max_seqlen_k: int,
    causal: bool = False,
    window: tuple[int, int] | None = None,
    scale: float | None = None,
    precision: Precision = "ieee",
    configs: tuple[tuning.KernelConfig, tuning.KernelConfig]
    | None = None,  # (forward, backward); None: tuning
) -> Tensor:
    """Packed attention ``q [Tq, H, D]``, ``k [Tk, Hkv, D]``, ``v [Tk, Hkv, Dv]`` → ``[Tq, H, Dv]``.

    Inputs are validated by ``varlen.attention_varlen``; sequence ``b`` is rows
    ``cu_seqlens_q[b]:cu_seqlens_q[b+1]`` of q against ``cu_seqlens_k[b]:cu_seqlens_k[b+1]`` of k/v,
    causal aligned bottom-right within each sequence.
    """
    _check_runnable(q, 0.0, precision)
    H, Hkv, D = q.shape[1], k.shape[1], q.shape[2]
    needs_grad = torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v))
    if needs_grad and max(D, v.shape[2]) > tuning.MAX_BACKWARD_D:
        raise ValueError(
            f"impl='triton' varlen has no backward for head widths above {tuning.MAX_BACKWARD_D} "
            f"(got {max(D, v.shape[2])}); use impl='tiled', or run without gradients"
        )
    dims = Dims(
        B=cu_seqlens_q.numel() - 1, H=H, Hkv=Hkv, N=max_seqlen_q, M=max_seqlen_k, D=D, Dv=v.shape[2],
        scale=1.0 / math.sqrt(D) if scale is None else float(scale),
    )  # fmt: skip
    st = Structure(None, None, None, check_window(window))
    q, k, v = _writable(q), _writable(k), _writable(v)
    pb = _problem(dims, st, None, causal=causal, precision=precision, varlen=True, total_q=q.shape[0])
    pb = replace(
        pb, cu_q=cu_seqlens_q.to(torch.int32).contiguous(), cu_k=cu_seqlens_k.to(torch.int32).contiguous()
    )
    if configs is not None:
        pb = replace(pb, forward_config=configs[0], backward_config=configs[1])
    return _TritonAttention.apply(q, k, v, None, pb, False)
