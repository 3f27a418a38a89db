"""GPU benchmark: our Triton attention kernels beside every SDPA backend, forward and forward+backward.

    python scripts/bench_attention_gpu.py [--markdown] [--quick] [--reps 10]

bf16 throughout. Cases: H=16/D=128 and H=32/D=64 at B·N = 16k tokens for N ∈ {512, 1k, 2k, 4k, 8k, 16k},
causal and not; ViT-B/16's shape (N=197, H=12, D=64, B=256); a padded batch (key_lengths) and a packed
varlen batch of mixed lengths; a sliding window of 512 at N=16k. Each case prints forward and
forward+backward TFLOP/s for the reference (when its scores fit in memory), every SDPA backend that
accepts the case (each forced with ``torch.nn.attention.sdpa_kernel``, so the name is the kernel that
ran; the masked cases hand SDPA the equivalent dense mask), and ours (``impl="triton"``), with the max
error against an fp32 reference on the last 256 query rows.

FLOPs counted: forward 4·B·H·N²·D (halved when causal), backward 2.5× forward; padded and packed
batches count only the unpadded sequences (Σ 4·H·n_b²·D), a window of w keys 4·B·H·N·w·D — so a
kernel that skips masked work shows a higher rate. Times: CUDA events, median of ``--reps`` runs
after warm-up.

Without CUDA it prints one line saying so and exits with status 3 (not 0: nothing was measured).
"""

from __future__ import annotations

import argparse
import datetime
import platform
import statistics
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

EXIT_NO_CUDA = 3
TOKENS = 16 * 1024
SDPA_BACKENDS = ("flash", "cudnn", "efficient", "math")
REFERENCE_MAX_BYTES = 8 << 30  # run the reference only when its fp32 scores fit in this
CHECK_ROWS = 256  # rows compared against the fp32 reference
MAX_ERROR = 6e-2  # bf16 output against the fp32 reference: beyond this the run fails


@dataclass
class Case:
    name: str
    B: int
    H: int
    N: int
    D: int
    causal: bool = False
    lengths: list[int] | None = None  # padded batch: valid keys (and queries) per row
    packed: list[int] | None = None  # varlen batch: sequence lengths
    window: int | None = None  # sliding window of this many past keys (causal)
    rows: list[dict[str, object]] = field(default_factory=list)

    def flops(self) -> float:
        if self.packed is not None:
            work = sum(4 * self.H * n * n * self.D for n in self.packed)
        elif self.lengths is not None:
            work = sum(4 * self.H * n * n * self.D for n in self.lengths)
        elif self.window is not None:
            work = 4 * self.B * self.H * self.N * self.window * self.D
        else:
            work = 4 * self.B * self.H * self.N * self.N * self.D
        return work / 2 if self.causal and self.window is None else work


def cases(quick: bool) -> list[Case]:
    out: list[Case] = []
    sizes = (512, 4096) if quick else (512, 1024, 2048, 4096, 8192, 16384)
    for h, d in ((16, 128), (32, 64)):
        for n in sizes:
            for causal in (False, True):
                out.append(Case(f"H{h} D{d} N{n}{' causal' if causal else ''}", TOKENS // n, h, n, d, causal))
    out.append(Case("ViT-B/16 N197 H12 D64 B256", 256, 12, 197, 64))
    lengths = [2048 - 97 * i for i in range(8)]  # 2048 .. 1369 valid of 2048
    out.append(Case("padded B8 N2048 H16 D128 (key_lengths)", 8, 16, 2048, 128, lengths=lengths))
    packed = [3000, 1700, 900, 4100, 256, 2500, 2000, 1928]  # 16384 tokens
    out.append(
        Case("packed varlen 8 seqs 16k tokens H16 D128", 1, 16, sum(packed), 128, causal=True, packed=packed)
    )
    out.append(Case("window 512 N16k H16 D128 causal", 1, 16, 16384, 128, causal=True, window=512))
    return out


def _time(fn: Callable[[], object], reps: int) -> float:
    import torch

    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return statistics.median(times)


def _inputs(case: Case):  # type: ignore[no-untyped-def]
    import torch

    gen = torch.Generator(device="cuda").manual_seed(0)
    shape = (case.B, case.H, case.N, case.D)
    q, k, v = (torch.randn(shape, device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(3))
    return [t.requires_grad_() for t in (q, k, v)]


def _dense_mask(case: Case):  # type: ignore[no-untyped-def]
    """The bool mask SDPA and the reference need for a padded / packed / windowed case (None otherwise)."""
    import torch

    from tokenloom.encoder import masks

    if case.lengths is not None:
        return masks.key_padding(torch.tensor(case.lengths, device="cuda"), case.N)
    if case.packed is not None:
        ids = torch.repeat_interleave(
            torch.arange(len(case.packed), device="cuda"), torch.tensor(case.packed, device="cuda")
        )
        return masks.segment(ids[None])  # [1, 1, N, N]
    if case.window is not None:
        return masks.window(case.N, case.N, case.window - 1, causal=True, device="cuda")
    return None


def _ours(case: Case, q, k, v):  # type: ignore[no-untyped-def]
    import torch

    from tokenloom.encoder.attention import attention, attention_varlen

    if case.packed is not None:
        cu = torch.tensor(
            [0, *torch.tensor(case.packed).cumsum(0).tolist()], device="cuda", dtype=torch.int32
        )
        q3, k3, v3 = (t[0].transpose(0, 1) for t in (q, k, v))  # [1, H, T, D] -> [T, H, D]

        def packed():  # type: ignore[no-untyped-def]
            out = attention_varlen(q3, k3, v3, cu, cu, causal=case.causal, impl="triton")  # [T, H, D]
            return out.transpose(0, 1)[None]  # [1, H, T, D]: the layout every other implementation returns

        return packed
    kwargs: dict[str, object] = {"causal": case.causal, "impl": "triton"}
    if case.lengths is not None:
        kwargs["key_lengths"] = torch.tensor(case.lengths, device="cuda")
    if case.window is not None:
        kwargs["window"] = (case.window - 1, 0)
    return lambda: attention(q, k, v, **kwargs)  # type: ignore[arg-type]


def _sdpa(backend: str, case: Case, q, k, v, mask):  # type: ignore[no-untyped-def]
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    names = {
        "flash": "FLASH_ATTENTION",
        "cudnn": "CUDNN_ATTENTION",
        "efficient": "EFFICIENT_ATTENTION",
        "math": "MATH",
    }
    chosen = getattr(SDPBackend, names[backend])
    if mask is not None and case.causal:
        mask = mask & _causal(case)
    is_causal = case.causal and mask is None

    def run():  # type: ignore[no-untyped-def]
        with sdpa_kernel([chosen]):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal)

    return run


def _causal(case: Case):  # type: ignore[no-untyped-def]
    from tokenloom.encoder import masks

    return masks.causal(case.N, device="cuda")


def _measure(case: Case, label: str, fn: Callable[[], object], q, k, v, expected, reps: int) -> None:  # type: ignore[no-untyped-def]
    import torch

    try:
        with torch.no_grad():
            out = fn()
            fwd = _time(fn, reps)
        out = fn()
        grad = torch.randn_like(out)
        both = _time(lambda: torch.autograd.grad(fn(), (q, k, v), grad), reps)
    except (RuntimeError, torch.cuda.OutOfMemoryError) as error:
        case.rows.append({"impl": label, "error": str(error).splitlines()[0][:60]})
        torch.cuda.empty_cache()
        return
    flops = case.flops()  # forward; forward + backward is 3.5x (backward = 2.5x forward)
    case.rows.append({"impl": label, "fwd": flops / fwd / 1e12, "fwdbwd": 3.5 * flops / both / 1e12,
                      "fwd_ms": fwd * 1e3, "both_ms": both * 1e3, "err": _error(out, expected)})  # fmt: skip


def _error(out, expected) -> float:  # type: ignore[no-untyped-def]
    return float((out.detach()[:, :, -CHECK_ROWS:].float() - expected).abs().max())


def _expected(case: Case, q, k, v, mask):  # type: ignore[no-untyped-def]
    """fp32 reference of the last CHECK_ROWS query rows (bottom-right aligned, so causal still holds)."""
    from tokenloom.encoder.attention import reference_attention

    rows = slice(case.N - CHECK_ROWS, case.N) if case.N > CHECK_ROWS else slice(0, case.N)
    m = None if mask is None else mask[..., rows, :] if mask.shape[-2] > 1 else mask
    return reference_attention(
        q[:, :, rows].float().detach(), k.float().detach(), v.float().detach(), m, causal=case.causal
    )


def run_case(case: Case, reps: int) -> None:

    q, k, v = _inputs(case)
    mask = _dense_mask(case)
    expected = _expected(case, q, k, v, mask)
    if case.B * case.H * case.N * case.N * 4 <= REFERENCE_MAX_BYTES:
        from tokenloom.encoder.attention import reference_attention

        ref_mask = mask
        _measure(
            case,
            "reference",
            lambda: reference_attention(q, k, v, ref_mask, causal=case.causal),
            q,
            k,
            v,
            expected,
            reps,
        )
    for backend in SDPA_BACKENDS:
        if backend == "math" and case.B * case.H * case.N * case.N * 2 > REFERENCE_MAX_BYTES:
            continue
        _measure(case, f"sdpa:{backend}", _sdpa(backend, case, q, k, v, mask), q, k, v, expected, reps)
    _measure(case, "ours (triton)", _ours(case, q, k, v), q, k, v, expected, reps)


def _best_sdpa(case: Case, key: str) -> float | None:
    rates = [float(r[key]) for r in case.rows if str(r["impl"]).startswith("sdpa") and r.get(key)]  # type: ignore[arg-type]
    return max(rates) if rates else None


def print_header(markdown: bool) -> None:
    import torch
    import triton

    gpu = torch.cuda.get_device_name()
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    head = f"{gpu}, torch {torch.__version__}, triton {triton.__version__}, {platform.node()}, {stamp}"
    print(f"**{head}**\n" if markdown else head)
    if not markdown:
        print("(ratios: ours over the best SDPA backend that accepted the case)")
    print(
        "| case | impl | fwd TFLOP/s | fwd+bwd TFLOP/s | fwd ms | fwd+bwd ms | max err | ours/best SDPA fwd | ours/best SDPA fwd+bwd |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")


def print_case(case: Case) -> None:
    """One case's rows, printed as soon as it is measured (a run cut short keeps what it measured)."""
    best_f, best_b = _best_sdpa(case, "fwd"), _best_sdpa(case, "fwdbwd")
    for row in case.rows:
        if "error" in row:
            print(f"| {case.name} | {row['impl']} | refused: {row['error']} | | | | | | |")
            continue
        ours = row["impl"] == "ours (triton)"
        ratio_f = f"{float(row['fwd']) / best_f:.2f}" if ours and best_f else ""  # type: ignore[arg-type]
        ratio_b = f"{float(row['fwdbwd']) / best_b:.2f}" if ours and best_b and row["fwdbwd"] else ""  # type: ignore[arg-type]
        print(f"| {case.name} | {row['impl']} | {row['fwd']:.0f} | {row['fwdbwd']:.0f} | {row['fwd_ms']:.2f} | "
              f"{row['both_ms']:.2f} | {row['err']:.1e} | {ratio_f} | {ratio_b} |")  # fmt: skip
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--markdown", action="store_true", help="print the table as Markdown with machine and date"
    )
    parser.add_argument("--quick", action="store_true", help="N in {512, 4096} only")
    parser.add_argument("--reps", type=int, default=10, help="timed runs per measurement (median)")
    args = parser.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("bench_attention_gpu: torch is not installed; nothing measured")
        return EXIT_NO_CUDA
    if not torch.cuda.is_available():
        print("bench_attention_gpu: no CUDA device is visible; nothing measured (exit 3)")
        return EXIT_NO_CUDA
    # SDPA's notes on why a forced backend refused the case (its refusal is a row of the table)
    warnings.filterwarnings(
        "ignore",
        message=r".*(kernel not used because|has been runtime disabled|does not support)",
        category=UserWarning,
    )
    all_cases = cases(args.quick)
    print_header(args.markdown)
    for case in all_cases:
        run_case(case, args.reps)
        torch.cuda.empty_cache()
        print_case(case)
    failed = [
        case.name for case in all_cases for row in case.rows
        if row["impl"] == "ours (triton)" and ("error" in row or not float(row["err"]) <= MAX_ERROR)  # type: ignore[arg-type]
    ]  # fmt: skip
    if failed:
        print(
            f"FAIL: our kernel refused or exceeded max error {MAX_ERROR} on: {', '.join(failed)}",
            file=sys.stderr,
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
