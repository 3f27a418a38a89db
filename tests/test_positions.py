"""Positions: sinusoidal 1-D/2-D formulas, learned tables and their timm-style resampling, RoPE identities."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenloom.encoder.positions import (
    LearnedGridPositions,
    LearnedPositions,
    RotaryEmbedding,
    apply_rope,
    apply_rope_reference,
    resample_grid_positions,
    rope_angles,
    rope_inv_freq,
    sinusoidal_1d,
    sinusoidal_2d,
)

# ----------------------------------------------------------------------------- sinusoidal


def test_sinusoidal_1d_matches_the_paper_formula() -> None:
    n, dim = 7, 8
    pe = sinusoidal_1d(n, dim, dtype=torch.float64)
    assert pe.shape == (n, dim)
    for p in range(n):
        for i in range(dim // 2):
            angle = p / 10000 ** (2 * i / dim)
            assert pe[p, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-12)
            assert pe[p, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-12)
    # position 0 is (0, 1, 0, 1, ...)
    assert torch.equal(pe[0], torch.tensor([0.0, 1.0] * (dim // 2), dtype=torch.float64))


def test_sinusoidal_1d_start_offsets_positions() -> None:
    full = sinusoidal_1d(10, 16)
    assert torch.allclose(sinusoidal_1d(4, 16, start=6), full[6:])
    # one start per row: [B, n, dim], row b holds positions start[b]..start[b]+n-1
    per_row = sinusoidal_1d(3, 16, start=torch.tensor([0, 6, 2]))
    assert per_row.shape == (3, 3, 16)
    for b, s in enumerate([0, 6, 2]):
        assert torch.allclose(per_row[b], full[s : s + 3])
    with pytest.raises(ValueError, match="integer tensor"):
        sinusoidal_1d(3, 16, start=torch.tensor([0.5]))


def test_sinusoidal_2d_is_row_then_column_encoding_in_row_major_order() -> None:
    gh, gw, dim = 3, 5, 16
    pe = sinusoidal_2d((gh, gw), dim)
    rows, cols = sinusoidal_1d(gh, dim // 2), sinusoidal_1d(gw, dim // 2)
    assert pe.shape == (gh * gw, dim)
    for r in range(gh):
        for c in range(gw):
            assert torch.allclose(pe[r * gw + c, : dim // 2], rows[r])
            assert torch.allclose(pe[r * gw + c, dim // 2 :], cols[c])


@pytest.mark.parametrize("dim", [0, 3, 6])
def test_sinusoidal_2d_rejects_dims_not_divisible_by_4(dim: int) -> None:
    with pytest.raises(ValueError, match="divisible by 4"):
        sinusoidal_2d((2, 2), dim)


# ----------------------------------------------------------------------------- learned


def test_learned_positions_add_rows_from_start() -> None:
    pos = LearnedPositions(10, 4)
    x = torch.zeros(2, 3, 4)
    assert torch.equal(pos(x), pos.weight[:, :3].expand(2, 3, 4))
    assert torch.equal(pos(x, start=7), pos.weight[:, 7:10].expand(2, 3, 4))
    with pytest.raises(ValueError, match="max_len=10"):
        pos(x, start=8)
    # one start per row
    per_row = pos(x, start=torch.tensor([7, 2]))
    assert torch.equal(per_row[0], pos.weight[0, 7:10])
    assert torch.equal(per_row[1], pos.weight[0, 2:5])
    with pytest.raises(ValueError, match=r"positions 2\.\.10 exceed"):
        pos(x, start=torch.tensor([2, 8]))


def test_grid_resampling_equals_timm_resample_abs_pos_embed() -> None:
    from timm.layers import resample_abs_pos_embed

    torch.manual_seed(0)
    table = torch.randn(1, 1 + 14 * 14, 32)
    for new in [(16, 16), (7, 10), (20, 9)]:
        ours = resample_grid_positions(table, new, old_grid=(14, 14), num_prefix_tokens=1)
        theirs = resample_abs_pos_embed(table, list(new), old_size=[14, 14], num_prefix_tokens=1)
        assert ours.shape == (1, 1 + new[0] * new[1], 32)
        assert torch.allclose(ours, theirs, atol=1e-6), (ours - theirs).abs().max()
        assert torch.equal(ours[:, :1], table[:, :1])  # class-token row kept as it is


def test_grid_resampling_same_grid_is_identity_and_constant_grid_stays_constant() -> None:
    table = torch.randn(1, 1 + 4 * 4, 8)
    assert resample_grid_positions(table, (4, 4), old_grid=(4, 4)) is table
    const = torch.ones(1, 1 + 4 * 4, 8) * 0.5
    up = resample_grid_positions(const, (9, 6), old_grid=(4, 4))
    assert torch.allclose(up, torch.full_like(up, 0.5), atol=1e-6)


def test_learned_grid_positions_resample_for_other_grids() -> None:
    pos = LearnedGridPositions((4, 4), 8, num_prefix_tokens=1)
    x = torch.zeros(2, 1 + 16, 8)
    assert torch.equal(pos(x, grid=(4, 4)), pos.weight.expand(2, -1, -1))
    y = pos(torch.zeros(2, 1 + 6 * 5, 8), grid=(6, 5))
    assert y.shape == (2, 31, 8)
    with pytest.raises(ValueError, match="position table"):
        pos(torch.zeros(2, 20, 8), grid=(6, 5))


# ----------------------------------------------------------------------------- RoPE


def _score(q: torch.Tensor, k: torch.Tensor, m: int, n: int, inv_freq: torch.Tensor) -> float:
    """<R(m) q, R(n) k> for single vectors q, k of width D."""
    cos_m, sin_m = rope_angles(torch.tensor([m]), inv_freq)
    cos_n, sin_n = rope_angles(torch.tensor([n]), inv_freq)
    qr = apply_rope(q.view(1, 1, 1, -1), cos_m, sin_m)
    kr = apply_rope(k.view(1, 1, 1, -1), cos_n, sin_n)
    return float((qr * kr).sum())


def test_rope_worked_example_from_design() -> None:
    # DESIGN.md: 2-D, frequency π/4 per position, q = k = [1, 0]: score 0.7071 at (1, 2) and at (5, 6)
    freq = torch.tensor([math.pi / 4])
    q = k = torch.tensor([1.0, 0.0])
    assert _score(q, k, 1, 2, freq) == pytest.approx(0.7071, abs=1e-4)
    assert _score(q, k, 5, 6, freq) == pytest.approx(0.7071, abs=1e-4)
    assert _score(q, k, 1, 3, freq) == pytest.approx(0.0, abs=1e-6)  # two steps: π/2 apart


def test_rope_inv_freq_is_base_power_series() -> None:
    inv = rope_inv_freq(8, base=10000.0)
    assert torch.allclose(inv, torch.tensor([1.0, 10000**-0.25, 10000**-0.5, 10000**-0.75]))
    with pytest.raises(ValueError, match="even"):
        rope_inv_freq(7)


@settings(max_examples=40, deadline=None)
@given(
    half=st.integers(1, 16),
    m=st.integers(0, 2000),
    n=st.integers(0, 2000),
    shift=st.integers(0, 2000),
    base=st.sampled_from([100.0, 10000.0, 500000.0]),
    seed=st.integers(0, 2**16),
)
def test_rope_score_depends_only_on_relative_position(
    half: int, m: int, n: int, shift: int, base: float, seed: int
) -> None:
    g = torch.Generator().manual_seed(seed)
    q, k = (
        torch.randn(2 * half, generator=g, dtype=torch.float64),
        torch.randn(2 * half, generator=g, dtype=torch.float64),
    )
    inv = rope_inv_freq(2 * half, base=base)
    a, b = _score(q, k, m, n, inv), _score(q, k, m + shift, n + shift, inv)
    assert a == pytest.approx(b, abs=1e-4 * (1 + float(q.norm() * k.norm()))), (a, b)


@settings(max_examples=25, deadline=None)
@given(half=st.integers(1, 8), n=st.integers(1, 9), seed=st.integers(0, 2**16))
def test_apply_rope_equals_complex_reference_and_preserves_norm(half: int, n: int, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(2, 3, n, 2 * half, generator=g)
    positions = torch.randint(0, 5000, (n,), generator=g)
    inv = rope_inv_freq(2 * half)
    cos, sin = rope_angles(positions, inv)
    angles = positions.double()[:, None] * inv.double()[None, :]  # [N, D/2]
    fast, ref = apply_rope(x, cos, sin), apply_rope_reference(x, angles)
    assert torch.allclose(fast, ref, atol=1e-5), (fast - ref).abs().max()
    assert torch.allclose(fast.norm(dim=-1), x.norm(dim=-1), atol=1e-4)


def test_rotary_embedding_module_has_no_parameters_and_position_zero_is_identity() -> None:
    rope = RotaryEmbedding(16)
    assert list(rope.parameters()) == []
    assert rope.state_dict() == {}
    q, k = torch.randn(2, 4, 5, 16), torch.randn(2, 4, 5, 16)
    qr, kr = rope(q, k)
    assert torch.equal(qr[:, :, 0], q[:, :, 0]) and torch.equal(kr[:, :, 0], k[:, :, 0])
    assert not torch.allclose(qr[:, :, 1:], q[:, :, 1:])
    # per-sequence positions [B, N]: row b rotated by its own positions
    pos = torch.stack((torch.arange(5), torch.arange(3, 8)))  # [B, N]
    qb, kb = rope(q, k, pos)
    assert torch.allclose(qb[0], qr[0]) and torch.allclose(kb[0], kr[0])
    assert torch.allclose(qb[1:], apply_rope(q[1:], *rope.cos_sin(torch.arange(3, 8))))
