"""PNG charts of the cost tables: terms across sequence lengths, and per-language costs.

Draws with matplotlib (imported inside each function, Agg backend, no display needed) and writes the file
atomically. It computes nothing itself: the rows come from :mod:`tokenloom.costs.tables`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tokenloom._atomic import atomic_write
from tokenloom._plot import png_bytes, pyplot

if TYPE_CHECKING:
    import pandas as pd

    from tokenloom.costs.tables import SweepRow

__all__ = ["plot_languages", "plot_pattern_sweep", "plot_sweep"]


def _figure(ncols: int, width: float, height: float):
    return pyplot().subplots(1, ncols, figsize=(width, height))


def _save(fig, path: str | os.PathLike[str], *, bottom: float = 0.0) -> Path:
    return atomic_write(path, png_bytes(fig, dpi=120, bottom=bottom))


def plot_sweep(rows: Sequence[SweepRow], path: str | os.PathLike[str], *, title: str = "") -> Path:
    """Log-log chart of each cost term against N: FLOPs (∝ N and ∝ N²) left, memory (∝ N², ∝ N) right."""
    fig, (ax_f, ax_m) = _figure(2, 11, 4.2)
    rows = sorted(rows, key=lambda r: r.seq_len)  # lines over N, whatever order the table used
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
    return _save(fig, path)


def plot_pattern_sweep(
    lengths: Sequence[int], edges: dict[str, list[int]], path: str | os.PathLike[str], *, title: str = ""
) -> Path:
    """Log-log chart of each attention pattern's edges against N (dense grows as N², a window as N·w)."""
    fig, ax = _figure(1, 6.5, 4.2)
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    n = [lengths[i] for i in order]
    for spec, values in edges.items():
        ax.plot(n, [values[i] for i in order], "o-", label=spec)
    ax.set(xscale="log", yscale="log", xlabel="sequence length N", ylabel="allowed query-key pairs (edges)")
    ax.set_xscale("log", base=2)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    if title:
        ax.set_title(title, fontsize=10)
    return _save(fig, path)


def plot_languages(frame: pd.DataFrame, path: str | os.PathLike[str], *, title: str = "") -> Path:
    """Bars per language, one panel per tokenizer: KV-cache ratio (∝ p), encoder FLOPs, attention FLOPs (≈ p²).

    The x axis is logarithmic when a ratio exceeds 10 (an English-only tokenizer on other scripts).
    """
    data = frame.dropna(subset=["premium"])
    tokenizers = sorted(data["tokenizer"].unique())
    rows = max(len(data[data["tokenizer"] == t]) for t in tokenizers) if tokenizers else 1
    fig, axes = _figure(len(tokenizers) or 1, 4.8 * max(1, len(tokenizers)), max(3.0, 0.3 * rows + 1.4))
    axes = [axes] if not hasattr(axes, "__len__") else list(axes)
    log = bool(len(data)) and float(data["attention_flops_ratio"].max()) > 10
    bars = (("kv_cache_ratio", "KV cache (∝ p)"), ("encoder_flops_ratio", "encoder FLOPs"),
            ("attention_flops_ratio", "attention FLOPs (≈ p²)"))  # fmt: skip
    for ax, tok in zip(axes, tokenizers, strict=False):
        sub = data[data["tokenizer"] == tok]
        y = list(range(len(sub)))
        for k, (column, label) in enumerate(bars):
            ax.barh([i + (k - 1) * 0.27 for i in y], sub[column], height=0.27, label=label)
        ax.axvline(1.0, color="k", lw=0.8)
        ax.set_yticks(y, list(sub["lang"]), fontsize=7)
        ax.invert_yaxis()
        if log:
            ax.set_xscale("log")
        ax.set_xlabel("cost ÷ pivot's, same content")
        ax.set_title(str(tok), fontsize=9)
        ax.grid(True, axis="x", which="both", alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8, frameon=False)
    if title:
        fig.suptitle(title, fontsize=10)
    return _save(fig, path, bottom=min(0.12, 0.4 / fig.get_figheight()))
