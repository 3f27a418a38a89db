"""tokenloom.fertility.metrics and .bootstrap: per-text counts (the definition vs count_flat), bootstrap,
premium, Rényi."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenloom.fertility import bootstrap as B
from tokenloom.fertility import metrics as M
from tokenloom.fertility import reference as R
from tokenloom.text.backends.base import flat_ids
from tokenloom.unicode.flat import flat_spans, text_bases


def test_count_text_known_answer() -> None:
    # "Hello, world!" tokenized as Hello | , | ▁wor | ld | ! with a byte-fallback piece id 7 for "!"
    text = "Hello, world!"
    ids = [100, 5, 200, 300, 7]
    offsets = [(0, 5), (5, 6), (6, 10), (10, 12), (12, 13)]
    words = [(0, 5), (7, 12)]  # Hello, world
    c = R.count_text(
        text, ids, offsets, words, byte_fallback_ids={7, 8}, unk_id=5, decoded=text, normalized=text
    )
    assert c == R.TextCounts(
        tokens=5, chars=13, bytes=13, words=2, continued=1, byte_fallback=1, unk=1,
        roundtrip_exact=True, normalization_changed=False,
    )  # fmt: skip
    c = R.count_text("é", [1, 2], [(0, 1), (0, 1)], [(0, 1)], decoded="e", normalized="e")
    assert (c.bytes, c.continued, c.roundtrip_exact, c.normalization_changed) == (2, 1, False, True)
    with pytest.raises(ValueError, match="2 ids but 1 offsets"):
        R.count_text("ab", [1, 2], [(0, 2)], [])


def test_empty_token_spans_do_not_split_words() -> None:
    # a SentencePiece "▁" token may carry an empty span (i, i) at a word start
    assert R.continued_words([(0, 3)], [(0, 0), (0, 3)]) == 0
    assert R.continued_words([(0, 3)], [(0, 1), (1, 1), (1, 3)]) == 1


@st.composite
def tokenized(draw: st.DrawFn) -> tuple[str, list[int], list[tuple[int, int]], list[tuple[int, int]]]:
    n = draw(st.integers(0, 30))
    text = "x" * n
    # token spans: a partition of [0, n) into pieces, some repeated (byte pieces) or empty
    cuts = sorted(set(draw(st.lists(st.integers(0, n), max_size=12))) | {0, n})
    offsets: list[tuple[int, int]] = []
    for a, b in itertools.pairwise(cuts):
        offsets += [(a, b)] * draw(st.integers(1, 3))
        if draw(st.booleans()):
            offsets.append((b, b))
    ids = draw(st.lists(st.integers(0, 20), min_size=len(offsets), max_size=len(offsets)))
    wcuts = sorted(set(draw(st.lists(st.integers(0, n), max_size=10))))
    words = [(a, b) for a, b in zip(wcuts[::2], wcuts[1::2], strict=False) if a < b]
    return text, ids, offsets, words


@settings(max_examples=200, deadline=None)
@given(st.lists(tokenized(), min_size=1, max_size=5))
def test_count_flat_equals_reference(batch: list) -> None:
    texts, ids, offsets, words = (list(x) for x in zip(*batch, strict=True))
    bases = text_bases(texts)
    tok_len, flat = flat_ids(ids)
    word_len, flat_words = flat_spans(words, bases)
    fast = M.count_flat(
        tok_len, flat, flat_spans(offsets, bases)[1], word_len, flat_words,
        vocab_size=21, byte_fallback_ids={3, 4}, unk_id=0,
    )  # fmt: skip
    for j, (text, i, o, w) in enumerate(batch):
        ref = R.count_text(text, i, o, w, byte_fallback_ids={3, 4}, unk_id=0)
        assert (fast.tokens[j], fast.continued[j], fast.byte_fallback[j], fast.unk[j]) == (
            ref.tokens, ref.continued, ref.byte_fallback, ref.unk,
        )  # fmt: skip
    assert fast.id_counts.tolist() == np.bincount([t for i in ids for t in i], minlength=21).tolist()


def test_count_flat_rejects_mismatched_inputs() -> None:
    one, no_spans, no_words = np.array([1]), np.zeros((0, 2), np.int64), np.zeros((0, 2), np.int64)
    with pytest.raises(ValueError, match="1 ids but 0 token spans"):
        M.count_flat(one, np.array([1]), no_spans, np.array([0]), no_words, vocab_size=2)
    with pytest.raises(ValueError, match="tokens per text add up to 2 but there are 1 ids"):
        M.count_flat(
            np.array([1, 1]), np.array([1]), np.array([[0, 1]]), np.array([0, 0]), no_words, vocab_size=2
        )
    with pytest.raises(ValueError, match="words per text add up to 1 but there are 0 word spans"):
        M.count_flat(one, np.array([1]), np.array([[0, 1]]), np.array([1]), no_words, vocab_size=2)


def test_bootstrap_is_deterministic_and_brackets_the_estimate() -> None:
    rng = np.random.default_rng(3)
    tokens = rng.integers(10, 60, 500)
    words = rng.integers(5, 40, 500)
    a = B.bootstrap_ratio(tokens, words, n_boot=300, seed=1)
    b = B.bootstrap_ratio(tokens, words, n_boot=300, seed=1)
    c = B.bootstrap_ratio(tokens, words, n_boot=300, seed=2)
    assert a == b and a != c
    point, lo, hi = a
    assert point == tokens.sum() / words.sum()
    assert lo < point < hi
    assert (
        B.bootstrap_ratio(np.array([3]), np.array([0]))[0]
        != B.bootstrap_ratio(np.array([3]), np.array([1]))[0]
    )
    assert all(math.isnan(x) for x in B.bootstrap_ratio(np.array([3]), np.array([0])))


def test_bootstrap_sums_match_explicit_resampling() -> None:
    values = np.arange(12, dtype=float).reshape(6, 2)
    sums = B.bootstrap_sums(values, n_boot=50, seed=0)
    (weights,) = list(B.bootstrap_weights(6, 50, 0))
    assert weights.sum(axis=1).tolist() == [6.0] * 50  # every resample draws n items
    assert np.array_equal(sums, weights @ values)
    with_zeros = np.stack([np.zeros(6), values[:, 0], np.zeros(6), values[:, 1]], axis=1)  # zero columns
    assert np.array_equal(B.bootstrap_sums(with_zeros, n_boot=50, seed=0), weights @ with_zeros)


def test_bootstrap_chunks_for_large_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    whole = np.concatenate(list(B.bootstrap_weights(300, 20, 0)))  # drawn at once (and cached)
    monkeypatch.setattr(B, "_CACHED", 1000)  # force the chunked path on a small input
    monkeypatch.setattr(B, "_CHUNK", 1000)
    chunks = list(B.bootstrap_weights(300, 20, 0))
    assert len(chunks) == 7 and sum(len(c) for c in chunks) == 20
    assert all(np.array_equal(c.sum(axis=1), np.full(len(c), 300.0)) for c in chunks)
    assert np.array_equal(np.concatenate(chunks), whole)  # one stream: chunking does not change the weights


def test_premium_against_itself_is_exactly_one() -> None:
    tokens = np.array([13, 7, 0, 21])
    mean, median, lo, hi, pairs = M.premium_stats(tokens, tokens)
    assert (mean, median, lo, hi, pairs) == (1.0, 1.0, 1.0, 1.0, 3)  # the 0-token pivot pair is left out
    mean, median, lo, hi, pairs = M.premium_stats(np.array([2, 4, 9]), np.array([1, 2, 3]))
    assert (mean, median, pairs) == (pytest.approx(7 / 3), 2.0, 3)
    assert lo <= mean <= hi


def test_renyi_efficiency() -> None:
    assert M.renyi_efficiency(np.ones(64), vocab_size=64) == pytest.approx(1.0)  # uniform over V
    assert M.renyi_efficiency(np.array([9, 0, 0, 0]), vocab_size=4) == 0.0  # one token only
    # two equally likely tokens out of V=16: H_2.5 = log 2, efficiency log 2 / log 16 = 1/4
    assert M.renyi_efficiency(np.array([5, 5] + [0] * 14), vocab_size=16) == pytest.approx(0.25)
    p = np.array([0.5, 0.25, 0.25])
    expected = math.log((p**2.5).sum()) / (1 - 2.5) / math.log(8)
    assert M.renyi_efficiency(p * 4, vocab_size=8) == pytest.approx(expected)
    assert M.renyi_efficiency(p * 4, vocab_size=8, alpha=1.0) == pytest.approx(
        -(p * np.log(p)).sum() / math.log(8)
    )
    assert math.isnan(M.renyi_efficiency(np.zeros(4), vocab_size=4))
