"""Attention: worked examples, conventions, and every CPU path (sdpa, tiled) against the reference.

The Triton path is tested in test_attention_triton.py (interpreter subprocess + CUDA). Each comparison
prints the max absolute difference when it fails.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokenloom.encoder import masks
from tokenloom.encoder.attention import (
    attention,
    attention_weights,
    last_impl,
    last_sdpa_kernel,
    reference_attention,
)
from tokenloom.encoder.attention import sdpa as sdpa_mod
from tokenloom.encoder.attention import tiled as tiled_mod
from tokenloom.encoder.attention.tiled import tiled_attention

CPU_IMPLS = ("reference", "sdpa", "tiled")
HYPO = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# large finite additive biases: Hugging Face's padding value, the -1e9 convention, and positive ones
LARGE_BIASES = (torch.finfo(torch.float32).min, -1e9, 1e9, torch.finfo(torch.float32).max / 2)


def assert_close(actual: torch.Tensor, expected: torch.Tensor, *, atol: float, what: str) -> None:
    assert actual.shape == expected.shape, f"{what}: shape {tuple(actual.shape)} != {tuple(expected.shape)}"
    assert torch.isfinite(actual).all(), f"{what}: non-finite values in the fast path"
    diff = (actual.double() - expected.double()).abs().max().item() if actual.numel() else 0.0
    bound = atol * max(1.0, expected.abs().max().item() if expected.numel() else 0.0)
    assert diff <= bound, f"{what}: max |diff| = {diff:.3e} > {bound:.1e}"


# ----------------------------------------------------------------------------- worked examples (DESIGN.md)


def _example() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    q = torch.tensor([[1.0, 0.0]]).view(1, 1, 1, 2)  # [B, H, N, D]
    k = torch.tensor([[1.0, 0.0], [0.0, 1.0]]).view(1, 1, 2, 2)  # [B, Hkv, M, D]
    v = torch.tensor([[2.0, 0.0], [0.0, 4.0]]).view(1, 1, 2, 2)
    return q, k, v


def test_worked_example_weights() -> None:
    q, k, _ = _example()
    weights = attention_weights(q, k)
    assert torch.allclose(weights.view(-1), torch.tensor([0.6698, 0.3302]), atol=1e-4), weights


@pytest.mark.parametrize("impl", CPU_IMPLS)
def test_worked_example_output(impl: str) -> None:
    q, k, v = _example()
    out = attention(q, k, v, impl=impl)
    assert torch.allclose(out.view(-1), torch.tensor([1.3395, 1.3210]), atol=1e-4), out
    assert last_impl() == impl
    doubled = attention(q, k, 2 * v, impl=impl)
    assert torch.allclose(doubled, 2 * out, atol=1e-6), "doubling the values must double the output"


@pytest.mark.parametrize("impl", CPU_IMPLS)
def test_worked_example_causal(impl: str) -> None:
    _, k, v = _example()
    q2 = torch.tensor([[1.0, 0.0], [1.0, 0.0]]).view(1, 1, 2, 2)  # two queries at positions 0 and 1
    out = attention(q2, k, v, causal=True, impl=impl)
    assert torch.allclose(out[0, 0, 0], torch.tensor([2.0, 0.0]), atol=1e-6), out  # sees key 0 only
    assert torch.allclose(out[0, 0, 1], torch.tensor([1.3395, 1.3210]), atol=1e-4), out  # sees both
    weights = attention_weights(q2, k, causal=True)
    assert torch.allclose(weights[0, 0, 0], torch.tensor([1.0, 0.0])), weights


@pytest.mark.parametrize("impl", CPU_IMPLS)
def test_worked_example_equal_scores(impl: str) -> None:
    _, _, v = _example()
    q = torch.tensor([[1.0, 1.0]]).view(1, 1, 1, 2)
    k = torch.tensor([[1.0, 0.0], [0.0, 1.0]]).view(1, 1, 2, 2)  # q·k equal for both keys
    out = attention(q, k, v, impl=impl)
    assert torch.allclose(out.view(-1), torch.tensor([1.0, 2.0]), atol=1e-6), out


# ----------------------------------------------------------------------------- conventions


@pytest.mark.parametrize("impl", CPU_IMPLS)
@pytest.mark.parametrize("kind", ["bool", "additive", "causal_n_gt_m", "padding_zero"])
def test_fully_masked_rows_are_zero_with_finite_grads(impl: str, kind: str) -> None:
    gen = torch.Generator().manual_seed(1)
    n, m = (6, 3) if kind == "causal_n_gt_m" else (5, 7)
    q = torch.randn(2, 2, n, 8, generator=gen, requires_grad=True)
    k = torch.randn(2, 2, m, 8, generator=gen, requires_grad=True)
    v = torch.randn(2, 2, m, 8, generator=gen, requires_grad=True)
    allowed = torch.rand(2, 1, n, m, generator=gen) > 0.3
    allowed[:, :, 1] = False  # row 1: no key at all
    mask, causal, dead = None, False, torch.zeros(2, 1, n, 1, dtype=torch.bool)
    if kind == "bool":
        mask, dead[:, :, 1] = allowed, True
    elif kind == "additive":
        mask, dead[:, :, 1] = masks.to_additive(allowed), True
    elif kind == "causal_n_gt_m":
        causal, dead[:, :, : n - m] = True, True  # queries before the first key see nothing
    else:
        mask, dead[0] = masks.key_padding([0, m], m), True  # sequence 0 has length 0
    out = attention(q, k, v, mask, causal=causal, impl=impl)
    assert torch.isfinite(out).all()
    assert (out.masked_select(dead.expand_as(out[..., :1]).expand_as(out)) == 0).all(), "dead rows must be 0"
    assert (out.abs().sum(-1) > 0).masked_select(~dead.expand_as(out[..., 0:1]).squeeze(-1)).all()
    grads = torch.autograd.grad(out.square().sum() + out.sum(), (q, k, v))
    for name, grad in zip("qkv", grads, strict=True):
        assert torch.isfinite(grad).all(), f"d{name} has NaN/inf"
    dq = grads[0]
    assert (dq.masked_select(dead.expand(2, 2, n, 1).expand_as(dq)) == 0).all(), "dead rows get zero dq"


@pytest.mark.parametrize("impl", [*CPU_IMPLS, "auto"])
@pytest.mark.parametrize("big", LARGE_BIASES[:3])
def test_a_row_at_one_large_bias_has_uniform_weights_and_gradients(impl: str, big: float) -> None:
    """A whole row at one large finite bias (−1e9, ``finfo.min``: Hugging Face padding) attends uniformly,
    forward and backward: its dv is 1/M per key, not 1 (the log-sum-exp must not lose log M)."""
    gen = torch.Generator().manual_seed(0)
    q, k = torch.randn(1, 1, 4, 32, generator=gen), torch.randn(1, 1, 6, 32, generator=gen)
    v = torch.randn(1, 1, 6, 32, generator=gen, requires_grad=True)
    bias = torch.zeros(1, 1, 4, 6)
    bias[..., 2, :] = big
    out = attention(q, k, v, bias, impl=impl)
    assert_close(out[0, 0, 2], v[0, 0].mean(0), atol=1e-6, what=f"{impl} output of the constant row")
    (dv,) = torch.autograd.grad(out[0, 0, 2].sum(), v)
    assert_close(dv, torch.full_like(dv, 1 / 6), atol=1e-6, what=f"{impl} dv of the constant row")
    if impl == "sdpa":
        assert last_sdpa_kernel() == "math", "the fused SDPA backward loses such rows: math must run"
        with torch.no_grad():
            attention(q, k, v, bias, impl=impl)
        assert last_sdpa_kernel() != "math", "without gradients the fused kernels are exact and keep the call"


def test_causal_alignment_with_kv_cache() -> None:
    """Queries are the last N of M positions: their rows equal the last N rows of the full causal call."""
    gen = torch.Generator().manual_seed(2)
    x_q = torch.randn(1, 2, 9, 4, generator=gen)
    k = torch.randn(1, 2, 9, 4, generator=gen)
    v = torch.randn(1, 2, 9, 4, generator=gen)
    full = reference_attention(x_q, k, v, causal=True)
    for impl in CPU_IMPLS:
        tail = attention(x_q[:, :, -3:], k, v, causal=True, impl=impl)  # N=3, M=9
        assert_close(tail, full[:, :, -3:], atol=1e-5, what=f"{impl} causal tail")
    allowed = masks.causal(3, 9)
    for i in range(3):
        for j in range(9):
            assert bool(allowed[i, j]) == (j <= i + 6)


@pytest.mark.parametrize("impl", CPU_IMPLS)
def test_bool_and_additive_masks_agree(impl: str) -> None:
    gen = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(2, 4, 6, 8, generator=gen) for _ in range(3))
    allowed = torch.rand(2, 1, 6, 6, generator=gen) > 0.4
    allowed[..., 0] = True
    a = attention(q, k, v, allowed, impl=impl)
    b = attention(q, k, v, masks.to_additive(allowed), impl=impl)
    assert_close(a, b, atol=1e-6, what=f"{impl} bool vs additive")
    c = attention(q, k, v, masks.from_ignore_mask(~allowed), impl=impl)
    assert_close(c, a, atol=0.0, what=f"{impl} from_ignore_mask")


def test_polarity_matches_torch_multihead_attention() -> None:
    """Oracle: nn.MultiheadAttention (True = ignore) vs our attention after the explicit converters."""
    torch.manual_seed(4)
    e, h, n = 16, 4, 7
    mha = torch.nn.MultiheadAttention(e, h, batch_first=True).eval()
    x = torch.randn(2, n, e)
    key_padding_mask = torch.tensor([[False] * n, [False] * 4 + [True] * 3])  # True = padding
    attn_mask = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=3)  # True = not allowed
    expected, _ = mha(x, x, x, key_padding_mask=key_padding_mask, attn_mask=attn_mask, need_weights=False)
    wq, wk, wv = mha.in_proj_weight.chunk(3)
    bq, bk, bv = mha.in_proj_bias.chunk(3)

    def heads(t: torch.Tensor) -> torch.Tensor:
        return t.view(2, n, h, e // h).transpose(1, 2)  # [B, N, d] -> [B, H, N, D]

    q, k, v = heads(x @ wq.T + bq), heads(x @ wk.T + bk), heads(x @ wv.T + bv)
    mask = masks.combine(masks.from_key_padding_mask(key_padding_mask), masks.from_ignore_mask(attn_mask))
    for impl in CPU_IMPLS:
        out = (
            attention(q, k, v, mask, impl=impl).transpose(1, 2).reshape(2, n, e)
        )  # [B, H, N, D] -> [B, N, d]
        assert_close(mha.out_proj(out), expected, atol=1e-5, what=f"{impl} vs nn.MultiheadAttention")


def test_gqa_equals_repeated_heads() -> None:
    gen = torch.Generator().manual_seed(5)
    q = torch.randn(2, 6, 5, 8, generator=gen)
    k = torch.randn(2, 2, 7, 8, generator=gen)
    v = torch.randn(2, 2, 7, 8, generator=gen)
    expected = reference_attention(q, k.repeat_interleave(3, dim=1), v.repeat_interleave(3, dim=1))
    for impl in CPU_IMPLS:
        assert_close(attention(q, k, v, impl=impl), expected, atol=1e-5, what=f"{impl} GQA")


def test_scale_and_value_width() -> None:
    gen = torch.Generator().manual_seed(6)
    q, k = torch.randn(1, 2, 4, 8, generator=gen), torch.randn(1, 2, 5, 8, generator=gen)
    v = torch.randn(1, 2, 5, 3, generator=gen)  # Dv != D
    weights = torch.softmax(q @ k.transpose(-2, -1) * 0.5, dim=-1)
    for impl in CPU_IMPLS:
        assert_close(attention(q, k, v, scale=0.5, impl=impl), weights @ v, atol=1e-5, what=f"{impl} scale")


def test_sdpa_runs_the_backend_torch_would_choose_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """Backends are forced one at a time, starting with torch's own choice among them
    (``torch._fused_sdp_choice``): a fixed order would override torch's preferences (cuDNN on Hopper)."""
    from torch.nn.attention import SDPBackend

    gen = torch.Generator().manual_seed(8)
    q, k, v = (torch.randn(2, 2, 9, 8, generator=gen) for _ in range(3))
    expected = reference_attention(q, k, v, causal=True)
    names = {int(SDPBackend.FLASH_ATTENTION): "flash", int(SDPBackend.MATH): "math"}
    out = attention(q, k, v, causal=True, impl="sdpa")
    assert last_sdpa_kernel() == names[torch._fused_sdp_choice(q, k, v, None, 0.0, True)]
    assert_close(out, expected, atol=1e-5, what="torch's own choice")
    monkeypatch.setattr(torch, "_fused_sdp_choice", lambda *args, **kwargs: int(SDPBackend.CUDNN_ATTENTION))
    cuda_order = [(n, getattr(SDPBackend, b)) for n, b in (("flash", "FLASH_ATTENTION"), ("efficient",
                  "EFFICIENT_ATTENTION"), ("cudnn", "CUDNN_ATTENTION"), ("math", "MATH"))]  # fmt: skip
    call = sdpa_mod._Call(None, 0.0, True, 8**-0.5, False)
    first = sdpa_mod._torch_choice_first(cuda_order, q, k, v, call)
    assert [n for n, _ in first] == ["cudnn", "flash", "efficient", "math"], "torch's choice runs first"
    out = attention(q, k, v, causal=True, impl="sdpa")  # no cuDNN on the CPU: torch is not asked
    assert last_sdpa_kernel() == "flash"
    assert_close(out, expected, atol=1e-5, what="the fixed order on the CPU")
    monkeypatch.delattr(torch, "_fused_sdp_choice")
    assert sdpa_mod._torch_choice_first(cuda_order, q, k, v, call) == cuda_order, (
        "without the probe: as given"
    )


def test_auto_and_last_impl(monkeypatch: pytest.MonkeyPatch) -> None:
    from tokenloom.encoder.attention import dispatch as att

    q = k = v = torch.randn(1, 2, 8, 4)
    attention(q, k, v, masks.causal(8, 8))
    assert last_impl() == "sdpa"
    assert last_sdpa_kernel() == "flash"  # CPU flash takes masks: no reason to leave SDPA
    torch.manual_seed(0)
    attention(q, k, v, dropout_p=0.1)
    assert (last_impl(), last_sdpa_kernel()) == ("sdpa", "math")  # small scores: math fallback is fine
    monkeypatch.setattr(att, "AUTO_TILED_BYTES", 16)  # pretend the scores would not fit
    out = attention(q, k, v, masks.causal(8, 8))
    assert last_impl() == "sdpa", "a fused kernel never materializes scores, whatever their size"
    wide_v = torch.randn(1, 2, 8, 6)  # Dv != D: CPU flash refuses, only math would take it
    out = attention(q, k, wide_v, masks.causal(8, 8))
    assert last_impl() == "tiled"
    assert_close(out, reference_attention(q, k, wide_v, causal=True), atol=1e-6, what="auto->tiled")
    attention(q, k, v, dropout_p=0.1)
    assert last_impl() == "tiled"


def test_bad_inputs_are_named() -> None:
    q = torch.randn(1, 4, 3, 8)
    with pytest.raises(ValueError, match="multiple of key/value heads"):
        attention(q, torch.randn(1, 3, 3, 8), torch.randn(1, 3, 3, 8))
    with pytest.raises(ValueError, match="4-D"):
        attention(q[0], q[0], q[0])
    with pytest.raises(ValueError, match="does not broadcast"):
        attention(q, q, q, torch.ones(5, 3, dtype=torch.bool))
    with pytest.raises(TypeError, match="integer 0/1 masks"):
        attention(q, q, q, torch.ones(3, 3, dtype=torch.int64))
    with pytest.raises(ValueError, match="impl must be one of"):
        attention(q, q, q, impl="flash")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="dropout_p"):
        attention(q, q, q, dropout_p=1.0)


def test_empty_keys_give_zeros() -> None:
    q = torch.randn(1, 2, 3, 4, requires_grad=True)
    k = torch.randn(1, 2, 0, 4)
    for impl in CPU_IMPLS:
        out = attention(q, k, k, impl=impl)
        assert out.shape == (1, 2, 3, 4) and (out == 0).all()
        (grad,) = torch.autograd.grad(out.sum(), q)
        assert (grad == 0).all()


def test_low_precision_inputs_follow_reference() -> None:
    gen = torch.Generator().manual_seed(7)
    q, k, v = (torch.randn(1, 2, 33, 16, generator=gen).to(torch.bfloat16) for _ in range(3))
    expected = reference_attention(q, k, v, causal=True)
    assert expected.dtype == torch.bfloat16
    for impl in ("sdpa", "tiled"):
        out = attention(q, k, v, causal=True, impl=impl)
        assert out.dtype == torch.bfloat16
        assert_close(out, expected, atol=2e-2, what=f"{impl} bf16")


# ----------------------------------------------------------------------------- every path == reference


@dataclass(frozen=True)
class Case:
    B: int
    H: int
    Hkv: int
    N: int
    M: int
    D: int
    Dv: int
    mask_kind: str
    causal: bool
    seed: int

    def tensors(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]:
        gen = torch.Generator().manual_seed(self.seed)
        q = torch.randn(self.B, self.H, self.N, self.D, generator=gen)
        k = torch.randn(self.B, self.Hkv, self.M, self.D, generator=gen)
        v = torch.randn(self.B, self.Hkv, self.M, self.Dv, generator=gen)
        return q, k, v, self._mask(gen)

    def _mask(self, gen: torch.Generator) -> torch.Tensor | None:
        B, H, N, M = self.B, self.H, self.N, self.M
        kind = self.mask_kind
        if kind == "none":
            return None
        if kind == "bool":
            return torch.rand(B, 1, N, M, generator=gen) > 0.3
        if kind == "bool_heads":
            return torch.rand(1, H, N, M, generator=gen) > 0.5
        if kind == "padding":
            return masks.key_padding(torch.randint(0, M + 1, (B,), generator=gen), M)
        if kind == "segment":
            q_ids = torch.randint(-1, 3, (B, N), generator=gen).sort(dim=1).values
            k_ids = torch.randint(-1, 3, (B, M), generator=gen).sort(dim=1).values
            return masks.segment(q_ids, k_ids)
        if kind == "additive":
            return masks.to_additive(torch.rand(N, M, generator=gen) > 0.4)
        bias = torch.randn(B, 1, N, M, generator=gen)
        if kind == "large_rows":
            return _large_rows(bias, gen)
        assert kind == "additive_bias"  # finite biases plus some -inf
        return bias.masked_fill(torch.rand(B, 1, N, M, generator=gen) < 0.2, float("-inf"))


def _large_rows(bias: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Some rows wholly at one large finite constant (Hugging Face's padding rows), some rows partly at
    it, the rest small biases: a constant row's weights are uniform, never lost to the log-sum-exp."""
    B, _, N, M = bias.shape
    big = LARGE_BIASES[int(torch.randint(0, len(LARGE_BIASES), (1,), generator=gen))]
    whole = torch.rand(B, 1, N, 1, generator=gen) < 0.4  # [B, 1, N, 1]
    partly = (torch.rand(B, 1, N, 1, generator=gen) < 0.5) & (torch.rand(B, 1, N, M, generator=gen) < 0.5)
    return bias.masked_fill(whole | partly, big)


MASK_KINDS = ("none", "bool", "bool_heads", "padding", "segment", "additive", "additive_bias", "large_rows")


@st.composite
def cases(draw: st.DrawFn, max_len: int = 24, kinds: tuple[str, ...] = MASK_KINDS) -> Case:
    hkv = draw(st.integers(1, 3))
    d = draw(st.integers(1, 16))
    return Case(
        B=draw(st.integers(1, 2)),
        H=hkv * draw(st.sampled_from([1, 2, 3])),
        Hkv=hkv,
        N=draw(st.integers(1, max_len)),
        M=draw(st.integers(1, max_len)),
        D=d,
        Dv=draw(st.sampled_from([d, 5])),
        mask_kind=draw(st.sampled_from(kinds)),
        causal=draw(st.booleans()),
        seed=draw(st.integers(0, 2**31 - 1)),
    )


def _check_against_reference(
    case: Case, run: Callable[..., torch.Tensor], *, mask_grad: bool, what: str
) -> None:
    q, k, v, mask = case.tensors()
    leaves = [q.requires_grad_(), k.requires_grad_(), v.requires_grad_()]
    if mask_grad and mask is not None and mask.is_floating_point():
        leaves.append(mask.requires_grad_())
    expected = reference_attention(q, k, v, mask, causal=case.causal)
    out = run(q, k, v, mask, causal=case.causal)
    assert_close(out, expected, atol=1e-5, what=f"{what} output {case}")
    weight = torch.randn(expected.shape, generator=torch.Generator().manual_seed(case.seed + 1))
    grads_ref = torch.autograd.grad((expected * weight).sum(), leaves)
    grads = torch.autograd.grad((out * weight).sum(), leaves)
    for name, g, g_ref in zip(("dq", "dk", "dv", "dmask"), grads, grads_ref, strict=False):
        assert_close(g, g_ref, atol=5e-5, what=f"{what} {name} {case}")


@pytest.mark.slow
@HYPO
@given(case=cases(), block_q=st.integers(1, 9), block_k=st.integers(1, 9))
def test_tiled_equals_reference(case: Case, block_q: int, block_k: int) -> None:
    def run(
        q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, *, causal: bool
    ) -> torch.Tensor:
        return tiled_attention(q, k, v, mask, causal=causal, block_q=block_q, block_k=block_k)

    _check_against_reference(case, run, mask_grad=True, what=f"tiled[{block_q}x{block_k}]")


@pytest.mark.slow
@HYPO
@given(case=cases())
def test_sdpa_equals_reference(case: Case) -> None:
    def run(
        q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, *, causal: bool
    ) -> torch.Tensor:
        return attention(q, k, v, mask, causal=causal, impl="sdpa")

    _check_against_reference(case, run, mask_grad=False, what="sdpa")


@HYPO
@given(case=cases(kinds=("large_rows",)), block_q=st.integers(1, 9), block_k=st.integers(1, 9))
def test_large_bias_rows_on_tiled_and_sdpa_equal_reference(case: Case, block_q: int, block_k: int) -> None:
    """Rows wholly or partly at one large finite bias, multi-tile shapes and GQA included."""

    def tiled(
        q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, *, causal: bool
    ) -> torch.Tensor:
        return tiled_attention(q, k, v, mask, causal=causal, block_q=block_q, block_k=block_k)

    def sdpa(
        q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, *, causal: bool
    ) -> torch.Tensor:
        return attention(q, k, v, mask, causal=causal, impl="sdpa")

    _check_against_reference(case, tiled, mask_grad=True, what=f"tiled[{block_q}x{block_k}]")
    _check_against_reference(case, sdpa, mask_grad=False, what="sdpa")


@settings(max_examples=15, deadline=None)
@given(case=cases(max_len=80))
def test_tiled_default_tiles_via_attention(case: Case) -> None:
    def run(
        q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, *, causal: bool
    ) -> torch.Tensor:
        return attention(q, k, v, mask, causal=causal, impl="tiled")

    _check_against_reference(case, run, mask_grad=True, what="tiled(default tiles)")


def test_tiled_matches_reference_across_tile_boundaries() -> None:
    """Lengths around the default tile sizes (not multiples of them), causal and masked."""
    gen = torch.Generator().manual_seed(8)
    n, m = tiled_mod.DEFAULT_BLOCK_Q + 7, tiled_mod.DEFAULT_BLOCK_K + 5
    q = torch.randn(1, 2, n, 16, generator=gen)
    k, v = torch.randn(1, 1, m, 16, generator=gen), torch.randn(1, 1, m, 16, generator=gen)
    mask = masks.window(n, m, 100, causal=True)
    assert_close(
        tiled_attention(q, k, v, mask),
        reference_attention(q, k, v, mask),
        atol=1e-5,
        what="tiled, window mask, ragged tiles",
    )


# ----------------------------------------------------------------------------- tiled: memory and dropout


def _largest_allocation(fn: Callable[[], object]) -> int:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    return max((event.cpu_memory_usage for event in prof.events()), default=0)


def test_tiled_never_materializes_scores() -> None:
    n = 1024
    q, k, v = (torch.randn(1, 1, n, 16) for _ in range(3))
    scores_bytes = n * n * 4
    reference_peak = _largest_allocation(lambda: reference_attention(q, k, v, causal=True))
    tiled_peak = _largest_allocation(lambda: tiled_attention(q, k, v, causal=True, block_q=64, block_k=64))
    assert reference_peak >= scores_bytes, reference_peak  # the measurement can see a score matrix
    assert tiled_peak <= scores_bytes // 16, f"tiled allocated {tiled_peak} bytes in one op"


def test_tiled_dropout_equals_reference_with_the_same_keep_mask() -> None:
    gen = torch.Generator().manual_seed(9)
    B, H, Hkv, N, M, D, p = 2, 4, 2, 11, 13, 8, 0.3
    q = torch.randn(B, H, N, D, generator=gen, requires_grad=True)
    k = torch.randn(B, Hkv, M, D, generator=gen, requires_grad=True)
    v = torch.randn(B, Hkv, M, D, generator=gen, requires_grad=True)
    mask = torch.rand(B, 1, N, M, generator=gen) > 0.3
    torch.manual_seed(123)
    out = tiled_attention(q, k, v, mask, causal=True, dropout_p=p, block_q=4, block_k=5)
    torch.manual_seed(123)
    seed = tiled_mod._draw_seed()
    keep = torch.zeros(B, Hkv, H // Hkv, N, M)  # [B, Hkv, G, N, M], rebuilt tile by tile
    n_k_tiles = -(-M // 5)
    for i0 in range(0, N, 4):
        for j0 in range(0, M, 5):
            tile = keep[..., i0 : i0 + 4, j0 : j0 + 5]
            index = (i0 // 4) * n_k_tiles + j0 // 5
            tile.copy_(tiled_mod._keep_tile(seed, index, tuple(tile.shape), p, q.device))
    weights = attention_weights(q, k, mask, causal=True) * keep.flatten(1, 2) / (1 - p)  # [B, H, N, M]
    expected = weights @ v.repeat_interleave(H // Hkv, dim=1)
    assert_close(out, expected, atol=1e-5, what="tiled dropout output")
    assert 0 < (keep == 0).float().mean() < 0.6, "the keep mask must drop something"
    grads = torch.autograd.grad(out.sum(), (q, k, v))
    grads_ref = torch.autograd.grad(expected.sum(), (q, k, v))
    for name, g, g_ref in zip("qkv", grads, grads_ref, strict=True):
        assert_close(g, g_ref, atol=5e-5, what=f"tiled dropout d{name}")


@pytest.mark.slow
@pytest.mark.parametrize("impl", CPU_IMPLS)
def test_dropout_is_unbiased_and_seeded(impl: str) -> None:
    gen = torch.Generator().manual_seed(10)
    q, k, v = (torch.randn(1, 1, 3, 4, generator=gen) for _ in range(3))
    torch.manual_seed(0)
    draws = torch.stack([attention(q, k, v, dropout_p=0.5, impl=impl) for _ in range(600)])
    assert_close(draws.mean(0), reference_attention(q, k, v), atol=0.2, what=f"{impl} dropout mean")
    assert (draws.std(0) > 0).all(), "dropout must change the output"
    torch.manual_seed(5)
    a = attention(q, k, v, dropout_p=0.5, impl=impl)
    torch.manual_seed(5)
    assert torch.equal(a, attention(q, k, v, dropout_p=0.5, impl=impl)), "torch.manual_seed must reproduce"
