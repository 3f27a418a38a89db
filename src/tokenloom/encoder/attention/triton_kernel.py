"""A FlashAttention-style Triton forward kernel; the only module of tokenloom that imports ``triton``.

One program computes ``BLOCK_N`` query rows of one (batch, head): it loads its q tile once, then walks
the key/value tiles (``BLOCK_M`` keys at a time) with the online softmax of ``tiled.py`` (running max m,
running sum l, accumulator rescaled by exp(m_old − m_new)), and writes the output rows and their
log-sum-exp. Masks are read tile by tile through their strides (a broadcast mask has stride 0, so it is
never expanded in memory); bool masks are read as bytes, float masks are added; causal uses the
bottom-right alignment ``j ≤ i + (M − N)`` and stops the key loop at the diagonal. Grouped-query heads
index key/value head ``h // G`` directly. Rows with no visible key are written as zeros, lse = +inf.

Precision: scores and accumulation in fp32; fp32 inputs use ``input_precision="ieee"`` in ``tl.dot``
(exact to ~1e-6 against the reference, slower than TF32 on tensor cores); fp16 / bf16 inputs feed the
second product in their own dtype, as FlashAttention does.

Backward: a custom ``torch.autograd.Function`` hands the kernel's output and lse to
``tiled.tiled_backward``, which recomputes each score tile in torch (no Triton backward kernel).
Dropout is not implemented here: ``dropout_p > 0`` raises (use ``impl="tiled"`` or ``"sdpa"``).

Where it runs: CUDA tensors; or CPU tensors when ``TRITON_INTERPRET=1`` was set **before the first
call** (the kernel is defined lazily on first use, and Triton decides interpret-or-compile at
definition). The interpreter runs numpy per program: correct and slow, for tests only.

Shapes: ``B`` batch, ``H`` query heads, ``Hkv`` key/value heads, ``G = H // Hkv``, ``N`` queries,
``M`` keys, ``D`` head width of q/k, ``Dv`` head width of v.
"""

from __future__ import annotations

import functools
import os
from typing import Any

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from tokenloom.encoder.attention._common import Dims, check_inputs
from tokenloom.encoder.attention.tiled import DEFAULT_BLOCK_K, DEFAULT_BLOCK_Q, tiled_backward

__all__ = ["interpreting", "triton_attention", "triton_available"]


def interpreting() -> bool:
    """True when ``TRITON_INTERPRET=1`` is set (Triton then runs kernels in numpy on CPU tensors)."""
    return os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "on", "yes")


def triton_available(device: torch.device | str = "cuda") -> bool:
    """Whether ``impl="triton"`` can run on ``device`` here (triton importable, and CUDA or interpreter)."""
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    kind = torch.device(device).type
    return (kind == "cuda" and torch.cuda.is_available()) or (kind == "cpu" and interpreting())


@functools.cache
def _kernel() -> Any:
    """Define (once) and return the jitted forward kernel."""
    import triton
    import triton.language as tl

    @triton.jit
    def attention_fwd(
        Q, K, V, Mask, Out, Lse,
        sqb, sqh, sqn, sqd,
        skb, skh, skm, skd,
        svb, svh, svm, svd,
        smb, smh, smn, smm,
        sob, soh, son, sod,
        H, G, N, M, D, DV, offset, scale,
        HAS_MASK: tl.constexpr, MASK_IS_BOOL: tl.constexpr, CAUSAL: tl.constexpr,
        PRECISION: tl.constexpr,
        BLOCK_N: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr,
    ):  # fmt: skip
        pid_n = tl.program_id(0)
        pid_bh = tl.program_id(1)
        b = pid_bh // H
        h = pid_bh % H
        hk = h // G  # the key/value head this query head shares
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)  # [BLOCK_N] query rows
        offs_d = tl.arange(0, BLOCK_D)
        offs_dv = tl.arange(0, BLOCK_DV)
        row_ok = offs_n < N
        q = tl.load(
            Q + b * sqb + h * sqh + offs_n[:, None] * sqn + offs_d[None, :] * sqd,
            mask=row_ok[:, None] & (offs_d[None, :] < D),
            other=0.0,
        )  # [BLOCK_N, BLOCK_D]
        m_i = tl.full([BLOCK_N], float("-inf"), dtype=tl.float32)
        l_i = tl.zeros([BLOCK_N], dtype=tl.float32)
        acc = tl.zeros([BLOCK_N, BLOCK_DV], dtype=tl.float32)
        hi = M
        if CAUSAL:
            hi = tl.maximum(tl.minimum(M, (pid_n + 1) * BLOCK_N + offset), 0)
        for start in range(0, hi, BLOCK_M):
            offs_m = start + tl.arange(0, BLOCK_M)  # [BLOCK_M] key columns
            col_ok = offs_m < M
            kt = tl.load(
                K + b * skb + hk * skh + offs_m[None, :] * skm + offs_d[:, None] * skd,
                mask=col_ok[None, :] & (offs_d[:, None] < D),
                other=0.0,
            )  # [BLOCK_D, BLOCK_M] (k transposed)
            s = tl.dot(q, kt, input_precision=PRECISION) * scale  # [BLOCK_N, BLOCK_M] fp32
            valid = row_ok[:, None] & col_ok[None, :]
            if CAUSAL:
                valid = valid & (offs_m[None, :] <= offs_n[:, None] + offset)
            if HAS_MASK:
                mptr = Mask + b * smb + h * smh + offs_n[:, None] * smn + offs_m[None, :] * smm
                if MASK_IS_BOOL:
                    allowed = tl.load(mptr, mask=valid, other=0)
                    valid = valid & (allowed != 0)
                else:
                    s = s + tl.load(mptr, mask=valid, other=0.0).to(tl.float32)
            s = tl.where(valid, s, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(s, 1))
            m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)  # no visible key yet: shift by 0
            alpha = tl.exp(m_i - m_safe)
            p = tl.exp(s - m_safe[:, None])  # [BLOCK_N, BLOCK_M]
            l_i = l_i * alpha + tl.sum(p, 1)
            vt = tl.load(
                V + b * svb + hk * svh + offs_m[:, None] * svm + offs_dv[None, :] * svd,
                mask=col_ok[:, None] & (offs_dv[None, :] < DV),
                other=0.0,
            )  # [BLOCK_M, BLOCK_DV]
            acc = acc * alpha[:, None] + tl.dot(p.to(vt.dtype), vt, input_precision=PRECISION)
            m_i = m_new
        alive = l_i > 0
        out = acc / tl.where(alive, l_i, 1.0)[:, None]
        tl.store(
            Out + b * sob + h * soh + offs_n[:, None] * son + offs_dv[None, :] * sod,
            out,
            mask=row_ok[:, None] & (offs_dv[None, :] < DV),
        )
        m_fin = tl.where(m_i == float("-inf"), 0.0, m_i)
        lse = tl.where(alive, m_fin + tl.log(tl.where(alive, l_i, 1.0)), float("inf"))
        tl.store(Lse + pid_bh * N + offs_n, lse, mask=row_ok)

    return attention_fwd


def _next_pow2(x: int) -> int:
    return 1 << max(0, (x - 1).bit_length())


def _forward(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask4: Tensor | None,
    dims: Dims,
    causal: bool,
    block_n: int,
    block_m: int,
) -> tuple[Tensor, Tensor]:
    """Run the kernel: output ``[B, H, N, Dv]`` and lse ``[B, H, N]``, both fp32."""
    out = torch.empty(dims.B, dims.H, dims.N, dims.Dv, dtype=torch.float32, device=q.device)
    lse = torch.empty(dims.B, dims.H, dims.N, dtype=torch.float32, device=q.device)
    mask_strides: tuple[int, ...]
    if mask4 is None:
        mask_arg, mask_strides, is_bool = q, (0, 0, 0, 0), False  # unused placeholder pointer
    else:
        m = mask4.view(torch.uint8) if mask4.dtype == torch.bool else mask4  # bool read as bytes
        m = m.expand(dims.B, dims.H, dims.N, dims.M)  # stride 0 on broadcast dims: no copy
        mask_arg, mask_strides, is_bool = m, m.stride(), mask4.dtype == torch.bool
    precision = "ieee" if q.dtype == torch.float32 else "tf32"  # ignored for fp16/bf16 inputs
    grid = (-(-dims.N // block_n), dims.B * dims.H)
    _kernel()[grid](
        q, k, v, mask_arg, out, lse,
        *q.stride(), *k.stride(), *v.stride(), *mask_strides, *out.stride(),
        dims.H, dims.G, dims.N, dims.M, dims.D, dims.Dv, dims.M - dims.N, dims.scale,
        HAS_MASK=mask4 is not None, MASK_IS_BOOL=is_bool, CAUSAL=causal, PRECISION=precision,
        BLOCK_N=block_n, BLOCK_M=block_m,
        BLOCK_D=max(16, _next_pow2(dims.D)), BLOCK_DV=max(16, _next_pow2(dims.Dv)),
    )  # fmt: skip
    return out, lse


class _TritonAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, mask4, dims, causal, block_n, block_m):
        out, lse = _forward(q, k, v, mask4, dims, causal, block_n, block_m)
        ctx.dims, ctx.causal = dims, causal
        ctx.mask_is_tensor = mask4 is not None
        ctx.save_for_backward(q, k, v, out, lse, *(() if mask4 is None else (mask4,)))
        return out.to(q.dtype)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        q, k, v, out, lse, *rest = ctx.saved_tensors
        dims: Dims = ctx.dims
        out5 = out.unflatten(1, (dims.Hkv, dims.G))  # [B, H, N, Dv] -> [B, Hkv, G, N, Dv]
        lse5 = lse.unflatten(1, (dims.Hkv, dims.G)).unsqueeze(-1)  # [B, H, N] -> [B, Hkv, G, N, 1]
        grads = tiled_backward(
            grad_out,
            q,
            k,
            v,
            out5,
            lse5,
            rest[0] if ctx.mask_is_tensor else None,
            dims,
            causal=ctx.causal,
            dropout_p=0.0,
            seed=0,
            block_q=DEFAULT_BLOCK_Q,
            block_k=DEFAULT_BLOCK_K,
            mask_grad=ctx.needs_input_grad[3],
        )
        return (*grads, None, None, None, None)


def triton_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    *,
    causal: bool = False,
    scale: float | None = None,
    dropout_p: float = 0.0,
    block_n: int = 64,  # query rows per program (a power of two >= 16)
    block_m: int = 64,  # keys per inner step (a power of two >= 16)
) -> Tensor:
    """Attention through the Triton forward kernel (module docstring) → ``[B, H, N, Dv]``."""
    dims, mask4 = check_inputs(q, k, v, mask, scale=scale, dropout_p=dropout_p)
    if dropout_p > 0.0:
        raise ValueError(
            f"impl='triton' has no dropout (got dropout_p={dropout_p}); use impl='tiled' or 'sdpa', or 0.0 in eval"
        )
    for name, value in (("block_n", block_n), ("block_m", block_m)):
        if not isinstance(value, int) or value < 16 or value & (value - 1):
            raise ValueError(f"{name} must be a power of two >= 16 (tl.dot needs it), got {value!r}")
    if q.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise TypeError(f"impl='triton' supports fp16, bf16 and fp32 inputs, got {q.dtype}")
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
    return _TritonAttention.apply(q, k, v, mask4, dims, causal, block_n, block_m)
