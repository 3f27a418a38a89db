"""Static check of the Triton attention kernels: compile every kernel × tuning config for sm_90 / sm_80.

    python scripts/triton_static_check.py [--arch sm_90 sm_80] [--json] [--head-dims 64 128]
                                          [--dtypes bf16 fp16 fp32] [--jobs 2]

Needs no GPU: ``triton.compile`` with a ``GPUTarget`` runs Triton's own compiler down to PTX and a
cubin (ptxas). For each compiled kernel it reports registers per thread, spill (local memory) bytes
and the stack frame (from ``cuobjdump --dump-resource-usage`` on the cubin, the ptxas that Triton
bundles), shared memory (Triton's launch metadata), and whether tensor-core instructions are emitted
(``wgmma`` on sm_90, ``mma`` on sm_80, read from the PTX).

Kernels (``triton_kernel.KERNELS``): ``attn_fwd`` for every row of ``tuning.FORWARD`` (dense-mask variant with
``tuning.for_dense_mask``), ``attn_bwd_dq`` for ``tuning.BACKWARD_DQ``, ``attn_bwd_dkdv`` for
``tuning.BACKWARD_DKDV``. Each is compiled in the variants of ``VARIANTS``: ``plain`` (no mask,
causal as the table row says), and, causal, ``lengths+window`` (key_lengths and a sliding window),
``segments`` (packed segment ids), ``dense`` (a dense bool mask read tile by tile) and ``bias`` (a dense
fp32 additive mask: natural-unit scores). fp32
kernels use exact fp32 products (``input_precision="ieee"``), which have no tensor-core form: their
``tensor_cores`` is false by design and the check expects that.

Output: a table (default) or, with ``--json``, one JSON list of objects with the keys
``kernel, arch, config, registers, spill_bytes, shared_bytes, tensor_cores``. Exit status 1 when any
kernel spills, exceeds the architecture's shared memory per block (sm_90: 227 KiB, sm_80: 163 KiB), or
(fp16 / bf16) lacks tensor-core instructions, or fails to compile; 0 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

from tokenloom.encoder.attention import triton_kernel

ARCHS = {"sm_90": 90, "sm_80": 80}
SHARED_LIMIT = {"sm_90": 227 * 1024, "sm_80": 163 * 1024}  # bytes of shared memory per block (opt-in max)
TENSOR_CORE_PTX = {"sm_90": "wgmma.mma_async", "sm_80": "mma.sync"}
PTR_F = {"Q", "K", "V", "Out", "DO", "DQ", "DK", "DV_"}  # tensors in the input dtype
PTR_I = {"KeyLen", "CuQ", "CuK", "QSeg", "KSeg"}
ALIGNED = {"sqb", "sqh", "sqn", "skb", "skh", "skm", "svb", "svh", "svm", "sob", "soh", "son"}


@dataclass(frozen=True)
class Job:
    kernel: str
    arch: str
    d: int  # padded head width (BLOCK_D)
    dtype: str  # "fp16" | "bf16" | "fp32"
    causal: bool
    variant: str  # "plain" | "masks"
    block_m: int
    block_n: int
    num_warps: int
    num_stages: int

    @property
    def config(self) -> str:
        tiles = f"M{self.block_m}-N{self.block_n}-w{self.num_warps}-s{self.num_stages}"
        return f"{self.dtype} D{self.d} {'causal' if self.causal else 'full'} {self.variant} {tiles}"


def jobs(archs: list[str], head_dims: list[int] | None, dtypes: list[str] | None) -> list[Job]:
    """Every (kernel, arch, table row, variant) to compile, without duplicates."""
    from tokenloom.encoder.attention import tuning

    found: dict[tuple[object, ...], Job] = {}
    for kernel in triton_kernel.KERNELS:
        table = {"attn_fwd": tuning.FORWARD, "attn_bwd_dq": tuning.BACKWARD_DQ}.get(
            kernel, tuning.BACKWARD_DKDV
        )
        for (d, dtype, causal), rows in sorted(table.items()):
            if (head_dims and d not in head_dims) or (dtypes and dtype not in dtypes):
                continue
            for _, cfg in rows:
                for arch in archs:
                    for variant in VARIANTS:
                        if variant in ("dense", "bias") and d > tuning.MAX_DENSE_MASK_D:
                            continue  # never launched: wider heads with a dense mask are refused
                        c = causal or variant != "plain"  # masked variants are compiled causal
                        run = cfg
                        if variant in ("dense", "bias") and kernel == "attn_fwd":
                            run = tuning.for_dense_mask(cfg, d)
                        elif variant == "bias":
                            run = tuning.for_bias_backward(cfg, dtype)
                        job = Job(kernel, arch, d, dtype, c, variant, run.block_m, run.block_n,
                                  run.num_warps, run.num_stages)  # fmt: skip
                        found.setdefault((kernel, arch, d, dtype, c, variant, cfg), job)
    return list(found.values())


# The mask variants compiled for every config: what a padded, windowed, packed or dense-masked batch runs.
VARIANTS = {
    "plain": {},
    "lengths+window": {"HAS_KLEN": True, "WINDOW": True},
    "segments": {"SEGMENTS": True},
    "dense": {"HAS_MASK": True},
    "bias": {"HAS_MASK": True, "BIAS": True},
}


def _signature(fn: object, job: Job) -> tuple[dict[str, str], dict[str, object]]:
    flags = VARIANTS[job.variant]
    constexprs: dict[str, object] = dict(
        VARLEN=False, HAS_KLEN=flags.get("HAS_KLEN", False), CAUSAL=job.causal,
        WINDOW=flags.get("WINDOW", False), SEGMENTS=flags.get("SEGMENTS", False),
        HAS_MASK=flags.get("HAS_MASK", False), MASK_IS_BOOL=not flags.get("BIAS", False),
        BIAS=flags.get("BIAS", False), PRECISION="ieee" if job.dtype == "fp32" else "tf32", D=job.d, DV=job.d,
        BLOCK_M=job.block_m, BLOCK_N=job.block_n, BLOCK_D=job.d, BLOCK_DV=job.d,
    )  # fmt: skip
    signature: dict[str, str] = {}
    for name in fn.arg_names:  # type: ignore[attr-defined]
        if name in constexprs:
            signature[name] = "constexpr"
        elif name in PTR_F:
            signature[name] = f"*{job.dtype}"
        elif name in ("RowMax", "LogSum", "Delta"):
            signature[name] = "*fp32"
        elif name in PTR_I:
            signature[name] = "*i32"
        elif name == "Mask":
            signature[name] = "*fp32" if flags.get("BIAS") else "*u8"
        elif name in ("qk_scale", "scale"):
            signature[name] = "fp32"
        else:
            signature[name] = "i32"
    return signature, constexprs


def _resource_usage(cubin: bytes) -> tuple[int, int, int]:
    """(registers, local-memory (spill) bytes, stack bytes) from cuobjdump of the cubin."""
    import triton

    tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as handle:
        handle.write(cubin)
        path = handle.name
    try:
        text = subprocess.run(
            [tool, "--dump-resource-usage", path], capture_output=True, text=True, check=True
        ).stdout
    finally:
        os.unlink(path)
    found = {key: int(value) for key, value in re.findall(r"\b(REG|STACK|LOCAL):(\d+)", text)}
    return found.get("REG", -1), found.get("LOCAL", 0), found.get("STACK", 0)


def compile_one(job: Job) -> dict[str, object]:
    """Compile one job and measure it (runs in a worker process); a compiler failure becomes a row
    with ``error`` set (Triton prints the failing PTX to stdout: it goes to stderr here)."""
    try:
        with contextlib.redirect_stdout(sys.stderr):
            return _compile(job)
    except Exception as error:  # any compiler failure is a finding, reported per kernel
        first = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
        return {
            "kernel": job.kernel, "arch": job.arch, "config": job.config, "registers": -1,
            "spill_bytes": -1, "shared_bytes": -1, "tensor_cores": False, "error": first,
        }  # fmt: skip


def _compile(job: Job) -> dict[str, object]:
    os.environ.pop("TRITON_INTERPRET", None)
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    fn = triton_kernel.kernel(job.kernel)
    signature, constexprs = _signature(fn, job)
    # what Triton's launcher specializes at run time: 16-byte aligned pointers and token / head strides
    # divisible by 16 (true for head widths that are multiples of 16) carry tt.divisibility
    aligned = [i for i, name in enumerate(fn.arg_names) if signature[name].startswith("*") or name in ALIGNED]
    compiled = triton.compile(
        ASTSource(
            fn, signature, constexprs=constexprs, attrs={(i,): [["tt.divisibility", 16]] for i in aligned}
        ),
        target=GPUTarget("cuda", ARCHS[job.arch], 32),
        options={"num_warps": job.num_warps, "num_stages": job.num_stages},
    )
    registers, local, stack = _resource_usage(compiled.asm["cubin"])
    return {
        "kernel": job.kernel,
        "arch": job.arch,
        "config": job.config,
        "registers": registers,
        "spill_bytes": local + stack,
        "shared_bytes": int(compiled.metadata.shared),
        "tensor_cores": TENSOR_CORE_PTX[job.arch] in compiled.asm["ptx"],
    }


def problems(row: dict[str, object]) -> list[str]:
    """What is wrong with one compiled kernel (empty when it passes)."""
    if row.get("error"):
        return [f"does not compile: {row['error']}"]
    found = []
    if int(row["spill_bytes"]) > 0:  # type: ignore[call-overload]
        found.append(f"spills {row['spill_bytes']} bytes to local memory")
    if int(row["shared_bytes"]) > SHARED_LIMIT[str(row["arch"])]:  # type: ignore[call-overload]
        found.append(f"shared memory {row['shared_bytes']} > {SHARED_LIMIT[str(row['arch'])]}")
    wants_tc = not str(row["config"]).startswith("fp32")
    if wants_tc and not row["tensor_cores"]:
        found.append(f"no {TENSOR_CORE_PTX[str(row['arch'])]} instructions")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arch", nargs="+", default=list(ARCHS), choices=list(ARCHS))
    parser.add_argument("--json", action="store_true", help="print one JSON list instead of a table")
    parser.add_argument("--head-dims", nargs="+", type=int, help="only these padded head widths")
    parser.add_argument("--dtypes", nargs="+", choices=("fp16", "bf16", "fp32"), help="only these dtypes")
    parser.add_argument("--kernels", nargs="+", choices=triton_kernel.KERNELS, help="only these kernels")
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), help="only these mask variants")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel compiler processes")
    args = parser.parse_args(argv)
    todo = [
        job
        for job in jobs(args.arch, args.head_dims, args.dtypes)
        if (not args.kernels or job.kernel in args.kernels)
        and (not args.variants or job.variant in args.variants)
    ]
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as pool:
            rows = list(pool.map(compile_one, todo))
    else:
        rows = [compile_one(job) for job in todo]
    failures = [(row, problems(row)) for row in rows if problems(row)]
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        print("| kernel | arch | config | registers | spill bytes | shared bytes | tensor cores |")
        print("|---|---|---|---:|---:|---:|---|")
        for row in rows:
            cells = [
                row[key] for key in ("kernel", "arch", "config", "registers", "spill_bytes", "shared_bytes")
            ]
            print(
                "| "
                + " | ".join(str(cell) for cell in cells)
                + f" | {'yes' if row['tensor_cores'] else 'no'} |"
            )
    for row, found in failures:
        print(f"FAIL {row['kernel']} {row['arch']} {row['config']}: {'; '.join(found)}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
