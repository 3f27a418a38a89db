"""One process or DistributedDataParallel under ``torchrun``: joining, the device, sums, autocast.

Under ``torchrun`` (``WORLD_SIZE > 1``) :func:`join` starts the process group (gloo on CPU, nccl on
CUDA); :func:`leave` ends it. :func:`pick_device` gives ``cuda:LOCAL_RANK`` when CUDA is present (or the
device asked for), :func:`wrap` puts a module in DDP when there is more than one process,
:func:`sum_over` adds a few numbers over processes and :func:`autocast` is bf16 autocast or nothing.
"""

from __future__ import annotations

import contextlib
import gc
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
    from torch import nn

__all__ = ["autocast", "join", "leave", "pick_device", "sum_over", "wrap"]


def join() -> tuple[int, int, int]:
    """(rank, world, local_rank); joins the process group under torchrun."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return 0, 1, 0
    import torch
    import torch.distributed as dist

    if not dist.is_initialized():
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    return dist.get_rank(), world, int(os.environ.get("LOCAL_RANK", "0"))


def leave(world: int) -> None:
    """End the process group :func:`join` started (nothing in one process).

    Call it once the DDP-wrapped model is released: DDP keeps the group alive, and a gloo group first
    freed while the interpreter shuts down can abort the process (its threads outlive Python's).
    """
    if world > 1:
        import torch.distributed as dist

        if dist.is_initialized():
            gc.collect()  # modules in reference cycles still hold the group
            dist.destroy_process_group()


def pick_device(name: str, local_rank: int) -> torch.device:
    """``name`` ("auto": ``cuda:local_rank`` when CUDA is present, else cpu)."""
    import torch

    if name != "auto":
        return torch.device(name)
    return torch.device(f"cuda:{local_rank}" if torch.cuda.is_available() else "cpu")


def wrap(module: nn.Module, world: int, device: torch.device) -> Any:
    """``module`` itself in one process, in DistributedDataParallel otherwise."""
    if world <= 1:
        return module
    from torch.nn.parallel import DistributedDataParallel

    ids = [device.index] if device.type == "cuda" else None
    return DistributedDataParallel(module, device_ids=ids)


def sum_over(values: list[float], world: int, device: torch.device) -> list[float]:
    """Sum ``values`` over processes (the identity in one process)."""
    if world == 1:
        return values
    import torch
    import torch.distributed as dist

    t = torch.tensor(values, dtype=torch.float64, device=device)
    dist.all_reduce(t)
    return t.tolist()


def autocast(device: torch.device, enabled: bool) -> Any:
    """bf16 autocast on ``device`` when ``enabled``, else a context that does nothing."""
    if not enabled:
        return contextlib.nullcontext()
    import torch

    return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
