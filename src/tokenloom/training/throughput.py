"""Model FLOP utilisation: the FLOPs a cost model counts for the work done, over time, over a chip's peak.

:data:`PEAK_TFLOPS` holds dense bf16 peaks by device name (vendor data sheets, without sparsity);
:func:`peak_flops` looks one up for a device (0 when unknown, e.g. a CPU); :func:`mfu` is
``flops / seconds / peak`` (None without a peak).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

__all__ = ["PEAK_TFLOPS", "mfu", "peak_flops"]

PEAK_TFLOPS = {"H200": 989.0, "H100": 989.0, "A100": 312.0, "L40S": 362.0, "A10": 125.0, "4090": 165.0}


def peak_flops(device: torch.device) -> float:
    """Dense bf16 peak FLOP/s of ``device`` by its CUDA name; 0.0 when unknown (CPUs, other chips)."""
    import torch

    if device.type != "cuda" or not torch.cuda.is_available():
        return 0.0
    name = torch.cuda.get_device_name(device)
    return next((v * 1e12 for k, v in PEAK_TFLOPS.items() if k in name), 0.0)


def mfu(flops: float, seconds: float, peak: float) -> float | None:
    """``flops / seconds / peak``: the share of the chip's peak the counted work used (None: no peak)."""
    if peak <= 0 or seconds <= 0:
        return None
    return flops / seconds / peak
