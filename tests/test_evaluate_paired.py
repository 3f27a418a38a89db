"""Paired comparison of models: bootstrap differences and p-values against a direct computation on the
resampled items, Holm against its definition, and the slices where the ranking flips."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import f1_score, recall_score

from tokenloom.evaluate import EvalConfig, evaluate_slices
from tokenloom.evaluate.paired import holm
from tokenloom.fertility.bootstrap import bootstrap_weights


def _holm_direct(p: list[float]) -> list[float]:
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    out = [0.0] * m
    running = 0.0
    for k, i in enumerate(order):
        running = max(running, min(1.0, (m - k) * p[i]))
        out[i] = running
    return out


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=30))
def test_holm_equals_its_definition(p: list[float]) -> None:
    assert holm(p).tolist() == pytest.approx(_holm_direct(p))


def test_holm_known_answer_and_nan() -> None:
    assert holm([0.01, 0.04, 0.03, 0.005]).tolist() == pytest.approx([0.03, 0.06, 0.06, 0.02])
    got = holm([0.01, math.nan, 0.04])
    assert got[0] == pytest.approx(0.02) and math.isnan(got[1]) and got[2] == pytest.approx(0.04)


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    """Model a better overall; model b better on Hindi."""
    rng = np.random.default_rng(3)
    rows = []
    for lang, err_a, err_b in (("eng", 0.05, 0.3), ("deu", 0.05, 0.3), ("hin", 0.45, 0.02)):
        for _ in range(100):
            y = int(rng.random() < 0.5)
            rows.append(
                dict(lang=lang, y=y, a=y ^ int(rng.random() < err_a), b=y ^ int(rng.random() < err_b))
            )
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def evaluation(data: pd.DataFrame):  # type: ignore[no-untyped-def]
    config = EvalConfig(n_boot=300, seed=7, compare=("recall", "f1"))
    return evaluate_slices(data, label="y", predictions={"a": "a", "b": "b"}, lang="lang", config=config)


def _f1(y: np.ndarray, p: np.ndarray) -> float:
    tp, fp, fn = np.sum(y & p), np.sum(~y & p), np.sum(y & ~p)
    return 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else np.nan


def _recall(y: np.ndarray, p: np.ndarray) -> float:
    return np.sum(y & p) / np.sum(y) if np.sum(y) else np.nan


def test_paired_differences_equal_a_direct_resampling(evaluation, data: pd.DataFrame) -> None:  # type: ignore[no-untyped-def]
    for sl in evaluation.slices:
        part = data.iloc[sl.index].reset_index(drop=True)
        (weights,) = list(bootstrap_weights(len(part), 300, 7))  # the slice's resamples: (n, n_boot, seed)
        y, a, b = (part[c].to_numpy() == 1 for c in ("y", "a", "b"))
        for metric, fn, direct in (("f1", f1_score, _f1), ("recall", recall_score, _recall)):
            diffs = []
            for row in weights:  # the resampled items, drawn out: each item repeated as often as drawn
                idx = np.repeat(np.arange(len(part)), row.astype(int))
                diffs.append(direct(y[idx], a[idx]) - direct(y[idx], b[idx]))
            d = fn(part["y"], part["a"]) - fn(part["y"], part["b"])  # the point: scikit-learn
            boot = np.array(diffs)
            paired = evaluation.paired
            at = (paired.slice == sl.name) & (paired.slice_kind == sl.kind) & (paired.metric == metric)
            got = paired[at].iloc[0]
            assert got["diff"] == pytest.approx(d, abs=1e-12)
            assert (got["diff_lo"], got["diff_hi"]) == pytest.approx(
                tuple(np.percentile(boot, [2.5, 97.5])), abs=1e-12
            )
            p = (1 + np.sum(np.abs(boot - d) >= abs(d))) / (1 + len(boot))
            assert got["p_value"] == pytest.approx(p)


def test_holm_is_applied_over_every_slice_and_metric(evaluation) -> None:  # type: ignore[no-untyped-def]
    paired = evaluation.paired
    assert len(paired) == len(evaluation.slices) * 2  # one pair, one class, two metrics
    assert paired["p_holm"].tolist() == pytest.approx(_holm_direct(paired["p_value"].tolist()))
    assert (paired["p_holm"] >= paired["p_value"] - 1e-15).all()


def test_the_ranking_flip_is_listed_with_its_support(data: pd.DataFrame) -> None:
    # 1000 resamples: the smallest bootstrap p-value is 1/1001, small enough to survive Holm over 8 tests
    config = EvalConfig(n_boot=1000, seed=7, compare=("recall", "f1"))
    evaluation = evaluate_slices(
        data, label="y", predictions={"a": "a", "b": "b"}, lang="lang", config=config
    )
    flips = evaluation.flips
    f1 = flips[flips.metric == "f1"]
    assert f1[["slice_kind", "slice"]].values.tolist() == [["language", "hin"]]
    row = f1.iloc[0]
    assert row["n"] == 100 and row["overall_better"] == "a" and row["slice_better"] == "b"
    assert row["diff_hi"] < 0 and row["significant"]
    text = evaluation.summary()
    assert "no model dominates: b is better on language hin (n=100" in text


def test_one_model_has_no_paired_rows() -> None:
    ev = evaluate_slices(
        {"y": [1, 0, 1, 0], "p": [1, 0, 0, 0]},
        label="y",
        predictions={"m": "p"},
        config=EvalConfig(n_boot=10),
    )
    assert ev.paired.empty and ev.flips.empty and "no model dominates" not in ev.summary()


def test_undefined_differences_rank_nothing() -> None:
    """Model a predicts no positive in German: its precision there is undefined, so is the difference."""
    data = {
        "y": [1, 0] * 20,
        "a": [1, 0] * 10 + [0, 0] * 10,
        "b": [1, 1] * 20,
        "lang": ["eng"] * 20 + ["deu"] * 20,
    }
    ev = evaluate_slices(
        data,
        label="y",
        predictions={"a": "a", "b": "b"},
        lang="lang",
        config=EvalConfig(n_boot=20, min_support=1),
    )
    deu = ev.paired[(ev.paired.slice == "deu") & (ev.paired.metric == "precision")].iloc[0]
    assert math.isnan(deu["diff"]) and math.isnan(deu["p_value"]) and "no predicted positives" in deu["flag"]
    assert "deu" not in set(ev.flips["slice"])
