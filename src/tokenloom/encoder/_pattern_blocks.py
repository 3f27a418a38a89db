"""Block-granular sparse patterns: an explicit ``block × block`` layout (``BlockSparse``) and BigBird's seeded
random key blocks (``RandomBlocks``).

Both are re-exported by :mod:`tokenloom.encoder.patterns`. Imports torch only when a mask is built.

Shapes: ``N`` queries, ``M`` keys, ``bq``/``bk`` tile rows/columns; layouts are ``[N/block, M/block]``.
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tokenloom.encoder._pattern_base import Pattern
from tokenloom.encoder._pattern_tiles import Run, check_size

if TYPE_CHECKING:
    from torch import Tensor


@dataclass(frozen=True)
class BlockSparse(Pattern):
    """Allowed ``block × block`` blocks: ``layout[qb][kb]`` for query block ``i // block``, key block ``j // block``."""

    layout: tuple[tuple[bool, ...], ...]
    block_size: int

    def __post_init__(self) -> None:
        if check_size("block", self.block_size) == 0:
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
        n, m = check_size("n", n), check_size("m", n if m is None else m)
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
        check_size("random blocks", self.count)
        if check_size("block", self.block_size) == 0:
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
        n, m = check_size("n", n), check_size("m", n if m is None else m)
        return self.layout(n, m).edges(n, m)


@functools.lru_cache(maxsize=64)
def _random_layout(count: int, block: int, seed: int, n: int, m: int) -> BlockSparse:
    nb, mb = max(1, -(-n // block)), max(1, -(-m // block))
    rows = []
    for qb in range(nb):
        chosen = set(random.Random(f"{seed}:{qb}:{mb}").sample(range(mb), min(count, mb)))
        rows.append(tuple(kb in chosen for kb in range(mb)))
    return BlockSparse(tuple(rows), block)
