"""The Triton path (forward and backward kernels) against the reference: in Triton's interpreter on
CPU, and on CUDA when present.

Triton decides interpret-or-compile when a kernel is defined, from ``TRITON_INTERPRET``. So the CPU
checks run in a child pytest process started with ``TRITON_INTERPRET=1`` (and no visible GPU); the
``child_*`` tests below exist only in that child, which the parent test launches and whose failures it
reports verbatim. Interpreter cases are kept small (the interpreter runs numpy per program) and use
16×16 tiles, so that small shapes still cross tile boundaries, diagonals and window edges.

Not covered by the interpreter: bf16. Triton 3.8's interpreter computes ``tl.dot`` on bf16 operands
wrongly (a 16×16 bf16 product is off by ~1e10), so bf16 is checked on CUDA only (``gpu`` tests).
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

from test_attention import LARGE_BIASES, Case, _check_against_reference, assert_close, cases
from test_attention_structured import Structured, structured, window_mask
from tokenloom.encoder import masks
from tokenloom.encoder.attention import attention, attention_varlen, last_impl, reference_attention

CHILD = os.environ.get("TOKENLOOM_TRITON_CHILD") == "1"
HAS_TRITON = importlib.util.find_spec("triton") is not None


def _configs(block: int = 16):  # type: ignore[no-untyped-def]
    from tokenloom.encoder.attention.tuning import KernelConfig

    config = KernelConfig(block, block, 4, 1)
    return (config, config)


def _run_triton(block: int = 16) -> Callable[..., torch.Tensor]:
    from tokenloom.encoder.attention.triton_kernel import triton_attention

    def run(
        q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, *, causal: bool
    ) -> torch.Tensor:
        return triton_attention(q, k, v, mask, causal=causal, configs=_configs(block))

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
        timeout=900,
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


def _grads(out: torch.Tensor, leaves: tuple[torch.Tensor, ...], seed: int = 0) -> tuple[torch.Tensor, ...]:
    weight = torch.randn(out.shape, generator=torch.Generator().manual_seed(seed)).to(out.device, out.dtype)
    return torch.autograd.grad((out * weight).sum(), leaves)


def _compare(
    out: torch.Tensor, expected: torch.Tensor, leaves: tuple[torch.Tensor, ...], atol: float, what: str
) -> None:
    assert_close(out.float(), expected.float(), atol=atol, what=f"{what} output")
    for name, g, g_ref in zip("qkv", _grads(out, leaves), _grads(expected, leaves), strict=True):
        assert_close(g.float(), g_ref.float(), atol=atol * 5, what=f"{what} d{name}")


if CHILD:  # ------------------------------------------------------------- interpreter (child process)
    from tokenloom.encoder.attention.triton_kernel import triton_attention, triton_attention_varlen

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

    @settings(max_examples=10, deadline=None)
    @given(case=cases(max_len=40))
    def test_child_dense_masks_forward_backward(case: Case) -> None:
        """No mask, causal N ≠ M, bool / additive / per-head masks, GQA, odd sizes; dmask via the tiled backward."""
        _check_against_reference(case, _run_triton(16), mask_grad=True, what="triton[interpreter]")

    @settings(max_examples=10, deadline=None)
    @given(case=cases(max_len=40, kinds=("large_rows",)))
    def test_child_large_bias_rows_forward_backward(case: Case) -> None:
        """Rows wholly or partly at one large finite bias, through the kernels' own backward (the mask
        needs no grad) and through the tiled backward from the kernel's row stats (it does)."""
        _check_against_reference(case, _run_triton(16), mask_grad=False, what="triton[interpreter] kernels")
        _check_against_reference(case, _run_triton(16), mask_grad=True, what="triton[interpreter] dmask")

    @pytest.mark.parametrize("big", LARGE_BIASES[:3])
    def test_child_constant_bias_row_is_the_mean_of_v(big: float) -> None:
        """A row filled with one finite bias (``finfo.min`` too) is never "all masked": its output is the
        mean of v and its dv 1/M per key, as the reference gives."""
        gen = torch.Generator().manual_seed(0)
        q, k = torch.randn(1, 1, 4, 32, generator=gen), torch.randn(1, 1, 6, 32, generator=gen)
        v = torch.randn(1, 1, 6, 32, generator=gen, requires_grad=True)
        bias = torch.zeros(1, 1, 4, 6)
        bias[..., 2, :] = big
        out = triton_attention(q, k, v, bias, configs=_configs(16))
        assert_close(out[0, 0, 2], v[0, 0].mean(0), atol=1e-6, what="output of the constant row")
        (dv,) = torch.autograd.grad(out[0, 0, 2].sum(), v)
        assert_close(dv, torch.full_like(dv, 1 / 6), atol=1e-6, what="dv of the constant row")

    @settings(max_examples=12, deadline=None)
    @given(case=structured(max_len=40))
    def test_child_structured_masks_forward_backward(case: Structured) -> None:
        """key_lengths, segment ids (shared and separate), windows, each with and without causal."""
        q, k, v = (t.float().requires_grad_() for t in (case.q, case.k, case.v))
        out = triton_attention(q, k, v, causal=case.causal, configs=_configs(16), **case.kwargs)  # type: ignore[arg-type]
        expected = reference_attention(q, k, v, case.dense, causal=case.causal)
        _compare(out, expected, (q, k, v), 1e-5, f"triton {sorted(case.kwargs)} causal={case.causal}")

    @pytest.mark.parametrize("d", [32, 64, 128])
    def test_child_head_dims_fp16_default_tiles(d: int) -> None:
        """The tuning table's own tiles (64-row forward tiles here), fp16 in, fp32 reference."""
        gen = torch.Generator().manual_seed(d)
        q = torch.randn(1, 2, 70, d, generator=gen).half().requires_grad_()
        k = torch.randn(1, 1, 75, d, generator=gen).half().requires_grad_()
        v = torch.randn(1, 1, 75, d, generator=gen).half().requires_grad_()
        for kwargs in ({"causal": True}, {"key_lengths": torch.tensor([41])}):
            out = attention(q, k, v, impl="triton", **kwargs)  # type: ignore[arg-type]
            expected = reference_attention(
                q.float(),
                k.float(),
                v.float(),
                masks.key_padding([41], 75) if "key_lengths" in kwargs else None,
                causal="causal" in kwargs,
            )
            _compare(out, expected, (q, k, v), 2e-2, f"fp16 D={d} {sorted(kwargs)}")

    def test_child_padded_head_dim_and_vit_length() -> None:
        """D = 24 (padded to 32) and N = 37 (not a tile multiple), fp32 exact products."""
        gen = torch.Generator().manual_seed(5)
        q, k, v = (torch.randn(2, 3, 37, 24, generator=gen).requires_grad_() for _ in range(3))
        _compare(
            attention(q, k, v, impl="triton"), reference_attention(q, k, v), (q, k, v), 1e-5, "D=24 N=37"
        )

    @pytest.mark.parametrize("causal", [False, True])
    def test_child_varlen_forward_backward(causal: bool) -> None:
        lens_q, lens_k = [5, 0, 23, 1, 18], [9, 4, 23, 1, 30]
        gen = torch.Generator().manual_seed(6)
        q = torch.randn(sum(lens_q), 4, 16, generator=gen).requires_grad_()
        k = torch.randn(sum(lens_k), 2, 16, generator=gen).requires_grad_()
        v = torch.randn(sum(lens_k), 2, 16, generator=gen).requires_grad_()
        cu_q = torch.tensor([0, *torch.tensor(lens_q).cumsum(0).tolist()])
        cu_k = torch.tensor([0, *torch.tensor(lens_k).cumsum(0).tolist()])
        for window in (None, (6, 2)):
            out = triton_attention_varlen(
                q, k, v, cu_q, cu_k, max_seqlen_q=23, max_seqlen_k=30, causal=causal, window=window,
                configs=_configs(16),
            )  # fmt: skip
            expected = attention_varlen(q, k, v, cu_q, cu_k, causal=causal, window=window, impl="reference")
            _compare(out, expected, (q, k, v), 1e-5, f"varlen causal={causal} window={window}")
        attention_varlen(q, k, v, cu_q, cu_k, causal=causal, impl="triton")
        assert last_impl() == "triton"

    def test_child_fully_masked_rows_are_zero_with_zero_grads() -> None:
        gen = torch.Generator().manual_seed(0)
        q = torch.randn(2, 2, 20, 16, generator=gen, requires_grad=True)
        k = torch.randn(2, 1, 17, 16, generator=gen, requires_grad=True)
        v = torch.randn(2, 1, 17, 16, generator=gen, requires_grad=True)
        ids_q = torch.tensor([[-1] * 4 + [0] * 16, [1] * 20])
        ids_k = torch.tensor([[0] * 17, [0] * 17])  # row 1: no key shares id 1
        calls = {
            "causal N > M": ({"causal": True}, (slice(None), slice(0, 3))),
            "key_lengths 0": ({"key_lengths": torch.tensor([0, 17])}, (slice(0, 1), slice(None))),
            "segments": ({"segment_ids": (ids_q, ids_k)}, (slice(None), slice(0, 4))),
            "window": ({"window": (0, 0), "causal": True}, (slice(None), slice(0, 3))),
        }
        for name, (kwargs, dead) in calls.items():
            out = triton_attention(q, k, v, configs=_configs(16), **kwargs)  # type: ignore[arg-type]
            rows = out[dead[0], :, dead[1]]
            assert (rows == 0).all(), f"{name}: dead rows must be zero"
            dq, dk, dv = torch.autograd.grad(out.square().sum() + out.sum(), (q, k, v))
            assert all(torch.isfinite(g).all() for g in (dq, dk, dv)), name
            assert (dq[dead[0], :, dead[1]] == 0).all(), f"{name}: dead rows get zero dq"
        assert (triton_attention(q, k, v, segment_ids=(ids_q, ids_k))[1] == 0).all()

    def test_child_window_kernel_skips_tiles() -> None:
        """A tile outside every query's window is never read: NaN planted there does not leak."""
        gen = torch.Generator().manual_seed(7)
        q, k, v = (torch.randn(1, 1, 64, 16, generator=gen) for _ in range(3))
        k_bad, v_bad = k.clone(), v.clone()
        k_bad[:, :, 48:], v_bad[:, :, 48:] = float("nan"), float("nan")  # keys 48..63
        out = triton_attention(q[:, :, :16], k_bad, v_bad, window=(8, 0), configs=_configs(16))
        # N=16 < M=64: queries sit at 48..63, window (8, 0) sees keys 40..63 -> NaN expected there
        assert torch.isnan(out).any()
        out = triton_attention(q, k_bad, v_bad, window=(4, 4), causal=True, configs=_configs(16))
        expected = reference_attention(q, k, v, window_mask(64, 64, 4, 4), causal=True)
        assert_close(
            out[:, :, :40], expected[:, :, :40], atol=1e-5, what="rows whose window ends before key 48"
        )
        lengths = triton_attention(q, k_bad, v_bad, key_lengths=torch.tensor([48]), configs=_configs(16))
        assert_close(
            lengths, reference_attention(q, k, v, masks.key_padding([48], 64)), atol=1e-5, what="key_lengths"
        )

    def test_child_dropout_and_dtype_refused() -> None:
        q = torch.randn(1, 1, 4, 16)
        with pytest.raises(ValueError, match="no dropout"):
            attention(q, q, q, dropout_p=0.1, impl="triton")
        with pytest.raises(TypeError, match="fp16, bf16 and fp32"):
            attention(q.double(), q.double(), q.double(), impl="triton")

    def test_child_encoder_builds_no_dense_mask(monkeypatch: pytest.MonkeyPatch) -> None:
        """Padded and packed text batches reach the kernel as key_lengths / segment_ids, never as a mask."""
        from tokenloom.encoder import Encoder, EncoderConfig
        from tokenloom.encoder.attention import _common

        torch.manual_seed(0)
        triton_enc = Encoder(EncoderConfig(width=32, depth=2, heads=2, attn_impl="triton")).eval()
        ref_enc = Encoder(EncoderConfig(width=32, depth=2, heads=2, attn_impl="reference")).eval()
        ref_enc.load_state_dict(triton_enc.state_dict())
        x = torch.randn(2, 21, 32)
        lengths = torch.tensor([21, 9])
        ids = torch.tensor([[0] * 7 + [1] * 14, [0] * 5 + [1] * 5 + [2] * 9 + [-1] * 2])
        with torch.no_grad():
            expected_pad = ref_enc(x, key_lengths=lengths)
            expected_seg = ref_enc(x, segment_ids=ids)

            def refuse(*args: object, **kwargs: object) -> None:
                raise AssertionError("a dense mask was built on the triton path")

            # every dense mask is built by _common.structure_mask (KeyRestriction.dense): no other module
            # holds a reference to it that the patch would miss
            holders = [
                name
                for name, module in sys.modules.items()
                if name.startswith("tokenloom.") and module is not _common
                and getattr(module, "structure_mask", None) is _common.structure_mask
            ]  # fmt: skip
            assert not holders, holders
            monkeypatch.setattr(_common, "structure_mask", refuse)
            out_pad = triton_enc(x, key_lengths=lengths)
            out_seg = triton_enc(x, segment_ids=ids)
        assert_close(out_pad, expected_pad, atol=1e-4, what="encoder key_lengths")
        assert_close(out_seg, expected_seg, atol=1e-4, what="encoder segment_ids")

    def test_child_prefill_and_decode_with_key_lengths() -> None:
        from tokenloom.encoder import Encoder, EncoderConfig

        torch.manual_seed(1)
        enc = Encoder(
            EncoderConfig(width=32, depth=1, heads=2, causal=True, position="rope", attn_impl="triton")
        )
        enc = enc.eval()
        x, nxt, lengths = torch.randn(2, 6, 32), torch.randn(2, 2, 32), torch.tensor([6, 3])
        with torch.no_grad():
            cache = enc.prefill(x, key_lengths=lengths)
            out = enc.decode_step(nxt, cache)
            for b in range(2):
                alone = enc.prefill(x[b : b + 1, : int(lengths[b])])
                assert_close(
                    cache.output[b, : int(lengths[b])], alone.output[0], atol=1e-4, what=f"prefill {b}"
                )  # type: ignore[index]
                assert_close(out[b], enc.decode_step(nxt[b : b + 1], alone)[0], atol=1e-4, what=f"decode {b}")


# ----------------------------------------------------------------------------------------- real CUDA


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_TRITON, reason="triton is not installed")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_triton_cuda_equals_reference(dtype: torch.dtype) -> None:
    if CHILD:
        pytest.skip("the interpreter child hides the GPU")
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(2, 8, 300, 64, generator=gen).to("cuda", dtype).requires_grad_()
    k = torch.randn(2, 2, 333, 64, generator=gen).to("cuda", dtype).requires_grad_()
    v = torch.randn(2, 2, 333, 64, generator=gen).to("cuda", dtype).requires_grad_()
    mask = (torch.rand(2, 1, 300, 333, generator=gen) > 0.2).cuda()
    lengths = torch.tensor([333, 100], device="cuda")
    ids = torch.randint(0, 3, (2, 300), generator=gen).sort(dim=1).values.cuda()
    ids_k = torch.randint(0, 3, (2, 333), generator=gen).sort(dim=1).values.cuda()
    atol = 1e-4 if dtype == torch.float32 else 3e-2
    calls = [
        ({}, None), ({"causal": True}, None), ({"mask": mask}, None), ({"mask": mask, "causal": True}, None),
        ({"key_lengths": lengths, "causal": True}, masks.key_padding(lengths, 333)),
        ({"segment_ids": (ids, ids_k)}, masks.segment(ids, ids_k)),
        ({"window": (64, 0), "causal": True}, window_mask(300, 333, 64, 0).cuda()),
    ]  # fmt: skip
    for kwargs, dense in calls:
        out = attention(q, k, v, impl="triton", **kwargs)  # type: ignore[arg-type]
        ref_kwargs = {key: val for key, val in kwargs.items() if key in ("mask", "causal")}
        if dense is not None:
            ref_kwargs["mask"] = dense
        expected = reference_attention(q.float(), k.float(), v.float(), **ref_kwargs)  # type: ignore[arg-type]
        _compare(out, expected, (q, k, v), atol, f"triton cuda {dtype} {sorted(kwargs)}")


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_TRITON, reason="triton is not installed")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_triton_cuda_large_bias_rows(dtype: torch.dtype) -> None:
    """Hugging Face-style padding rows (``finfo(float32).min``) and −1e9 rows on the real kernels, which
    ``auto`` picks for dense masks on CUDA: outputs and gradients equal the reference."""
    if CHILD:
        pytest.skip("the interpreter child hides the GPU")
    gen = torch.Generator().manual_seed(3)
    q = torch.randn(2, 4, 200, 64, generator=gen).to("cuda", dtype).requires_grad_()
    k = torch.randn(2, 2, 230, 64, generator=gen).to("cuda", dtype).requires_grad_()
    v = torch.randn(2, 2, 230, 64, generator=gen).to("cuda", dtype).requires_grad_()
    atol = 1e-4 if dtype == torch.float32 else 3e-2
    for big in LARGE_BIASES[:3]:
        bias = torch.randn(2, 1, 200, 230, generator=gen)
        bias[:, :, 150:] = big  # whole rows
        bias[:, :, :50, 100:] = big  # rows partly at it
        bias = bias.cuda()
        expected = reference_attention(q.float(), k.float(), v.float(), bias)
        _compare(attention(q, k, v, bias), expected, (q, k, v), atol, f"auto cuda {dtype} bias {big:g}")
        assert last_impl() == "triton"


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_TRITON, reason="triton is not installed")
@pytest.mark.parametrize("d", [32, 64, 128, 256])
def test_triton_cuda_head_dims_bf16(d: int) -> None:
    if CHILD:
        pytest.skip("the interpreter child hides the GPU")
    gen = torch.Generator().manual_seed(d)
    q, k, v = (
        torch.randn(2, 4, 197, d, generator=gen).to("cuda", torch.bfloat16).requires_grad_() for _ in range(3)
    )
    for causal in (False, True):
        expected = reference_attention(q.float(), k.float(), v.float(), causal=causal)
        _compare(attention(q, k, v, causal=causal, impl="triton"), expected, (q, k, v), 3e-2, f"bf16 D={d}")


@pytest.mark.gpu
def test_auto_on_cuda_forces_fast_sdpa_or_runs_the_kernel() -> None:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from tokenloom.encoder.attention import last_sdpa_kernel

    if CHILD:
        pytest.skip("the interpreter child hides the GPU")
    q = torch.randn(2, 8, 256, 64, device="cuda", dtype=torch.bfloat16)
    attention(q, q, q, causal=True)
    assert last_impl() == "sdpa" and last_sdpa_kernel() in ("flash", "cudnn"), (
        last_impl(),
        last_sdpa_kernel(),
    )
    # the fast kernel torch itself picks for this call (cuDNN on Hopper with a recent cuDNN), not a fixed one
    names = {int(SDPBackend.FLASH_ATTENTION): "flash", int(SDPBackend.CUDNN_ATTENTION): "cudnn"}
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION]):
        torch_choice = names[torch._fused_sdp_choice(q, q, q, None, 0.0, True)]
    assert last_sdpa_kernel() == torch_choice
    attention(q, q, q, key_lengths=torch.tensor([256, 17], device="cuda"))
    assert last_impl() == ("triton" if HAS_TRITON else "sdpa")
