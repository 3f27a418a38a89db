"""Matplotlib for files: the Agg backend (no display needed) and a figure rendered to PNG bytes, then closed.

Every chart the package writes goes through these two functions; matplotlib is imported on first use.
"""

from __future__ import annotations

import io
from typing import Any

__all__ = ["png_bytes", "pyplot"]


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend (unless the caller chose another one already)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def png_bytes(fig: Any, *, dpi: int = 90, bottom: float = 0.0) -> bytes:
    """``fig`` laid out tightly (``bottom``: the share of the height kept free for a figure legend), as PNG
    bytes at ``dpi``; the figure is closed."""
    fig.tight_layout(rect=(0, bottom, 1, 1))
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    pyplot().close(fig)
    return buf.getvalue()
