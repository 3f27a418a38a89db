"""The Triton path against the reference: in Triton's interpreter on CPU, and on CUDA when present.

Triton decides interpret-or-compile when a kernel is defined, from ``TRITON_INTERPRET``. So the CPU
checks run in a child pytest process started with ``TRITON_INTERPRET=1`` (and no visible GPU); the
``child_*`` tests below exist only in that child, which the parent test launches and whose failures it
reports verbatim. Interpreter cases are kept small: the interpreter runs numpy per program.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from test_attention import Case, _check_against_reference, assert_close, cases
from tokenloom.encoder import masks
from tokenloom.encoder.attention import attention, last_impl, last_sdpa_kernel, reference_attention

CHILD = os.environ.get("TOKENLOOM_TRITON_CHILD") == "1"
HAS_TRITON = importlib.util.find_spec("triton") is not None


def _run_triton(block: int = 16) -> Callable[..., torch.Tensor]:
    from tokenloom.encoder.attention.triton_kernel import triton_attention

    def run(
        q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, *, causal: bool
    ) -> torch.Tensor:
        return triton_attention(q, k, v, mask, causal=causal, block_n=block, block_m=block)

    return run


@pytest.mark.slow
@pytest.mark.skipif(not HAS_TRITON, reason="triton is not installed")
@pytest.mark.skipif(CHILD, reason="this is the launcher; it does not run inside its own child")
def test_triton_interpreter_equals_reference() -> None:
    env = dict(os.environ, TRITON_INTERPRET="1", TOKENLOOM_TRITON_CHILD="1", CUDA_VISIBLE_DEVICES="")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(Path(__file__)), "-k", "child_"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=Path(__file__).resolve().parent.parent,
    )
    output = result.stdout[-6000:] + result.stderr[-2000:]
    assert result.returncode == 0, f"Triton interpreter tests failed (exit {result.returncode}):\n{output}"
    assert " passed" in result.stdout and "skipped" not in result.stdout.splitlines()[-1], output


def test_triton_on_cpu_without_interpreter_explains(monkeypatch: pytest.MonkeyPatch) -> None:
    if CHILD:
        pytest.skip("the child runs with the interpreter on")
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    q = torch.randn(1, 1, 4, 16)
    with pytest.raises(RuntimeError, match="TRITON_INTERPRET=1"):
        attention(q, q, q, impl="triton")


if CHILD:  # ------------------------------------------------------------- interpreter (child process)

    def test_child_worked_examples() -> None:
        q = torch.tensor([[1.0, 0.0], [1.0, 0.0]]).view(1, 1, 2, 2)
        k = torch.tensor([[1.0, 0.0], [0.0, 1.0]]).view(1, 1, 2, 2)
        v = torch.tensor([[2.0, 0.0], [0.0, 4.0]]).view(1, 1, 2, 2)
        out = attention(q, k, v, impl="triton")
        assert last_impl() == "triton"
        assert torch.allclose(out[0, 0, 0], torch.tensor([1.3395, 1.3210]), atol=1e-4), out
        causal = attention(q, k, v, causal=True, impl="triton")
        assert torch.allclose(causal[0, 0, 0], torch.tensor([2.0, 0.0]), atol=1e-6), causal
        equal = attention(torch.ones(1, 1, 1, 2), k, v, impl="triton")
        assert torch.allclose(equal.view(-1), torch.tensor([1.0, 2.0]), atol=1e-6), equal
        assert torch.allclose(attention(q, k, 2 * v, impl="triton"), 2 * out, atol=1e-6)

    @settings(max_examples=12, deadline=None)
    @given(case=cases(max_len=40))
    def test_child_triton_equals_reference(case: Case) -> None:
        _check_against_reference(case, _run_triton(16), mask_grad=True, what="triton[interpreter]")

    @settings(max_examples=4, deadline=None)
    @given(case=cases(max_len=80), block=st.sampled_from([16, 32]))
    def test_child_triton_larger_tiles(case: Case, block: int) -> None:
        _check_against_reference(case, _run_triton(block), mask_grad=False, what=f"triton[{block}]")

    def test_child_fully_masked_rows() -> None:
        gen = torch.Generator().manual_seed(0)
        q = torch.randn(1, 2, 6, 16, generator=gen, requires_grad=True)
        k = torch.randn(1, 1, 3, 16, generator=gen, requires_grad=True)
        v = torch.randn(1, 1, 3, 16, generator=gen, requires_grad=True)
        out = attention(q, k, v, causal=True, impl="triton")  # N > M: rows 0..2 see no key
        assert (out[:, :, :3] == 0).all() and torch.isfinite(out).all()
        grads = torch.autograd.grad(out.sum(), (q, k, v))
        assert all(torch.isfinite(g).all() for g in grads)
        padded = attention(q, k, v, masks.key_padding([0], 3), impl="triton")
        assert (padded == 0).all()

    def test_child_dropout_refused() -> None:
        q = torch.randn(1, 1, 4, 16)
        with pytest.raises(ValueError, match="no dropout"):
            attention(q, q, q, dropout_p=0.1, impl="triton")


# ----------------------------------------------------------------------------------------- real CUDA


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_TRITON, reason="triton is not installed")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_triton_cuda_equals_reference(dtype: torch.dtype) -> None:
    if CHILD:
        pytest.skip("the interpreter child hides the GPU")
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(2, 8, 300, 64, generator=gen).to("cuda", dtype)
    k = torch.randn(2, 2, 333, 64, generator=gen).to("cuda", dtype)
    v = torch.randn(2, 2, 333, 64, generator=gen).to("cuda", dtype)
    mask = (torch.rand(2, 1, 300, 333, generator=gen) > 0.2).cuda()
    atol = 1e-5 if dtype == torch.float32 else 2e-2
    for kwargs in ({}, {"causal": True}, {"mask": mask}, {"mask": mask, "causal": True}):
        out = attention(q, k, v, impl="triton", **kwargs)
        expected = reference_attention(q, k, v, **kwargs)
        assert_close(out.float(), expected.float(), atol=atol, what=f"triton cuda {dtype} {sorted(kwargs)}")
    sdpa = attention(q, k, v, mask, impl="sdpa")
    assert last_sdpa_kernel() in {"flash", "efficient", "cudnn", "math"}, last_sdpa_kernel()
    assert_close(
        sdpa.float(), reference_attention(q, k, v, mask).float(), atol=atol, what=f"sdpa cuda {dtype}"
    )
