"""Which path computes an ``attention`` call, and the record of what ran (``last_impl``).

``impl="auto"``:

- **CUDA**, no mask of any kind: SDPA's flash backend, else its cuDNN backend, each **forced** with
  ``torch.nn.attention.sdpa_kernel`` (one backend at a time), so a silent fallback to SDPA's math kernel
  cannot happen. When neither takes the call (e.g. dropout on cuDNN, an unsupported head width), or when
  ``key_lengths`` / ``segment_ids`` / ``window`` / a dense mask is given (which push SDPA off its fast
  kernels or make it do the masked work), the Triton kernel runs, reading the structured masks natively
  and skipping masked key tiles — when it supports the call (triton installed, fp16/bf16/fp32, head
  widths ≤ 128, or ≤ 256 when no gradient is wanted; no dropout).
- Otherwise (CPU, or a call the kernel does not take): SDPA with the equivalent dense mask when one of
  its fused kernels accepts it; when only SDPA's math fallback would, that fallback materializes the
  scores: it is used while they fit in ``AUTO_TILED_BYTES`` (B·H·N·M·4 bytes), and ``"tiled"`` above.

Explicit ``impl`` values run that path (``"triton"`` raises when it cannot run). ``last_impl()`` names
the path that ran (``"reference" | "tiled" | "sdpa" | "triton"``); for SDPA, ``last_sdpa_kernel()``
names the backend (``"flash"``, ``"cudnn"``, ...).

Shapes: ``B`` batch, ``H`` query heads, ``Hkv`` key/value heads, ``N`` queries, ``M`` keys, ``D`` head width.
"""

from __future__ import annotations

import importlib.util
import threading

import torch
from torch import Tensor

from tokenloom.encoder.attention._common import Dims, Structure, merge_masks, structure_mask

__all__ = [
    "AUTO_TILED_BYTES",
    "FAST_SDPA_KERNELS",
    "last_impl",
    "needs_grad",
    "record",
    "run",
    "triton_supports",
]

# "auto": when no fused SDPA kernel accepts the inputs and the scores would exceed this many bytes
# (B*H*N*M*4), use "tiled" instead of SDPA's score-materializing math path.
AUTO_TILED_BYTES = 1 << 30

# SDPA backends "auto" uses for mask-free calls on CUDA, in this order.
FAST_SDPA_KERNELS = ("flash", "cudnn")

_state = threading.local()


def record(impl: str) -> None:
    """Remember the path the current call took (read back with ``last_impl``)."""
    _state.impl = impl


def last_impl() -> str | None:
    """The path (``"reference" | "sdpa" | "tiled" | "triton"``) of the latest attention call in this thread."""
    return getattr(_state, "impl", None)


def triton_supports(
    q: Tensor, dims: Dims, dropout_p: float, *, needs_grad: bool = False, dense_mask: bool = False
) -> bool:
    """Whether the Triton kernels take this call on this machine (CUDA tensors only): head widths up to
    256 forward, up to 128 with a dense mask or when gradients are wanted (wider heads would take the
    slow torch backward)."""
    widest = 128 if needs_grad or dense_mask else 256
    return (
        q.device.type == "cuda"
        and dropout_p == 0.0
        and q.dtype in (torch.float16, torch.bfloat16, torch.float32)
        and max(dims.D, dims.Dv) <= widest
        and importlib.util.find_spec("triton") is not None
    )


def needs_grad(*tensors: Tensor) -> bool:
    """Whether autograd will want gradients of any of ``tensors``."""
    return torch.is_grad_enabled() and any(t.requires_grad for t in tensors)


def _key_limit(st: Structure, device: torch.device) -> int | None:
    """No key at or past this index is valid (from ``key_lengths``; CPU only, to avoid a device sync)."""
    if st.key_lengths is None or device.type != "cpu" or st.key_lengths.numel() == 0:
        return None
    return int(st.key_lengths.max())


def run(
    impl: str,
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask4: Tensor | None,
    st: Structure,
    dims: Dims,
    *,
    causal: bool,
    dropout_p: float,
) -> Tensor:
    """Compute the call on ``impl`` (``"auto"`` chooses, see the module docstring) and record the path."""
    if impl == "auto" and q.device.type == "cuda":
        if mask4 is None and st.empty:
            from tokenloom.encoder.attention.sdpa import NoFusedKernel, sdpa_attention

            try:
                out = sdpa_attention(
                    q, k, v, None, causal=causal, scale=dims.scale, dropout_p=dropout_p,
                    kernels=FAST_SDPA_KERNELS,
                )  # fmt: skip
            except NoFusedKernel:
                pass
            else:
                record("sdpa")
                return out
        if triton_supports(q, dims, dropout_p, needs_grad=needs_grad(q, k, v), dense_mask=mask4 is not None):
            impl = "triton"
    if impl == "triton":
        from tokenloom.encoder.attention.triton_kernel import triton_attention

        record("triton")
        return triton_attention(
            q, k, v, mask4, causal=causal, scale=dims.scale, dropout_p=dropout_p,
            key_lengths=st.key_lengths, segment_ids=_segments(st), window=st.window,
        )  # fmt: skip
    dense = merge_masks(mask4, structure_mask(st, dims, q.device))  # [B|1, H|1, N|1, M] or None
    if impl == "auto":
        return _auto_dense(q, k, v, dense, st, dims, causal=causal, dropout_p=dropout_p)
    record(impl)
    if impl == "reference":
        from tokenloom.encoder.attention.reference import reference_attention

        return reference_attention(q, k, v, dense, causal=causal, scale=dims.scale, dropout_p=dropout_p)
    if impl == "tiled":
        return _tiled(q, k, v, dense, st, dims, causal=causal, dropout_p=dropout_p)
    from tokenloom.encoder.attention.sdpa import sdpa_attention

    return sdpa_attention(q, k, v, dense, causal=causal, scale=dims.scale, dropout_p=dropout_p)


def _segments(st: Structure) -> tuple[Tensor, Tensor] | None:
    if st.q_segments is None or st.k_segments is None:
        return None
    return st.q_segments, st.k_segments


def _tiled(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    dense: Tensor | None,
    st: Structure,
    dims: Dims,
    *,
    causal: bool,
    dropout_p: float,
) -> Tensor:
    from tokenloom.encoder.attention.tiled import tiled_attention

    return tiled_attention(
        q, k, v, dense, causal=causal, scale=dims.scale, dropout_p=dropout_p,
        window=st.window, key_limit=_key_limit(st, q.device),
    )  # fmt: skip


def _auto_dense(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    dense: Tensor | None,
    st: Structure,
    dims: Dims,
    *,
    causal: bool,
    dropout_p: float,
) -> Tensor:
    """SDPA with the dense mask when a fused kernel (or affordable math) takes it, else ``tiled``."""
    from tokenloom.encoder.attention.sdpa import NoFusedKernel, sdpa_attention

    small = dims.B * dims.H * dims.N * dims.M * 4 <= AUTO_TILED_BYTES
    try:
        out = sdpa_attention(
            q, k, v, dense, causal=causal, scale=dims.scale, dropout_p=dropout_p, allow_math=small
        )
    except NoFusedKernel:  # only the math path would take it, and its scores are too big
        record("tiled")
        return _tiled(q, k, v, dense, st, dims, causal=causal, dropout_p=dropout_p)
    record("sdpa")
    return out
