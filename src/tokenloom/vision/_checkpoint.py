"""Training checkpoints: everything a resumed run needs to continue exactly, written atomically.

A checkpoint holds the model, optimizer and scheduler states, the step (which fixes the epoch and the
position inside the epoch's sampler order), the CSV log rows so far, the training settings, and the RNG
states (torch CPU, CUDA when present, Python, NumPy). Sample augmentations and batch mixing are seeded from
(seed, epoch, index) and (seed, step), so no loader state is needed beyond the step. Written with
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

__all__ = ["CHECKPOINT_NAME", "load_checkpoint", "restore_rng", "rng_state", "save_checkpoint"]

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


def save_checkpoint(
    path: Path,
    *,
    model: nn.Module,
    optimizer: Any,
    scheduler: Any,
    step: int,
    log_rows: list[dict[str, Any]],
    settings: dict[str, Any],
) -> None:
    import torch

    state = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "step": step,
        "log": log_rows,
        "settings": settings,
        "rng": rng_state(),
    }
    with atomic_open(path) as f:
        torch.save(state, f)


def load_checkpoint(path: Path, settings: dict[str, Any]) -> dict[str, Any]:
    """Read ``path``; refuse it when the settings that shape training differ from ``settings``."""
    import torch

    if not path.is_file():
        raise ConfigError(f"--resume: no checkpoint at {path}; run without --resume to start training")
    state = torch.load(path, map_location="cpu", weights_only=False)
    old = state.get("settings", {})
    differ = sorted(k for k in settings if old.get(k) != settings[k])
    if differ:
        raise ConfigError(
            f"{path} was written with different settings ({', '.join(differ)} differ); "
            "resume with the same options or start a new --out folder"
        )
    return state
