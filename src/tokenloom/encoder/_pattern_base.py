"""The ``Pattern`` interface and its algebra: ``Dense`` (every pair), ``Union`` (``|``) and ``Intersection`` (``&``).

A pattern says which keys each query may see, as a dense mask, as row intervals and as an edge count. Every
concrete pattern (here, :mod:`tokenloom.encoder._pattern_kinds`, :mod:`tokenloom.encoder._pattern_blocks`)
implements ``spec``, ``_allowed`` (the element-wise rule on index tensors) and ``row_runs`` (the rule as key
intervals); the dense masks and the generic row-by-row edge count are derived here. All of them are
re-exported by :mod:`tokenloom.encoder.patterns`. Imports torch only inside ``mask``.

Shapes: ``N`` queries, ``M`` keys, ``bq``/``bk`` tile rows/columns.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tokenloom.encoder._pattern_tiles import Run, check_size, intersect_runs, merge_runs

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
        n, m = check_size("n", n), check_size("m", n if m is None else m)
        return sum(b - a for i in range(n) for a, b in self.row_runs(i, n, m))

    def mask(self, n: int, m: int | None = None, *, device: torch.device | str | None = None) -> Tensor:
        """Dense ``[N, M]`` bool mask, True = may attend."""
        n, m = check_size("n", n), check_size("m", n if m is None else m)
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
        return _combine(Union, self, other) if isinstance(other, Pattern) else NotImplemented

    def __and__(self, other: Pattern) -> Pattern:
        return _combine(Intersection, self, other) if isinstance(other, Pattern) else NotImplemented

    def __str__(self) -> str:
        return self.spec()


def _combine(kind: Any, a: Pattern, b: Pattern) -> Pattern:
    """``kind`` (Union or Intersection) of ``a`` and ``b``, flattening operands that already are one."""
    return kind(tuple(part for p in (a, b) for part in (p.parts if isinstance(p, kind) else (p,))))


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
        return check_size("n", n) * check_size("m", n if m is None else m)


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
        return merge_runs([run for part in self.parts for run in part.row_runs(i, n, m)])

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
            runs = intersect_runs(runs, part.row_runs(i, n, m))
        return runs

    def edges(self, n: int, m: int | None = None) -> int:
        rest = tuple(p for p in self.parts if not isinstance(p, Dense))  # dense allows every key
        if len(rest) <= 1:
            return (rest[0] if rest else Dense()).edges(n, m)
        return super().edges(n, m)
