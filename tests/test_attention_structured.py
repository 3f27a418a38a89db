"""Structured masks (key_lengths, segment_ids, window), varlen packing, the SDPA low-precision mask fix
and dispatch, on the CPU paths (reference, tiled, sdpa).

The oracle for a structured mask is the reference path given the dense bool mask built independently
(by ``tokenloom.encoder.masks`` builders or an explicit formula here); varlen is checked against running
each sequence alone. The Triton path runs the same checks in test_attention_triton.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import get_args

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from test_attention import assert_close
from tokenloom.encoder import masks
from tokenloom.encoder.attention import (
    IMPLS,
    Impl,
    attention,
    attention_varlen,
    last_impl,
    last_sdpa_kernel,
    reference_attention,
)
from tokenloom.encoder.attention import tiled as tiled_mod
from tokenloom.encoder.attention.sdpa import NoFusedKernel, sdpa_attention
from tokenloom.encoder.config import EncoderConfig
from tokenloom.errors import ConfigError

CPU_IMPLS = ("reference", "sdpa", "tiled")
HYPO = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@dataclass(frozen=True)
class Structured:
    """A random call with structured masks and the dense bool mask that means the same."""

    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    causal: bool
    kwargs: dict[str, object]
    dense: torch.Tensor | None  # [B|1, 1, N|1, M] oracle mask


def window_mask(n: int, m: int, left: int, right: int) -> torch.Tensor:
    """``[N, M]``: aligned query i' = i + M − N sees keys i' − left .. i' + right (explicit formula)."""
    out = torch.zeros(n, m, dtype=torch.bool)
    for i in range(n):
        for j in range(m):
            out[i, j] = i + m - n - left <= j <= i + m - n + right
    return out


@st.composite
def structured(draw: st.DrawFn, max_len: int = 20) -> Structured:
    b, hkv = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    h = hkv * draw(st.integers(1, 2))
    n, d = draw(st.integers(1, max_len)), draw(st.sampled_from([4, 8]))
    kind = draw(st.sampled_from(["lengths", "segments", "segments_pair", "window", "lengths_window"]))
    m = n if kind == "segments" else draw(st.integers(1, max_len))
    causal = draw(st.booleans())
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))
    q = torch.randn(b, h, n, d, generator=gen, dtype=torch.float64)
    k = torch.randn(b, hkv, m, d, generator=gen, dtype=torch.float64)
    v = torch.randn(b, hkv, m, d, generator=gen, dtype=torch.float64)
    kwargs: dict[str, object] = {}
    dense: torch.Tensor | None = None
    if kind in ("lengths", "lengths_window"):
        lengths = torch.tensor(draw(st.lists(st.integers(0, m), min_size=b, max_size=b)))
        kwargs["key_lengths"] = lengths
        dense = masks.key_padding(lengths, m)  # [B, 1, 1, M]
    if kind in ("segments", "segments_pair"):
        ids_q = torch.tensor(
            draw(st.lists(st.lists(st.integers(-1, 2), min_size=n, max_size=n), min_size=b, max_size=b))
        )
        ids_q = ids_q.sort(dim=1).values  # packed: segments are contiguous runs
        if kind == "segments":
            kwargs["segment_ids"] = ids_q
            dense = masks.segment(ids_q)
        else:
            ids_k = torch.tensor(
                draw(st.lists(st.lists(st.integers(-1, 2), min_size=m, max_size=m), min_size=b, max_size=b))
            )
            kwargs["segment_ids"] = (ids_q, ids_k)
            dense = masks.segment(ids_q, ids_k)
    if kind in ("window", "lengths_window"):
        left, right = draw(st.integers(0, 6)), draw(st.integers(0, 6))
        kwargs["window"] = (left, right)
        near = window_mask(n, m, left, right)
        dense = near if dense is None else dense & near
    return Structured(q, k, v, causal, kwargs, dense)


def _grads(out: torch.Tensor, inputs: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
    weight = torch.linspace(-1, 1, out.numel(), dtype=out.dtype).view_as(out)
    return torch.autograd.grad((out * weight).sum(), inputs)


@HYPO
@given(case=structured(), impl=st.sampled_from(CPU_IMPLS))
def test_structured_masks_equal_their_dense_mask(case: Structured, impl: str) -> None:
    q, k, v = (t.clone().requires_grad_() for t in (case.q, case.k, case.v))
    out = attention(q, k, v, causal=case.causal, impl=impl, **case.kwargs)  # type: ignore[arg-type]
    expected = reference_attention(q, k, v, case.dense, causal=case.causal)
    assert_close(out, expected, atol=1e-10, what=f"{impl} {sorted(case.kwargs)} causal={case.causal}")
    for name, a, b in zip("qkv", _grads(out, (q, k, v)), _grads(expected, (q, k, v)), strict=True):
        assert_close(a, b, atol=1e-9, what=f"{impl} d{name} {sorted(case.kwargs)}")


def test_structured_masks_combine_with_dense_masks() -> None:
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 2, 9, 8, generator=gen) for _ in range(3))
    allowed = torch.rand(2, 1, 9, 9, generator=gen) > 0.3
    bias = torch.randn(2, 2, 9, 9, generator=gen)
    lengths = torch.tensor([4, 9])
    structure = masks.combine(masks.key_padding(lengths, 9), masks.window(9, 9, 2))
    assert structure is not None
    expected = reference_attention(q, k, v, allowed & structure, causal=True)
    expected_bias = reference_attention(q, k, v, bias.masked_fill(~structure, float("-inf")), causal=True)
    for impl in CPU_IMPLS:
        kwargs = {"key_lengths": lengths, "window": (2, 2), "causal": True, "impl": impl}
        assert_close(
            attention(q, k, v, allowed, **kwargs), expected, atol=1e-5, what=f"{impl} bool+structure"
        )  # type: ignore[arg-type]
        assert_close(
            attention(q, k, v, bias, **kwargs), expected_bias, atol=1e-5, what=f"{impl} bias+structure"
        )  # type: ignore[arg-type]


def test_window_matches_the_mask_builder() -> None:
    """window=(w, w) is masks.window(n, m, w); window=(w, 0) with causal is masks.window(..., causal=True)."""
    gen = torch.Generator().manual_seed(1)
    q, k, v = (
        torch.randn(1, 2, 7, 4, generator=gen),
        torch.randn(1, 2, 11, 4, generator=gen),
        torch.randn(1, 2, 11, 4, generator=gen),
    )
    for impl in CPU_IMPLS:
        sym = attention(q, k, v, window=(3, 3), impl=impl)  # type: ignore[arg-type]
        assert_close(sym, reference_attention(q, k, v, masks.window(7, 11, 3)), atol=1e-5, what=f"{impl} sym")
        past = attention(q, k, v, window=(3, 0), causal=True, impl=impl)  # type: ignore[arg-type]
        expected = reference_attention(q, k, v, masks.window(7, 11, 3, causal=True))
        assert_close(past, expected, atol=1e-5, what=f"{impl} causal window")


def test_tiled_window_visits_only_the_key_tiles_in_the_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """Work is O(N·w): with 8-wide tiles and window (4, 4), each query tile visits at most 3 key tiles."""
    calls: list[tuple[int, int]] = []
    original = tiled_mod._scores

    def counting(plan, q3, k3, mask4, i0, i1, j0, j1, buffer=None):  # type: ignore[no-untyped-def]
        calls.append((i0, j0))
        return original(plan, q3, k3, mask4, i0, i1, j0, j1, buffer)

    monkeypatch.setattr(tiled_mod, "_scores", counting)
    gen = torch.Generator().manual_seed(2)
    q, k, v = (torch.randn(1, 1, 64, 4, generator=gen) for _ in range(3))
    near = masks.window(64, 64, 4)
    out = tiled_mod.tiled_attention(q, k, v, near, window=(4, 4), block_q=8, block_k=8)
    assert_close(out, reference_attention(q, k, v, near), atol=1e-5, what="tiled window")
    assert len(calls) == 8 + 7 * 2, calls  # 8 diagonal tiles + one neighbour on each side (not 64)
    assert all(abs(i0 - j0) <= 8 for i0, j0 in calls)
    calls.clear()
    tiled_mod.tiled_attention(q, k, v, masks.key_padding([20], 64), key_limit=20, block_q=8, block_k=8)
    assert {j0 for _, j0 in calls} == {0, 8, 16}, "key tiles past key_lengths are never visited"


def test_structured_argument_errors_name_the_value() -> None:
    q = torch.randn(2, 1, 5, 4)
    k = torch.randn(2, 1, 6, 4)
    with pytest.raises(ValueError, match=r"key_lengths must have shape \[2\]"):
        attention(q, k, k, key_lengths=torch.tensor([1, 2, 3]))
    with pytest.raises(TypeError, match="key_lengths must hold integers"):
        attention(q, k, k, key_lengths=torch.tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match=r"key_lengths must lie in \[0, M=6\]"):
        attention(q, k, k, key_lengths=torch.tensor([1, 7]))
    with pytest.raises(ValueError, match="pass a pair"):
        attention(q, k, k, segment_ids=torch.zeros(2, 5, dtype=torch.long))
    with pytest.raises(ValueError, match="window must be"):
        attention(q, k, k, window=(2, -1))
    with pytest.raises(ValueError, match="window must be"):
        attention(q, k, k, window=3)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- varlen


def _packed(lens_q: list[int], lens_k: list[int], h: int = 4, hkv: int = 2, d: int = 8, seed: int = 0):  # type: ignore[no-untyped-def]
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(sum(lens_q), h, d, generator=gen, dtype=torch.float64)
    k = torch.randn(sum(lens_k), hkv, d, generator=gen, dtype=torch.float64)
    v = torch.randn(sum(lens_k), hkv, d, generator=gen, dtype=torch.float64)
    cu_q = torch.tensor([0, *torch.tensor(lens_q).cumsum(0).tolist()])
    cu_k = torch.tensor([0, *torch.tensor(lens_k).cumsum(0).tolist()])
    return q, k, v, cu_q, cu_k


@settings(max_examples=20, deadline=None)
@given(
    lens=st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9)), min_size=1, max_size=4),
    causal=st.booleans(),
    window=st.one_of(st.none(), st.tuples(st.integers(0, 4), st.integers(0, 4))),
    impl=st.sampled_from(CPU_IMPLS),
)
def test_varlen_equals_each_sequence_alone(
    lens: list[tuple[int, int]], causal: bool, window: tuple[int, int] | None, impl: str
) -> None:
    lens_q, lens_k = [a for a, _ in lens], [b for _, b in lens]
    q, k, v, cu_q, cu_k = _packed(lens_q, lens_k)
    out = attention_varlen(q, k, v, cu_q, cu_k, causal=causal, window=window, impl=impl)  # type: ignore[arg-type]
    assert out.shape == (sum(lens_q), 4, 8)
    for b in range(len(lens)):
        qs, ks = slice(int(cu_q[b]), int(cu_q[b + 1])), slice(int(cu_k[b]), int(cu_k[b + 1]))
        alone = attention(  # the reference path, one sequence at a time (empty ones give zeros)
            q[qs].transpose(0, 1)[None], k[ks].transpose(0, 1)[None], v[ks].transpose(0, 1)[None],
            None if window is None else window_mask(lens_q[b], lens_k[b], *window), causal=causal,
            impl="reference",
        )[0].transpose(0, 1)  # fmt: skip
        assert_close(out[qs], alone, atol=1e-10, what=f"{impl} varlen sequence {b}")


def test_varlen_errors_name_the_value() -> None:
    q, k, v, cu_q, cu_k = _packed([3, 4], [3, 4])
    with pytest.raises(ValueError, match="end at the packed length 7"):
        attention_varlen(q, k, v, torch.tensor([0, 3, 6]), cu_k)
    with pytest.raises(ValueError, match="3-D"):
        attention_varlen(q[None], k, v, cu_q, cu_k)
    with pytest.raises(ValueError, match="both are"):
        attention_varlen(q, k, v, cu_q, torch.tensor([0, 7]))


# ----------------------------------------------------------------------------- SDPA low precision


@pytest.mark.parametrize("impl", ["sdpa", "auto"])
def test_fp16_inputs_with_fp32_biases_beyond_fp16_range(impl: str) -> None:
    """A bias of 1e5 on one key selects that key; an HF-style row of finfo(float32).min is uniform."""
    gen = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(1, 2, 4, 8, generator=gen).half() for _ in range(3))
    bias = torch.zeros(1, 1, 4, 4)
    bias[..., 0, 2] = 1e5  # row 0: key 2 dominates
    bias[..., 1, :] = torch.finfo(torch.float32).min  # row 1: every key equally (very) penalized
    out = attention(q, k, v, bias, impl=impl)  # type: ignore[arg-type]
    expected = reference_attention(q, k, v, bias)
    assert torch.isfinite(out).all(), out
    assert_close(out.float(), expected.float(), atol=2e-3, what=f"{impl} fp16 + fp32 biases")
    assert_close(out[0, :, 0].float(), v[0, :, 2].float(), atol=2e-3, what="bias 1e5 selects key 2")
    assert_close(out[0, :, 1].float(), v[0].float().mean(dim=1), atol=2e-3, what="finfo.min row is uniform")


def test_fp16_bias_gradient_is_unchanged_by_the_shift() -> None:
    gen = torch.Generator().manual_seed(4)
    q, k, v = (torch.randn(1, 1, 3, 8, generator=gen).half() for _ in range(3))
    bias = (torch.randn(1, 1, 3, 3, generator=gen) * 4).requires_grad_()
    (g_sdpa,) = torch.autograd.grad(attention(q, k, v, bias, impl="sdpa").float().sum(), bias)
    (g_ref,) = torch.autograd.grad(reference_attention(q, k, v, bias).float().sum(), bias)
    assert_close(g_sdpa, g_ref, atol=5e-3, what="d bias")


# ----------------------------------------------------------------------------- dispatch


def test_impl_choices_are_defined_once() -> None:
    assert IMPLS == get_args(Impl) == ("auto", "reference", "sdpa", "tiled", "triton")
    for impl in IMPLS:
        assert EncoderConfig(attn_impl=impl).attn_impl == impl  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="attn_impl must be one of"):
        EncoderConfig(attn_impl="flash")  # type: ignore[arg-type]
    import tokenloom.encoder.attention.triton_kernel as tk

    assert not hasattr(tk, "triton_available")


def test_forced_sdpa_backend_never_falls_back_to_math() -> None:
    """Asking for named backends runs exactly one of them, or raises: never the math kernel silently."""
    q = torch.randn(1, 2, 8, 4)
    sdpa_attention(q, q, q, kernels=("flash",))
    assert last_sdpa_kernel() == "flash"
    with pytest.raises(NoFusedKernel):
        sdpa_attention(q, q, q, kernels=("cudnn",))  # no cuDNN on CPU: refused, not run on "math"
    with pytest.raises(NoFusedKernel):
        sdpa_attention(q, q, torch.randn(1, 2, 8, 6), kernels=("flash",))  # CPU flash refuses Dv != D


def test_auto_on_cpu_records_the_path_with_structured_masks() -> None:
    q = torch.randn(2, 2, 8, 4)
    attention(q, q, q, key_lengths=torch.tensor([3, 8]))
    assert last_impl() == "sdpa" and last_sdpa_kernel() == "flash"
    out = attention(q, q, q, window=(1, 1), impl="tiled")
    assert last_impl() == "tiled"
    assert_close(out, reference_attention(q, q, q, masks.window(8, 8, 1)), atol=1e-5, what="tiled window")
