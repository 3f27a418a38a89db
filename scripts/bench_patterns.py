"""Benchmark: sparse patterns on the tiled path against dense tiled attention, on CPU.

    flock /work/bench.lock python scripts/bench_patterns.py [--n 16384] [--check-n 2048] [--markdown]

B=1, H=``--heads``, D=``--head-dim``, fp32, forward only (no grad). For each pattern (default: a 512-key
sliding window and BigBird with a 192-key window, 128 global tokens and 3 random 64-blocks per query block):

- time of ``tiled`` attention with **no** pattern (all N² work: the dense baseline), and with the pattern
  (only the tiles its layout lists); the ratio is the speed-up;
- FLOPs of both, counted over the tile products the tiled path computed (``last_tile_flops()``; the tests
  check that counter against ``torch.utils.flop_counter.FlopCounterMode``), against the pattern's exact
  edge count × 4·D·H (``tokenloom.costs.attention_edges``);
- correctness: the largest difference to ``reference`` attention with the pattern's dense mask, at
  ``--check-n`` (the reference materializes H·N² fp32 scores: 2 GiB per head at 16k, so it is checked on the
  smaller N), and at N to the dense tiled path given the same dense mask (all N² work, same result).

Targets: at N=16k the window is ≥ 8× and BigBird ≥ 4× faster than dense tiled. After a warm-up, ``--repeat``
paired rounds each time dense tiled and every pattern back to back; the speed-up is the median of the
per-round ratios (robust to background load that drifts between rounds; timings on a shared machine are
noisy). ``--markdown`` prints the table as Markdown with machine and date.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import statistics
import time

import torch

from tokenloom.costs import attention_edges
from tokenloom.encoder.attention import attention, last_impl
from tokenloom.encoder.attention.tiled import last_tile_flops, tiled_attention
from tokenloom.encoder.patterns import Pattern, parse_patterns


def _timed(fn) -> tuple[torch.Tensor, float, int]:  # type: ignore[no-untyped-def]
    """Output, seconds and counted tile FLOPs of one call."""
    start = time.perf_counter()
    out = fn()
    seconds = time.perf_counter() - start
    flops = last_tile_flops()
    assert flops is not None
    return out, seconds, flops


def _inputs(n: int, heads: int, dim: int) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    return [torch.randn(1, heads, n, dim, generator=gen) for _ in range(3)]


def _check_small(pattern: Pattern, n: int, heads: int, dim: int) -> float:
    q, k, v = _inputs(n, heads, dim)
    ours = attention(q, k, v, pattern=pattern, impl="tiled")
    assert last_impl() == "tiled"
    ref = attention(q, k, v, pattern.mask(n), impl="reference")
    return float((ours - ref).abs().max())


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=16384, help="sequence length N (default 16384)")
    parser.add_argument("--check-n", type=int, default=2048, help="N of the check against reference")
    parser.add_argument("--heads", type=int, default=2, help="heads H (default 2)")
    parser.add_argument("--head-dim", type=int, default=64, help="head width D (default 64)")
    parser.add_argument(
        "--patterns", default="window:512,bigbird:192,128,3", help="comma-separated pattern specs"
    )
    parser.add_argument("--repeat", type=int, default=5, help="paired timing rounds (default 5)")
    parser.add_argument("--no-dense-check", action="store_true", help="skip the dense-mask tiled run at N")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    args = parser.parse_args()
    n, h, d = args.n, args.heads, args.head_dim
    patterns = parse_patterns(args.patterns)

    with torch.no_grad():
        tiled_attention(*_inputs(256, h, d))  # warm-up
        q, k, v = _inputs(n, h, d)
        for pattern in patterns:  # warm-up: builds and caches each pattern's tile layout
            attention(q, k, v, pattern=pattern, impl="tiled")
        # paired rounds: dense and every pattern back to back, so that each ratio compares runs made under
        # the same background load; the speed-up reported is the median of the per-round ratios
        dense_times: list[float] = []
        times: dict[str, list[float]] = {p.spec(): [] for p in patterns}
        ratios: dict[str, list[float]] = {p.spec(): [] for p in patterns}
        outs: dict[str, torch.Tensor] = {}
        flops_of: dict[str, int] = {}
        for _ in range(args.repeat):
            _, dense_s, dense_flops = _timed(lambda: tiled_attention(q, k, v))
            dense_times.append(dense_s)
            for pattern in patterns:
                spec = pattern.spec()
                outs[spec], seconds, flops_of[spec] = _timed(
                    lambda p=pattern: attention(q, k, v, pattern=p, impl="tiled")
                )
                times[spec].append(seconds)
                ratios[spec].append(dense_s / seconds)
        rows = []
        for pattern in patterns:
            spec = pattern.spec()
            out, seconds, flops = outs[spec], statistics.median(times[spec]), flops_of[spec]
            edges = attention_edges(pattern, n)
            small = _check_small(pattern, args.check_n, h, d)
            big = "—"
            if not args.no_dense_check:
                masked = tiled_attention(q, k, v, pattern.mask(n))  # all N² work, same answer
                big = f"{float((out - masked).abs().max()):.1e}"
            rows.append(
                (spec, seconds, statistics.median(ratios[spec]), flops, edges * 4 * d * h, small, big)
            )
    dense_s = statistics.median(dense_times)

    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")
    machine = (
        f"{platform.machine()}, {torch.get_num_threads()} torch threads, torch {torch.__version__}, {stamp}"
    )
    title = f"sparse patterns on the tiled path, N={n}, B=1, H={h}, D={d}, fp32 forward, CPU ({machine})"
    header = [
        "pattern",
        "tiled s (median)",
        "speed-up vs dense tiled (median of paired rounds)",
        "tile GFLOP",
        "edges·4·D·H GFLOP",
        f"max abs diff vs reference (N={args.check_n})",
        f"max abs diff vs dense-mask tiled (N={n})",
    ]
    table = [["dense (no pattern)", f"{dense_s:.2f}", "1.0×", f"{dense_flops / 1e9:.2f}", f"{4 * n * n * d * h / 1e9:.2f}", "—", "—"]]  # fmt: skip
    for spec, seconds, ratio, flops, edge_flops, small, big in rows:
        table.append([spec, f"{seconds:.2f}", f"{ratio:.1f}×", f"{flops / 1e9:.2f}",
                      f"{edge_flops / 1e9:.2f}", f"{small:.1e}", big])  # fmt: skip
    if args.markdown:
        print(f"{title}\n")
        print("| " + " | ".join(header) + " |")
        print("|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|")
        for row in table:
            print("| " + " | ".join(row) + " |")
    else:
        print(title)
        widths = [max(len(str(r[i])) for r in [header, *table]) for i in range(len(header))]
        for row in [header, *table]:
            print("  ".join(str(c).rjust(w) for c, w in zip(row, widths, strict=True)))


if __name__ == "__main__":
    main()
