"""Shared formatting for the lessons: JSON-safe numbers, vectors, small tables, PNG output (internal)."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tokenloom._atomic import atomic_write
from tokenloom._plot import png_bytes, pyplot

__all__ = ["figure", "jsonable", "num", "table", "vec", "write_png"]


def jsonable(x: Any) -> Any:
    """Tensors and nested sequences → lists of floats; non-finite floats → ``"nan"``/``"inf"``/``"-inf"``."""
    if hasattr(x, "tolist"):
        x = x.tolist()
    if isinstance(x, dict):
        return {k: jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [jsonable(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    return x


def num(x: float | str, digits: int = 4) -> str:
    """One number with ``digits`` decimals (non-finite values spelled out)."""
    if isinstance(x, str):
        return x
    if not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    return f"{x:.{digits}f}"


def vec(values: Sequence[float | str], digits: int = 4) -> str:
    """``[1.3395, 1.3210]``."""
    return "[" + ", ".join(num(v, digits) for v in values) + "]"


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A right-aligned plain-text table."""
    cells = [[str(c) for c in header], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def write_png(fig: Any, path: str | os.PathLike[str]) -> Path:
    """Save a matplotlib figure atomically and close it."""
    return atomic_write(path, png_bytes(fig, dpi=120))


def figure(width: float = 5.0, height: float = 4.0) -> tuple[Any, Any]:
    """A new matplotlib figure and axes (Agg backend: no display needed)."""
    return pyplot().subplots(figsize=(width, height))
