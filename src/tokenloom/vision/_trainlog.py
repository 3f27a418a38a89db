"""The training log: per-interval throughput and input wait, per-epoch evaluation, a CSV and a PNG.

Each train row covers one log interval: ``images_per_s`` (global images over wall time), ``loss`` (mean
over the interval's steps), ``lr`` and ``data_wait`` (the fraction of the interval spent waiting for the
loader: near 1 means input-bound, near 0 compute-bound). Each eval row holds the held-out ``loss`` and
``top1``. ``train_log.csv`` is rewritten atomically at every interval; ``train_log.png`` draws loss and
accuracy against steps (matplotlib, imported on use). This module neither trains nor evaluates.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from tokenloom._atomic import atomic_write

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
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(LOG_COLUMNS), extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in row.items()})
    atomic_write(path, buf.getvalue())


def plot_log(path: Path, rows: list[dict[str, Any]], *, title: str = "") -> Path:
    """Train and eval loss (left axis) and eval top-1 (right axis) against the step."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    train = [r for r in rows if r["kind"] == "train"]
    evals = [r for r in rows if r["kind"] == "eval"]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot([r["step"] for r in train], [r["loss"] for r in train], label="train loss")
    ax.plot([r["step"] for r in evals], [r["loss"] for r in evals], "o-", label="held-out loss")
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    acc = ax.twinx()
    acc.plot([r["step"] for r in evals], [r["top1"] for r in evals], "s--", color="tab:green", label="top-1")
    acc.set_ylabel("held-out top-1")
    acc.set_ylim(0, 1)
    lines = ax.get_legend_handles_labels()
    more = acc.get_legend_handles_labels()
    ax.legend(lines[0] + more[0], lines[1] + more[1], loc="upper right")
    ax.set_title(title)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    atomic_write(path, buf.getvalue())
    return path
