"""Selection-bias-corrected metrics from reviewed items: a simulation with a known population (the naive
estimate biased, the corrected ones covering the truth at their stated rate), known answers, warnings and
bad input."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenloom.errors import CorpusError
from tokenloom.evaluate import EvalConfig
from tokenloom.evaluate.selection import ratio_estimate, selection_estimates

N = 4000
REPS = 200  # coverage of a 95% interval over 200 runs: sd 1.5 points, the bounds below are 3 sd


@pytest.fixture(scope="module")
def population() -> pd.DataFrame:
    rng = np.random.default_rng(11)
    x = rng.random(N)  # how suspicious an item looks
    y = (rng.random(N) < 0.05 + 0.6 * x**2).astype(int)
    pred = (x + 0.25 * rng.standard_normal(N) > 0.6).astype(int)
    return pd.DataFrame({"x": x, "y": y, "pred": pred, "pi_review": 0.02 + 0.4 * x**2})


def _truth(pop: pd.DataFrame) -> dict[str, float]:
    y, p = pop["y"].to_numpy(), pop["pred"].to_numpy()
    return {
        "prevalence": y.mean(), "accuracy": (y == p).mean(), "precision": (y & p).sum() / p.sum(),
        "recall": (y & p).sum() / y.sum(), "fpr": ((1 - y) & p).sum() / (1 - y).sum(),
    }  # fmt: skip


@pytest.mark.slow
def test_simulation_naive_is_biased_and_corrected_estimates_cover(population: pd.DataFrame) -> None:
    truth = _truth(population)
    rng = np.random.default_rng(12)
    pi_biased = population["pi_review"].to_numpy()
    covered: dict[tuple[str, str], int] = {}
    naive: dict[str, list[float]] = {m: [] for m in truth}
    for _ in range(REPS):
        holdout = rng.random(N) < 0.05  # a random holdout, reviewed whatever the model says
        reviewed = (rng.random(N) < pi_biased) | holdout
        frame = population.assign(
            reviewed=reviewed, holdout=holdout, propensity=1 - (1 - pi_biased) * 0.95,
            y=population["y"].where(reviewed),  # unreviewed labels are unknown
        )  # fmt: skip
        res = selection_estimates(
            frame,
            label="y",
            prediction="pred",
            reviewed="reviewed",
            propensity="propensity",
            holdout="holdout",
        )
        for r in res.table.itertuples():
            covered[(r.metric, r.estimator)] = covered.get((r.metric, r.estimator), 0) + (
                r.lo <= truth[r.metric] <= r.hi
            )
            if r.estimator == "naive":
                naive[r.metric].append(r.estimate)
    for metric in truth:
        for estimator in ("horvitz_thompson", "self_normalized", "holdout"):
            rate = covered[(metric, estimator)] / REPS
            assert 0.95 - 3 * 0.0154 <= rate <= 1.0, (metric, estimator, rate)
    for metric in ("prevalence", "accuracy", "recall"):  # reviewed items are the suspicious ones
        assert covered[(metric, "naive")] / REPS < 0.2, metric
        assert abs(np.mean(naive[metric]) - truth[metric]) > 0.05, metric


def test_ratio_estimate_known_answers() -> None:
    f, g = np.array([1.0, 0.0, 1.0]), np.array([1.0, 1.0, 1.0])
    pi = np.array([0.5, 0.5, 1.0])
    est, se = ratio_estimate(f, g, pi)  # Hájek: (2 + 0 + 1) / (2 + 2 + 1)
    assert est == pytest.approx(3 / 5)
    e = f - 0.6 * g
    assert se == pytest.approx(math.sqrt(((1 - pi) * (e / pi) ** 2).sum()) / 5)
    est, se = ratio_estimate(f, g, pi, g_total=10.0)  # Horvitz-Thompson total 3 over a known 10
    assert est == pytest.approx(0.3) and se == pytest.approx(math.sqrt(0.5 * 4 + 0 + 0) / 10)
    est, se = ratio_estimate(f, g, pi, iid=True)
    assert est == pytest.approx(2 / 3) and se == pytest.approx(
        math.sqrt(((f - 2 / 3) ** 2).sum() * 3 / 2) / 3
    )


def _frame() -> pd.DataFrame:
    return pd.DataFrame({
        "y": [1, 0, None, 1, None, 0], "pred": [1, 0, 1, 1, 0, 1], "reviewed": [1, 1, 0, 1, 0, 1],
        "pi": [0.5, 0.005, 0.2, 0.9, 0.3, 0.5], "lang": ["eng", "eng", "eng", "hin", "hin", "hin"],
    })  # fmt: skip


def test_clipping_and_missing_propensities_are_warned() -> None:
    data = _frame()
    res = selection_estimates(
        data,
        label="y",
        prediction="pred",
        reviewed="reviewed",
        propensity="pi",
        lang="lang",
        config=EvalConfig(),
    )
    assert "1 propensities below 0.01 clipped to 0.01 (weights capped at 100)" in res.warnings
    data.loc[3, "pi"] = float("nan")
    res = selection_estimates(data, label="y", prediction="pred", reviewed="reviewed", propensity="pi")
    assert "1 reviewed items have no propensity and are left out of the corrected estimates" in res.warnings
    row = res.table.set_index(["metric", "estimator"]).loc[("prevalence", "self_normalized")]
    assert row["n_used"] == 3
    assert set(res.table["slice_kind"]) == {"all"}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"pi": [0.5, 0.0, 0.2, 0.9, 0.3, 0.5]}, r"propensity column 'pi' holds 0\.0 at row 1 .*in \(0, 1\]"),
        ({"pi": [0.5, 0.5, 0.2, 1.5, 0.3, 0.5]}, r"propensity column 'pi' holds 1\.5 at row 3"),
        ({"y": [1, 0, None, None, None, 0]}, r"label column is empty at reviewed row 3"),
        ({"reviewed": [1, 1, 0, 2, 0, 1]}, r"reviewed column holds 2 at row 3"),
    ],
)
def test_bad_selection_input(change: dict[str, list[object]], message: str) -> None:
    data = _frame()
    for k, v in change.items():
        data[k] = v
    with pytest.raises(CorpusError, match=message):
        selection_estimates(data, label="y", prediction="pred", reviewed="reviewed", propensity="pi")


def test_disagreement_is_warned() -> None:
    rng = np.random.default_rng(5)
    x = rng.random(3000)
    y = (rng.random(3000) < x).astype(int)
    pi = 0.02 + 0.9 * x**3
    reviewed = rng.random(3000) < pi
    data = pd.DataFrame(
        {"y": np.where(reviewed, y, -1), "pred": (x > 0.5).astype(int), "rev": reviewed, "pi": pi}
    )
    data["y"] = data["y"].where(reviewed)
    res = selection_estimates(data, label="y", prediction="pred", reviewed="rev", propensity="pi")
    assert any(
        "all all: naive prevalence" in w and "disagree beyond their intervals" in w for w in res.warnings
    )


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=2, max_size=30))
def test_a_census_has_no_correction_and_no_variance(items: list[tuple[bool, bool]]) -> None:
    """Every item reviewed with probability 1: the weighted estimates are the plain ratio, exactly."""
    f = np.array([a and b for a, b in items], dtype=float)
    g = np.array([b for _, b in items], dtype=float)
    ones = np.ones(len(items))
    naive, _ = ratio_estimate(f, g, ones, iid=True)
    hajek, se = ratio_estimate(f, g, ones)
    ht, se_ht = ratio_estimate(f, g, ones, g_total=float(g.sum()))
    if g.sum() == 0:
        assert math.isnan(naive) and math.isnan(hajek) and math.isnan(ht)
    else:
        assert hajek == pytest.approx(naive) and ht == pytest.approx(naive) and se == 0 and se_ht == 0
