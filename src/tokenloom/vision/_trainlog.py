"""The ViT training log: per-interval throughput and input wait, per-epoch evaluation, a CSV and a PNG.

Each train row covers one log interval: ``images_per_s`` (global images over wall time), ``loss`` (mean
over the interval's steps), ``lr`` and ``data_wait`` (the fraction of the interval spent waiting for the
loader: near 1 means input-bound, near 0 compute-bound). Each eval row holds the held-out ``loss`` and
``top1``. ``train_log.csv`` is rewritten atomically at every interval; ``train_log.png`` draws loss and
accuracy against steps (the shared ``tokenloom.training.log``). This module neither trains nor evaluates.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tokenloom.training.log import plot_curves, write_csv

__all__ = ["LOG_COLUMNS", "format_row", "plot_log", "write_log"]

LOG_COLUMNS = ("kind", "step", "epoch", "loss", "top1", "lr", "images_per_s", "data_wait")


def format_row(row: dict[str, Any], total_steps: int) -> str:
    """One human line for ``row`` (printed by rank 0 unless quiet)."""
    if row["kind"] == "eval":
        return (
            f"eval  epoch {row['epoch']} step {row['step']}/{total_steps}: "
            f"loss {row['loss']:.4f}  top-1 {row['top1']:.2%}"
        )
    return (
        f"train epoch {row['epoch']} step {row['step']}/{total_steps}: loss {row['loss']:.4f}  "
        f"lr {row['lr']:.2e}  {row['images_per_s']:.1f} images/s  data wait {row['data_wait']:.0%}"
    )


def write_log(path: Path, rows: list[dict[str, Any]]) -> None:
    write_csv(path, rows, LOG_COLUMNS)


def plot_log(path: Path, rows: list[dict[str, Any]], *, title: str = "") -> Path:
    """Train and eval loss (left axis) and eval top-1 (right axis) against the step."""
    return plot_curves(path, rows, title=title, right=("top1", "top-1", (0, 1)))
