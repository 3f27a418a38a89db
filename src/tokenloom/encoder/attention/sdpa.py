"""The SDPA path: ``torch.nn.functional.scaled_dot_product_attention`` under tokenloom's conventions.

What it adds on top of the torch call:

- bool masks keep their meaning (torch's bool ``attn_mask`` is also True = take part); float masks are
  cast to q's dtype and added — unless they hold finite biases beyond that dtype's range (an fp32
  mask with fp16 inputs), then the call runs in the mask's dtype (``_needs_wide_compute``);
- ``causal`` with ``N ≠ M`` is aligned bottom-right (query i sees keys j ≤ i + (M − N)); torch's
  ``is_causal`` is top-left aligned, so it is only used when ``N == M`` and no other mask is given,
  otherwise the causal pattern is merged into an explicit mask;
- grouped-query / multi-query k/v are passed with ``enable_gqa=True`` (no copies; torch < 2.5: repeated);
- rows with every key masked: they are opened to all keys before the call (so no kernel ever sees an
  all −inf row, which yields NaN in some backends) and their output is set to zero afterwards, which
  also makes their gradients zero — the reference's result;
- an additive mask with a row whose largest bias is large in magnitude (``|max| ≥ LARGE_ROW_BIAS``, e.g.
  a row filled with ``finfo(float32).min`` or −1e9, Hugging Face's padding convention): the fused kernels'
  backward recomputes the weights from the row's log-sum-exp held in one fp32 number, which loses the
  ``log M`` term to rounding there (every weight becomes 1 instead of 1/M). When gradients are wanted,
  such calls run on the math backend, whose autograd gives the reference's gradients (``last_kernel()``
  says ``"math"``); with ``allow_math=False`` they raise ``NoFusedKernel``. Forward-only calls keep the
  fused kernels: their outputs are exact.

Which kernel ran (best effort, exact when it answers): the call is tried under
``torch.nn.attention.sdpa_kernel`` with one backend at a time: first the one torch itself would choose
among those allowed when cuDNN is one of them (``torch._fused_sdp_choice``: on Hopper and Blackwell with
a recent cuDNN, torch prefers cuDNN, which ran 1.3-1.9x flash's forward rate on an H200), then the rest
in the order flash, efficient, cudnn, math on CUDA (flash, math on CPU); the first that accepts the
inputs runs and is recorded in ``last_kernel()``. A backend refusing the inputs raises before doing any work, so the
probing costs microseconds; the refusals' warnings are silenced. If the probing API is missing, the call
runs with torch's default choice and ``last_kernel()`` answers ``"default"``.

It does not implement attention itself.

Shapes: ``B`` batch, ``H`` query heads, ``Hkv`` key/value heads, ``N`` queries, ``M`` keys, ``D`` head width.
"""

from __future__ import annotations

import logging
import threading
import warnings
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from tokenloom.encoder.attention._common import (
    Dims,
    KeyRestriction,
    causal_tile,
    dead_rows,
    repeat_kv,
    resolve,
)

__all__ = ["LARGE_ROW_BIAS", "NoFusedKernel", "last_kernel", "sdpa_attention", "sdpa_path"]

logger = logging.getLogger(__name__)

_state = threading.local()

# A float-mask row whose largest bias is at least this large in magnitude: the fp32 spacing there (3e-5)
# is what a fused backward's single log-sum-exp loses, so gradients with such rows run on the math backend.
LARGE_ROW_BIAS = 2.0**8

# scaled_dot_product_attention(..., enable_gqa=True) exists from torch 2.5 on
_HAS_ENABLE_GQA = tuple(int(part) for part in torch.__version__.split(".")[:2]) >= (2, 5)


def last_kernel() -> str | None:
    """SDPA backend of the latest ``sdpa_attention`` call in this thread (``"flash"``, ``"math"``, …;
    ``"compiled"`` when traced by ``torch.compile``, which leaves the choice to torch)."""
    return getattr(_state, "kernel", None)


def _backends(device: torch.device) -> list[tuple[str, Any]]:
    try:
        from torch.nn.attention import SDPBackend
    except ImportError:  # pragma: no cover - torch < 2.3
        return []
    names = ["flash", "math"] if device.type == "cpu" else ["flash", "efficient", "cudnn", "math"]
    table = {
        "flash": "FLASH_ATTENTION",
        "efficient": "EFFICIENT_ATTENTION",
        "cudnn": "CUDNN_ATTENTION",
        "math": "MATH",
    }
    return [(name, getattr(SDPBackend, table[name])) for name in names if hasattr(SDPBackend, table[name])]


def _needs_wide_compute(mask4: Tensor | None, dtype: torch.dtype) -> bool:
    """Whether an additive mask holds finite biases that ``dtype`` (q's) cannot represent.

    Casting such a mask would turn them into ±inf: with fp16 inputs a bias of 1e5 on one key gives
    inf − inf = NaN, and a row filled with ``finfo(float32).min`` (Hugging Face's padding value) becomes an
    all −inf "dead" row (zeros) instead of the uniform weights that fp32 arithmetic gives it (the
    bias swamps every score). Those calls run in the mask's dtype instead, as ``reference`` does.
    """
    if mask4 is None or mask4.dtype == torch.bool or mask4.dtype == dtype:
        return False
    if torch.finfo(mask4.dtype).max <= torch.finfo(dtype).max:
        return False
    limit = torch.finfo(dtype).max
    return bool((torch.isfinite(mask4) & (mask4.detach().abs() > limit)).any())


def _large_row_bias(attn_mask: Tensor | None) -> bool:
    """Whether an additive ``attn_mask`` has a row whose (finite) maximum is ``≥ LARGE_ROW_BIAS`` in magnitude."""
    if attn_mask is None or attn_mask.dtype == torch.bool:
        return False
    row_max = attn_mask.detach().amax(dim=-1)  # [B|1, H|1, N|1]
    return bool((torch.isfinite(row_max) & (row_max.abs() >= LARGE_ROW_BIAS)).any())


def _prepare_mask(
    mask4: Tensor | None, causal: bool, n: int, m: int, dtype: torch.dtype, device: torch.device
) -> tuple[Tensor | None, bool]:
    """The ``attn_mask`` and ``is_causal`` to hand to torch (same polarity, bottom-right causal)."""
    if mask4 is not None and mask4.dtype != torch.bool:
        mask4 = mask4.to(dtype)
    if not causal:
        return mask4, False
    if mask4 is None and n == m:
        return None, True  # torch's top-left alignment equals ours when N == M
    tri = causal_tile(0, n, 0, m, m - n, device)  # [N, M]
    if mask4 is None:
        return tri, False
    if mask4.dtype == torch.bool:
        return mask4 & tri, False
    return mask4.masked_fill(~tri, float("-inf")), False


def sdpa_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    *,
    causal: bool = False,
    scale: float | None = None,
    dropout_p: float = 0.0,
    allow_math: bool = True,  # False: raise NoFusedKernel instead of running the score-materializing math path
    kernels: tuple[str, ...]
    | None = None,  # only these backends ("flash", "cudnn", ...); NoFusedKernel if none takes it
) -> Tensor:
    """Attention through torch SDPA with tokenloom's conventions → ``[B, H, N, Dv]``."""
    dims, keys = resolve(q, k, v, mask, causal=causal, scale=scale, dropout_p=dropout_p)
    return sdpa_path(q, k, v, dims, keys, dropout_p=dropout_p, allow_math=allow_math, kernels=kernels)


def sdpa_path(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    dims: Dims,
    keys: KeyRestriction,
    *,
    dropout_p: float,
    allow_math: bool = True,
    kernels: tuple[str, ...] | None = None,
) -> Tensor:
    """The SDPA path of a validated call (every restriction but ``causal`` applied as one dense mask)."""
    mask4 = keys.dense(dims, q.device, with_pattern=True)  # [B|1, H|1, N|1, M] or None
    out_dtype = q.dtype
    if mask4 is not None and _needs_wide_compute(mask4, q.dtype):  # run in the mask's dtype, cast back
        q, k, v = q.to(mask4.dtype), k.to(mask4.dtype), v.to(mask4.dtype)
    attn_mask, is_causal = _prepare_mask(mask4, keys.causal, dims.N, dims.M, q.dtype, q.device)
    dead = dead_rows(mask4, keys.causal, dims, q.device)  # [B|1, H|1, N, 1] or None
    if dead is not None:
        assert attn_mask is not None  # dead rows only exist under an explicit mask (or N > M causal)
        # open dead rows to every key (no kernel sees an all -inf row); their output is zeroed below
        opened = attn_mask | dead if attn_mask.dtype == torch.bool else attn_mask.masked_fill(dead, 0.0)
        attn_mask = opened
    wants_grad = torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in (q, k, v, mask4))
    if wants_grad and _large_row_bias(attn_mask):  # only the math backward keeps these rows exact
        if not allow_math or (kernels is not None and "math" not in kernels):
            raise NoFusedKernel(
                f"a mask row's bias reaches {LARGE_ROW_BIAS:g} in magnitude: the fused SDPA backward loses "
                "its log-sum-exp to rounding there, and only the math backend gives exact gradients"
            )
        kernels = ("math",)
    call = _Call(attn_mask, float(dropout_p), is_causal, dims.scale, dims.G > 1 and _HAS_ENABLE_GQA)
    if (
        dims.G > 1 and not _HAS_ENABLE_GQA
    ):  # torch < 2.5: repeat key/value heads (query head h uses kv head h // G)
        k, v = repeat_kv(k, dims.G), repeat_kv(v, dims.G)  # [B, Hkv, M, D] -> [B, H, M, D]
    out = _run(q, k, v, call, allow_math=allow_math, kernels=kernels)  # [B, H, N, Dv]
    if dead is not None:
        out = out.masked_fill(dead, 0.0)
    return out.to(out_dtype)


@dataclass(frozen=True)
class _Call:
    """The arguments of one ``scaled_dot_product_attention`` call besides q, k, v."""

    attn_mask: Tensor | None
    dropout_p: float
    is_causal: bool
    scale: float
    enable_gqa: bool  # pass enable_gqa=True (torch >= 2.5, grouped heads)

    def run(self, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        extra = {"enable_gqa": True} if self.enable_gqa else {}
        return F.scaled_dot_product_attention(
            q, k, v, attn_mask=self.attn_mask, dropout_p=self.dropout_p, is_causal=self.is_causal,
            scale=self.scale, **extra,
        )  # fmt: skip


class NoFusedKernel(RuntimeError):
    """Raised with ``allow_math=False`` when only SDPA's math path (full score matrix) accepts the inputs."""


def _run(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    call: _Call,
    *,
    allow_math: bool,
    kernels: tuple[str, ...] | None,
) -> Tensor:
    if torch.compiler.is_compiling():  # a compiled graph leaves the kernel to torch: probing would break it
        _state.kernel = "compiled"
        return call.run(q, k, v)
    backends = _backends(q.device)
    if kernels is not None:
        backends = [(name, backend) for name, backend in backends if name in kernels]
        allow_math = allow_math and "math" in kernels
    if not allow_math:
        if not backends:
            raise NoFusedKernel("cannot probe SDPA backends with this torch")
        backends = [(name, backend) for name, backend in backends if name != "math"]
    if backends:
        from torch.nn.attention import sdpa_kernel

        backends = _torch_choice_first(backends, q, k, v, call)
        errors = []
        for name, backend in backends:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    with sdpa_kernel([backend]):
                        out = call.run(q, k, v)
            except RuntimeError as error:  # this backend refuses these inputs; try the next one
                errors.append(f"{name}: {str(error).splitlines()[0] if str(error) else error!r}")
                continue
            _state.kernel = name
            return out
        if not allow_math:
            raise NoFusedKernel("; ".join(errors))
        logger.debug("no single SDPA backend accepted the inputs (%s); using torch's default", errors)
    _state.kernel = "default"
    return call.run(q, k, v)


def _torch_choice_first(
    backends: list[tuple[str, Any]], q: Tensor, k: Tensor, v: Tensor, call: _Call
) -> list[tuple[str, Any]]:
    """``backends`` with the one torch would choose among them moved first (unchanged when torch cannot say).
    Asked only when cuDNN is among them: torch's order is otherwise the fixed one (flash first, math last),
    and the question costs about 16 µs a call (a small attention call on the CPU takes 70-100 µs)."""
    choose = getattr(torch, "_fused_sdp_choice", None)
    if choose is None or all(name != "cudnn" for name, _ in backends):
        return backends
    from torch.nn.attention import sdpa_kernel

    extra = {"enable_gqa": True} if call.enable_gqa else {}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with sdpa_kernel([backend for _, backend in backends]):
                chosen = int(
                    choose(q, k, v, call.attn_mask, call.dropout_p, call.is_causal, scale=call.scale, **extra)
                )
    except (RuntimeError, TypeError):  # no backend takes the inputs, or an older signature
        return backends
    return sorted(backends, key=lambda item: int(item[1]) != chosen)  # stable: the rest keep their order
