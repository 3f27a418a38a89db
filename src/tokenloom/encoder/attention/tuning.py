"""Tile sizes of the Triton kernels: a small table per (head width, dtype, causal), keyed on length.

``KernelConfig`` holds ``BLOCK_M`` (query rows), ``BLOCK_N`` (keys), ``num_warps`` and ``num_stages``.
``FORWARD``, ``BACKWARD_DQ`` and ``BACKWARD_DKDV`` map ``(BLOCK_D, dtype, causal)`` to rows
``(max_len, config)``: the first row whose ``max_len`` is at least the query length wins (``None`` =
any length). Every config must fit the shared memory of both sm_80 (A100: 163 KiB per block) and sm_90
(H100/H200: 227 KiB) without register spills; ``scripts/triton_static_check.py`` compiles each one for
both and its test fails otherwise. The starting points are the configs of Triton's fused-attention
tutorial and FlashAttention-2 (128×64 forward tiles, 4–8 warps), trimmed until the static check showed
no spills on either architecture; they are not yet tuned by timing on a GPU.

Head widths that are not a power of two are padded to the next one (``BLOCK_D``, at least 32); 256 is
the widest forward; the backward kernels stop at ``MAX_BACKWARD_D`` = 128 (wider heads take the torch
backward of ``tiled``).
This module imports no triton.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = [
    "BACKWARD_DKDV",
    "BACKWARD_DQ",
    "FORWARD",
    "MAX_BACKWARD_D",
    "MAX_DENSE_MASK_D",
    "KernelConfig",
    "block_d",
    "for_bias_backward",
    "for_dense_mask",
    "pick",
]


@dataclass(frozen=True)
class KernelConfig:
    """Launch parameters of one kernel."""

    block_m: int  # query rows per program (power of two, >= 16)
    block_n: int  # keys per inner step (power of two, >= 16)
    num_warps: int  # warps per program
    num_stages: int  # software-pipelining depth of the key loop

    def __post_init__(self) -> None:
        for name in ("block_m", "block_n"):
            value = getattr(self, name)
            if value < 16 or value & (value - 1):
                raise ValueError(f"KernelConfig.{name} must be a power of two >= 16 (tl.dot), got {value}")
        if self.num_warps not in (1, 2, 4, 8, 16) or self.num_stages < 1:
            raise ValueError(f"bad num_warps={self.num_warps} / num_stages={self.num_stages}")

    def label(self) -> str:
        return f"M{self.block_m}-N{self.block_n}-w{self.num_warps}-s{self.num_stages}"


MAX_BACKWARD_D = 128  # widest head the backward kernels take without register spills

Key = tuple[int, str, bool]  # (BLOCK_D, "fp16" | "bf16" | "fp32", causal)
Table = dict[Key, tuple[tuple[int | None, KernelConfig], ...]]

_C = KernelConfig


def _half(fwd_small: KernelConfig, fwd_large: KernelConfig) -> tuple[tuple[int | None, KernelConfig], ...]:
    return ((256, fwd_small), (None, fwd_large))


def _table(
    rows: dict[int, tuple[tuple[int | None, KernelConfig], ...]],
    fp32: dict[int, tuple[tuple[int | None, KernelConfig], ...]],
) -> Table:
    table: Table = {}
    for causal in (False, True):
        for d, entry in rows.items():
            table[(d, "fp16", causal)] = entry
            table[(d, "bf16", causal)] = entry
        for d, entry in fp32.items():
            table[(d, "fp32", causal)] = entry
    return table


# Forward: long sequences take 128-row tiles (more reuse of each k/v tile); short ones (ViT's 197,
# decode) 64-row tiles, so that more programs fill the GPU. With a dense mask the key tiles are halved
# (``for_dense_mask``): the mask tile's pointers and values would otherwise spill registers.
FORWARD: Table = _table(
    {
        32: ((None, _C(64, 64, 4, 2)),),  # 128-row tiles with 8 warps crash ptxas 13 for sm_90a here
        64: _half(_C(64, 64, 4, 2), _C(128, 64, 8, 2)),
        128: _half(_C(64, 64, 8, 2), _C(128, 64, 8, 1)),
        256: ((None, _C(64, 32, 8, 1)),),  # no dense masks at this width (they would spill)
    },
    {
        32: ((None, _C(16, 16, 4, 1)),),
        64: ((None, _C(32, 32, 8, 1)),),
        128: ((None, _C(16, 16, 8, 1)),),
        256: ((None, _C(16, 16, 8, 1)),),
    },
)

# Backward, dQ kernel: BLOCK_M query rows per program (>= 64 for Hopper's wgmma), BLOCK_N keys per step.
BACKWARD_DQ: Table = _table(
    {
        32: ((None, _C(64, 32, 4, 2)),),
        64: ((None, _C(64, 32, 4, 2)),),
        128: ((None, _C(64, 32, 4, 2)),),
    },
    {
        32: ((None, _C(32, 32, 4, 1)),),
        64: ((None, _C(32, 32, 4, 1)),),
        128: ((None, _C(16, 32, 4, 1)),),
    },
)

# Backward, dK/dV kernel: BLOCK_N keys per program (>= 64 for wgmma: it is the M side of k qᵀ),
# BLOCK_M query rows per step; it keeps two [BLOCK_N, D] fp32 accumulators and the k, v tiles live,
# so it takes 8 warps from D = 64 on to stay clear of spills.
BACKWARD_DKDV: Table = _table(
    {
        32: ((None, _C(32, 64, 4, 2)),),
        64: ((None, _C(16, 64, 8, 2)),),
        128: ((None, _C(32, 64, 8, 2)),),
    },
    {
        32: ((None, _C(16, 16, 4, 1)),),
        64: ((None, _C(16, 32, 8, 2)),),  # one stage spills 16 bytes on sm_80 with segment ids
        128: ((None, _C(16, 32, 8, 1)),),
    },
)

MAX_DENSE_MASK_D = 128  # widest head the forward kernel takes with a dense mask (wider ones spill)


def for_dense_mask(config: KernelConfig, d: int) -> KernelConfig:
    """The forward config used when a dense mask is read: key tiles halved (at least 16), and at most
    64 query rows from head width 128 on (the mask tile's pointers and values would spill otherwise)."""
    block_m = min(config.block_m, 64) if block_d(d) >= 128 else config.block_m
    return replace(config, block_m=block_m, block_n=max(16, config.block_n // 2))


def for_bias_backward(config: KernelConfig, dtype: str) -> KernelConfig:
    """The backward config used with an additive (float) mask: fp16 / bf16 tiles get at least 8 warps,
    so that the mask tile and the natural-unit scores spread over more threads (4 warps spill on sm_80
    at head widths 32–64); exact-fp32 tiles keep theirs (8 warps put a stack frame on their small tiles)."""
    return config if dtype == "fp32" else replace(config, num_warps=max(config.num_warps, 8))


def block_d(d: int) -> int:
    """The padded head width a kernel is compiled for: the next power of two, at least 32 (ptxas 13
    crashes compiling the 16-wide forward kernel for sm_90a)."""
    return max(32, 1 << max(0, (d - 1).bit_length()))


def pick(table: Table, d: int, dtype: str, causal: bool, length: int) -> KernelConfig:
    """The config of ``table`` for head width ``d`` (padded), ``dtype``, ``causal`` and a query length."""
    key = (block_d(d), dtype, causal)
    if key not in table:
        raise ValueError(f"no Triton kernel config for head width {d} (padded {key[0]}), dtype {dtype}")
    for max_len, config in table[key]:
        if max_len is None or length <= max_len:
            return config
    return table[key][-1][1]
