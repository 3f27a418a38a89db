"""Launching a tokenloom command under ``torchrun`` from a test (shared by the ViT and language-model tests).

``--standalone`` lets torchrun pick a free rendezvous port itself: tests running at the same time (xdist
workers, two checkouts) never share one, so no run joins another's process group.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import tokenloom


def ddp_env() -> dict[str, str]:
    """The environment of a launched run: this checkout's package first, one thread per process."""
    src = str(Path(tokenloom.__file__).resolve().parents[1])
    return {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]),
            "OMP_NUM_THREADS": "1"}  # fmt: skip


def torchrun(*program: str, processes: int = 2) -> list[str]:
    """The command line running ``program`` (``-m tokenloom ...`` or a script and its arguments)."""
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(processes),
            *program]  # fmt: skip
