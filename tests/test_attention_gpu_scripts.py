"""scripts/gpu_check.sh and scripts/bench_attention_gpu.py without a GPU: one line, exit status 3.

(With a GPU they run the gpu-marked tests and the benchmark; that is not checkable here.)
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", PYTHON=sys.executable, PYTHONPATH=str(ROOT / "src"))
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)


@pytest.mark.slow
def test_gpu_check_without_cuda_says_so_and_exits_3() -> None:
    result = _run(["bash", str(ROOT / "scripts" / "gpu_check.sh")])
    assert result.returncode == 3, (result.returncode, result.stdout, result.stderr)
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1 and "no CUDA device" in lines[0], result.stdout


@pytest.mark.slow
def test_gpu_benchmark_without_cuda_says_so_and_exits_3() -> None:
    result = _run([sys.executable, str(ROOT / "scripts" / "bench_attention_gpu.py"), "--markdown"])
    assert result.returncode == 3, (result.returncode, result.stdout, result.stderr)
    assert result.stdout.strip().count("\n") == 0 and "no CUDA device" in result.stdout


def test_gpu_benchmark_flop_formulas() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import bench_attention_gpu as bench
    finally:
        sys.path.pop(0)
    full = bench.Case("x", B=2, H=16, N=1024, D=128)
    assert full.flops() == 4 * 2 * 16 * 1024 * 1024 * 128
    assert bench.Case("x", B=2, H=16, N=1024, D=128, causal=True).flops() == full.flops() / 2
    packed = bench.Case("x", B=1, H=2, N=30, D=8, causal=True, packed=[10, 20])
    assert packed.flops() == (4 * 2 * 100 * 8 + 4 * 2 * 400 * 8) / 2
    window = bench.Case("x", B=1, H=2, N=64, D=8, causal=True, window=16)
    assert window.flops() == 4 * 2 * 64 * 16 * 8
    names = [case.name for case in bench.cases(quick=False)]
    assert sum("N16384" in name for name in names) == 4 and any("ViT-B/16" in name for name in names)
