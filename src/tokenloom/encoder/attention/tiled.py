"""Exact tiled attention: an online softmax over query × key tiles that never holds the N×M scores.

Forward, for each query tile (``block_q`` rows) and each key/value tile (``block_k`` columns) in turn
(FlashAttention's algorithm, Dao et al. 2022, written with torch ops)::

    s     = q_t k_tᵀ · scale  (+ mask tile, causal tile)        [.., bq, bk]
    m_new = max(m, rowmax(s));  α = exp(m − m_new)             running row max m
    p     = exp(s − m_new)
    l     = α·l + rowsum(p)                                     running row sum l
    acc   = α·acc + p v_t                                       accumulator, rescaled when the max moves
    out   = acc / l      (rows with l = 0 — every key masked — return 0)

Memory: besides q, k, v and the output, one step holds a few ``[B, H, block_q, block_k]`` tiles and the
``[B, H, block_q, Dv]`` accumulator: O(block_q · block_k), independent of N and M (the design choice:
queries are tiled too, not only keys). Causal calls skip key tiles wholly above the diagonal, windowed
calls the tiles outside every query's window (``_common.key_range`` decides, per query tile).

Sparse patterns (``pattern=``, see ``tokenloom.encoder.patterns``): the pattern's tile layout lists, for each
query tile, the key tiles holding at least one allowed pair; only those are multiplied (forward and
backward), and only the partial ones get a per-element mask. The work follows the pattern's edges, up to
the tiles' edges.

Backward is a custom ``torch.autograd.Function`` that **recomputes** each score tile from q, k and the
saved row statistics (FlashAttention-2's backward, with the log-sum-exp kept in two parts so that any
finite bias is exact: ``_row_stats``): ``p = exp(s − max − log_sum)``, ``dv += pᵀ dO``,
``dp = dO vᵀ``, ``ds = p ∘ (dp − rowsum(dO ∘ O))``, ``dq += ds k · scale``, ``dk += dsᵀ q · scale``;
so training memory stays O(tile²) too (autograd through the tiles would keep every tile alive).
A float (additive) mask that requires grad receives ``ds`` summed over its broadcast dimensions.
Double backward is not supported.

Dropout (``dropout_p > 0``): each tile's keep-mask is drawn from its own generator seeded with
``seed + tile index`` (``seed`` drawn once per call from torch's global RNG, so ``torch.manual_seed``
makes calls reproducible); backward regenerates the identical masks. The row sum l is taken before
dropout, as in ``reference`` (dropout acts on the normalized weights).

Grouped-query k/v are never repeated: the G query heads sharing a key/value head are folded into the
rows of one matrix product (``[B*Hkv, G*bq, D] @ [B*Hkv, D, bk]``), which also makes the products bigger.
Every tile is a plain ``bmm`` into one reused score buffer (a fresh multi-MiB allocation per tile would
page in new memory each time). Computation is in fp32 (fp64 stays fp64); the output has q's dtype.

This module does not choose tile sizes adaptively and does not fuse kernels (see ``triton_kernel``).

Shapes: ``B`` batch, ``H`` query heads, ``Hkv`` key/value heads, ``G = H // Hkv``, ``N`` queries,
``M`` keys, ``D`` head width of q/k, ``Dv`` head width of v, ``bq``/``bk`` tile rows/columns.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from tokenloom.encoder.attention._common import (
    Dims,
    KeyRestriction,
    causal_tile,
    check_inputs,
    check_window,
    mask_tile,
)
from tokenloom.encoder.attention._row_stats import RowStats
from tokenloom.encoder.attention._tile_plan import TilePlan
from tokenloom.encoder.patterns import Pattern

__all__ = [
    "DEFAULT_BLOCK_K",
    "DEFAULT_BLOCK_Q",
    "last_tile_flops",
    "tiled_attention",
    "tiled_backward",
    "tiled_path",
]

DEFAULT_BLOCK_Q = 256  # query rows per tile
DEFAULT_BLOCK_K = 512  # key columns per tile

_SEED_RANGE = 2**62

_work = threading.local()


def last_tile_flops() -> int | None:
    """FLOPs of the tile products (``QKᵀ`` and ``PV``: ``2·B·H·rows·cols·(D + Dv)`` per computed tile) of the
    latest tiled forward in this thread; None before the first. Skipped tiles cost nothing."""
    return getattr(_work, "flops", None)


def _draw_seed() -> int:
    """The per-call dropout seed, from torch's global CPU RNG (reproducible under torch.manual_seed)."""
    return int(torch.randint(0, _SEED_RANGE, (1,)).item())


def _keep_tile(seed: int, tile_index: int, shape: tuple[int, ...], p: float, device: torch.device) -> Tensor:
    """The dropout keep-mask of one tile (bool, ``shape``), identical in forward and backward."""
    generator = torch.Generator(device=device)
    generator.manual_seed((seed + tile_index) % _SEED_RANGE)
    return torch.rand(shape, generator=generator, device=device) >= p


def _mask5(tile: Tensor, dims: Dims) -> Tensor:
    """A 4-D mask tile ``[B|1, H|1, n, m]`` viewed for grouped heads ``[B|1, Hkv|1, G|1, n, m]``."""
    if tile.shape[1] == 1:
        return tile.unsqueeze(2)  # [B|1, 1, 1, n, m]
    return tile.unflatten(1, (dims.Hkv, dims.G))  # [B|1, H, n, m] -> [B|1, Hkv, G, n, m]


def _scores(
    plan: TilePlan,
    q3: Tensor,
    k3: Tensor,
    mask4: Tensor | None,
    i0: int,
    i1: int,
    j0: int,
    j1: int,
    buffer: Tensor | None = None,
) -> Tensor:
    """Masked score tile ``[B*Hkv, G*bq, bk]`` from the pre-scaled query tile ``q3 [B*Hkv, G*bq, D]``.

    Grouped heads are folded into the rows: the G query heads of one key/value head form one matrix
    product against that head's keys. ``buffer`` (flat, large enough) receives the tile, so a loop
    reuses one allocation instead of paging in a fresh one per tile.
    """
    d = plan.dims
    shape = (d.B * d.Hkv, q3.shape[1], j1 - j0)
    kt = k3[:, j0:j1, :].transpose(1, 2)  # [B*Hkv, bk, D] -> [B*Hkv, D, bk]
    if buffer is None:
        s = torch.bmm(q3, kt)  # [B*Hkv, G*bq, bk]
    else:
        s = torch.bmm(q3, kt, out=buffer[: shape[0] * shape[1] * shape[2]].view(shape))
    s5 = s.view(d.B, d.Hkv, d.G, i1 - i0, j1 - j0)  # [B*Hkv, G*bq, bk] -> [B, Hkv, G, bq, bk]
    if mask4 is not None:
        mt = _mask5(mask_tile(mask4, i0, i1, j0, j1), d)  # [B|1, Hkv|1, G|1, bq|1, bk|1]
        if mt.dtype == torch.bool:
            s5.masked_fill_(~mt, float("-inf"))
        else:
            s5.add_(mt.to(s.dtype))
    if plan.needs_causal(i0, j1):
        s5.masked_fill_(~causal_tile(i0, i1, j0, j1, plan.offset, s.device), float("-inf"))
    for a, b, allowed in plan.pattern_tiles(i0, i1, j0, s.device):  # pattern hook: partial tiles only
        s5[..., a - j0 : b - j0].masked_fill_(~allowed, float("-inf"))
    return s


def _fold(x5: Tensor, i0: int, i1: int) -> Tensor:
    """Rows ``i0:i1`` of ``[B, Hkv, G, N, X]`` as ``[B*Hkv, G*(i1-i0), X]`` (a copy only when G > 1)."""
    B, Hkv, G, _, X = x5.shape
    return x5[..., i0:i1, :].reshape(B * Hkv, G * (i1 - i0), X)  # [B, Hkv, G, bq, X] -> [B*Hkv, G*bq, X]


@dataclass(frozen=True)
class _Call:
    """What one tiled call needs besides its tensors; kept on ``ctx`` for the backward."""

    plan: TilePlan
    dropout_p: float
    seed: int  # dropout: tile (i, j) draws its keep-mask from seed + tile index


class _TiledAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, mask4, call: _Call):
        plan, dims = call.plan, call.plan.dims
        ct = torch.promote_types(q.dtype, torch.float32)
        BK = dims.B * dims.Hkv
        q5 = q.to(ct).unflatten(1, (dims.Hkv, dims.G))  # [B, H, N, D] -> [B, Hkv, G, N, D]
        k3 = k.to(ct).reshape(BK, dims.M, dims.D)  # [B, Hkv, M, D] -> [B*Hkv, M, D]
        v3 = v.to(ct).reshape(BK, dims.M, dims.Dv)  # [B, Hkv, M, Dv] -> [B*Hkv, M, Dv]
        out = torch.empty(dims.B, dims.Hkv, dims.G, dims.N, dims.Dv, dtype=ct, device=q.device)
        stats = RowStats.empty((dims.B, dims.Hkv, dims.G, dims.N, 1), ct, q.device)
        buffer = torch.empty(BK * dims.G * min(plan.bq, dims.N) * plan.max_cols, dtype=ct, device=q.device)
        flops = 0
        for i0 in plan.q_tiles():
            i1 = min(i0 + plan.bq, dims.N)
            q3 = _fold(q5, i0, i1) * dims.scale  # pre-scaled query tile [B*Hkv, G*bq, D]
            row_max = torch.full((BK, q3.shape[1], 1), float("-inf"), dtype=ct, device=q.device)
            row_sum = torch.zeros_like(row_max)  # [B*Hkv, G*bq, 1]
            acc = torch.zeros(BK, q3.shape[1], dims.Dv, dtype=ct, device=q.device)  # [B*Hkv, G*bq, Dv]
            for j0 in plan.k_tiles(i0, i1):
                j1 = plan.k_end(i0, j0)
                s = _scores(plan, q3, k3, mask4, i0, i1, j0, j1, buffer)  # [B*Hkv, G*bq, bk]
                flops += 2 * s.numel() * (dims.D + dims.Dv)  # this tile's QKᵀ and PV products
                new_max = torch.maximum(row_max, s.amax(dim=-1, keepdim=True))
                # a row with no visible key yet has max -inf: shift by 0 so exp(-inf) = 0, never NaN
                safe_max = torch.where(torch.isneginf(new_max), 0.0, new_max)
                alpha = torch.exp(row_max - safe_max)  # [B*Hkv, G*bq, 1]
                p = s.sub_(safe_max).exp_()  # [B*Hkv, G*bq, bk]
                row_sum.mul_(alpha).add_(p.sum(dim=-1, keepdim=True))
                if call.dropout_p > 0.0:
                    keep = _keep_tile(
                        call.seed, plan.tile_index(i0, j0), tuple(p.shape), call.dropout_p, q.device
                    )
                    p = p.mul_(keep).div_(1.0 - call.dropout_p)
                acc.mul_(alpha).baddbmm_(p, v3[:, j0:j1, :])  # += p v_t  [B*Hkv, G*bq, Dv]
                row_max = new_max
            alive = row_sum > 0
            tile_out = acc.div_(torch.where(alive, row_sum, 1.0))  # [B*Hkv, G*bq, Dv]
            out[..., i0:i1, :] = tile_out.view(dims.B, dims.Hkv, dims.G, i1 - i0, dims.Dv)
            stats.store(i0, i1, row_max, row_sum)
        _work.flops = flops
        ctx.call = call
        ctx.mask_is_tensor = mask4 is not None
        ctx.save_for_backward(q, k, v, out, stats.max, stats.log_sum, *(() if mask4 is None else (mask4,)))
        return out.flatten(1, 2).to(q.dtype)  # [B, Hkv, G, N, Dv] -> [B, H, N, Dv]

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        q, k, v, out, row_max, log_sum, *rest = ctx.saved_tensors
        call: _Call = ctx.call
        mask4 = rest[0] if ctx.mask_is_tensor else None
        dq, dk, dv, dmask = tiled_backward(
            grad_out, q, k, v, out, RowStats(row_max, log_sum), mask4, call.plan,
            dropout_p=call.dropout_p, seed=call.seed, mask_grad=ctx.needs_input_grad[3],
        )  # fmt: skip
        return dq, dk, dv, dmask, None  # one per forward input: q, k, v, mask4, call


def tiled_backward(
    grad_out: Tensor,
    q: Tensor,
    k: Tensor,
    v: Tensor,
    out: Tensor,
    stats: RowStats,
    mask4: Tensor | None,
    plan: TilePlan,
    *,
    dropout_p: float = 0.0,
    seed: int = 0,
    mask_grad: bool = False,
) -> tuple[Tensor, Tensor, Tensor, Tensor | None]:
    """Gradients ``(dq, dk, dv, dmask)`` by per-tile recomputation from the saved output and row stats.

    ``out`` is ``[B, Hkv, G, N, Dv]`` and ``stats`` holds ``[B, Hkv, G, N, 1]`` tensors in the compute
    dtype (fp32/fp64). Shared with the Triton path, whose forward kernel writes the same row stats.
    Scores use the pre-scaled q (``s = (q·scale) kᵀ``), hence ``dq = ds k · scale`` and
    ``dk = dsᵀ (q·scale)``; grouped heads are folded into rows, so the products over rows already sum
    dk and dv over the G query heads sharing a key/value head.
    """
    ct = out.dtype
    dims = plan.dims
    BK = dims.B * dims.Hkv
    q5 = q.to(ct).unflatten(1, (dims.Hkv, dims.G))  # [B, H, N, D] -> [B, Hkv, G, N, D]
    k3 = k.to(ct).reshape(BK, dims.M, dims.D)  # [B, Hkv, M, D] -> [B*Hkv, M, D]
    v3 = v.to(ct).reshape(BK, dims.M, dims.Dv)  # [B, Hkv, M, Dv] -> [B*Hkv, M, Dv]
    do5 = grad_out.to(ct).unflatten(1, (dims.Hkv, dims.G))  # [B, H, N, Dv] -> [B, Hkv, G, N, Dv]
    delta = (do5 * out).sum(dim=-1, keepdim=True)  # [B, Hkv, G, N, 1]
    dq = torch.zeros_like(q5)  # [B, Hkv, G, N, D]
    dk = torch.zeros(BK, dims.M, dims.D, dtype=ct, device=q.device)
    dv = torch.zeros(BK, dims.M, dims.Dv, dtype=ct, device=q.device)
    dmask = None
    if mask4 is not None and mask4.is_floating_point() and mask_grad:
        dmask = torch.zeros(mask4.shape, dtype=ct, device=q.device)
    buffer = torch.empty(BK * dims.G * min(plan.bq, dims.N) * plan.max_cols, dtype=ct, device=q.device)
    for i0 in plan.q_tiles():
        i1 = min(i0 + plan.bq, dims.N)
        q3 = _fold(q5, i0, i1) * dims.scale  # pre-scaled query tile [B*Hkv, G*bq, D]
        do3 = _fold(do5, i0, i1)  # [B*Hkv, G*bq, Dv]
        max3, log3 = _fold(stats.max, i0, i1), _fold(stats.log_sum, i0, i1)  # [B*Hkv, G*bq, 1]
        delta3 = _fold(delta, i0, i1)  # [B*Hkv, G*bq, 1]
        dq3 = torch.zeros_like(q3)
        for j0 in plan.k_tiles(i0, i1):
            j1 = plan.k_end(i0, j0)
            s = _scores(plan, q3, k3, mask4, i0, i1, j0, j1, buffer)  # [B*Hkv, G*bq, bk]
            p = s.sub_(max3).sub_(log3).exp_()  # normalized weights [B*Hkv, G*bq, bk]
            dp = torch.bmm(do3, v3[:, j0:j1, :].transpose(1, 2))  # [B*Hkv, G*bq, bk]
            if dropout_p > 0.0:
                keep = _keep_tile(seed, plan.tile_index(i0, j0), tuple(p.shape), dropout_p, q.device)
                z = keep.to(ct).div_(1.0 - dropout_p)
                dv[:, j0:j1, :].baddbmm_((p * z).transpose(1, 2), do3)  # [B*Hkv, bk, Dv]
                dp.mul_(z)
            else:
                dv[:, j0:j1, :].baddbmm_(p.transpose(1, 2), do3)  # [B*Hkv, bk, Dv]
            ds = p.mul_(dp.sub_(delta3))  # [B*Hkv, G*bq, bk]
            dq3.baddbmm_(ds, k3[:, j0:j1, :])  # [B*Hkv, G*bq, D]
            dk[:, j0:j1, :].baddbmm_(ds.transpose(1, 2), q3)  # [B*Hkv, bk, D]
            if dmask is not None:
                _add_mask_grad(
                    dmask, ds.view(dims.B, dims.Hkv, dims.G, i1 - i0, j1 - j0), dims, i0, i1, j0, j1
                )
        dq[..., i0:i1, :] = dq3.view(dims.B, dims.Hkv, dims.G, i1 - i0, dims.D)
    return (
        (dq * dims.scale).flatten(1, 2).to(q.dtype),  # [B, Hkv, G, N, D] -> [B, H, N, D]
        dk.view(dims.B, dims.Hkv, dims.M, dims.D).to(k.dtype),  # [B*Hkv, M, D] -> [B, Hkv, M, D]
        dv.view(dims.B, dims.Hkv, dims.M, dims.Dv).to(v.dtype),  # [B*Hkv, M, Dv] -> [B, Hkv, M, Dv]
        None if dmask is None or mask4 is None else dmask.to(mask4.dtype),
    )


def _add_mask_grad(dmask: Tensor, ds: Tensor, dims: Dims, i0: int, i1: int, j0: int, j1: int) -> None:
    """Accumulate ``ds`` into the gradient of a broadcast additive mask ``[B|1, H|1, N|1, M|1]``."""
    g = ds.flatten(1, 2)  # [B, Hkv, G, bq, bk] -> [B, H, bq, bk]
    reduce = tuple(axis for axis in range(4) if dmask.shape[axis] == 1 and g.shape[axis] != 1)
    if reduce:
        g = g.sum(dim=reduce, keepdim=True)
    target = mask_tile(dmask, i0, i1, j0, j1)  # a view into dmask
    target += g


def tiled_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    *,
    causal: bool = False,
    scale: float | None = None,
    dropout_p: float = 0.0,
    block_q: int = DEFAULT_BLOCK_Q,  # query rows per tile
    block_k: int = DEFAULT_BLOCK_K,  # key columns per tile
    window: tuple[int, int] | None = None,  # skip key tiles outside every query's window (mask applies it)
    key_limit: int | None = None,  # skip key tiles at or past this key (the mask must hide them)
    pattern: Pattern
    | None = None,  # only the tiles this pattern allows are computed (ANDed with mask/causal)
) -> Tensor:
    """Exact attention over tiles (module docstring) → ``[B, H, N, Dv]``; equals ``reference_attention``.

    ``window`` and ``key_limit`` only skip tiles; the masking itself comes from ``mask`` (``tiled_path``
    derives both from a call's ``KeyRestriction``).
    """
    for name, value in (("block_q", block_q), ("block_k", block_k)):
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    dims, mask4 = check_inputs(q, k, v, mask, scale=scale, dropout_p=dropout_p)
    plan = TilePlan(dims, causal, block_q, block_k, check_window(window), key_limit, pattern)
    return _apply(q, k, v, mask4, plan, dropout_p)


def tiled_path(
    q: Tensor, k: Tensor, v: Tensor, dims: Dims, keys: KeyRestriction, *, dropout_p: float
) -> Tensor:
    """The tiled path of a validated call: ``causal``, ``window`` and ``key_lengths`` skip key tiles, a
    pattern gives the tile layout (tiles of ``pattern.block``), and the mask and the structure apply
    as one dense mask."""
    st, pattern = keys.structure, keys.pattern
    block_q, block_k = (
        (DEFAULT_BLOCK_Q, DEFAULT_BLOCK_K) if pattern is None else (pattern.block, pattern.block)
    )
    plan = TilePlan(dims, keys.causal, block_q, block_k, st.window, st.key_limit(q.device), pattern)
    return _apply(q, k, v, keys.dense(dims, q.device), plan, dropout_p)


def _apply(q: Tensor, k: Tensor, v: Tensor, mask4: Tensor | None, plan: TilePlan, dropout_p: float) -> Tensor:
    call = _Call(plan, float(dropout_p), _draw_seed() if dropout_p > 0.0 else 0)
    return _TiledAttention.apply(q, k, v, mask4, call)
