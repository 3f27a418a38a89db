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
It does not run attention (see ``tokenloom.encoder.attention``). Every public name is importable from here;
the code lives in leaf modules this one re-exports: the ``Pattern`` interface, ``Dense``, ``Union`` and
``Intersection`` in ``_pattern_base``, the single-rule kinds and the builders in ``_pattern_kinds``, the block
patterns in ``_pattern_blocks``, interval arithmetic and ``tile_layout`` in ``_pattern_tiles``, the CLI
spelling in :mod:`tokenloom.encoder.pattern_specs`.

Shapes: ``N`` queries, ``M`` keys, ``bq``/``bk`` tile rows/columns.
"""

from __future__ import annotations

from tokenloom.encoder._pattern_base import Dense, Intersection, Pattern, Union
from tokenloom.encoder._pattern_blocks import BlockSparse, RandomBlocks
from tokenloom.encoder._pattern_kinds import (
    Causal,
    GlobalTokens,
    Strided,
    Window,
    bigbird,
    block_sparse,
    causal,
    dense,
    global_tokens,
    strided,
    window,
)
from tokenloom.encoder._pattern_tiles import tile_layout
from tokenloom.encoder.pattern_specs import parse_pattern, parse_patterns

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
