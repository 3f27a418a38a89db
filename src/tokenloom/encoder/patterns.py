"""Sparse attention patterns: which keys each query may see, how many edges that is, and which tiles to compute.

A :class:`Pattern` answers three questions for any ``N`` queries and ``M`` keys:

(a) ``mask(n, m)``: its dense ``[N, M]`` bool mask (True = may attend), for the ``reference`` and ``sdpa``
    paths and for tests;
(b) ``edges(n, m)``: the exact number of allowed query–key pairs (closed forms for the single patterns,
    a row-by-row interval merge for unions and intersections), which the cost model turns into FLOPs
    (``4·D·edges``) and score bytes;
(c) ``tile_layout(pattern, n, m, block_q, block_k)``: for each query tile the key tiles holding at least
    one edge, each marked full or partial, so the ``tiled`` path multiplies only those tiles and builds a
    per-element mask only for the partial ones.

Positions follow the attention conventions: query row ``i`` sits at position ``p = i + (M − N)`` (the last
N of M keys, as with ``causal=True``); key ``j`` at position ``j``. The patterns:

- ``dense()`` — every pair; ``causal()`` — ``j ≤ p``;
- ``window(left, right)`` — ``p − left ≤ j ≤ p + right`` (Longformer's sliding window, Beltagy et al. 2020;
  the spec ``window:W`` is ``window(W // 2, (W − 1) // 2)``: W keys per row, the query included);
- ``global_tokens(g)`` — the first g positions see every key and are seen by every query (Longformer);
- ``strided(stride)`` — Sparse Transformer's strided pattern (Child et al. 2019, §4.2): the previous
  ``stride`` positions plus every ``stride``-th one before them (``causal=False`` mirrors it to the future);
- ``block_sparse(layout, block)`` — a ``[N/block, M/block]`` bool layout of allowed blocks;
- ``bigbird(window, global_tokens, random_blocks, block, seed)`` — BigBird's window + global + random
  blocks (Zaheer et al. 2020), the random key blocks of each query block drawn from a seeded generator;
- unions and intersections: ``window(64, 64) | global_tokens(2)`` (a key allowed by any part),
  ``causal() & (window(64, 0) | global_tokens(2))`` (a key allowed by every part; a causal Longformer).

Patterns are frozen and hashable; ``tile_layout`` is cached per (pattern, N, M, tiles). This module imports
no torch at import time (the cost model counts edges without it); ``mask`` imports it on use.
It does not run attention (see ``tokenloom.encoder.attention``). The ``Pattern`` interface lives in
``_pattern_base``, the block patterns in ``_pattern_blocks``, interval arithmetic and ``tile_layout`` in
``_pattern_tiles``; every public name is importable from here.

Shapes: ``N`` queries, ``M`` keys, ``bq``/``bk`` tile rows/columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tokenloom.encoder._pattern_base import Pattern
from tokenloom.encoder._pattern_blocks import BlockSparse, RandomBlocks
from tokenloom.encoder._pattern_tiles import (
    Run,
    _clamp_sum,
    _intersect,
    _merge,
    _multiples,
    _size,
    tile_layout,
)

if TYPE_CHECKING:
    from torch import Tensor

__all__ = [
    "BlockSparse",
    "Causal",
    "Dense",
    "GlobalTokens",
    "Intersection",
    "Pattern",
    "RandomBlocks",
    "Strided",
    "Union",
    "Window",
    "bigbird",
    "block_sparse",
    "causal",
    "dense",
    "global_tokens",
    "parse_pattern",
    "parse_patterns",
    "strided",
    "tile_layout",
    "window",
]


@dataclass(frozen=True)
class Dense(Pattern):
    """Every query sees every key: ``N·M`` edges."""

    def spec(self) -> str:
        return "dense"

    def _allowed(self, i: Tensor, j: Tensor, n: int, m: int) -> Tensor:
        return (i >= 0) & (j >= 0)

    def row_runs(self, i: int, n: int, m: int) -> list[Run]:
        return [(0, m)] if m else []

    def edges(self, n: int, m: int | None = None) -> int:
        return _size("n", n) * _size("m", n if m is None else m)


@dataclass(frozen=True)
class Window(Pattern):
    """Query at position p sees keys ``p − left … p + right`` (both ends included)."""

    left: int
    right: int

    def __post_init__(self) -> None:
        _size("window left", self.left)
        _size("window right", self.right)

    def spec(self) -> str:
        total = self.left + self.right + 1
        return f"window:{total}" if (self.left, self.right) == (total // 2, (total - 1) // 2) else (
            f"window:{self.left},{self.right}"
        )  # fmt: skip

    def _allowed(self, i: Tensor, j: Tensor, n: int, m: int) -> Tensor:
        delta = i + (m - n) - j  # p − j
        return (delta <= self.left) & (delta >= -self.right)

    def row_runs(self, i: int, n: int, m: int) -> list[Run]:
        p = i + m - n
        a, b = max(0, p - self.left), min(m, p + self.right + 1)
        return [(a, b)] if a < b else []

    def edges(self, n: int, m: int | None = None) -> int:
        n, m = _size("n", n), _size("m", n if m is None else m)
        off = m - n
        return _clamp_sum(off + self.right + 1, n, m) - _clamp_sum(off - self.left, n, m)


@dataclass(frozen=True)
class Causal(Pattern):
    """Query at position p sees keys ``j ≤ p`` (the causal mask of ``attention(causal=True)``)."""

    def spec(self) -> str:
        return "causal"

    def _allowed(self, i: Tensor, j: Tensor, n: int, m: int) -> Tensor:
        return j <= i + (m - n)

    def row_runs(self, i: int, n: int, m: int) -> list[Run]:
        b = min(m, i + m - n + 1)
        return [(0, b)] if b > 0 else []

    def edges(self, n: int, m: int | None = None) -> int:
        n, m = _size("n", n), _size("m", n if m is None else m)
        return _clamp_sum(m - n + 1, n, m)


@dataclass(frozen=True)
class GlobalTokens(Pattern):
    """The first ``g`` positions see every key, and every query sees them (Longformer's global attention)."""

    g: int

    def __post_init__(self) -> None:
        _size("global tokens g", self.g)

    def spec(self) -> str:
        return f"global:{self.g}"

    def _allowed(self, i: Tensor, j: Tensor, n: int, m: int) -> Tensor:
        return (j < self.g) | (i + (m - n) < self.g)

    def row_runs(self, i: int, n: int, m: int) -> list[Run]:
        b = m if i + m - n < self.g else min(self.g, m)
        return [(0, b)] if b > 0 else []

    def edges(self, n: int, m: int | None = None) -> int:
        n, m = _size("n", n), _size("m", n if m is None else m)
        rows = min(n, max(0, self.g - (m - n)))  # queries whose position is < g
        return rows * m + (n - rows) * min(self.g, m)


@dataclass(frozen=True)
class Strided(Pattern):
    """Sparse Transformer's strided pattern: ``0 ≤ p − j < stride`` or ``(p − j) % stride == 0, j ≤ p``.

    ``causal=False`` also allows the mirrored keys after the query (``|p − j| < stride`` or a multiple of it).
    """

    stride: int
    causal: bool = True

    def __post_init__(self) -> None:
        if _size("stride", self.stride) == 0:
            raise ValueError("stride must be positive, got 0")

    def spec(self) -> str:
        return f"strided:{self.stride}" + ("" if self.causal else ",both")

    def _allowed(self, i: Tensor, j: Tensor, n: int, m: int) -> Tensor:
        delta = i + (m - n) - j  # p − j
        ok = (delta.abs() < self.stride) | (delta % self.stride == 0)
        return ok & (delta >= 0) if self.causal else ok

    def row_runs(self, i: int, n: int, m: int) -> list[Run]:
        p, s = i + m - n, self.stride
        runs: list[Run] = [(j, j + 1) for j in range(p % s if p >= 0 else 0, p - s + 1, s) if j < m]
        a, b = max(0, p - s + 1), min(m, p + 1 if self.causal else p + s)
        if a < b:
            runs.append((a, b))
        if not self.causal:
            runs += [(j, j + 1) for j in range(p + s, m, s) if j >= 0]
        return _merge(runs)

    def edges(self, n: int, m: int | None = None) -> int:
        n, m = _size("n", n), _size("m", n if m is None else m)
        s, total = self.stride, 0
        for i in range(n):  # O(N) arithmetic per row
            p = i + m - n
            hi = p + 1 if self.causal else p + s
            total += min(m, max(0, hi)) - min(m, max(0, p - s + 1))  # the local run
            total += _multiples(p - m + 1, p, s)  # keys p − k·s ≥ 0 for k ≥ 1, inside [0, m)
            if not self.causal:
                total += _multiples(-p, m - 1 - p, s)  # keys p + k·s for k ≥ 1, inside [0, m)
        return total


@dataclass(frozen=True)
class Union(Pattern):
    """A key is allowed when any part allows it. Edges are counted row by row (exact, O(N·runs))."""

    parts: tuple[Pattern, ...]
    label: str | None = (
        None  # the spelling of a preset union (``bigbird:192,128,3``); None: parts joined by +
    )

    def __post_init__(self) -> None:
        if not self.parts or not all(isinstance(p, Pattern) for p in self.parts):
            raise ValueError(f"a union needs one or more patterns, got {self.parts!r}")

    @property
    def block(self) -> int:
        return min(p.block for p in self.parts)

    def spec(self) -> str:
        return self.label or "+".join(p.spec() for p in self.parts)

    def _allowed(self, i: Tensor, j: Tensor, n: int, m: int) -> Tensor:
        out = self.parts[0]._allowed(i, j, n, m)
        for part in self.parts[1:]:
            out = out | part._allowed(i, j, n, m)
        return out

    def row_runs(self, i: int, n: int, m: int) -> list[Run]:
        return _merge([run for part in self.parts for run in part.row_runs(i, n, m)])

    def edges(self, n: int, m: int | None = None) -> int:
        if any(isinstance(p, Dense) for p in self.parts):
            return Dense().edges(n, m)
        return super().edges(n, m)


@dataclass(frozen=True)
class Intersection(Pattern):
    """A key is allowed when every part allows it (``causal() & window(64, 0)``). Edges are counted row by
    row from the parts' intersected intervals (exact, O(N·runs))."""

    parts: tuple[Pattern, ...]

    def __post_init__(self) -> None:
        if not self.parts or not all(isinstance(p, Pattern) for p in self.parts):
            raise ValueError(f"an intersection needs one or more patterns, got {self.parts!r}")

    @property
    def block(self) -> int:
        return min(p.block for p in self.parts)

    def spec(self) -> str:
        # & binds tighter than +: a union inside an intersection is written in parentheses
        return "&".join(
            f"({p.spec()})" if isinstance(p, Union) and p.label is None else p.spec() for p in self.parts
        )

    def _allowed(self, i: Tensor, j: Tensor, n: int, m: int) -> Tensor:
        out = self.parts[0]._allowed(i, j, n, m)
        for part in self.parts[1:]:
            out = out & part._allowed(i, j, n, m)
        return out

    def row_runs(self, i: int, n: int, m: int) -> list[Run]:
        runs = self.parts[0].row_runs(i, n, m)
        for part in self.parts[1:]:
            if not runs:
                break
            runs = _intersect(runs, part.row_runs(i, n, m))
        return runs

    def edges(self, n: int, m: int | None = None) -> int:
        rest = tuple(p for p in self.parts if not isinstance(p, Dense))  # dense allows every key
        if len(rest) <= 1:
            return (rest[0] if rest else Dense()).edges(n, m)
        return super().edges(n, m)


# --------------------------------------------------------------------------- builders


def dense() -> Dense:
    """Every query sees every key."""
    return Dense()


def causal() -> Causal:
    """Query at position p sees keys ``j ≤ p``."""
    return Causal()


def window(left: int, right: int | None = None) -> Window:
    """Keys ``p − left … p + right`` (``right`` defaults to ``left``: a symmetric window of ``2·left + 1``)."""
    return Window(left, left if right is None else right)


def global_tokens(g: int) -> GlobalTokens:
    """The first ``g`` tokens see and are seen by all (Longformer)."""
    return GlobalTokens(g)


def strided(stride: int, *, causal: bool = True) -> Strided:
    """Sparse Transformer's strided pattern (the previous ``stride`` keys and every ``stride``-th before)."""
    return Strided(stride, causal)


def block_sparse(layout: Any, block: int) -> BlockSparse:
    """Allowed blocks from a 2-D bool ``layout`` (nested sequences or a tensor), ``block × block`` each."""
    rows = layout.tolist() if hasattr(layout, "tolist") else layout
    if not isinstance(rows, Sequence) or not all(isinstance(r, Sequence) for r in rows):
        raise ValueError(f"block layout must be 2-D (rows of bools), got {type(layout).__name__}")
    return BlockSparse(tuple(tuple(bool(x) for x in row) for row in rows), block)


def bigbird(
    window_size: int = 192, global_count: int = 128, random_count: int = 3, *, block: int = 64, seed: int = 0
) -> Union:
    """BigBird (Zaheer et al. 2020): a ``window_size``-key sliding window, ``global_count`` global tokens
    and ``random_count`` random key blocks per query block of ``block`` rows (seeded). The defaults are the
    paper's ITC setting: blocks of 64, a window of 3 blocks, 2 global blocks and 3 random blocks."""
    return Union(
        (
            Window(window_size // 2, (window_size - 1) // 2),
            GlobalTokens(global_count),
            RandomBlocks(random_count, block, seed),
        ),
        f"bigbird:{window_size},{global_count},{random_count}"
        + (f",{block}" if block != 64 else "")
        + (f" (seed {seed})" if seed else ""),
    )


def parse_pattern(spec: str) -> Pattern:
    """A pattern from its CLI spelling (``window:512``, ``global:2+window:64``, ``bigbird:192,128,3``,
    ``causal&(global:2+window:512,0)``: ``+`` a union, ``&`` an intersection that binds tighter);
    see :mod:`tokenloom.encoder.pattern_specs` for the grammar."""
    from tokenloom.encoder.pattern_specs import parse_pattern as parse

    return parse(spec)


def parse_patterns(text: str) -> list[Pattern]:
    """A comma-separated list of spellings (``dense,window:512,bigbird:192,128,3``)."""
    from tokenloom.encoder.pattern_specs import parse_patterns as parse

    return parse(text)
