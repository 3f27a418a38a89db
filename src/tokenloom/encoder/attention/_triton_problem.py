"""The launch description of one Triton attention call: sizes, layout, masks and tiles (internal).

``triton_kernel`` builds one ``Problem`` per call and hands it to the forward and backward launches;
``Problem.common`` turns its masks into the pointer, stride and constexpr arguments the three kernels of
``_triton_jit`` / ``_triton_bwd`` share. This module imports no triton.

Shapes: ``B`` batch, ``H`` query heads, ``Hkv`` key/value heads, ``N`` queries, ``M`` keys,
``D`` head width of q/k, ``Dv`` head width of v, ``T`` packed tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import torch
from torch import Tensor

from tokenloom.encoder.attention import tuning
from tokenloom.encoder.attention._common import Dims, Structure

__all__ = ["Problem", "build_problem"]


@dataclass(frozen=True)
class Problem:
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


def build_problem(
    dims: Dims,
    st: Structure,
    mask4: Tensor | None,
    *,
    causal: bool,
    precision: str,
    varlen: bool,
    total_q: int = 0,
) -> Problem:
    mask = None
    if mask4 is not None:
        m = mask4.view(torch.uint8) if mask4.dtype == torch.bool else mask4  # bool read as bytes
        mask = m.expand(dims.B, dims.H, dims.N, dims.M)  # stride 0 on broadcast dims: no copy
    pb = Problem(
        B=dims.B, H=dims.H, Hkv=dims.Hkv, N=dims.N, M=dims.M, D=dims.D, Dv=dims.Dv, scale=dims.scale,
        causal=causal, window=st.window, precision=precision, varlen=varlen,
        key_lengths=None if st.key_lengths is None else st.key_lengths.to(torch.int32).contiguous(),
        q_seg=None if st.q_segments is None else st.q_segments.to(torch.int32),
        k_seg=None if st.k_segments is None else st.k_segments.to(torch.int32),
        mask=mask, mask_is_bool=mask4 is not None and mask4.dtype == torch.bool,
    )  # fmt: skip
    return replace(pb, total_q=total_q)
