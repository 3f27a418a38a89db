"""Tile geometry of one tiled-attention call: which key tiles each query tile visits, and where the causal
diagonal and a sparse pattern's partial tiles need per-element masks.

Without a pattern a query tile visits the key tiles of ``_common.key_range`` (causal, window) below the
key limit, one ``block_k`` tile at a time. With a pattern the tiles come from
``tokenloom.encoder.patterns.tile_layout``, consecutive ones merged into spans (one product per span) and
only their partial tiles masked. Used by the forward and the backward of ``tiled``.

Shapes: ``N`` queries, ``M`` keys, ``bq``/``bk`` tile rows/columns.
"""

from __future__ import annotations

import torch
from torch import Tensor

from tokenloom.encoder.attention._common import Dims, key_range
from tokenloom.encoder.patterns import Pattern, tile_layout

__all__ = ["TilePlan"]


class TilePlan:
    """Tile geometry of one call: which key tiles each query tile visits, and where causal cuts."""

    def __init__(
        self,
        dims: Dims,
        causal: bool,
        block_q: int,
        block_k: int,
        window: tuple[int, int] | None = None,
        key_limit: int | None = None,
        pattern: Pattern | None = None,
    ) -> None:
        self.dims, self.causal, self.bq, self.bk = dims, causal, block_q, block_k
        self.window = window
        self.key_limit = dims.M if key_limit is None else min(dims.M, key_limit)  # no key at or past it
        self.offset = dims.M - dims.N  # query i sits at absolute position i + offset
        self.n_k_tiles = -(-dims.M // block_k)
        self.pattern = pattern
        # pattern hook: per query tile, the key tiles holding an allowed pair, merged into contiguous spans
        # (one product per span, fewer and larger products) with the partial tiles that need a per-element mask
        self.spans: list[dict[int, tuple[int, list[int]]]] | None = None
        self.max_cols = min(block_k, dims.M)  # widest key span of one product
        if pattern is not None:
            self.spans = [
                _spans(row, block_k, dims.M) for row in tile_layout(pattern, dims.N, dims.M, block_q, block_k)
            ]
            self.max_cols = max([j1 - j0 for row in self.spans for j0, (j1, _) in row.items()], default=1)

    def q_tiles(self) -> range:
        return range(0, self.dims.N, self.bq)

    def k_tiles(self, i0: int, i1: int) -> range | list[int]:
        """Start of every key tile (with a pattern: key span) the query tile ``i0:i1`` visits."""
        lo, hi = key_range(i0, i1, self.dims.N, self.dims.M, causal=self.causal, window=self.window)
        hi = min(hi, self.key_limit)
        if self.spans is not None:  # pattern hook: only the key spans the pattern allows
            return [j0 for j0 in self.spans[i0 // self.bq] if j0 < hi and self.k_end(i0, j0) > lo]
        return range(lo - lo % self.bk, hi, self.bk)

    def k_end(self, i0: int, j0: int) -> int:
        """End of the key tile (or, with a pattern, of the key span) starting at ``j0``."""
        if self.spans is not None:
            return self.spans[i0 // self.bq][j0][0]
        return min(j0 + self.bk, self.dims.M)

    def pattern_tiles(self, i0: int, i1: int, j0: int, device: torch.device) -> list[tuple[int, int, Tensor]]:
        """Pattern hook: ``(a, b, mask [bq, b - a])`` for each partial tile ``a:b`` of the span at ``j0``."""
        if self.pattern is None or self.spans is None:
            return []
        d = self.dims
        return [
            (
                a,
                min(a + self.bk, d.M),
                self.pattern.mask_tile(i0, i1, a, min(a + self.bk, d.M), n=d.N, m=d.M, device=device),
            )
            for a in self.spans[i0 // self.bq][j0][1]
        ]

    def tile_index(self, i0: int, j0: int) -> int:
        return (i0 // self.bq) * self.n_k_tiles + j0 // self.bk

    def needs_causal(self, i0: int, j1: int) -> bool:
        """Whether the tile crosses the causal diagonal (tiles wholly below it need no causal mask)."""
        return self.causal and j1 - 1 > i0 + self.offset


def _spans(row: tuple[tuple[int, bool], ...], block_k: int, m: int) -> dict[int, tuple[int, list[int]]]:
    """Pattern hook: consecutive key tiles ``(j0, partial)`` of one query tile merged into spans
    ``j0 -> (j1, starts of its partial tiles)``."""
    spans: dict[int, tuple[int, list[int]]] = {}
    start = -1
    for j0, partial in row:
        if not (start >= 0 and spans[start][0] == j0):
            start = j0
            spans[start] = (j0, [])
        spans[start] = (min(j0 + block_k, m), spans[start][1] + ([j0] if partial else []))
    return spans
