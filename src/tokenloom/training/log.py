"""The training log of any trainer: rows of dicts into a CSV, and a PNG of the loss curves.

Rows have a ``kind`` (``"train"`` per log interval, ``"eval"`` per evaluation), a ``step`` and a ``loss``;
other columns are the trainer's. :func:`write_csv` rewrites the file atomically (floats to 6 significant
digits, unknown keys dropped); :func:`plot_curves` draws train and held-out loss against the step, and
optionally one held-out metric on a right axis (matplotlib, imported on use).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tokenloom._atomic import atomic_write
from tokenloom._plot import png_bytes, pyplot

__all__ = ["plot_curves", "write_csv"]


def write_csv(path: Path, rows: list[dict[str, Any]], columns: Sequence[str]) -> None:
    """``rows`` as a CSV with ``columns`` (missing values empty), written atomically."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(columns), extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in row.items()})
    atomic_write(path, buf.getvalue())


def plot_curves(
    path: Path,
    rows: list[dict[str, Any]],
    *,
    title: str = "",
    x: str = "step",
    right: tuple[str, str, tuple[float, float] | None] | None = None,
) -> Path:
    """Train and eval loss (left axis) against ``x``; ``right = (key, label, limits)``: an eval metric."""
    plt = pyplot()
    train = [r for r in rows if r["kind"] == "train"]
    evals = [r for r in rows if r["kind"] == "eval"]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot([r[x] for r in train], [r["loss"] for r in train], label="train loss")
    ax.plot([r[x] for r in evals], [r["loss"] for r in evals], "o-", label="held-out loss")
    ax.set_xlabel(x.replace("_", " "))
    ax.set_ylabel("loss")
    handles, labels = ax.get_legend_handles_labels()
    if right is not None:
        key, label, limits = right
        other = ax.twinx()
        other.plot([r[x] for r in evals], [r[key] for r in evals], "s--", color="tab:green", label=label)
        other.set_ylabel(f"held-out {label}")
        if limits is not None:
            other.set_ylim(*limits)
        more = other.get_legend_handles_labels()
        handles, labels = handles + more[0], labels + more[1]
    ax.legend(handles, labels, loc="upper right")
    ax.set_title(title)
    atomic_write(path, png_bytes(fig, dpi=100))
    return path
