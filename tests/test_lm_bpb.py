"""Bits per byte: whole-document scoring with a sliding window, invariance under re-splitting, the order-0 baseline.

Oracles: a direct forward pass (a document within one window), each token scored alone with its whole
window of context (``stride=1``), two hand-built models that give one text the same probability through
different tokenizations (symbols vs pairs of symbols: the BPB must agree), torch's ``Categorical`` for the
byte entropy, and an order-0 byte model run through the scorer for the smoothed cross-entropy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenloom.encoder import EncoderConfig, LanguageModel, LanguageModelConfig
from tokenloom.errors import ConfigError
from tokenloom.lm import (
    ScoreConfig,
    bits_per_byte,
    byte_cross_entropy,
    byte_entropy,
    document_bits,
    evaluate_bpb,
)
from tokenloom.lm.bpb import ALL
from tokenloom.lm.scoring import plan_windows

LOG2 = math.log(2)


@settings(max_examples=60, deadline=None)
@given(length=st.integers(0, 80), context=st.integers(2, 20), data=st.data())
def test_windows_score_every_target_once(length: int, context: int, data: st.DataObject) -> None:
    stride = data.draw(st.integers(1, context - 1))
    scored = [t for w in plan_windows(length, context, stride) for t in range(w.first, w.end)]
    assert scored == list(range(1, length))
    for w in plan_windows(length, context, stride):
        assert w.end - w.begin <= context and w.begin < w.first
        if w.begin > 0:  # a later window gives each target at least context - stride tokens of context
            assert w.first - w.begin >= min(context - stride, w.end - w.begin - 1)


def tiny_lm(context: int = 8) -> LanguageModel:
    enc = EncoderConfig(width=16, depth=1, heads=2, causal=True, attn_impl="reference")
    torch.manual_seed(0)
    return LanguageModel(LanguageModelConfig(vocab_size=20, encoder=enc, context=context)).double()


def direct_bits(model: LanguageModel, seq: list[int]) -> float:
    """-Σ log2 p(seq[t] | seq[:t]) for t >= 1 from one forward pass."""
    with torch.no_grad():
        logp = torch.log_softmax(model(torch.tensor([seq])), dim=-1)[0]  # [N, V]
    return -sum(logp[t - 1, seq[t]].item() for t in range(1, len(seq))) / LOG2


def test_a_document_within_one_window_is_one_forward_pass() -> None:
    model = tiny_lm(context=16).train()
    docs = [[3, 4, 5, 6, 7], [9], [], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]]
    bits = document_bits(model, docs, ScoreConfig(context=16, bos_id=0, batch_size=3))
    assert model.training  # scored in eval mode, then restored
    model.eval()
    assert bits == pytest.approx([direct_bits(model, [0, *doc]) for doc in docs], rel=1e-12, abs=1e-12)
    assert bits[2] == 0.0
    with_eos = document_bits(model, docs, ScoreConfig(context=16, bos_id=0, eos_id=19))
    for doc, b, e in zip(docs[:3], bits, with_eos, strict=False):  # the end adds -log2 p(eos | document)
        assert e - b == pytest.approx(
            direct_bits(model, [0, *doc, 19]) - direct_bits(model, [0, *doc]), rel=1e-9
        )
        assert e > b


def test_stride_one_gives_every_token_its_whole_window() -> None:
    model = tiny_lm(context=6)
    doc = [int(x) for x in torch.randint(1, 20, (17,), generator=torch.Generator().manual_seed(3))]
    seq = [0, *doc]
    bits = document_bits(model, [doc], ScoreConfig(context=6, bos_id=0, stride=1))[0]
    oracle = 0.0
    for t in range(1, len(seq)):
        context = seq[max(0, t - 5) : t + 1]  # up to 5 tokens before the target, then the target
        oracle += direct_bits(model, context) - direct_bits(model, context[:-1])
    assert bits == pytest.approx(oracle, rel=1e-12)
    # a wider stride sees less context on some tokens: a different (here: any finite) number
    assert math.isfinite(document_bits(model, [doc], ScoreConfig(context=6, bos_id=0, stride=4))[0])


# --------------------------------------------------------------------------- re-splitting invariance

SYMBOLS = ["a", "é", "ж", "€"]  # 1, 2, 2 and 3 UTF-8 bytes
A = len(SYMBOLS)


class SymbolTokenizer:
    """One token per symbol."""

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [[SYMBOLS.index(ch) for ch in text] for text in texts]


class PairTokenizer:
    """One token per pair of symbols (texts of even length): id = A·first + second."""

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [
            [A * SYMBOLS.index(t[i]) + SYMBOLS.index(t[i + 1]) for i in range(0, len(t), 2)] for t in texts
        ]


def bigram(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """log q0 [A] (first symbol) and log q [A, A] (next symbol given the previous one), float64."""
    g = torch.Generator().manual_seed(seed)
    return (
        torch.log_softmax(torch.randn(A, generator=g, dtype=torch.float64), -1),
        torch.log_softmax(torch.randn(A, A, generator=g, dtype=torch.float64), -1),
    )


def symbol_model(q0: torch.Tensor, q: torch.Tensor) -> tuple[torch.Tensor, int]:
    """Next-token log-probabilities by previous token [A + 1, A + 1]; the last id is the start token."""
    table = torch.full((A + 1, A + 1), -math.inf, dtype=torch.float64)
    table[:A, :A] = q
    table[A, :A] = q0
    return table, A


def pair_model(q0: torch.Tensor, q: torch.Tensor) -> tuple[torch.Tensor, int]:
    """The same distribution over pairs: p((a, b) | previous pair (c, d)) = q(a | d)·q(b | a)."""
    v = A * A
    table = torch.full((v + 1, v + 1), -math.inf, dtype=torch.float64)
    for a in range(A):
        for b in range(A):
            table[v, A * a + b] = q0[a] + q[a, b]
            for prev in range(v):
                table[prev, A * a + b] = q[prev % A, a] + q[a, b]
    return table, v


def as_scorer(table: torch.Tensor):  # type: ignore[no-untyped-def]
    return lambda ids: table[ids]  # [B, N] -> [B, N, V]: the logits depend on the previous token only


def test_bpb_is_invariant_under_resplitting() -> None:
    g = np.random.default_rng(0)
    texts = ["".join(g.choice(SYMBOLS, size=2 * int(g.integers(1, 15)))) for _ in range(12)]
    slices = ["xx" if i % 3 else "yy" for i in range(len(texts))]
    q0, q = bigram(1)
    rows = {}
    for name, (table, bos), tok, context in (
        ("symbols", symbol_model(q0, q), SymbolTokenizer(), 5),
        ("pairs", pair_model(q0, q), PairTokenizer(), 3),
    ):
        result = evaluate_bpb(
            as_scorer(table), tok, texts, slices, ScoreConfig(context=context, bos_id=bos, stride=2)
        )
        rows[name] = {row.slice: row for row in result}
    for label in ("xx", "yy", ALL):
        s, p = rows["symbols"][label], rows["pairs"][label]
        print(label, s.bpb, p.bpb, s.bits_per_token, p.bits_per_token)
        assert s.bytes == p.bytes and s.tokens == 2 * p.tokens
        assert s.bpb == pytest.approx(p.bpb, rel=1e-12)  # the same probability of the same bytes
        assert (s.lo, s.hi) == pytest.approx((p.lo, p.hi), rel=1e-9)
        assert p.bits_per_token == pytest.approx(2 * s.bits_per_token, rel=1e-12)  # per token they differ


# --------------------------------------------------------------------------- aggregation and the baseline


def test_bits_per_byte_sums_per_slice() -> None:
    texts = ["ab", "€", "hello", "ж"]
    rows = bits_per_byte([4.0, 3.0, 10.0, 2.0], texts, ["en", "x", "en", "x"], n_boot=200)
    by = {row.slice: row for row in rows}
    assert [row.slice for row in rows] == ["en", "x", ALL]
    assert (by["en"].bytes, by["en"].bits, by["en"].bpb) == (7, 14.0, 2.0)
    assert (by["x"].bytes, by["x"].bpb) == (5, 1.0)
    assert by[ALL].bpb == pytest.approx(19 / 12)
    assert by[ALL].lo <= by[ALL].bpb <= by[ALL].hi
    with pytest.raises(ValueError, match="texts has 1 entries"):
        bits_per_byte([1.0, 2.0], ["a"])


def test_byte_entropy_known_answers_and_torch_categorical() -> None:
    assert byte_entropy(["aaaa"]) == 0.0
    assert byte_entropy(["ab", "ab"]) == pytest.approx(1.0)
    assert byte_entropy(["".join(map(chr, range(128)))]) == pytest.approx(7.0)  # 128 equally likely bytes
    text = "Le cœur a ses raisons que la raison ne connaît point. Ж€"
    counts = np.bincount(np.frombuffer(text.encode(), dtype=np.uint8), minlength=256)
    oracle = torch.distributions.Categorical(probs=torch.tensor(counts, dtype=torch.float64)).entropy() / LOG2
    assert byte_entropy([text]) == pytest.approx(oracle.item(), rel=1e-12)
    with pytest.raises(ValueError, match="at least one byte"):
        byte_entropy(["", ""])


def test_byte_cross_entropy_equals_an_order0_model_through_the_scorer() -> None:
    fit = ["the cat sat on the mat", "ein Hund"]
    texts = ["a dog sat", "€ü"]
    alpha = 0.5
    counts = np.bincount(np.frombuffer("".join(fit).encode(), dtype=np.uint8), minlength=256) + alpha
    logp = torch.tensor(np.log(counts / counts.sum()))  # [256]
    table = torch.cat((logp, torch.tensor([-math.inf])))[None].expand(257, 257)  # same row after any token
    docs = [list(t.encode()) for t in texts]
    bits = document_bits(as_scorer(table), docs, ScoreConfig(context=4, bos_id=256))
    nbytes = sum(len(d) for d in docs)
    assert sum(bits) / nbytes == pytest.approx(byte_cross_entropy(texts, fit, alpha=alpha), rel=1e-12)
    assert byte_cross_entropy(fit, fit, alpha=1e-9) == pytest.approx(byte_entropy(fit), rel=1e-6)


def test_score_config_refuses_bad_values() -> None:
    with pytest.raises(ConfigError, match="stride"):
        ScoreConfig(context=8, bos_id=0, stride=8)
    with pytest.raises(ConfigError, match="context"):
        ScoreConfig(context=1, bos_id=0)
    with pytest.raises(ConfigError, match="bos_id"):
        ScoreConfig(context=8, bos_id=-1)
