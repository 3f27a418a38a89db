"""Key-interval arithmetic behind the sparse patterns: size checks, interval runs, closed-form edge sums and
tile layouts.

A pattern describes each query row as sorted, disjoint half-open key intervals (``Run``). This module merges
such runs, sums clipped run lengths in O(1) for the closed-form edge counts, and turns a pattern's runs into
the per-query-tile list of key tiles (``tile_layout``) that the ``tiled`` attention path multiplies.
``tile_layout`` is re-exported by :mod:`tokenloom.encoder.patterns`; the interval helpers serve the
pattern modules of this package. Imports no torch.

Shapes: ``N`` queries, ``M`` keys, ``block_q``/``block_k`` tile rows/columns.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tokenloom.encoder._pattern_base import Pattern

Run = tuple[int, int]  # half-open key interval [a, b)
TileRow = tuple[tuple[int, bool], ...]  # (first key of the tile, partial?) per key tile a query tile needs


def check_size(name: str, value: object) -> int:
    """``value`` when it is a non-negative int (not a bool), else ``ValueError`` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative int, got {value!r}")
    return value


def clamp_sum(c: int, n: int, m: int) -> int:
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


def count_multiples(lo: int, hi: int, s: int) -> int:
    """How many ``k ≥ 1`` have ``lo ≤ k·s ≤ hi``."""
    first = max(1, -(-lo // s))
    last = hi // s
    return max(0, last - first + 1)


def merge_runs(runs: list[Run]) -> list[Run]:
    """Sorted, disjoint, non-adjacent intervals covering the same keys as ``runs``."""
    out: list[Run] = []
    for a, b in sorted(runs):
        if out and a <= out[-1][1]:
            if b > out[-1][1]:
                out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def intersect_runs(a: list[Run], b: list[Run]) -> list[Run]:
    """The keys in both of two sorted, disjoint interval lists, as sorted, disjoint intervals."""
    out: list[Run] = []
    x = y = 0
    while x < len(a) and y < len(b):
        lo, hi = max(a[x][0], b[y][0]), min(a[x][1], b[y][1])
        if lo < hi:
            out.append((lo, hi))
        if a[x][1] <= b[y][1]:  # the interval that ends first has nothing left to meet
            x += 1
        else:
            y += 1
    return out


@functools.lru_cache(maxsize=64)
def tile_layout(pattern: Pattern, n: int, m: int, block_q: int, block_k: int) -> tuple[TileRow, ...]:
    """For each query tile (rows ``t·block_q …``), the key tiles it needs: ``(j0, partial)`` pairs.

    A key tile is listed when at least one of its pairs is allowed; ``partial`` is False when every pair
    in it is allowed (no per-element mask needed). Exact: built from each row's allowed intervals with a
    difference array per query tile, O(N·runs + tiles).
    """
    n, m = check_size("n", n), check_size("m", m)
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
