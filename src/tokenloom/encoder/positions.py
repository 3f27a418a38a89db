"""Position information: learned absolute (1-D and 2-D grid), sinusoidal (1-D and 2-D), and RoPE.

Absolute positions (learned or sinusoidal) are *added* to token vectors by a front end (``TextEmbed``,
``ImageEmbed`` in ``model.py``). RoPE is *applied* to queries and keys inside attention: each pair of
coordinates ``(x[2i], x[2i+1])`` of a head vector at position ``n`` is rotated by the angle ``n * theta_i``
with ``theta_i = base ** (-2i / D)`` (Su et al. 2021, "RoFormer", eq. 34; base 10000). Because rotations
compose, ``<R(m) q, R(n) k>`` depends only on ``n - m`` — the relative identity the tests check.

A learned 2-D grid is resampled to another grid size the way timm's ``resample_abs_pos_embed`` does it
(prefix tokens such as the class token kept as they are, the grid interpolated bicubically with
antialiasing), so a model trained at 224×224 runs at other image sizes.

This module holds no attention, no token embedding and no class token.

Shape legend: ``B`` batch, ``H`` heads, ``N`` positions (tokens), ``D`` head width, ``d`` model width,
``gh, gw`` patch grid height/width, ``T`` prefix tokens (class token).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

__all__ = [
    "LearnedGridPositions",
    "LearnedPositions",
    "RotaryEmbedding",
    "apply_rope",
    "apply_rope_reference",
    "host_bounds",
    "position_index",
    "resample_grid_positions",
    "rope_angles",
    "rope_inv_freq",
    "segment_positions",
    "sinusoidal_1d",
    "sinusoidal_2d",
    "sinusoidal_at",
]


# --------------------------------------------------------------------------- sinusoidal


def sinusoidal_1d(
    n: int,
    dim: int,
    *,
    base: float = 10000.0,
    start: int | torch.Tensor = 0,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """Fixed sinusoidal positions ``[n, dim]`` (Vaswani et al. 2017, §3.5) for positions ``start..start+n-1``.

    ``PE[p, 2i] = sin(p / base^(2i/dim))`` and ``PE[p, 2i+1] = cos(p / base^(2i/dim))``; ``dim`` must be even.
    ``start`` may be an integer tensor ``[B]`` (one first position per sequence, e.g. ``KVCache.lengths``
    of ragged rows): the result is then ``[B, n, dim]``.
    """
    return sinusoidal_at(position_index(start, n, device=device), dim, base=base, dtype=dtype)


def sinusoidal_at(
    positions: torch.Tensor, dim: int, *, base: float = 10000.0, dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """Sinusoidal rows for any integer ``positions`` (``[n]`` or ``[B, n]``): ``[..., dim]``, as ``sinusoidal_1d``.

    Packed rows pass each token's position inside its own document (see :func:`segment_positions`).
    """
    if dim <= 0 or dim % 2:
        raise ValueError(f"sinusoidal positions need a positive even dim, got {dim}")
    pos = positions.to(torch.float64)  # [n] or [B, n]
    inv = base ** (-torch.arange(0, dim, 2, dtype=torch.float64, device=pos.device) / dim)  # [dim/2]
    angles = pos[..., None] * inv  # [n, dim/2] or [B, n, dim/2]
    out = torch.stack((angles.sin(), angles.cos()), dim=-1)  # [..., n, dim/2, 2]
    return out.reshape(*pos.shape, dim).to(dtype)  # [n, dim] or [B, n, dim]: sin, cos interleaved


def segment_positions(segment_ids: torch.Tensor) -> torch.Tensor:
    """Each token's position inside its own segment: ``[B, N]`` ids -> ``[B, N]`` int64 positions.

    A segment is a run of equal ids along a row (a packed document); positions restart at 0 wherever
    the id changes, so ``[[7, 7, 7, 3, 3, -1]]`` gives ``[[0, 1, 2, 0, 1, 0]]`` (padding runs count too;
    their positions are never attended).
    """
    if segment_ids.dim() != 2 or segment_ids.is_floating_point() or segment_ids.dtype == torch.bool:
        raise ValueError(
            f"segment_ids must be an integer tensor [B, N], got {segment_ids.dtype} {tuple(segment_ids.shape)}"
        )
    b, n = segment_ids.shape
    index = torch.arange(n, device=segment_ids.device).expand(b, n)  # [B, N]
    starts = torch.ones_like(segment_ids, dtype=torch.bool)  # [B, N]: True where a segment begins
    starts[:, 1:] = segment_ids[:, 1:] != segment_ids[:, :-1]
    first = torch.where(starts, index, torch.zeros_like(index)).cummax(dim=1).values  # [B, N]
    return index - first


def position_index(
    start: int | torch.Tensor, n: int, *, device: torch.device | str | None = None
) -> torch.Tensor:
    """Positions ``start..start+n-1``: ``[n]`` for an int ``start``, ``[B, n]`` for a tensor ``start [B]``."""
    if isinstance(start, torch.Tensor):
        if start.dim() != 1 or start.is_floating_point() or start.dtype == torch.bool:
            raise ValueError(
                f"start must be an int or an integer tensor [B] (one first position per row), got {start!r}"
            )
        start = start.to(device) if device is not None else start
        return start.long()[:, None] + torch.arange(n, device=start.device)  # [B, 1] + [n] -> [B, n]
    return torch.arange(start, start + n, device=device)  # [n]


def sinusoidal_2d(
    grid: tuple[int, int],
    dim: int,
    *,
    base: float = 10000.0,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """Fixed 2-D sinusoidal positions ``[gh*gw, dim]`` for a patch grid in row-major order.

    The first ``dim/2`` channels encode the row, the last ``dim/2`` the column, each with
    :func:`sinusoidal_1d` (as in MAE's 2-D sin-cos embedding); ``dim`` must be a multiple of 4.
    """
    gh, gw = grid
    if dim <= 0 or dim % 4:
        raise ValueError(f"2-D sinusoidal positions need dim divisible by 4, got {dim}")
    rows = sinusoidal_1d(gh, dim // 2, base=base, dtype=torch.float64, device=device)  # [gh, dim/2]
    cols = sinusoidal_1d(gw, dim // 2, base=base, dtype=torch.float64, device=device)  # [gw, dim/2]
    out = torch.cat(
        (
            rows[:, None, :].expand(gh, gw, dim // 2),  # [gh, gw, dim/2]
            cols[None, :, :].expand(gh, gw, dim // 2),  # [gh, gw, dim/2]
        ),
        dim=-1,
    )  # [gh, gw, dim]
    return out.reshape(gh * gw, dim).to(dtype)  # [N, dim], row-major


# --------------------------------------------------------------------------- learned


def host_bounds(index: torch.Tensor) -> tuple[int, int] | None:
    """``(min, max)`` of an integer tensor, where reading them costs no device sync; None elsewhere.

    Read on CPU in eager mode. On an accelerator (or under ``torch.compile``) a host read would stall the
    launch queue every step, so it is skipped: the gather kernels there assert on an out-of-range index
    themselves, as ``nn.Embedding`` does. None for an empty tensor.
    """
    if not index.numel() or index.device.type != "cpu" or torch.compiler.is_compiling():
        return None
    lo, hi = torch.aminmax(index)
    return int(lo), int(hi)


class LearnedPositions(nn.Module):
    """Learned absolute 1-D positions: ``weight [1, max_len, d]`` added to ``x [B, N, d]``.

    ``forward(x, start=s)`` adds rows ``s..s+N-1`` (for decoding one token at a time after a prefix);
    ``start`` may be an integer tensor ``[B]``, one first position per sequence (ragged rows).
    """

    def __init__(self, max_len: int, dim: int, *, init_std: float = 0.02) -> None:
        super().__init__()
        if max_len <= 0 or dim <= 0:
            raise ValueError(f"max_len and dim must be positive, got {max_len}, {dim}")
        self.max_len = max_len
        self.weight = nn.Parameter(torch.empty(1, max_len, dim))
        nn.init.trunc_normal_(self.weight, std=init_std)

    def forward(
        self, x: torch.Tensor, *, start: int | torch.Tensor = 0, positions: torch.Tensor | None = None
    ) -> torch.Tensor:
        """``x [B, N, d]`` plus rows ``start..start+N-1``, or the rows ``positions`` (``[N]`` or ``[B, N]``)."""
        n = x.shape[1]
        bounds: tuple[int, int] | None
        if positions is not None:
            index = positions.to(x.device).long()  # [N] or [B, N]
            bounds = host_bounds(index)
        elif isinstance(start, torch.Tensor):
            index = position_index(start, n, device=x.device)  # [B, N]
            bounds = host_bounds(index)
        else:
            bounds = (start, start + n - 1)
        if bounds is not None and (bounds[0] < 0 or bounds[1] >= self.max_len):
            lo, hi = bounds
            raise ValueError(
                f"positions {lo}..{hi} exceed the learned table of max_len={self.max_len}; "
                "truncate the sequence or build the front end with a larger max_len"
            )
        if positions is not None or isinstance(start, torch.Tensor):
            return x + self.weight[0][index]  # [B, N, d] + [B, N, d] (or [N, d])
        return x + self.weight[:, start : start + n]  # [B, N, d] + [1, N, d]


def resample_grid_positions(
    pos: torch.Tensor,
    new_grid: tuple[int, int],
    *,
    old_grid: tuple[int, int],
    num_prefix_tokens: int = 1,
    mode: str = "bicubic",
    antialias: bool = True,
) -> torch.Tensor:
    """Resample a learned grid ``[1, T + gh*gw, d]`` to ``[1, T + gh'*gw', d]``.

    The ``T`` prefix rows (class token) are kept; the grid is interpolated in float32 with
    ``F.interpolate(mode, antialias, align_corners=False)`` — the same computation as timm's
    ``resample_abs_pos_embed`` with its defaults. Returns ``pos`` itself when the grid is unchanged.
    """
    if tuple(new_grid) == tuple(old_grid):
        return pos
    gh, gw = old_grid
    t = num_prefix_tokens
    if pos.shape[1] != t + gh * gw:
        raise ValueError(
            f"position table has {pos.shape[1]} rows but {t} prefix + {gh}x{gw} grid = {t + gh * gw}"
        )
    dim = pos.shape[-1]
    prefix, grid = pos[:, :t], pos[:, t:]  # [1, T, d], [1, gh*gw, d]
    g = grid.float().reshape(1, gh, gw, dim).permute(0, 3, 1, 2)  # [1, d, gh, gw]
    g = F.interpolate(g, size=tuple(new_grid), mode=mode, antialias=antialias, align_corners=False)
    g = g.permute(0, 2, 3, 1).reshape(1, -1, dim).to(pos.dtype)  # [1, gh'*gw', d]
    return torch.cat((prefix, g), dim=1)  # [1, T + gh'*gw', d]


class LearnedGridPositions(nn.Module):
    """Learned 2-D positions for patch tokens: ``weight [1, T + gh*gw, d]`` (timm's ``pos_embed`` layout).

    ``forward(x, grid=(gh', gw'))`` adds the table to ``x [B, T + gh'*gw', d]``, resampled bicubically
    (:func:`resample_grid_positions`) when the grid differs from the one it was built for.
    """

    def __init__(
        self, grid: tuple[int, int], dim: int, *, num_prefix_tokens: int = 1, init_std: float = 0.02
    ) -> None:
        super().__init__()
        gh, gw = grid
        if gh <= 0 or gw <= 0 or dim <= 0 or num_prefix_tokens < 0:
            raise ValueError(f"bad grid {grid}, dim {dim} or num_prefix_tokens {num_prefix_tokens}")
        self.grid = (gh, gw)
        self.num_prefix_tokens = num_prefix_tokens
        self.weight = nn.Parameter(torch.empty(1, num_prefix_tokens + gh * gw, dim))
        nn.init.trunc_normal_(self.weight, std=init_std)

    def table(self, grid: tuple[int, int]) -> torch.Tensor:
        """The position rows ``[1, T + gh*gw, d]`` for ``grid`` (resampled if needed)."""
        return resample_grid_positions(
            self.weight, grid, old_grid=self.grid, num_prefix_tokens=self.num_prefix_tokens
        )

    def forward(self, x: torch.Tensor, *, grid: tuple[int, int] | None = None) -> torch.Tensor:
        table = self.table(self.grid if grid is None else grid)  # [1, T + N, d]
        if x.shape[1] != table.shape[1]:
            raise ValueError(
                f"x has {x.shape[1]} tokens but the position table for grid {grid} has {table.shape[1]}"
            )
        return x + table  # [B, T + N, d]


# --------------------------------------------------------------------------- RoPE


def rope_inv_freq(
    head_dim: int, *, base: float = 10000.0, device: torch.device | str | None = None
) -> torch.Tensor:
    """``theta_i = base^(-2i/D)`` for ``i = 0..D/2-1`` (float32, ``[D/2]``)."""
    if head_dim <= 0 or head_dim % 2:
        raise ValueError(f"RoPE rotates pairs of coordinates: head_dim must be even, got {head_dim}")
    exponents = torch.arange(0, head_dim, 2, dtype=torch.float64, device=device) / head_dim  # [D/2]
    return (base**-exponents).float()


def rope_angles(positions: torch.Tensor, inv_freq: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``cos, sin`` of ``positions[..., None] * inv_freq``: ``[..., N] -> [..., N, D/2]`` each (float32).

    Angles are formed in float64 so positions in the tens of thousands keep their precision.
    """
    angles = positions.double()[..., None] * inv_freq.double()  # [..., N, D/2]
    return angles.cos().float(), angles.sin().float()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate each pair ``(x[2i], x[2i+1])`` of ``x [B, H, N, D]`` by the angle whose cos/sin are given.

    ``cos``/``sin`` are ``[N, D/2]`` (or broadcastable to ``[B, H, N, D/2]``, e.g. ``[B, 1, N, D/2]``).
    ``out[2i] = x[2i] cos - x[2i+1] sin``, ``out[2i+1] = x[2i] sin + x[2i+1] cos``. Same dtype as ``x``.
    """
    cos, sin = cos.to(x.dtype), sin.to(x.dtype)
    pairs = x.unflatten(-1, (-1, 2))  # [B, H, N, D/2, 2]
    x0, x1 = pairs.unbind(-1)  # [B, H, N, D/2] each
    out = torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1)  # [B, H, N, D/2, 2]
    return out.flatten(-2)  # [B, H, N, D]


def apply_rope_reference(x: torch.Tensor, angles: torch.Tensor) -> torch.Tensor:
    """Reference: pairs as complex numbers ``x[2i] + i x[2i+1]`` multiplied by ``exp(i * angle)``.

    ``angles`` is ``[N, D/2]`` (broadcastable to ``x``'s pairs). Computed in complex128; for tests.
    """
    pairs = x.double().unflatten(-1, (-1, 2)).contiguous()  # [B, H, N, D/2, 2]
    z = torch.view_as_complex(pairs)  # [B, H, N, D/2]
    rotated = z * torch.polar(torch.ones_like(angles.double()), angles.double())  # [B, H, N, D/2]
    return torch.view_as_real(rotated).flatten(-2).to(x.dtype)  # [B, H, N, D]


class RotaryEmbedding(nn.Module):
    """RoPE for one head width: ``forward(q, k, positions) -> (q', k')``. No parameters.

    ``positions`` is ``[N]`` (shared by the batch) or ``[B, N]`` (integer positions per sequence); by
    default ``arange(N)``. The inverse frequencies are a non-persistent buffer (not in the state dict).
    """

    inv_freq: torch.Tensor  # [D/2], registered as a buffer

    def __init__(self, head_dim: int, *, base: float = 10000.0) -> None:
        super().__init__()
        self.head_dim = head_dim
        self.base = base
        self.register_buffer("inv_freq", rope_inv_freq(head_dim, base=base), persistent=False)

    def cos_sin(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``cos, sin`` shaped to broadcast against ``[B, H, N, D/2]``."""
        cos, sin = rope_angles(positions.to(self.inv_freq.device), self.inv_freq)  # [N, D/2] or [B, N, D/2]
        if positions.dim() == 2:
            cos, sin = cos[:, None], sin[:, None]  # [B, 1, N, D/2]
        return cos, sin

    def forward(
        self, q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if positions is None:
            positions = torch.arange(q.shape[-2], device=q.device)  # [N]
        cos, sin = self.cos_sin(positions)
        return apply_rope(q, cos, sin), apply_rope(k, cos, sin)

    def extra_repr(self) -> str:
        return f"head_dim={self.head_dim}, base={self.base}"
