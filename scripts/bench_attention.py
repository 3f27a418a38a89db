"""Benchmark: time and peak memory of the reference, SDPA and tiled attention paths on CPU.

    flock /tmp/tokenloom-bench.lock python scripts/bench_attention.py [--sizes 1024 4096 8192] [--big 32768]

B=1, H=8, D=64, fp32, forward only (no grad), causal=False, no mask. Each (path, N) case runs in a
**fresh subprocess** so peak memory is its own: the child allocates q, k, v, warms the path up on a
tiny input, records ``ru_maxrss`` as the baseline, times one call at size N, and reports the rise of
``ru_maxrss`` over the baseline ("peak extra memory": the scores, softmax buffers, tiles and the output).
The reference at N=32768 is not run (its scores alone would take 32 GiB); the tiled path is.

Targets: at N=8192 tiled peak extra memory ≥ 20× below reference; tiled ≤ 2× reference's
time; SDPA at least as fast as reference. One run per case: numbers on a shared machine are noisy.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

IMPLS = ("reference", "sdpa", "tiled")


def _child(impl: str, n: int, heads: int, dim: int, block_q: int | None, block_k: int | None) -> None:
    import torch

    from tokenloom.encoder.attention import attention
    from tokenloom.encoder.attention.tiled import tiled_attention

    def run(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        if impl == "tiled" and (block_q or block_k):
            kwargs = {k_: v_ for k_, v_ in (("block_q", block_q), ("block_k", block_k)) if v_}
            return tiled_attention(q, k, v, **kwargs)
        return attention(q, k, v, impl=impl)

    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        small = [torch.randn(1, heads, 64, dim, generator=gen) for _ in range(3)]
        run(*small)  # warm-up: library init and kernel selection are not part of the measurement
        q, k, v = (torch.randn(1, heads, n, dim, generator=gen) for _ in range(3))
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        start = time.perf_counter()
        out = run(q, k, v)
        seconds = time.perf_counter() - start
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert torch.isfinite(out).all()
    print(json.dumps({"seconds": seconds, "extra_bytes": (peak - base) * 1024}))  # ru_maxrss is KiB on Linux


def _measure(impl: str, n: int, args: argparse.Namespace) -> dict[str, float] | None:
    cmd = [
        sys.executable,
        __file__,
        "--child",
        impl,
        str(n),
        "--heads",
        str(args.heads),
        "--dim",
        str(args.dim),
    ]
    if args.block_q:
        cmd += ["--block-q", str(args.block_q)]
    if args.block_k:
        cmd += ["--block-k", str(args.block_k)]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        print(f"  {impl} N={n} failed: {result.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
        return None
    return json.loads(result.stdout.strip().splitlines()[-1])


def _fmt_time(r: dict[str, float] | None) -> str:
    return "—" if r is None else f"{r['seconds']:.3f}"


def _fmt_mib(r: dict[str, float] | None) -> str:
    return "—" if r is None else f"{r['extra_bytes'] / 2**20:.0f}"


def _ratio(a: float | None, b: float | None, digits: int = 2) -> str:
    return "—" if a is None or b is None or b == 0 else f"{a / b:.{digits}f}×"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[1024, 4096, 8192], help="sequence lengths N = M"
    )
    parser.add_argument(
        "--big", type=int, nargs="*", default=[32768], help="sizes run for the tiled path only"
    )
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument(
        "--block-q", type=int, default=None, help="tiled: query rows per tile (default: library's)"
    )
    parser.add_argument("--block-k", type=int, default=None, help="tiled: keys per tile (default: library's)")
    parser.add_argument("--impls", nargs="+", default=list(IMPLS), choices=IMPLS)
    parser.add_argument("--child", nargs=2, metavar=("IMPL", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child[0], int(args.child[1]), args.heads, args.dim, args.block_q, args.block_k)
        return

    import platform

    import torch

    print(
        f"attention forward, B=1, H={args.heads}, D={args.dim}, fp32, no mask, one run per case; "
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, {platform.machine()}"
    )
    results: dict[tuple[str, int], dict[str, float] | None] = {}
    for n in args.sizes:
        for impl in args.impls:
            results[impl, n] = _measure(impl, n, args)
    for n in args.big:
        results["tiled", n] = _measure("tiled", n, args) if "tiled" in args.impls else None
    header = (
        "| N | reference s | sdpa s | tiled s | tiled/ref time | ref/sdpa speed | "
        "reference MiB | sdpa MiB | tiled MiB | ref/tiled memory |"
    )
    print()
    print(header)
    print("|" + "---:|" * 10)
    for n in [*args.sizes, *args.big]:
        ref, sdpa, tiled = (results.get((impl, n)) for impl in IMPLS)
        t = {
            name: (r["seconds"] if r else None)
            for name, r in (("ref", ref), ("sdpa", sdpa), ("tiled", tiled))
        }
        m = {
            name: (r["extra_bytes"] if r else None)
            for name, r in (("ref", ref), ("sdpa", sdpa), ("tiled", tiled))
        }
        print(
            f"| {n} | {_fmt_time(ref)} | {_fmt_time(sdpa)} | {_fmt_time(tiled)} | "
            f"{_ratio(t['tiled'], t['ref'])} | {_ratio(t['ref'], t['sdpa'])} | "
            f"{_fmt_mib(ref)} | {_fmt_mib(sdpa)} | {_fmt_mib(tiled)} | {_ratio(m['ref'], m['tiled'], 1)} |"
        )
    print(
        "\nMiB = peak extra resident memory of the call (ru_maxrss rise, fresh process per case); "
        "— = not run (the reference at 32k would need 32 GiB of scores)."
    )


if __name__ == "__main__":
    main()
