"""Whole batches read from token shards' memory maps with a few array operations, no per-sample Python.

- :class:`WindowReader`: each shard's tokens seen as a ``[windows, N + 1]`` array (a reshape of the
  memory map, no copy). A batch of windows is one fancy index per shard when it reads many rows from
  each (:data:`GROUP_ROWS` on average), else the rows' views concatenated in one copy and cast, so a
  batch spread over many shards costs about what one over a few does.
- :class:`RowReader`: packed rows of a :class:`~tokenloom.tokens.packing.RowPlan` per shard. When every
  document is kept, a row's tokens are one run of its shard (the plan keeps the stored order): rows of a
  sliding ``[T - N + 1, N]`` view of each memory map, read as windows are, padding zeroed after. With a
  language filter, every token's place comes from ``np.repeat`` over the batch's pieces, and each shard
  is read with one fancy index over its pieces' tokens. Segment ids and restarting positions are
  ``np.repeat`` over the pieces too.

Both return a batch as a dict of ``int64`` arrays (``B`` = batch, ``N`` = ``seq_len``); indices are valid
sample numbers.
What it does not do: order samples or plan rows (``dataset.py``, ``packing.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tokenloom.tokens.packing import RowPlan, plan_rows

__all__ = ["GROUP_ROWS", "RowReader", "WindowReader"]

GROUP_ROWS = 16  # rows a shard, on average, for a batch to be read shard by shard rather than row by row


def _starts(counts: np.ndarray) -> np.ndarray:
    """Exclusive cumulative sum: where each of ``counts``' runs starts."""
    return np.cumsum(counts) - counts


def _ranges(first: np.ndarray, count: np.ndarray) -> np.ndarray:
    """``first[i] .. first[i] + count[i] - 1`` for every ``i``, concatenated."""
    total = int(count.sum())
    return np.repeat(first - _starts(count), count) + np.arange(total)


def _groups(shard: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """(shard, the batch positions reading from it) for every shard a batch touches."""
    order = np.argsort(shard, kind="stable")  # [B]
    ordered = shard[order]
    cuts = (np.flatnonzero(ordered[1:] != ordered[:-1]) + 1).tolist()
    return [(int(ordered[a]), order[a:b]) for a, b in zip([0, *cuts], [*cuts, len(order)], strict=True)]


def _gather(views: Sequence[np.ndarray], shard: np.ndarray, local: np.ndarray, width: int) -> np.ndarray:
    """``int64 [B, width]``: row ``local[i]`` of ``views[shard[i]]`` (each view ``[rows, width]``). One
    fancy index per shard when the batch reads at least :data:`GROUP_ROWS` rows a shard on average, else
    the rows' views concatenated in one copy and cast (a batch over many shards costs no more than over
    a few)."""
    b = len(shard)
    if b == 0:
        return np.empty((0, width), dtype=np.int64)
    if len(views) == 1:
        return views[0][local].astype(np.int64)
    touched = np.count_nonzero(np.bincount(shard, minlength=len(views)))  # shards the batch reads
    if touched * GROUP_ROWS <= b:
        out = np.empty((b, width), dtype=np.int64)
        for s, at in _groups(shard):
            out[at] = views[s][local[at]]
        return out
    rows = [views[s][i] for s, i in zip(shard.tolist(), local.tolist(), strict=True)]  # B views, no copy
    return np.concatenate(rows, dtype=np.int64).reshape(b, width)


class WindowReader:
    """Consecutive windows of ``width`` tokens of each shard, numbered shard after shard."""

    def __init__(self, tokens: Sequence[np.ndarray], width: int) -> None:
        self.width = width
        counts = [len(t) // width for t in tokens]
        self.views = [
            np.asarray(t[: n * width]).reshape(n, width) for t, n in zip(tokens, counts, strict=True)
        ]
        self.offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)  # [S + 1]

    def __len__(self) -> int:
        return int(self.offsets[-1])

    def batch(self, idx: np.ndarray) -> dict[str, np.ndarray]:
        """``input_ids [B, width]`` int64: the windows numbered ``idx``."""
        shard = np.searchsorted(self.offsets, idx, side="right") - 1  # [B]
        return {"input_ids": _gather(self.views, shard, idx - self.offsets[shard], self.width)}


class RowReader:
    """Packed rows of ``seq_len`` tokens, numbered shard after shard (see the module docstring)."""

    def __init__(
        self,
        tokens: Sequence[np.ndarray],
        doc_starts: Sequence[np.ndarray],
        plans: Sequence[RowPlan],
        seq_len: int,
        *,
        contiguous: bool,
    ) -> None:
        self.n, self.contiguous = seq_len, contiguous
        self.tokens = [np.asarray(t) for t in tokens]
        plans = list(plans) or [plan_rows(np.zeros(0, np.int64), seq_len)]  # no shards: no rows
        sizes = np.array([len(p.piece_len) for p in plans], dtype=np.int64)
        piece_base = _starts(sizes)
        self.row_shard = np.concatenate([np.full(p.rows, s, np.int64) for s, p in enumerate(plans)])  # [R]
        self.row_pieces = np.concatenate(
            [p.row_pieces[:-1] + b for p, b in zip(plans, piece_base, strict=True)] + [[sizes.sum()]]
        ).astype(np.int64)  # [R + 1]
        self.row_used = np.concatenate([p.row_used for p in plans]).astype(np.int64)  # [R]
        self.piece_len = np.concatenate([p.piece_len for p in plans]).astype(np.int64)  # [P]
        self.piece_col = np.concatenate([p.piece_col for p in plans]).astype(np.int64)  # [P]
        self.piece_src = np.concatenate(
            [
                d[p.piece_doc] + p.piece_start
                for d, p in zip(list(doc_starts) or [np.zeros(1, np.int64)], plans, strict=True)
            ]
        ).astype(np.int64)  # [P] first token's place in its shard
        # tiles: each row's pieces, then one padding tile (maybe empty); a row's tiles cover its N slots
        rows, pieces = len(self.row_used), len(self.piece_len)
        piece_row = np.repeat(np.arange(rows), np.diff(self.row_pieces))  # [P]
        self.row_tiles = self.row_pieces + np.arange(rows + 1)  # [R + 1]
        pad_tile = self.row_tiles[1:] - 1  # [R]
        self.tile_len = np.empty(pieces + rows, dtype=np.int64)  # [P + R]
        self.tile_seg = np.empty(pieces + rows, dtype=np.int64)  # [P + R] the piece's number in its row; -1
        self.tile_piece = np.full(pieces + rows, -1, dtype=np.int64)  # [P + R]
        real = np.arange(pieces) + piece_row  # [P] a piece's tile
        self.tile_len[real], self.tile_len[pad_tile] = self.piece_len, seq_len - self.row_used
        self.tile_seg[real], self.tile_seg[pad_tile] = np.arange(pieces) - self.row_pieces[piece_row], -1
        self.tile_piece[real] = np.arange(pieces)
        self.row_src = self.piece_src[self.row_pieces[:-1]]  # [R] a contiguous row's first token
        shard_len = np.array([len(t) for t in self.tokens] or [0], dtype=np.int64)[self.row_shard]  # [R]
        self.row_short = self.row_src + seq_len > shard_len  # [R] the last rows of a shard: no full slice
        self.slides = [
            np.lib.stride_tricks.sliding_window_view(t, seq_len)
            if len(t) >= seq_len
            else np.zeros((1, seq_len), t.dtype)
            for t in self.tokens
        ]  # [T - N + 1, N] views, no copy (a shard shorter than N: one row of zeros; its rows are short)
        self.slide_last = np.array([len(v) - 1 for v in self.slides] or [0], dtype=np.int64)  # [S]
        self._arange = np.zeros(0, dtype=np.int64)  # 0, 1, ... as long as the largest batch's slots

    def __len__(self) -> int:
        return len(self.row_used)

    def batch(self, idx: np.ndarray) -> dict[str, np.ndarray]:
        """``input_ids``, ``segment_ids`` (-1 on padding) and ``positions`` (0 on padding), ``[B, N]`` int64."""
        b, n = len(idx), self.n
        first = self.row_tiles[idx]  # [B]
        tiles = _ranges(first, self.row_tiles[idx + 1] - first)  # [Tb] the batch's tiles, row by row
        tile_len, tile_seg = self.tile_len[tiles], self.tile_seg[tiles]  # [Tb]
        segments = np.repeat(tile_seg, tile_len)  # [B * N]
        if len(self._arange) < b * n:
            self._arange = np.arange(b * n, dtype=np.int64)
        positions = np.repeat(_starts(tile_len), tile_len)  # [B * N] each slot's tile start
        np.subtract(self._arange[: b * n], positions, out=positions)
        used = self.row_used[idx]  # [B] a row's padding is its last N - used slots
        pad = _ranges(np.arange(b) * n + used, n - used)  # [padding slots] in [B * N]
        positions[pad] = 0
        ids = self._ids(idx, tiles, pad)  # [B * N]
        shape = (b, n)
        return {
            "input_ids": ids.reshape(shape),
            "segment_ids": segments.reshape(shape),
            "positions": positions.reshape(shape),
        }

    def _ids(self, idx: np.ndarray, tiles: np.ndarray, pad: np.ndarray) -> np.ndarray:
        b, n = len(idx), self.n
        shard = self.row_shard[idx]  # [B]
        if self.contiguous:
            start = self.row_src[idx]  # [B]
            first = np.minimum(start, self.slide_last[shard])  # [B] a short row's slice: fixed below
            out = _gather(self.slides, shard, first, n)  # [B, N]
            short = self.row_short[idx]  # [B]
            if short.any():
                for r in np.flatnonzero(short).tolist():  # a shard's last rows: read what is left
                    tail = self.tokens[int(shard[r])][start[r] :]
                    out[r, : len(tail)] = tail
            flat = out.reshape(-1)  # [B * N]
            flat[pad] = 0
            return flat
        flat = np.zeros(b * n, dtype=np.int64)  # [B * N]
        pieces = self.tile_piece[tiles]  # [Tb]
        pieces = pieces[pieces >= 0]  # [Pb] the batch's pieces, row by row
        if not len(pieces):
            return flat
        row = np.repeat(np.arange(b), self.row_pieces[idx + 1] - self.row_pieces[idx])  # [Pb]
        groups = _groups(shard[row])  # (shard, its pieces) for every shard the batch reads
        if len(groups) > 1:  # the pieces shard by shard, so each shard's tokens are one run
            by_shard = np.concatenate([at for _, at in groups])  # [Pb]
            pieces, row = pieces[by_shard], row[by_shard]
        lens = self.piece_len[pieces]  # [Pb]
        begin = _starts(lens)  # [Pb] each piece's first token among the batch's
        offset = np.arange(int(lens.sum())) - np.repeat(begin, lens)  # [T_b] token within piece
        dest = np.repeat(row * n + self.piece_col[pieces], lens) + offset  # [T_b]
        src = np.repeat(self.piece_src[pieces], lens) + offset  # [T_b]
        ends = np.append(begin, len(offset))  # [Pb + 1] token bounds of the pieces
        first = 0
        for s, at in groups:
            t0, t1 = int(ends[first]), int(ends[first + len(at)])  # shard s's tokens
            flat[dest[t0:t1]] = self.tokens[s][src[t0:t1]]
            first += len(at)
        return flat
