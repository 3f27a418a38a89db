"""Mask builders against their definitions (explicit loops), converters, combining, and errors."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenloom.encoder import masks

SETTINGS = settings(max_examples=60, deadline=None)


@SETTINGS
@given(n=st.integers(0, 9), m=st.integers(0, 9))
def test_causal_definition(n: int, m: int) -> None:
    mask = masks.causal(n, m)
    assert mask.shape == (n, m) and mask.dtype == torch.bool
    for i in range(n):
        for j in range(m):
            assert bool(mask[i, j]) == (j <= i + (m - n)), (i, j)


def test_causal_square_is_lower_triangular() -> None:
    assert torch.equal(masks.causal(5), torch.ones(5, 5, dtype=torch.bool).tril())


@SETTINGS
@given(n=st.integers(1, 9), m=st.integers(1, 9), w=st.integers(0, 4), causal=st.booleans())
def test_window_definition(n: int, m: int, w: int, causal: bool) -> None:
    mask = masks.window(n, m, w, causal=causal)
    for i in range(n):
        for j in range(m):
            delta = i + (m - n) - j
            expected = 0 <= delta <= w if causal else abs(delta) <= w
            assert bool(mask[i, j]) == expected, (i, j)


def test_causal_window_implies_causal() -> None:
    assert not (masks.window(6, 6, 2, causal=True) & ~masks.causal(6)).any()
    assert torch.equal(masks.window(6, 6, 10, causal=True), masks.causal(6))


@SETTINGS
@given(lengths=st.lists(st.integers(0, 7), min_size=1, max_size=4))
def test_key_padding_definition(lengths: list[int]) -> None:
    mask = masks.key_padding(lengths, 7)
    assert mask.shape == (len(lengths), 1, 1, 7)
    for b, length in enumerate(lengths):
        assert mask[b, 0, 0].tolist() == [j < length for j in range(7)]
    assert torch.equal(masks.key_padding(torch.tensor(lengths), 7), mask)


@SETTINGS
@given(ids=st.lists(st.integers(-1, 2), min_size=1, max_size=8))
def test_segment_definition(ids: list[int]) -> None:
    ids = sorted(ids)
    mask = masks.segment(ids)
    assert mask.shape == (1, 1, len(ids), len(ids))
    for i, a in enumerate(ids):
        for j, b in enumerate(ids):
            assert bool(mask[0, 0, i, j]) == (a == b and a >= 0), (i, j)


def test_segment_with_separate_key_ids_and_batch() -> None:
    q_ids = torch.tensor([[0, 0, 1], [0, 1, 1]])
    k_ids = torch.tensor([[0, 1], [1, 1]])
    mask = masks.segment(q_ids, k_ids)
    assert mask.shape == (2, 1, 3, 2)
    assert mask[0, 0].tolist() == [[True, False], [True, False], [False, True]]
    assert mask[1, 0].tolist() == [[False, False], [True, True], [True, True]]


def test_combine_is_logical_and_with_broadcast() -> None:
    c = masks.causal(4)
    pad = masks.key_padding([4, 2], 4)
    both = masks.combine(c, None, pad)
    assert both.shape == (2, 1, 4, 4)
    assert torch.equal(both[0, 0], c)
    assert torch.equal(both[1, 0], c & torch.tensor([True, True, False, False]))
    assert masks.combine(None, None) is None
    with pytest.raises(TypeError, match="from_additive"):
        masks.combine(c, masks.to_additive(c))


def test_additive_round_trip_and_values() -> None:
    mask = torch.tensor([[True, False], [False, True]])
    bias = masks.to_additive(mask, dtype=torch.float64)
    assert bias.dtype == torch.float64
    assert bias.tolist() == [[0.0, float("-inf")], [float("-inf"), 0.0]]
    assert torch.equal(masks.from_additive(bias), mask)


def test_from_additive_refuses_to_drop_soft_biases() -> None:
    bias = torch.tensor([0.0, -2.0, float("-inf")])
    with pytest.raises(ValueError, match="strict=False"):
        masks.from_additive(bias)
    assert masks.from_additive(bias, strict=False).tolist() == [True, True, False]
    with pytest.raises(ValueError, match="NaN"):
        masks.from_additive(torch.tensor([float("nan")]))
    with pytest.raises(TypeError):
        masks.from_additive(torch.tensor([True]))


def test_opposite_polarity_converters() -> None:
    ignore = torch.tensor([[False, True, True]])  # PyTorch: True = ignore
    assert masks.from_ignore_mask(ignore).tolist() == [[True, False, False]]
    assert torch.equal(masks.to_ignore_mask(masks.from_ignore_mask(ignore)), ignore)
    ours = masks.from_key_padding_mask(ignore)
    assert ours.shape == (1, 1, 1, 3) and ours.view(-1).tolist() == [True, False, False]
    with pytest.raises(TypeError, match="from_additive"):
        masks.from_ignore_mask(torch.zeros(3))
    with pytest.raises(ValueError, match=r"\[B, M\]"):
        masks.from_key_padding_mask(torch.zeros(1, 1, 3, dtype=torch.bool))


def test_builder_errors_name_the_value() -> None:
    with pytest.raises(ValueError, match=r"lengths must lie in \[0, m=4\]"):
        masks.key_padding([5], 4)
    with pytest.raises(TypeError, match="integers"):
        masks.key_padding(torch.tensor([1.5]), 4)
    with pytest.raises(ValueError, match="non-negative int"):
        masks.causal(-1)
    with pytest.raises(ValueError, match="window size"):
        masks.window(3, 3, -1)
    with pytest.raises(ValueError, match="batch"):
        masks.segment(torch.zeros(2, 3, dtype=torch.long), torch.zeros(3, 3, dtype=torch.long))
