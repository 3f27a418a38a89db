"""PNG charts of the cost tables: terms across sequence lengths, and per-language costs.

Draws with matplotlib (imported inside each function, Agg backend, no display needed) and writes the file
atomically. It computes nothing itself: the rows come from :mod:`tokenloom._costs_tables`.
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tokenloom._atomic import atomic_write

if TYPE_CHECKING:
    import pandas as pd

    from tokenloom._costs_tables import SweepRow

__all__ = ["plot_languages", "plot_sweep"]


def _figure(ncols: int, width: float, height: float):
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt, *plt.subplots(1, ncols, figsize=(width, height))


def _save(plt, fig, path: str | os.PathLike[str]) -> Path:
    buffer = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buffer, format="png", dpi=120)
    plt.close(fig)
    return atomic_write(path, buffer.getvalue())


def plot_sweep(rows: Sequence[SweepRow], path: str | os.PathLike[str], *, title: str = "") -> Path:
    """Log-log chart of each cost term against N: FLOPs (∝ N and ∝ N²) left, memory (∝ N², ∝ N) right."""
    plt, fig, (ax_f, ax_m) = _figure(2, 11, 4.2)
    n = [r.seq_len for r in rows]
    ax_f.plot(n, [r.linear_flops for r in rows], "o-", label="projections + MLP (∝ N)")
    ax_f.plot(n, [r.attention_flops for r in rows], "s-", label="QKᵀ + PV (∝ N²)")
    ax_f.plot(n, [r.total_flops for r in rows], "k--", label="total forward")
    ax_f.set(xscale="log", yscale="log", xlabel="sequence length N", ylabel="forward FLOPs (all layers)")
    ax_m.plot(n, [r.score_bytes for r in rows], "s-", label="score matrix, one layer (∝ N²)")
    ax_m.plot(n, [r.kv_cache_bytes for r in rows], "o-", label="KV cache, all layers (∝ N)")
    ax_m.set(xscale="log", yscale="log", xlabel="sequence length N", ylabel="bytes")
    for ax in (ax_f, ax_m):
        ax.set_xscale("log", base=2)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    return _save(plt, fig, path)


def plot_languages(frame: pd.DataFrame, path: str | os.PathLike[str], *, title: str = "") -> Path:
    """Bar chart per language: token premium, KV-cache ratio (∝ p) and attention-FLOPs ratio (≈ p²)."""
    data = frame.dropna(subset=["premium"])
    label = data["lang"] if data["tokenizer"].nunique() == 1 else data["tokenizer"] + " " + data["lang"]
    height = max(3.0, 0.28 * len(data) + 1.2)
    plt, fig, ax = _figure(1, 9, height)
    y = range(len(data))
    ax.barh([i + 0.27 for i in y], data["attention_flops_ratio"], height=0.27, label="attention FLOPs (≈ p²)")
    ax.barh(list(y), data["encoder_flops_ratio"], height=0.27, label="encoder FLOPs")
    ax.barh([i - 0.27 for i in y], data["kv_cache_ratio"], height=0.27, label="KV cache (∝ p)")
    ax.axvline(1.0, color="k", lw=0.8)
    ax.set_yticks(list(y), list(label), fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("cost relative to the pivot for the same content")
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(True, axis="x", alpha=0.3)
    if title:
        ax.set_title(title, fontsize=9)
    return _save(plt, fig, path)
