"""The ``Pattern`` interface: which keys each query may see, as a dense mask, as row intervals and as an edge count.

Every concrete pattern (:mod:`tokenloom.encoder.patterns`, :mod:`tokenloom.encoder._pattern_blocks`) implements
``spec``, ``_allowed`` (the element-wise rule on index tensors) and ``row_runs`` (the rule as key intervals);
the dense masks and the generic row-by-row edge count are derived here. Imports torch only inside ``mask``.

Shapes: ``N`` queries, ``M`` keys, ``bq``/``bk`` tile rows/columns.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

from tokenloom.encoder._pattern_tiles import Run, _size

if TYPE_CHECKING:
    import torch
    from torch import Tensor


class Pattern(ABC):
    """Which keys each query may attend (module docstring). Combine patterns with ``|`` (a key allowed
    by either) and ``&`` (a key allowed by both); ``&`` binds tighter, as in Python."""

    @property
    def block(self) -> int:
        """The tile size the ``tiled`` path uses for this pattern (its block size where it has one)."""
        return 128

    @abstractmethod
    def spec(self) -> str:
        """The pattern as the CLI spells it (``window:512``, ``global:2+window:64``, ``causal&window:64``)."""

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
        from tokenloom.encoder.patterns import Union  # the union kind is defined beside the other kinds

        return _combine(Union, self, other) if isinstance(other, Pattern) else NotImplemented

    def __and__(self, other: Pattern) -> Pattern:
        from tokenloom.encoder.patterns import Intersection

        return _combine(Intersection, self, other) if isinstance(other, Pattern) else NotImplemented

    def __str__(self) -> str:
        return self.spec()


def _combine(kind: Any, a: Pattern, b: Pattern) -> Pattern:
    """``kind`` (Union or Intersection) of ``a`` and ``b``, flattening operands that already are one."""
    return kind(tuple(part for p in (a, b) for part in (p.parts if isinstance(p, kind) else (p,))))
