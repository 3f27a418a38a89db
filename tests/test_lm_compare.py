"""The tokenizer comparison's table, rank correlations and writers, on tables built by hand.

Oracles: ``scipy.stats.spearmanr`` on the table's own columns; the join checked cell by cell against
the inputs. (The command end to end, training real models, is in ``test_lm_compare_cli.py``.)
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from tokenloom.errors import ConfigError
from tokenloom.lm.compare_table import (
    COMPARE_COLUMNS,
    INTRINSIC,
    RunTotals,
    compare_table,
    correlation_frame,
    metric_correlations,
)
from tokenloom.lm.compare_writers import compare_text, write_compare
from tokenloom.lm.evaluate import COLUMNS

LANGS = ["eng_Latn", "fra_Latn", "rus_Cyrl", "hin_Deva"]


def bpb_frame(seed: int) -> pd.DataFrame:
    g = np.random.default_rng(seed)
    rows = []
    for kind, label in [*(("language", lang) for lang in LANGS), ("script", "Latn"), ("all", "(all)")]:
        bpb = float(g.uniform(1, 3))
        rows.append({
            "slice_kind": kind, "slice": label, "documents": 5, "tokens": int(g.integers(50, 90)), "bytes": 100,
            "bits": 100 * bpb, "bpb": bpb, "bpb_lo": bpb - 0.1, "bpb_hi": bpb + 0.1,
            "bits_per_token": 1.5, "order0": 4.2,
        })  # fmt: skip
    return pd.DataFrame(rows, columns=list(COLUMNS))


def fertility_frame(names: list[str], seed: int) -> pd.DataFrame:
    g = np.random.default_rng(seed)
    rows = []
    for name in names:
        for kind, label in [("all", "all"), *(("language", lang) for lang in LANGS), ("script", "Latn")]:
            rows.append({
                "tokenizer": name, "slice_kind": kind, "slice": label, "fertility": g.uniform(1, 3),
                "fertility_lo": 0.5, "fertility_hi": 3.5, "premium_mean": g.uniform(0.8, 2), "premium_lo": 0.7,
                "premium_hi": 2.1, "strr": g.uniform(0, 0.5), "bytes_per_token": g.uniform(1, 4),
            })  # fmt: skip
    return pd.DataFrame(rows)


def totals(vocab: int) -> RunTotals:
    return RunTotals(vocab, 1000 + vocab * 16, 1000, 5000, 9000, 1.5e9, 2.0)


@pytest.fixture
def table() -> pd.DataFrame:
    names = ["bytes", "bpe-1k", "bpe-4k"]
    bpb = {name: bpb_frame(i) for i, name in enumerate(names)}
    runs = {name: totals(v) for name, v in zip(names, (260, 1000, 4000), strict=True)}
    return compare_table(bpb, fertility_frame(names, 7), runs)


def test_table_joins_each_tokenizer_and_language(table: pd.DataFrame) -> None:
    names = ["bytes", "bpe-1k", "bpe-4k"]
    fert = fertility_frame(names, 7)
    assert list(table.columns) == list(COMPARE_COLUMNS)
    assert list(zip(table["tokenizer"], table["language"], strict=True)) == [
        (n, lang) for n in names for lang in LANGS
    ]
    for i, name in enumerate(names):
        own = bpb_frame(i).set_index("slice")
        sub = table[table["tokenizer"] == name].set_index("language")
        assert sub["bpb"].tolist() == own.loc[LANGS, "bpb"].tolist()
        assert sub["eval_tokens"].tolist() == own.loc[LANGS, "tokens"].tolist()
        f = fert[(fert["tokenizer"] == name) & (fert["slice_kind"] == "language")].set_index("slice")
        for col, src in INTRINSIC.items():
            assert sub[col].tolist() == pytest.approx(f.loc[LANGS, src].tolist())
        assert (sub["vocab_size"] == (260, 1000, 4000)[i]).all()
        assert (sub["non_embedding_params"] == 1000).all()


def test_correlations_equal_scipy_on_the_table(table: pd.DataFrame) -> None:
    table.loc[2, "strr"] = math.nan  # a point without a value is left out of that metric only
    corrs = metric_correlations(table, n_boot=300)
    assert [c.metric for c in corrs] == list(INTRINSIC)
    for c in corrs:
        keep = table[c.metric].notna()
        expected = stats.spearmanr(table.loc[keep, c.metric], table.loc[keep, "bpb"]).statistic
        assert c.rho == pytest.approx(expected, abs=1e-12)
        assert c.points == int(keep.sum()) and c.groups == len(LANGS)
        assert c.lo <= c.rho <= c.hi
    frame = correlation_frame(corrs)
    assert list(frame.columns) == ["metric", "rho", "lo", "hi", "points", "groups"] and len(frame) == len(
        INTRINSIC
    )
    with pytest.raises(ConfigError, match="no column 'nsl'"):
        metric_correlations(table, ["nsl"])


def test_a_missing_language_or_run_is_an_error() -> None:
    fert = fertility_frame(["a"], 0)
    with pytest.raises(ConfigError, match="no training totals for tokenizer 'a'"):
        compare_table({"a": bpb_frame(0)}, fert, {})
    with pytest.raises(ConfigError, match="language 'hin_Deva'"):
        compare_table({"a": bpb_frame(0)}, fert[fert["slice"] != "hin_Deva"], {"a": totals(300)})


def test_writers_write_tables_and_charts(table: pd.DataFrame, tmp_path: Path) -> None:
    corrs = metric_correlations(table, n_boot=50)
    text = compare_text(table)
    assert len(text.splitlines()) == 2 + len(table) and "bpe-4k" in text
    written = write_compare(table, corrs, tmp_path, notes=["Budget: 1e6 bytes."])
    assert set(written) == {"csv", "correlations", "md", "html", "bpb_png", "correlation_png"}
    back = pd.read_csv(tmp_path / "compare.csv")
    assert list(back.columns) == list(COMPARE_COLUMNS) and back["bpb"].tolist() == pytest.approx(
        table["bpb"].tolist()
    )
    corr_back = pd.read_csv(tmp_path / "correlations.csv")
    assert corr_back["rho"].tolist() == pytest.approx([c.rho for c in corrs])
    page = (tmp_path / "compare.html").read_text()
    assert page.count("data:image/png;base64,") == 2 and "hin_Deva" in page and "Budget: 1e6 bytes." in page
    md = (tmp_path / "compare.md").read_text()
    assert "| bpe-1k | rus_Cyrl |" in md and "| fertility |" in md


def test_a_flops_budget_buys_fewer_tokens_for_a_larger_vocabulary() -> None:
    from tokenloom.costs import lm_flops
    from tokenloom.encoder import EncoderConfig, LanguageModelConfig
    from tokenloom.lm.compare import tokens_for_flops

    blocks = EncoderConfig(width=32, depth=2, heads=2, causal=True)
    small, large = (LanguageModelConfig(vocab_size=v, encoder=blocks, context=64) for v in (300, 4000))
    budget = 1e9
    got = {v.vocab_size: tokens_for_flops(v, 64, budget) for v in (small, large)}
    for model in (small, large):
        per_token = lm_flops(model, 1, 64).training / 64  # 3 x forward, per token
        assert got[model.vocab_size] * per_token <= budget < (got[model.vocab_size] + 1) * per_token
    assert got[4000] < got[300]
    with pytest.raises(ConfigError, match="buy no training token"):
        tokens_for_flops(small, 64, 10.0)
