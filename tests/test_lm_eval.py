"""Held-out bits per byte per language and script, its writers, and the rank correlation of compare tables.

Oracles: an order-0 byte model run through the whole road (corpus reader → tokenizer → scorer → table)
equals ``byte_cross_entropy`` per slice; ``scipy.stats.spearmanr`` / ``rankdata`` for the rank correlation.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from tokenloom.errors import ConfigError
from tokenloom.lm.baseline import byte_cross_entropy, byte_entropy
from tokenloom.lm.correlation import average_ranks, rank_correlation, spearman
from tokenloom.lm.evaluate import COLUMNS, LmEvalConfig, evaluate_documents, read_documents
from tokenloom.lm.writers import bpb_table, write_bpb

TEXTS = {
    "eng_Latn": ["the cat sat on the mat", "a dog", "hello world, again"],
    "fra_Latn": ["le chat", "un chien noir", "bonjour"],
    "rus_Cyrl": ["кот сидит", "собака", "привет мир"],
}


class Bytes:
    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        return [list(t.encode()) for t in texts]


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    for lang, lines in TEXTS.items():
        (tmp_path / f"{lang}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return tmp_path


def order0(fit: list[str], alpha: float = 0.5):  # type: ignore[no-untyped-def]
    counts = np.bincount(np.frombuffer("".join(fit).encode(), dtype=np.uint8), minlength=256) + alpha
    logp = torch.tensor(np.log(counts / counts.sum()))  # [256]
    table = torch.cat((logp, torch.tensor([-math.inf])))[None].expand(257, 257)  # [V, V]
    return lambda ids: table[ids]  # [B, N] -> [B, N, V]


def test_documents_carry_the_reports_labels(corpus: Path) -> None:
    docs = read_documents(corpus, max_docs=2)
    assert len(docs) == 6
    assert docs.languages == ["eng_Latn"] * 2 + ["fra_Latn"] * 2 + ["rus_Cyrl"] * 2
    assert docs.scripts == ["Latn"] * 4 + ["Cyrl"] * 2
    assert docs.texts[2:4] == TEXTS["fra_Latn"][:2]


def test_bpb_per_language_and_script_equals_an_order0_oracle(corpus: Path) -> None:
    docs = read_documents(corpus)
    fit = [t for lines in TEXTS.values() for t in lines]
    df = evaluate_documents(
        order0(fit), Bytes(), docs, context=8, bos_id=256, config=LmEvalConfig(n_boot=200, stride=3)
    )
    assert list(df.columns) == list(COLUMNS)
    rows = {(r.slice_kind, r.slice): r for r in df.itertuples(index=False)}
    assert list(rows) == [
        ("language", "eng_Latn"), ("language", "fra_Latn"), ("language", "rus_Cyrl"),
        ("script", "Latn"), ("script", "Cyrl"), ("all", "(all)"),
    ]  # fmt: skip
    groups = {("language", k): v for k, v in TEXTS.items()}
    groups[("script", "Latn")] = TEXTS["eng_Latn"] + TEXTS["fra_Latn"]
    groups[("script", "Cyrl")] = TEXTS["rus_Cyrl"]
    groups[("all", "(all)")] = fit
    for key, texts in groups.items():
        row = rows[key]
        assert row.bpb == pytest.approx(byte_cross_entropy(texts, fit, alpha=0.5), rel=1e-9)
        assert row.bytes == sum(len(t.encode()) for t in texts) == row.tokens  # bytes are the tokens here
        assert row.order0 == pytest.approx(byte_entropy(texts))
        assert row.bpb_lo <= row.bpb <= row.bpb_hi
    assert df.attrs["bos_id"] == 256 and df.attrs["stride_used"] == 3 and not df.attrs["score_eos"]
    with pytest.raises(ConfigError, match="eos_id"):
        evaluate_documents(
            order0(fit), Bytes(), docs, context=8, bos_id=256, config=LmEvalConfig(score_eos=True)
        )


def test_writers_write_every_file(corpus: Path, tmp_path: Path) -> None:
    docs = read_documents(corpus)
    df = evaluate_documents(
        order0(docs.texts), Bytes(), docs, context=16, bos_id=256, config=LmEvalConfig(n_boot=50)
    )
    text = bpb_table(df)
    assert "eng_Latn" in text and "order-0" in text and len(text.splitlines()) == 2 + len(df)
    written = write_bpb(df, tmp_path / "out")
    assert set(written) == {"csv", "md", "png", "html"}
    assert (tmp_path / "out" / "bpb.png").read_bytes()[:4] == b"\x89PNG"
    page = (tmp_path / "out" / "bpb.html").read_text()
    assert "rus_Cyrl" in page and "data:image/png;base64," in page and "end of a document not scored" in page
    assert "| eng_Latn |" in (tmp_path / "out" / "bpb.md").read_text()


@pytest.mark.filterwarnings("ignore::scipy.stats.ConstantInputWarning")  # scipy warns where both give NaN
@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), min_size=3, max_size=30))
def test_spearman_equals_scipy_with_ties(pairs: list[tuple[int, int]]) -> None:
    x, y = (np.array(v, dtype=float) for v in zip(*pairs, strict=True))
    assert average_ranks(x) == pytest.approx(stats.rankdata(x))
    ours, theirs = spearman(x, y), stats.spearmanr(x, y).statistic
    if math.isnan(theirs):
        assert math.isnan(ours)
    else:
        assert ours == pytest.approx(theirs, abs=1e-12)


def test_rank_correlation_interval_resamples_groups() -> None:
    g = np.random.default_rng(0)
    x = g.normal(size=40)
    y = x + 0.5 * g.normal(size=40)
    groups = [f"lang{i // 2}" for i in range(40)]  # two points per language
    corr = rank_correlation("fertility", x, y, groups, n_boot=500)
    assert corr.rho == pytest.approx(stats.spearmanr(x, y).statistic)
    assert corr.lo < corr.rho < corr.hi and corr.points == 40 and corr.groups == 20
    with_nan = rank_correlation("m", [*x, math.nan], [*y, 1.0], n_boot=0)
    assert with_nan.points == 40 and with_nan.lo == with_nan.hi == with_nan.rho
