"""The patterns of one position rule: ``Window``, ``Causal``, ``GlobalTokens``, ``Strided``, and the builder
functions of every pattern kind (``dense()`` … ``bigbird()``).

Positions follow the attention conventions (see :mod:`tokenloom.encoder.patterns`, which re-exports every
public name): query row ``i`` sits at position ``p = i + (M − N)``, key ``j`` at position ``j``. Each kind
counts its edges without listing them (in closed form; ``Strided`` in O(1) per row). Imports torch only
when a mask is built.

Shapes: ``N`` queries, ``M`` keys, ``bq``/``bk`` tile rows/columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tokenloom.encoder._pattern_base import Dense, Pattern, Union
from tokenloom.encoder._pattern_blocks import BlockSparse, RandomBlocks
from tokenloom.encoder._pattern_tiles import Run, check_size, clamp_sum, count_multiples, merge_runs

if TYPE_CHECKING:
    from torch import Tensor


@dataclass(frozen=True)
class Window(Pattern):
    """Query at position p sees keys ``p − left … p + right`` (both ends included)."""

    left: int
    right: int

    def __post_init__(self) -> None:
        check_size("window left", self.left)
        check_size("window right", self.right)

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
        n, m = check_size("n", n), check_size("m", n if m is None else m)
        off = m - n
        return clamp_sum(off + self.right + 1, n, m) - clamp_sum(off - self.left, n, m)


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
        n, m = check_size("n", n), check_size("m", n if m is None else m)
        return clamp_sum(m - n + 1, n, m)


@dataclass(frozen=True)
class GlobalTokens(Pattern):
    """The first ``g`` positions see every key, and every query sees them (Longformer's global attention)."""

    g: int

    def __post_init__(self) -> None:
        check_size("global tokens g", self.g)

    def spec(self) -> str:
        return f"global:{self.g}"

    def _allowed(self, i: Tensor, j: Tensor, n: int, m: int) -> Tensor:
        return (j < self.g) | (i + (m - n) < self.g)

    def row_runs(self, i: int, n: int, m: int) -> list[Run]:
        b = m if i + m - n < self.g else min(self.g, m)
        return [(0, b)] if b > 0 else []

    def edges(self, n: int, m: int | None = None) -> int:
        n, m = check_size("n", n), check_size("m", n if m is None else m)
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
        if check_size("stride", self.stride) == 0:
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
        return merge_runs(runs)

    def edges(self, n: int, m: int | None = None) -> int:
        n, m = check_size("n", n), check_size("m", n if m is None else m)
        s, total = self.stride, 0
        for i in range(n):  # O(N) arithmetic per row
            p = i + m - n
            hi = p + 1 if self.causal else p + s
            total += min(m, max(0, hi)) - min(m, max(0, p - s + 1))  # the local run
            total += count_multiples(p - m + 1, p, s)  # keys p − k·s ≥ 0 for k ≥ 1, inside [0, m)
            if not self.causal:
                total += count_multiples(-p, m - 1 - p, s)  # keys p + k·s for k ≥ 1, inside [0, m)
        return total


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
