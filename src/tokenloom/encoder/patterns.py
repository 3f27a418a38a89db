"""Sparse attention patterns: which keys each query may see, how many edges that is, and which tiles to compute.

A :class:`Pattern` answers three questions for any ``N`` queries and ``M`` keys:

(a) ``mask(n, m)``: its dense ``[N, M]`` bool mask (True = may attend), for the ``reference`` and ``sdpa``
    paths and for tests;
(b) ``edges(n, m)``: the exact number of allowed query–key pairs (closed forms for the single patterns,
    a row-by-row interval merge for unions), which the cost model turns into FLOPs
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
- unions: ``window(64, 64) | global_tokens(2)``.

Patterns are frozen and hashable; ``tile_layout`` is cached per (pattern, N, M, tiles). This module imports
no torch at import time (the cost model counts edges without it); ``mask`` imports it on use.
It does not run attention (see ``tokenloom.encoder.attention``).

Shapes: ``N`` queries, ``M`` keys, ``bq``/``bk`` tile rows/columns.
"""

from __future__ import annotations

import functools
import random
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
    from torch import Tensor

__all__ = [
    "BlockSparse",
    "Causal",
    "Dense",
    "GlobalTokens",
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

Run = tuple[int, int]  # half-open key interval [a, b)
TileRow = tuple[tuple[int, bool], ...]  # (first key of the tile, partial?) per key tile a query tile needs


def _size(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative int, got {value!r}")
    return value


def _clamp_sum(c: int, n: int, m: int) -> int:
    """``Σ_{t=c}^{c+n-1} min(max(t, 0), m)`` in O(1): run lengths clipped to ``[0, m]`` summed over rows."""
    lo, hi = c, c + n - 1
    if n <= 0 or hi < 0:
        return 0
    total = 0
    a, b = max(lo, 0), min(hi, m)  # the rows where t itself is the clipped value
    if a <= b:
        total += (a + b) * (b - a + 1) // 2
    total += m * max(0, hi - max(lo, m + 1) + 1)  # rows where t > m contribute m
    return total


class Pattern(ABC):
    """Which keys each query may attend (module docstring). Combine patterns with ``|``."""

    @property
    def block(self) -> int:
        """The tile size the ``tiled`` path uses for this pattern (its block size where it has one)."""
        return 128

    @abstractmethod
    def spec(self) -> str:
        """The pattern as the CLI spells it (``window:512``, ``global:2+window:64``)."""

    @abstractmethod
    def _allowed(self, i: Tensor, j: Tensor, n: int, m: int) -> Tensor:
        """Bool ``[n|1, m|1]`` from query rows ``i [bq, 1]`` and key columns ``j [1, bk]``."""

    @abstractmethod
    def row_runs(self, i: int, n: int, m: int) -> list[Run]:
        """The allowed keys of query row ``i`` as sorted, disjoint half-open intervals inside ``[0, m)``."""

    def edges(self, n: int, m: int | None = None) -> int:
        """The exact number of allowed (query, key) pairs for ``n`` queries and ``m`` keys (default n)."""
        n, m = _size("n", n), _size("m", n if m is None else m)
        return sum(b - a for i in range(n) for a, b in self.row_runs(i, n, m))

    def mask(self, n: int, m: int | None = None, *, device: torch.device | str | None = None) -> Tensor:
        """Dense ``[N, M]`` bool mask, True = may attend."""
        n, m = _size("n", n), _size("m", n if m is None else m)
        return self.mask_tile(0, n, 0, m, n=n, m=m, device=device)

    def mask_tile(
        self, i0: int, i1: int, j0: int, j1: int, *, n: int, m: int, device: torch.device | str | None = None
    ) -> Tensor:
        """Rows ``i0:i1`` and columns ``j0:j1`` of ``mask(n, m)`` as ``[i1-i0, j1-j0]`` bool."""
        import torch

        small = torch.int32 if max(n, m) < 2**30 else torch.int64  # int32: half the memory traffic
        i = torch.arange(i0, i1, device=device, dtype=small).unsqueeze(1)  # [bq, 1]
        j = torch.arange(j0, j1, device=device, dtype=small).unsqueeze(0)  # [1, bk]
        return self._allowed(i, j, n, m).expand(i1 - i0, j1 - j0)  # [bq, bk]

    def merge_mask(self, mask: Tensor | None, n: int, m: int, device: torch.device) -> Tensor:
        """``mask`` (bool, True = may attend, or float additive; broadcastable) AND this pattern."""
        allowed = self.mask(n, m, device=device)  # [N, M]
        if mask is None:
            return allowed
        if mask.dtype == allowed.dtype:
            return mask & allowed
        return mask.masked_fill(~allowed, float("-inf"))

    def __or__(self, other: Pattern) -> Pattern:
        if not isinstance(other, Pattern):
            return NotImplemented
        parts = (self.parts if isinstance(self, Union) else (self,)) + (
            other.parts if isinstance(other, Union) else (other,)
        )
        return Union(parts)

    def __str__(self) -> str:
        return self.spec()


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


def _multiples(lo: int, hi: int, s: int) -> int:
    """How many ``k ≥ 1`` have ``lo ≤ k·s ≤ hi``."""
    first = max(1, -(-lo // s))
    last = hi // s
    return max(0, last - first + 1)


@dataclass(frozen=True)
class BlockSparse(Pattern):
    """Allowed ``block × block`` blocks: ``layout[qb][kb]`` for query block ``i // block``, key block ``j // block``."""

    layout: tuple[tuple[bool, ...], ...]
    block_size: int

    def __post_init__(self) -> None:
        if _size("block", self.block_size) == 0:
            raise ValueError("block must be positive, got 0")
        widths = {len(row) for row in self.layout}
        if len(widths) > 1:
            raise ValueError(f"block layout rows must have one length, got lengths {sorted(widths)}")

    @property
    def block(self) -> int:
        return self.block_size

    def spec(self) -> str:
        rows, cols = len(self.layout), len(self.layout[0]) if self.layout else 0
        return f"block_sparse[{rows}x{cols}, block {self.block_size}]"

    def _check(self, n: int, m: int) -> None:
        rows, cols = len(self.layout), len(self.layout[0]) if self.layout else 0
        if n > rows * self.block_size or m > cols * self.block_size:
            raise ValueError(
                f"block layout {rows}x{cols} of block {self.block_size} covers {rows * self.block_size} "
                f"queries × {cols * self.block_size} keys, not N={n} × M={m}; give a layout of at least "
                f"{-(-n // self.block_size)}x{-(-m // self.block_size)} blocks"
            )

    def _allowed(self, i: Tensor, j: Tensor, n: int, m: int) -> Tensor:
        self._check(n, m)
        table = self._table.to(i.device)  # [N/block, M/block]
        return table[i // self.block_size, j // self.block_size]  # [bq, bk]

    def row_runs(self, i: int, n: int, m: int) -> list[Run]:
        self._check(n, m)
        return [(a, min(b, m)) for a, b in self._runs[i // self.block_size] if a < m]

    def edges(self, n: int, m: int | None = None) -> int:
        n, m = _size("n", n), _size("m", n if m is None else m)
        self._check(n, m)
        b, total = self.block_size, 0
        for qb in range(-(-n // b)):
            rows = min(b, n - qb * b)
            total += rows * sum(min(hi, m) - lo for lo, hi in self._runs[qb] if lo < m)
        return total

    @functools.cached_property
    def _table(self) -> Tensor:
        import torch

        return torch.tensor(self.layout, dtype=torch.bool).reshape(len(self.layout), -1)  # [N/block, M/block]

    @functools.cached_property
    def _runs(self) -> list[tuple[Run, ...]]:
        return [_block_runs(row, self.block_size) for row in self.layout]


def _block_runs(row: tuple[bool, ...], block: int) -> tuple[Run, ...]:
    runs: list[Run] = []
    for kb, on in enumerate(row):
        if not on:
            continue
        if runs and runs[-1][1] == kb * block:
            runs[-1] = (runs[-1][0], (kb + 1) * block)
        else:
            runs.append((kb * block, (kb + 1) * block))
    return tuple(runs)


@dataclass(frozen=True)
class RandomBlocks(Pattern):
    """Each query block sees ``count`` key blocks drawn without replacement from a generator seeded by
    ``(seed, query block, key blocks)``: the same N, M and seed always give the same blocks."""

    count: int
    block_size: int = 64
    seed: int = 0

    def __post_init__(self) -> None:
        _size("random blocks", self.count)
        if _size("block", self.block_size) == 0:
            raise ValueError("block must be positive, got 0")

    @property
    def block(self) -> int:
        return self.block_size

    def spec(self) -> str:
        return f"random:{self.count},{self.block_size},{self.seed}"

    def layout(self, n: int, m: int) -> BlockSparse:
        """The blocks drawn for ``n`` queries and ``m`` keys, as a ``BlockSparse`` pattern."""
        return _random_layout(self.count, self.block_size, self.seed, n, m)

    def _allowed(self, i: Tensor, j: Tensor, n: int, m: int) -> Tensor:
        return self.layout(n, m)._allowed(i, j, n, m)

    def row_runs(self, i: int, n: int, m: int) -> list[Run]:
        return self.layout(n, m).row_runs(i, n, m)

    def edges(self, n: int, m: int | None = None) -> int:
        n, m = _size("n", n), _size("m", n if m is None else m)
        return self.layout(n, m).edges(n, m)


@functools.lru_cache(maxsize=64)
def _random_layout(count: int, block: int, seed: int, n: int, m: int) -> BlockSparse:
    nb, mb = max(1, -(-n // block)), max(1, -(-m // block))
    rows = []
    for qb in range(nb):
        chosen = set(random.Random(f"{seed}:{qb}:{mb}").sample(range(mb), min(count, mb)))
        rows.append(tuple(kb in chosen for kb in range(mb)))
    return BlockSparse(tuple(rows), block)


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


def _merge(runs: list[Run]) -> list[Run]:
    """Sorted, disjoint, non-adjacent intervals covering the same keys as ``runs``."""
    out: list[Run] = []
    for a, b in sorted(runs):
        if out and a <= out[-1][1]:
            if b > out[-1][1]:
                out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


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
    """A pattern from its CLI spelling (``window:512``, ``global:2+window:64``, ``bigbird:192,128,3``);
    see :mod:`tokenloom.encoder.pattern_specs`."""
    from tokenloom.encoder.pattern_specs import parse_pattern as parse

    return parse(spec)


def parse_patterns(text: str) -> list[Pattern]:
    """A comma-separated list of spellings (``dense,window:512,bigbird:192,128,3``)."""
    from tokenloom.encoder.pattern_specs import parse_patterns as parse

    return parse(text)


# --------------------------------------------------------------------------- tiles


@functools.lru_cache(maxsize=64)
def tile_layout(pattern: Pattern, n: int, m: int, block_q: int, block_k: int) -> tuple[TileRow, ...]:
    """For each query tile (rows ``t·block_q …``), the key tiles it needs: ``(j0, partial)`` pairs.

    A key tile is listed when at least one of its pairs is allowed; ``partial`` is False when every pair
    in it is allowed (no per-element mask needed). Exact: built from each row's allowed intervals with a
    difference array per query tile, O(N·runs + tiles).
    """
    n, m = _size("n", n), _size("m", m)
    nk = -(-m // block_k)
    widths = [min(block_k, m - t * block_k) for t in range(nk)]
    layout: list[TileRow] = []
    for i0 in range(0, n, block_q):
        i1 = min(i0 + block_q, n)
        full = [0] * (nk + 1)  # difference array: rows whose runs cover a whole key tile
        part: dict[int, int] = {}  # key tile -> allowed pairs from partly covered rows
        for i in range(i0, i1):
            for a, b in pattern.row_runs(i, n, m):
                ta, tb = a // block_k, (b - 1) // block_k
                lo = ta if a == ta * block_k else ta + 1
                hi = tb + 1 if b == tb * block_k + widths[tb] else tb
                if lo > hi:  # the run lies inside one tile
                    part[ta] = part.get(ta, 0) + b - a
                    continue
                if lo > ta:
                    part[ta] = part.get(ta, 0) + ta * block_k + widths[ta] - a
                if hi <= tb:
                    part[tb] = part.get(tb, 0) + b - tb * block_k
                full[lo] += 1
                full[hi] -= 1
        row: list[tuple[int, bool]] = []
        covered = 0
        for t in range(nk):
            covered += full[t]
            count = covered * widths[t] + part.get(t, 0)
            if count:
                row.append((t * block_k, count != (i1 - i0) * widths[t]))
        layout.append(tuple(row))
    return tuple(layout)
