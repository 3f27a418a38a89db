"""``attention_varlen``: attention over packed sequences in FlashAttention's varlen layout.

``q [Tq, H, D]``, ``k [Tk, Hkv, D]``, ``v [Tk, Hkv, Dv]`` hold B sequences back to back;
``cu_seqlens_q`` / ``cu_seqlens_k`` (``[B + 1]`` int, starting at 0, non-decreasing, ending at Tq / Tk)
give their boundaries: sequence ``b`` is query rows ``cu_seqlens_q[b] : cu_seqlens_q[b+1]`` against key
rows ``cu_seqlens_k[b] : cu_seqlens_k[b+1]``. ``causal`` and ``window`` are aligned bottom-right within
each sequence (query ``i`` of a sequence with ``n`` queries and ``m`` keys sits at key position
``i + m − n``), as in ``attention``.

The Triton path reads the boundaries natively (no padding, no mask). The other paths run the packed
batch as one sequence with the equivalent dense bool mask ``[1, 1, Tq, Tk]`` — the reference meaning,
at O(Tq·Tk) memory.

Shapes: ``B`` sequences, ``H`` query heads, ``Hkv`` key/value heads, ``Tq`` / ``Tk`` packed query / key
tokens, ``D`` head width of q/k, ``Dv`` head width of v.
"""

from __future__ import annotations

import torch
from torch import Tensor

from tokenloom.encoder.attention import dispatch
from tokenloom.encoder.attention._common import NO_STRUCTURE, KeyRestriction, check_inputs, check_window
from tokenloom.encoder.attention.triton_kernel import triton_attention_varlen
from tokenloom.encoder.config import AttnImpl

__all__ = ["attention_varlen", "varlen_mask"]


def _check_cu(cu: Tensor, total: int, name: str, device: torch.device) -> Tensor:
    if not isinstance(cu, Tensor) or cu.dim() != 1 or cu.numel() < 1:
        raise ValueError(f"{name} must be a 1-D int tensor [B + 1], got {cu!r}")
    if cu.dtype == torch.bool or cu.is_floating_point():
        raise TypeError(f"{name} must hold integers, got dtype {cu.dtype}")
    if cu.device != device:
        raise ValueError(f"{name} is on {cu.device} but q/k/v are on {device}")
    host = cu.detach().to("cpu", torch.int64)
    if int(host[0]) != 0 or int(host[-1]) != total or bool((host[1:] < host[:-1]).any()):
        raise ValueError(
            f"{name} must start at 0, never decrease and end at the packed length {total}; got "
            f"{host.tolist()[:8]}{'...' if host.numel() > 8 else ''} (cumulative sequence lengths, e.g. [0, 3, 7])"
        )
    return host


def varlen_mask(cu_q: Tensor, cu_k: Tensor, *, causal: bool, window: tuple[int, int] | None) -> Tensor:
    """The dense bool mask ``[1, 1, Tq, Tk]`` (True = may attend) equivalent to a varlen call."""
    lens_q, lens_k = cu_q[1:] - cu_q[:-1], cu_k[1:] - cu_k[:-1]  # [B]
    seq_q = torch.repeat_interleave(torch.arange(lens_q.numel()), lens_q)  # [Tq] sequence of each query
    seq_k = torch.repeat_interleave(torch.arange(lens_k.numel()), lens_k)  # [Tk]
    pos_q = torch.arange(int(cu_q[-1])) - cu_q[seq_q] + (lens_k - lens_q)[seq_q]  # [Tq] aligned key position
    pos_k = torch.arange(int(cu_k[-1])) - cu_k[seq_k]  # [Tk]
    allowed = seq_q[:, None] == seq_k[None, :]  # [Tq, Tk]
    delta = pos_q[:, None] - pos_k[None, :]  # [Tq, Tk] query position minus key position
    if causal:
        allowed &= delta >= 0
    if window is not None:
        allowed &= (delta <= window[0]) & (-delta <= window[1])
    return allowed[None, None]  # [1, 1, Tq, Tk]


def attention_varlen(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    cu_seqlens_q: Tensor,
    cu_seqlens_k: Tensor,
    *,
    causal: bool = False,
    window: tuple[int, int] | None = None,
    scale: float | None = None,
    impl: AttnImpl = "auto",
) -> Tensor:
    """Attention over packed sequences (module docstring) → ``[Tq, H, Dv]`` in q's dtype."""
    dispatch.check_impl(impl)
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, Tensor) or t.dim() != 3:
            shape = tuple(t.shape) if isinstance(t, Tensor) else type(t).__name__
            raise ValueError(
                f"{name} must be 3-D [total_tokens, heads, head_dim] (varlen layout), got {shape}"
            )
    q4, k4, v4 = (t.transpose(0, 1).unsqueeze(0) for t in (q, k, v))  # [T, H, D] -> [1, H, T, D]
    dims, _ = check_inputs(q4, k4, v4, None, scale=scale, dropout_p=0.0)
    window = check_window(window)
    cu_q = _check_cu(cu_seqlens_q, q.shape[0], "cu_seqlens_q", q.device)
    cu_k = _check_cu(cu_seqlens_k, k.shape[0], "cu_seqlens_k", q.device)
    if cu_q.numel() != cu_k.numel():
        raise ValueError(
            f"cu_seqlens_q has {cu_q.numel()} entries but cu_seqlens_k {cu_k.numel()}; both are [B + 1]"
        )
    chosen = impl
    if impl == "auto" and dispatch.triton_supports(q, dims, 0.0, needs_grad=dispatch.needs_grad(q, k, v)):
        chosen = "triton"
    if chosen == "triton" and cu_q.numel() > 1:
        dispatch.record("triton")
        return triton_attention_varlen(
            q, k, v, cu_seqlens_q, cu_seqlens_k, causal=causal, window=window, scale=dims.scale,
            max_seqlen_q=int((cu_q[1:] - cu_q[:-1]).max()), max_seqlen_k=int((cu_k[1:] - cu_k[:-1]).max()),
        )  # fmt: skip
    mask = varlen_mask(cu_q, cu_k, causal=causal, window=window).to(q.device)  # [1, 1, Tq, Tk]
    keys = KeyRestriction(mask, False, NO_STRUCTURE, None)  # the packed batch as one masked sequence
    out = dispatch.run(chosen, q4, k4, v4, dims, keys, dropout_p=0.0)  # [1, H, Tq, Dv]
    return out[0].transpose(0, 1)  # [1, H, Tq, Dv] -> [Tq, H, Dv]
