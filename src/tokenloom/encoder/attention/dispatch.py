"""Which path computes an ``attention`` call, and the record of what ran (``last_impl``).

``impl="auto"``:

- **CUDA**, no mask of any kind: SDPA's flash or cuDNN backend, the one torch itself prefers first
  (cuDNN on Hopper and Blackwell with a recent cuDNN), each **forced** with
  ``torch.nn.attention.sdpa_kernel`` (one backend at a time), so a silent fallback to SDPA's math kernel
  cannot happen. When neither takes the call (e.g. dropout on cuDNN, an unsupported head width), or when
  ``key_lengths`` / ``segment_ids`` / ``window`` / a dense mask is given (which push SDPA off its fast
  kernels or make it do the masked work), the Triton kernel runs, reading the structured masks natively
  and skipping masked key tiles — when it supports the call (triton installed, fp16/bf16/fp32, head
  widths ≤ 128, or ≤ 256 when no gradient is wanted; no dropout).
- Otherwise (CPU, or a call the kernel does not take): SDPA with the equivalent dense mask when one of
  its fused kernels accepts it; when only SDPA's math fallback would, that fallback materializes the
  scores: it is used while they fit in ``AUTO_TILED_BYTES`` (B·H·N·M·4 bytes), and ``"tiled"`` above.

Explicit ``impl`` values run that path (``"triton"`` raises when it cannot run). A call with a sparse
``pattern`` runs on ``"reference"`` / ``"sdpa"`` when asked for (with the pattern's dense mask), else on
``"tiled"``, which computes only the tiles the pattern allows (the Triton kernel takes no block layout).
Calls with no queries or no keys return zeros on no path at all (recorded as ``"reference"`` for
``"auto"``). ``last_impl()`` names
the path that ran (``"reference" | "tiled" | "sdpa" | "triton"``); for SDPA, ``last_sdpa_kernel()``
names the backend (``"flash"``, ``"cudnn"``, ...).

Shapes: ``B`` batch, ``H`` query heads, ``Hkv`` key/value heads, ``N`` queries, ``M`` keys, ``D`` head width.
"""

from __future__ import annotations

import importlib.util
import logging
import threading
from dataclasses import replace
from typing import get_args

import torch
from torch import Tensor

from tokenloom.encoder.attention._common import NO_STRUCTURE, Dims, KeyRestriction
from tokenloom.encoder.attention.reference import reference_path
from tokenloom.encoder.attention.sdpa import NoFusedKernel, sdpa_path
from tokenloom.encoder.attention.tiled import tiled_path
from tokenloom.encoder.attention.triton_kernel import triton_path
from tokenloom.encoder.config import AttnImpl

__all__ = [
    "AUTO_TILED_BYTES",
    "FAST_SDPA_KERNELS",
    "IMPLS",
    "check_impl",
    "last_impl",
    "needs_grad",
    "record",
    "run",
    "triton_supports",
]

logger = logging.getLogger(__name__)

IMPLS: tuple[str, ...] = get_args(AttnImpl)

# "auto": when no fused SDPA kernel accepts the inputs and the scores would exceed this many bytes
# (B*H*N*M*4), use "tiled" instead of SDPA's score-materializing math path.
AUTO_TILED_BYTES = 1 << 30

# SDPA backends "auto" uses for mask-free calls on CUDA (torch's own choice among them first).
FAST_SDPA_KERNELS = ("flash", "cudnn")

_state = threading.local()


def check_impl(impl: object) -> None:
    if impl not in IMPLS:
        raise ValueError(f"impl must be one of {', '.join(IMPLS)}; got {impl!r}")


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


def run(
    impl: str, q: Tensor, k: Tensor, v: Tensor, dims: Dims, keys: KeyRestriction, *, dropout_p: float
) -> Tensor:
    """Compute the call on ``impl`` (``"auto"`` chooses, see the module docstring) and record the path."""
    if keys.pattern is not None:
        impl, keys = _pattern_route(impl, dims, keys, q.device)
    if dims.N == 0 or dims.M == 0:
        record("reference" if impl == "auto" else impl)
        # no queries or no keys: every row is fully masked -> zeros; "+ 0 * sums" keeps the graph
        # so that gradients are zeros rather than missing
        zeros = torch.zeros(dims.B, dims.H, dims.N, dims.Dv, dtype=q.dtype, device=q.device)
        return zeros + 0.0 * (q.sum() + k.sum() + v.sum())
    if impl == "auto" and q.device.type == "cuda":
        if keys.mask4 is None and keys.structure.empty:
            try:
                out = sdpa_path(q, k, v, dims, keys, dropout_p=dropout_p, kernels=FAST_SDPA_KERNELS)
            except NoFusedKernel:
                pass
            else:
                record("sdpa")
                return out
        wants_grad = needs_grad(q, k, v)
        if triton_supports(q, dims, dropout_p, needs_grad=wants_grad, dense_mask=keys.mask4 is not None):
            impl = "triton"
    if impl == "auto":
        return _auto_dense(q, k, v, dims, keys, dropout_p=dropout_p)
    record(impl)
    if impl == "triton":
        return triton_path(q, k, v, dims, keys, dropout_p=dropout_p)
    if impl == "reference":
        return reference_path(q, k, v, dims, keys, dropout_p=dropout_p)
    if impl == "tiled":
        return tiled_path(q, k, v, dims, keys, dropout_p=dropout_p)
    return sdpa_path(q, k, v, dims, keys, dropout_p=dropout_p)


def _pattern_route(
    impl: str, dims: Dims, keys: KeyRestriction, device: torch.device
) -> tuple[str, KeyRestriction]:
    """The path of a call with a sparse pattern, and its restriction with the structured masks folded
    into the dense mask: a pattern call skips tiles by the pattern's tile layout alone."""
    if impl == "triton":
        logger.info(
            "the Triton kernel takes no block layout: pattern %s runs on the tiled path", keys.pattern
        )
    path = impl if impl in ("reference", "sdpa") else "tiled"
    return path, replace(keys, mask4=keys.dense(dims, device), structure=NO_STRUCTURE)  # [B|1, H|1, N|1, M]


def _auto_dense(
    q: Tensor, k: Tensor, v: Tensor, dims: Dims, keys: KeyRestriction, *, dropout_p: float
) -> Tensor:
    """SDPA with the dense mask when a fused kernel (or affordable math) takes it, else ``tiled``."""
    small = dims.B * dims.H * dims.N * dims.M * 4 <= AUTO_TILED_BYTES
    try:
        out = sdpa_path(q, k, v, dims, keys, dropout_p=dropout_p, allow_math=small)
    except NoFusedKernel:  # only the math path would take it, and its scores are too big
        record("tiled")
        return tiled_path(q, k, v, dims, keys, dropout_p=dropout_p)
    record("sdpa")
    return out
