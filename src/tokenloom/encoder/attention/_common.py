"""Input checks and mask helpers shared by every attention path (internal).

Every path accepts the same arguments and follows the same conventions (see the package docstring);
this module validates them once and offers the few mask operations the paths share. ``resolve`` turns
the arguments of one call into its sizes (``Dims``) and one ``KeyRestriction`` — every argument that
restricts which keys a query sees — which the paths take as it is. It computes no attention itself.

Shapes: ``B`` batch, ``H`` query heads, ``Hkv`` key/value heads, ``G = H // Hkv`` query heads per
key/value head, ``N`` queries, ``M`` keys, ``D`` head width of q/k, ``Dv`` head width of v.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from tokenloom.encoder.patterns import Pattern

__all__ = [
    "NO_STRUCTURE",
    "Dims",
    "KeyRestriction",
    "Structure",
    "allowed_bool",
    "as_4d",
    "causal_tile",
    "check_inputs",
    "check_structure",
    "check_window",
    "dead_rows",
    "key_range",
    "mask_tile",
    "merge_masks",
    "repeat_kv",
    "resolve",
    "structure_mask",
]


@dataclass(frozen=True)
class Dims:
    """Sizes of one attention call, resolved from the inputs."""

    B: int  # batch
    H: int  # query heads
    Hkv: int  # key/value heads
    N: int  # queries
    M: int  # keys
    D: int  # head width of q and k
    Dv: int  # head width of v
    scale: float  # score scale (default 1/sqrt(D))

    @property
    def G(self) -> int:
        """Query heads sharing one key/value head."""
        return self.H // self.Hkv


def check_inputs(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None,
    *,
    scale: float | None,
    dropout_p: float,
) -> tuple[Dims, Tensor | None]:
    """Validate shapes/dtypes; return the sizes and the mask reshaped to 4-D (a view, never expanded)."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dim() != 4:
            raise ValueError(
                f"{name} must be 4-D [B, heads, tokens, head_dim], got shape {tuple(t.shape)}; "
                "split heads with x.view(B, N, H, D).transpose(1, 2)"
            )
        if not t.is_floating_point():
            raise TypeError(f"{name} must be a floating tensor, got dtype {t.dtype}")
    B, H, N, D = q.shape
    Bk, Hkv, M, Dk = k.shape
    if k.shape[:3] != v.shape[:3]:
        raise ValueError(f"k {tuple(k.shape)} and v {tuple(v.shape)} must agree on [B, Hkv, M]")
    if Bk != B:
        raise ValueError(f"batch of q ({B}) and k/v ({Bk}) differ")
    if Dk != D:
        raise ValueError(f"head width of q ({D}) and k ({Dk}) differ")
    if Hkv == 0 or H % Hkv:
        raise ValueError(
            f"query heads H={H} must be a multiple of key/value heads Hkv={Hkv} "
            "(multi-head: Hkv = H; grouped-query: H % Hkv == 0; multi-query: Hkv = 1)"
        )
    if q.dtype != k.dtype or q.dtype != v.dtype:
        raise TypeError(f"q, k, v must share a dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    if q.device != k.device or q.device != v.device:
        raise ValueError(f"q, k, v must be on one device, got {q.device}, {k.device}, {v.device}")
    if not (isinstance(dropout_p, int | float) and 0.0 <= dropout_p < 1.0):
        raise ValueError(f"dropout_p must be in [0, 1), got {dropout_p!r}")
    if scale is None:
        scale = 1.0 / math.sqrt(D) if D else 1.0
    elif not (isinstance(scale, int | float) and math.isfinite(scale)):
        raise ValueError(f"scale must be a finite number or None (1/sqrt(head_dim)), got {scale!r}")
    dims = Dims(B=B, H=H, Hkv=Hkv, N=N, M=M, D=D, Dv=v.shape[-1], scale=float(scale))
    return dims, _check_mask(mask, dims, q.device)


def _check_mask(mask: Tensor | None, dims: Dims, device: torch.device) -> Tensor | None:
    if mask is None:
        return None
    if not isinstance(mask, Tensor):
        raise TypeError(f"mask must be a bool or float tensor or None, got {type(mask).__name__}")
    if mask.dtype != torch.bool and not mask.is_floating_point():
        raise TypeError(
            f"mask must be bool (True = may attend) or float additive (0 / -inf), got dtype {mask.dtype}; "
            "integer 0/1 masks are ambiguous: convert with mask.bool()"
        )
    if mask.dim() > 4:
        raise ValueError(
            f"mask must have at most 4 dims (broadcastable to [B, H, N, M]), got {tuple(mask.shape)}"
        )
    if mask.device != device:
        raise ValueError(f"mask is on {mask.device} but q/k/v are on {device}")
    mask4 = as_4d(mask)  # [B|1, H|1, N|1, M|1]
    target = (dims.B, dims.H, dims.N, dims.M)
    for axis, (have, want) in enumerate(zip(mask4.shape, target, strict=True)):
        if have not in (1, want):
            raise ValueError(
                f"mask of shape {tuple(mask.shape)} does not broadcast to [B, H, N, M] = {list(target)} "
                f"(dim {axis} - {'BHNM'[axis]} - is {have}); masks from tokenloom.encoder.masks broadcast by design"
            )
    return mask4


def as_4d(mask: Tensor) -> Tensor:
    """A mask of at most 4 dims as a 4-D view, leading size-1 dims added (never expanded)."""
    return mask.reshape((1,) * (4 - mask.dim()) + tuple(mask.shape))  # [.., N|1, M|1] -> [B|1, H|1, N|1, M|1]


def repeat_kv(x: Tensor, groups: int) -> Tensor:
    """``[B, Hkv, M, D] -> [B, Hkv*G, M, D]``: query head ``h`` uses key/value head ``h // G``."""
    return x if groups == 1 else x.repeat_interleave(groups, dim=1)  # [B, H, M, D]


def mask_tile(mask4: Tensor, i0: int, i1: int, j0: int, j1: int) -> Tensor:
    """Rows ``i0:i1`` and columns ``j0:j1`` of a 4-D broadcastable mask, keeping size-1 dims as they are."""
    rows = slice(None) if mask4.shape[2] == 1 else slice(i0, i1)
    cols = slice(None) if mask4.shape[3] == 1 else slice(j0, j1)
    return mask4[:, :, rows, cols]  # [B|1, H|1, n|1, m|1]


def causal_tile(i0: int, i1: int, j0: int, j1: int, offset: int, device: torch.device) -> Tensor:
    """``[n, m]`` bool: query ``i`` may attend key ``j`` iff ``j ≤ i + offset`` (offset = M − N)."""
    qpos = torch.arange(i0, i1, device=device).unsqueeze(1) + offset  # [n, 1]
    kpos = torch.arange(j0, j1, device=device).unsqueeze(0)  # [1, m]
    return kpos <= qpos  # [n, m]


def allowed_bool(mask4: Tensor | None, causal: bool, dims: Dims, device: torch.device) -> Tensor | None:
    """The "may attend" pattern as one bool tensor (broadcastable), or None when nothing is masked.

    A float mask counts as "may attend" wherever it is not −inf (finite biases keep the key).
    """
    allowed = None
    if mask4 is not None:
        allowed = mask4 if mask4.dtype == torch.bool else ~torch.isneginf(mask4)
    if causal:
        tri = causal_tile(0, dims.N, 0, dims.M, dims.M - dims.N, device)  # [N, M]
        allowed = tri if allowed is None else allowed & tri
    return allowed


def dead_rows(mask4: Tensor | None, causal: bool, dims: Dims, device: torch.device) -> Tensor | None:
    """``[B|1, H|1, N, 1]`` bool, True for query rows where every key is masked.

    None when there are none (on CPU; on accelerators the tensor is returned as is, to avoid a sync).
    """
    if mask4 is None:  # causal alone: only the first N - M queries (when N > M) see no key
        if not causal or dims.N <= dims.M:
            return None
        return (torch.arange(dims.N, device=device) < dims.N - dims.M).view(1, 1, dims.N, 1)  # [1, 1, N, 1]
    allowed = allowed_bool(mask4, causal, dims, device)
    assert allowed is not None
    dead = ~allowed.any(dim=-1, keepdim=True)  # [B|1, H|1, N|1, 1]
    if device.type != "cpu":
        return dead  # no host sync to find out whether any row is dead: applying the fix is cheap
    return dead if bool(dead.any()) else None


# ----------------------------------------------------------------------------- structured masks
# key_lengths, segment_ids and window describe a mask by a few numbers per row instead of a dense
# [B, H, N, M] tensor. reference / tiled / sdpa turn them into the equivalent bool mask
# (``structure_mask``); the Triton kernel reads the numbers themselves and skips whole key tiles.


@dataclass(frozen=True)
class Structure:
    """A validated set of structured masks (each None when absent)."""

    key_lengths: Tensor | None  # [B] int64: key j of row b is valid iff j < key_lengths[b]
    q_segments: Tensor | None  # [B, N] int64: segment id of each query (negative = padding)
    k_segments: Tensor | None  # [B, M] int64: segment id of each key (negative = padding)
    window: tuple[int, int] | None  # (left, right): aligned query i' sees keys i' - left .. i' + right

    @property
    def empty(self) -> bool:
        return self.key_lengths is None and self.q_segments is None and self.window is None

    def key_limit(self, device: torch.device) -> int | None:
        """No key at or past this index is valid (from ``key_lengths``; CPU only, to avoid a device sync)."""
        if self.key_lengths is None or device.type != "cpu" or self.key_lengths.numel() == 0:
            return None
        return int(self.key_lengths.max())


NO_STRUCTURE = Structure(None, None, None, None)


def _int_tensor(value: object, name: str, shape: tuple[int, ...], device: torch.device) -> Tensor:
    if not isinstance(value, Tensor):
        raise TypeError(f"{name} must be an integer torch.Tensor, got {type(value).__name__}")
    if value.dtype == torch.bool or value.is_floating_point() or value.is_complex():
        raise TypeError(f"{name} must hold integers, got dtype {value.dtype}")
    if tuple(value.shape) != shape:
        raise ValueError(f"{name} must have shape {list(shape)}, got {tuple(value.shape)}")
    if value.device != device:
        raise ValueError(f"{name} is on {value.device} but q/k/v are on {device}")
    return value.long()


def check_window(window: object) -> tuple[int, int] | None:
    """``None`` or ``(left, right)`` of non-negative ints (keys i'−left .. i'+right of aligned query i')."""
    if window is None:
        return None
    pair = tuple(window) if isinstance(window, tuple | list) else ()
    if len(pair) != 2 or not all(isinstance(w, int) and not isinstance(w, bool) and w >= 0 for w in pair):
        raise ValueError(
            f"window must be (left, right) with non-negative ints, got {window!r}; "
            "e.g. window=(256, 0) for a causal sliding window of 256 past keys"
        )
    return int(pair[0]), int(pair[1])


def check_structure(
    dims: Dims,
    device: torch.device,
    *,
    key_lengths: Tensor | None,
    segment_ids: Tensor | tuple[Tensor, Tensor] | None,
    window: tuple[int, int] | None,
) -> Structure:
    """Validate the structured-mask arguments of ``attention`` (shapes, dtypes, ranges)."""
    lengths = None
    if key_lengths is not None:
        lengths = _int_tensor(key_lengths, "key_lengths", (dims.B,), device)
        if device.type == "cpu" and lengths.numel() and (lengths.min() < 0 or lengths.max() > dims.M):
            raise ValueError(
                f"key_lengths must lie in [0, M={dims.M}], got min {int(lengths.min())}, "
                f"max {int(lengths.max())}; pass the number of valid (unpadded) keys of each row"
            )
    q_seg = k_seg = None
    if segment_ids is not None:
        if isinstance(segment_ids, tuple | list):
            if len(segment_ids) != 2:
                raise ValueError(
                    "segment_ids must be [B, N] ids or a pair (query ids [B, N], key ids [B, M])"
                )
            q_seg = _int_tensor(segment_ids[0], "segment_ids[0] (queries)", (dims.B, dims.N), device)
            k_seg = _int_tensor(segment_ids[1], "segment_ids[1] (keys)", (dims.B, dims.M), device)
        else:
            if dims.N != dims.M:
                raise ValueError(
                    f"segment_ids [B, N] serves queries and keys only when N == M (got N={dims.N}, "
                    f"M={dims.M}); pass a pair (query ids [B, N], key ids [B, M])"
                )
            q_seg = k_seg = _int_tensor(segment_ids, "segment_ids", (dims.B, dims.N), device)
    return Structure(lengths, q_seg, k_seg, check_window(window))


def structure_mask(st: Structure, dims: Dims, device: torch.device) -> Tensor | None:
    """The bool mask ``[B|1, 1, N|1, M]`` equivalent to ``st`` (True = may attend), or None."""
    allowed: Tensor | None = None
    if st.key_lengths is not None:
        keys = torch.arange(dims.M, device=device)  # [M]
        allowed = (keys < st.key_lengths[:, None])[:, None, None, :]  # [B, 1, 1, M]
    if st.q_segments is not None and st.k_segments is not None:
        qs, ks = st.q_segments[:, :, None], st.k_segments[:, None, :]  # [B, N, 1], [B, 1, M]
        same = ((qs == ks) & (qs >= 0) & (ks >= 0))[:, None]  # [B, 1, N, M]
        allowed = same if allowed is None else allowed & same
    if st.window is not None:
        left, right = st.window
        qpos = torch.arange(dims.N, device=device)[:, None] + (dims.M - dims.N)  # [N, 1] aligned
        kpos = torch.arange(dims.M, device=device)[None, :]  # [1, M]
        near = (kpos >= qpos - left) & (kpos <= qpos + right)  # [N, M]
        allowed = near if allowed is None else allowed & near
    return allowed


def merge_masks(mask4: Tensor | None, allowed: Tensor | None) -> Tensor | None:
    """AND a bool "may attend" pattern into a bool or additive mask (additive: −inf where not allowed)."""
    if allowed is None:
        return mask4
    while allowed.dim() < 4:
        allowed = allowed.unsqueeze(0)
    if mask4 is None:
        return allowed
    if mask4.dtype == torch.bool:
        return mask4 & allowed
    return mask4.masked_fill(~allowed, float("-inf"))  # broadcasts to the larger shape


def key_range(
    i0: int, i1: int, n: int, m: int, *, causal: bool, window: tuple[int, int] | None
) -> tuple[int, int]:
    """Keys ``[lo, hi)`` that any of the queries ``i0 .. i1-1`` may see under causal / window.

    The one place that decides which key tiles a query tile visits (the Triton kernel mirrors it);
    a sparse pattern that lists key tiles per query tile plugs in here.
    """
    offset = m - n  # query i sits at absolute position i + offset
    lo, hi = 0, m
    last = min(i1, n) - 1
    if causal:
        hi = min(hi, last + offset + 1)
    if window is not None:
        lo = max(lo, i0 + offset - window[0])
        hi = min(hi, last + offset + window[1] + 1)
    return max(0, lo), max(0, hi)


# ----------------------------------------------------------------------------- one call's restriction


@dataclass(frozen=True)
class KeyRestriction:
    """Everything that restricts which keys a query of one call sees, validated; combined by logical AND.

    The paths read what they take natively (the Triton kernel: ``structure``; the tiled path: ``window``
    and ``key_lengths`` to skip tiles, ``pattern`` for its tile layout) and the rest as ``dense``.
    """

    mask4: Tensor | None  # [B|1, H|1, N|1, M|1] bool (True = may attend) or float additive
    causal: bool  # query i may attend key j iff j <= i + (M - N)
    structure: Structure  # key_lengths, segment_ids, window (never materialized here)
    pattern: Pattern | None  # sparse pattern (tokenloom.encoder.patterns)

    def dense(self, dims: Dims, device: torch.device, *, with_pattern: bool = False) -> Tensor | None:
        """``mask4`` AND the structure (AND the pattern's mask ``with_pattern``) as one 4-D mask, or None;
        ``causal`` is left to the path."""
        dense = merge_masks(self.mask4, structure_mask(self.structure, dims, device))  # [B|1, H|1, N|1, M]
        if with_pattern and self.pattern is not None:
            dense = as_4d(self.pattern.merge_mask(dense, dims.N, dims.M, device))  # [B|1, H|1, N, M]
        return dense


def check_pattern(pattern: object) -> Pattern | None:
    if pattern is not None and not isinstance(pattern, Pattern):
        raise TypeError(
            f"pattern must be a tokenloom.encoder.patterns.Pattern (e.g. patterns.window(256)), "
            f"got {type(pattern).__name__}; parse a CLI spelling with patterns.parse_pattern('window:512')"
        )
    return pattern


def resolve(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None,
    *,
    causal: bool = False,
    scale: float | None = None,
    dropout_p: float = 0.0,
    key_lengths: Tensor | None = None,
    segment_ids: Tensor | tuple[Tensor, Tensor] | None = None,
    window: tuple[int, int] | None = None,
    pattern: Pattern | None = None,
) -> tuple[Dims, KeyRestriction]:
    """The sizes of one call and its validated key restriction (the arguments of ``attention``)."""
    dims, mask4 = check_inputs(q, k, v, mask, scale=scale, dropout_p=dropout_p)
    st = check_structure(dims, q.device, key_lengths=key_lengths, segment_ids=segment_ids, window=window)
    return dims, KeyRestriction(mask4, causal, st, check_pattern(pattern))
