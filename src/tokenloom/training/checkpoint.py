"""Training checkpoints: everything a resumed run needs to continue exactly, written atomically.

A checkpoint holds the model, optimizer and scheduler states, the step (which fixes the epoch and the
position inside the epoch's sampler order), the CSV log rows so far, the training settings, the number of
processes that wrote it (``world``), the RNG states (torch CPU, CUDA when present, Python, NumPy) and an
``extra`` dict a trainer may add (counters such as tokens seen). Data order and sample randomness are
functions of (seed, epoch, index) and (seed, step), so no loader state is needed beyond the step. Written with
``torch.save`` into a temporary file renamed over ``checkpoint.pt``: an interrupted save leaves the
previous checkpoint. This module does not decide when to save.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tokenloom._atomic import atomic_open
from tokenloom.errors import ConfigError

if TYPE_CHECKING:
    from torch import nn

__all__ = ["CHECKPOINT_NAME", "load_checkpoint", "restore", "restore_rng", "rng_state", "save_checkpoint"]

CHECKPOINT_NAME = "checkpoint.pt"


def rng_state() -> dict[str, Any]:
    import torch

    state: dict[str, Any] = {
        "torch": torch.get_rng_state(),
        "python": random.getstate(),
        "numpy": np.random.get_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng(state: dict[str, Any]) -> None:
    import torch

    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def restore(state: dict[str, Any], *, model: nn.Module, optimizer: Any, scheduler: Any) -> None:
    """Put a loaded checkpoint's model, optimizer, schedule and random generators back in place."""
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    restore_rng(state["rng"])


def save_checkpoint(
    path: Path,
    *,
    model: nn.Module,
    optimizer: Any,
    scheduler: Any,
    step: int,
    log_rows: list[dict[str, Any]],
    settings: dict[str, Any],
    world: int,
    extra: dict[str, Any] | None = None,
) -> None:
    import torch

    state = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "step": step,
        "log": log_rows,
        "settings": settings,
        "world": world,
        "rng": rng_state(),
        "extra": dict(extra or {}),
    }
    with atomic_open(path) as f:
        torch.save(state, f)


def _check_layout(path: Path, state: dict[str, Any], batch: int, world: int) -> None:
    """Refuse a checkpoint written with another global batch or number of processes (one line each)."""
    fix = "or pass --allow-resize (allow_resize=True) to continue anyway, not exactly"
    old_batch = state.get("settings", {}).get("batch_size")
    if old_batch is not None and old_batch != batch:
        raise ConfigError(
            f"{path} was written with a global batch of {old_batch}, this run has {batch}: the data order "
            f"and the optimizer steps would not match the run it continues; resume with --batch-size "
            f"{old_batch}, {fix}"
        )
    old_world = state.get("world")  # absent in checkpoints written before it was recorded
    if old_world is not None and old_world != world:
        raise ConfigError(
            f"{path} was written by {old_world} process(es), this run has {world}: each process's share of "
            f"the batch, its mixing and the gradient reduction would not match the run it continues, so "
            f"the weights would differ; resume with {old_world} process(es), {fix}"
        )


def load_checkpoint(
    path: Path, settings: dict[str, Any], *, world: int, allow_resize: bool = False
) -> dict[str, Any]:
    """Read ``path``; refuse it when the settings that shape training differ from ``settings``, or when
    the global batch (``settings["batch_size"]``) or the number of processes ``world`` differ, unless
    ``allow_resize``."""
    import torch

    if not path.is_file():
        raise ConfigError(f"--resume: no checkpoint at {path}; run without --resume to start training")
    state = torch.load(path, map_location="cpu", weights_only=False)
    if not allow_resize:
        _check_layout(path, state, settings["batch_size"], world)
    old = state.get("settings", {})
    differ = sorted(k for k in settings if k != "batch_size" and old.get(k) != settings[k])
    if differ:
        raise ConfigError(
            f"{path} was written with different settings ({', '.join(differ)} differ); "
            "resume with the same options or start a new --out folder"
        )
    return state
