"""Measured against modeled: attention's score memory and FLOPs, reference path vs SDPA, on CPU.

For each N (self-attention, B=1, H=8, D=64, fp32) it runs ``tokenloom.encoder.attention.attention`` with
``impl="reference"`` (explicit scores → softmax → @ v) and, side by side, ``impl="sdpa"`` (PyTorch's fused
kernel), and prints next to the cost model (``tokenloom.costs``):

- measured peak CPU memory allocated during the call (torch profiler, ``profile_memory=True``: allocations
  attributed to ops, frees as ``[memory]`` events, replayed in time order) vs ``score_bytes`` (B·H·N²·s);
- measured wall time (median of repeats, after a warm-up) vs ``attention_flops`` (4·B·H·N²·D), as achieved
  GFLOP/s, and the growth of time vs the growth of FLOPs from the smallest N.

The model counts arithmetic and the bytes a naive implementation materializes, not latency: the ratios show
how far each path is from it. Run it alone, under the shared lock:

    flock /tmp/tokenloom-bench.lock python scripts/bench_costs.py [--lengths 256,512,...]
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import statistics
import time

import torch
from torch.profiler import ProfilerActivity, profile

from tokenloom import costs
from tokenloom.encoder.attention import attention, last_impl


def format_table(header: list[str], rows: list[list[str]]) -> str:
    """Aligned text columns under a dashed rule: the first left-aligned, the others right-aligned."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [header, ["-" * w for w in widths], *rows]
    return "\n".join(
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths, strict=True))
        )
        for line in lines
    )


def peak_bytes(fn) -> int:
    """Peak CPU bytes allocated (net of frees) while ``fn()`` runs, from the profiler's memory events."""
    with torch.no_grad(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    events = sorted((e.time_range.start, e.self_cpu_memory_usage) for e in prof.events())
    current = peak = 0
    for _, delta in events:
        current += delta
        peak = max(peak, current)
    return peak


def median_seconds(fn, *, repeats: int) -> float:
    with torch.no_grad():
        fn()  # warm-up
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", default="256,512,1024,2048,4096", help="comma-separated N")
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--head-dim", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    lengths = [int(x) for x in args.lengths.split(",")]
    b, h, d = 1, args.heads, args.head_dim
    torch.manual_seed(0)
    print(
        f"machine: {platform.machine()} {os.cpu_count()} CPUs, torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads; B={b} H={h} D={d} fp32, self-attention (M = N)"
    )
    mem_rows, time_rows = [], []
    base: dict[str, tuple[float, int]] = {}
    for n in lengths:
        q, k, v = (torch.randn(b, h, n, d) for _ in range(3))
        model_bytes = costs.score_bytes(b, h, n, n, "fp32")
        flops = costs.attention_flops(b, h, n, n, d)
        peaks, secs = {}, {}
        for impl in ("reference", "sdpa"):
            call = functools.partial(attention, q, k, v, impl=impl)
            peaks[impl] = peak_bytes(call)
            assert last_impl() == impl, last_impl()
            secs[impl] = median_seconds(
                call, repeats=args.repeats if n <= 2048 else max(2, args.repeats // 2)
            )
            base.setdefault(impl, (secs[impl], flops))
        mem_rows.append([
            f"{n:,}", costs.format_bytes(model_bytes),
            costs.format_bytes(peaks["reference"]), f"{peaks['reference'] / model_bytes:.2f}",
            costs.format_bytes(peaks["sdpa"]), f"{peaks['sdpa'] / model_bytes:.3f}",
        ])  # fmt: skip
        row = [f"{n:,}", costs.format_count(flops)]
        for impl in ("reference", "sdpa"):
            t0 = base[impl][0]
            row += [f"{secs[impl] * 1e3:.1f}", f"{flops / secs[impl] / 1e9:.1f}", f"{secs[impl] / t0:.1f}"]
        row.append(f"{flops / base['reference'][1]:.0f}")
        row.append(f"{secs['reference'] / secs['sdpa']:.2f}")
        time_rows.append(row)

    print("\nscore memory: model B·H·N·M·s vs measured peak CPU allocation during one forward call")
    print(format_table(
        ["N", "model scores", "reference peak", "ref / model", "sdpa peak", "sdpa / model"], mem_rows
    ))  # fmt: skip
    print("\nFLOPs: model 4·B·H·N·M·D vs measured time (median); growth relative to the first N")
    print(format_table(
        ["N", "model FLOPs", "ref ms", "ref GFLOP/s", "ref time ×", "sdpa ms", "sdpa GFLOP/s", "sdpa time ×",
         "FLOPs ×", "ref / sdpa time"],
        time_rows,
    ))  # fmt: skip
    print(
        "\nreading: the reference path holds ~3 score-sized buffers at its peak (S, S − max, exp / weights), "
        "SDPA none;\nboth do the model's arithmetic, at different speeds: the model counts work, not latency."
    )


if __name__ == "__main__":
    main()
