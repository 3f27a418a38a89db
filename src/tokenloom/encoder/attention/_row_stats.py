"""The per-row softmax statistics a forward pass saves for its backward: ``max`` and ``log_sum``.

For each query row the forward keeps ``max`` (the row's largest score) and ``log_sum``
(``log Σ exp(s − max)``); the backward recomputes each weight as ``p = exp((s − max) − log_sum)``.

Why two numbers and not FlashAttention's single log-sum-exp ``lse = max + log_sum``: ``lse`` cannot be
held in one float when the row's max is large. A row whose additive bias is one large constant (−1e9,
or ``finfo(float32).min``, Hugging Face's padding value) has scores −1e9 + O(1); the fp32 spacing there
is 64, so ``max + log M`` rounds back to ``max`` and ``exp(s − lse)`` gives each of the M keys weight 1
instead of 1/M. ``s − max`` is exact for scores within a factor of two of the max (Sterbenz), so the
two-part form gives the reference's weights for any finite bias.

Rows that see no key have ``max = +inf`` and ``log_sum = 0``: ``p = exp(s − inf) = 0`` exactly, so
their gradients are zero and finite.

Shapes: the tiled path keeps ``[B, Hkv, G, N, 1]`` (grouped heads unfolded), the Triton path
``[B, H, N]`` (padded) or ``[H, T]`` (packed).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

__all__ = ["RowStats"]


@dataclass(frozen=True)
class RowStats:
    """``max`` and ``log_sum`` of every query row (module docstring); two tensors of one shape."""

    max: Tensor
    log_sum: Tensor

    @staticmethod
    def empty(shape: tuple[int, ...], dtype: torch.dtype, device: torch.device) -> RowStats:
        return RowStats(
            torch.empty(shape, dtype=dtype, device=device), torch.empty(shape, dtype=dtype, device=device)
        )

    def store(self, i0: int, i1: int, row_max: Tensor, row_sum: Tensor) -> None:
        """Write rows ``i0:i1`` from one folded tile's running max and sum ``[B*Hkv, G*bq, 1]``."""
        B, Hkv, G, _, one = self.max.shape
        alive = row_sum > 0
        tile_max = torch.where(alive, row_max, float("inf"))  # dead rows: +inf, so p = 0 in backward
        tile_log = torch.where(alive, torch.log(torch.where(alive, row_sum, 1.0)), 0.0)
        self.max[..., i0:i1, :] = tile_max.view(B, Hkv, G, i1 - i0, one)  # -> [B, Hkv, G, bq, 1]
        self.log_sum[..., i0:i1, :] = tile_log.view(B, Hkv, G, i1 - i0, one)
