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
    NO_STRUCTURE,
    Dims,
    KeyRestriction,
    Structure,
    check_window,
    resolve,
)
from tokenloom.encoder.attention._row_stats import RowStats
from tokenloom.encoder.attention._tile_plan import TilePlan
from tokenloom.encoder.attention._triton_problem import Problem, build_problem
from tokenloom.encoder.attention.tiled import DEFAULT_BLOCK_K, DEFAULT_BLOCK_Q, tiled_backward

__all__ = ["KERNELS", "interpreting", "kernel", "triton_attention", "triton_attention_varlen", "triton_path"]

Precision = Literal["ieee", "tf32"]

KERNELS = ("attn_fwd", "attn_bwd_dq", "attn_bwd_dkdv")  # every @triton.jit kernel this path launches


def interpreting() -> bool:
    """True when ``TRITON_INTERPRET=1`` is set (Triton then runs kernels in numpy on CPU tensors)."""
    return os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "on", "yes")


def _jit() -> Any:
    from tokenloom.encoder.attention import _triton_jit

    return _triton_jit


def _jit_bwd() -> Any:
    from tokenloom.encoder.attention import _triton_bwd

    return _triton_bwd


def kernel(name: str) -> Any:
    """The ``@triton.jit`` kernel ``name`` (one of ``KERNELS``), for compiling it ahead of time
    (``triton.compile``). Imports ``triton``: the kernels are defined then, interpreted or compiled as
    ``TRITON_INTERPRET`` says at that moment."""
    if name not in KERNELS:
        raise ValueError(f"unknown Triton kernel {name!r}: use one of {', '.join(KERNELS)}")
    return getattr(_jit() if name == "attn_fwd" else _jit_bwd(), name)


def _dtype_name(dtype: torch.dtype) -> str:
    return {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}[dtype]


def _forward(q: Tensor, k: Tensor, v: Tensor, pb: Problem) -> tuple[Tensor, RowStats]:
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
    q: Tensor, k: Tensor, v: Tensor, out: Tensor, stats: RowStats, do: Tensor, pb: Problem
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


@dataclass(frozen=True)
class _Call:
    """What one Triton call needs besides its tensors; kept on ``ctx`` for the backward."""

    problem: Problem
    torch_backward: bool  # gradients from tiled.tiled_backward (additive mask with grad, wide heads)


class _TritonAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, mask4, call: _Call):
        out, stats = _forward(q, k, v, call.problem)
        ctx.call = call
        ctx.save_for_backward(q, k, v, out, stats.max, stats.log_sum, *(() if mask4 is None else (mask4,)))
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        q, k, v, out, row_max, log_sum, *rest = ctx.saved_tensors
        call: _Call = ctx.call
        stats, mask4 = RowStats(row_max, log_sum), (rest[0] if rest else None)
        if not call.torch_backward:
            dq, dk, dv = _backward(q, k, v, out, stats, grad_out, call.problem)
            dmask = None
        else:
            dq, dk, dv, dmask = _torch_backward(
                q, k, v, out, stats, mask4, grad_out, call.problem, mask_grad=ctx.needs_input_grad[3]
            )
        return dq, dk, dv, dmask, None  # one per forward input: q, k, v, mask4, call


def _torch_backward(
    q: Tensor, k: Tensor, v: Tensor, out: Tensor, stats: RowStats, mask4: Tensor | None, grad_out: Tensor,
    pb: Problem, *, mask_grad: bool,
) -> tuple[Tensor, Tensor, Tensor, Tensor | None]:  # fmt: skip
    """``tiled.tiled_backward`` from the kernel's output and row stats (structured masks made dense)."""
    G = pb.H // pb.Hkv
    dims = Dims(B=pb.B, H=pb.H, Hkv=pb.Hkv, N=pb.N, M=pb.M, D=pb.D, Dv=pb.Dv, scale=pb.scale)
    if pb.key_lengths is not None or pb.q_seg is not None or pb.window is not None:  # wide heads
        st = Structure(
            None if pb.key_lengths is None else pb.key_lengths.long(),
            None if pb.q_seg is None else pb.q_seg.long(),
            None if pb.k_seg is None else pb.k_seg.long(),
            pb.window,
        )
        mask4 = KeyRestriction(mask4, pb.causal, st, None).dense(dims, q.device)  # [B|1, H|1, N|1, M]
    out5 = out.float().unflatten(1, (pb.Hkv, G))  # [B, H, N, Dv] -> [B, Hkv, G, N, Dv]
    stats5 = RowStats(*(x.unflatten(1, (pb.Hkv, G)).unsqueeze(-1) for x in (stats.max, stats.log_sum)))
    # [B, H, N] -> [B, Hkv, G, N, 1]
    plan = TilePlan(dims, pb.causal, DEFAULT_BLOCK_Q, DEFAULT_BLOCK_K)
    return tiled_backward(grad_out, q, k, v, out5, stats5, mask4, plan, mask_grad=mask_grad)


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
    dims, keys = resolve(
        q, k, v, mask, causal=causal, scale=scale, dropout_p=dropout_p,
        key_lengths=key_lengths, segment_ids=segment_ids, window=window,
    )  # fmt: skip
    return triton_path(q, k, v, dims, keys, dropout_p=dropout_p, precision=precision, configs=configs)


def triton_path(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    dims: Dims,
    keys: KeyRestriction,
    *,
    dropout_p: float,
    precision: Precision = "ieee",
    configs: tuple[tuning.KernelConfig, tuning.KernelConfig] | None = None,
) -> Tensor:
    """The Triton path of a validated call: the kernels read ``causal`` and the structure natively.

    A call with a pattern never comes here (the kernels take no block layout; ``dispatch`` routes it).
    """
    assert keys.pattern is None, "the Triton kernels take no block layout"
    _check_runnable(q, dropout_p, precision)
    mask4, st = keys.mask4, keys.structure
    if mask4 is not None and max(dims.D, dims.Dv) > tuning.MAX_DENSE_MASK_D:
        raise ValueError(
            f"impl='triton' takes a dense mask only up to head width {tuning.MAX_DENSE_MASK_D} (got "
            f"{max(dims.D, dims.Dv)}); use key_lengths / segment_ids / window, or impl='tiled' / 'sdpa'"
        )
    grad = torch.is_grad_enabled()
    dense_grad = grad and mask4 is not None and mask4.is_floating_point() and mask4.requires_grad
    wide = grad and max(dims.D, dims.Dv) > tuning.MAX_BACKWARD_D and any(t.requires_grad for t in (q, k, v))
    if dense_grad and not st.empty:  # the tiled backward returns the mask's gradient: one dense mask
        mask4, st = keys.dense(dims, q.device), NO_STRUCTURE
    q, k, v = _writable(q), _writable(k), _writable(v)
    pb = build_problem(dims, st, mask4, causal=keys.causal, precision=precision, varlen=False)
    if configs is not None:
        pb = replace(pb, forward_config=configs[0], backward_config=configs[1])
    return _TritonAttention.apply(q, k, v, mask4, _Call(pb, dense_grad or wide))


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
    st = Structure(None, None, None, check_window(window))  # cu_seqlens bound each sequence
    q, k, v = _writable(q), _writable(k), _writable(v)
    pb = build_problem(dims, st, None, causal=causal, precision=precision, varlen=True, total_q=q.shape[0])
    pb = replace(
        pb, cu_q=cu_seqlens_q.to(torch.int32).contiguous(), cu_k=cu_seqlens_k.to(torch.int32).contiguous()
    )
    if configs is not None:
        pb = replace(pb, forward_config=configs[0], backward_config=configs[1])
    return _TritonAttention.apply(q, k, v, None, _Call(pb, torch_backward=False))
