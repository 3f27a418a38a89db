"""evaluate_slices: per-slice metrics against scikit-learn and Fairlearn, resampled metrics against
sklearn on the resampled items, slices, flags and ranks, and every bad input's one-line error."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from fairlearn.metrics import MetricFrame
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import (
    accuracy_score,
    average_precision_score,
    confusion_matrix,
    f1_score,
    precision_recall_fscore_support,
    precision_score,
    recall_score,
    roc_auc_score,
)

from tokenloom.errors import ConfigError, CorpusError
from tokenloom.evaluate import EvalConfig, evaluate_slices
from tokenloom.evaluate.metrics import slice_metrics

TEXTS = {
    "eng": ["The river is wide today.", "Call me at noon, please."],
    "hin": ["आज नदी बहुत चौड़ी है।", "मुझे दोपहर में फ़ोन करना।"],
    "hin_Latn": ["aaj nadi bahut chaudi hai", "mujhe dopahar mein phone karna"],
    "rus": ["Сегодня река широкая.", "Позвони мне в полдень."],
    "mix": ["आज office में बहुत काम था, meeting के बाद ही lunch", "क्या तुमने मेरा message देखा? please"],
}


def _table(n_per: int = 60, seed: int = 0) -> pd.DataFrame:
    """Labelled items in four languages plus code-mixed Hindi; model a is good, b worse on Hindi."""
    rng = np.random.default_rng(seed)
    rows = []
    for lang, texts in TEXTS.items():
        for i in range(n_per):
            y = int(rng.random() < 0.4)
            flip_a = rng.random() < 0.15
            flip_b = rng.random() < (0.35 if lang.startswith("hin") else 0.1)
            score = float(np.round(np.clip(0.55 * y + 0.45 * rng.random(), 0, 1), 2))  # ties
            rows.append(dict(
                text=texts[i % 2], lang="hin" if lang == "mix" else lang, label=y, a=y ^ flip_a, b=y ^ flip_b,
                score_a=score, score_b=float(np.round(rng.random(), 1)), source=f"s{i % 3}",
            ))  # fmt: skip
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return _table()


@pytest.fixture(scope="module")
def evaluation(table: pd.DataFrame):  # type: ignore[no-untyped-def]
    return evaluate_slices(
        table, text="text", label="label", predictions={"a": "a", "b": "b"},
        scores={"a": "score_a", "b": "score_b"}, lang="lang", slices=("source",),
        config=EvalConfig(n_boot=200, min_support=20),
    )  # fmt: skip


def _ece(y: np.ndarray, s: np.ndarray, bins: int = 10) -> float:
    total = 0.0
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        inside = (s >= lo) & ((s < hi) if b < bins - 1 else (s <= hi))
        if inside.any():
            total += inside.sum() / len(s) * abs(y[inside].mean() - s[inside].mean())
    return total


def _sklearn(y: np.ndarray, p: np.ndarray, s: np.ndarray) -> dict[str, float]:
    tn, fp, fn, tp = confusion_matrix(y, p, labels=[0, 1]).ravel()
    out = {
        "precision": precision_score(y, p, zero_division=np.nan),
        "recall": recall_score(y, p, zero_division=np.nan),
        "f1": f1_score(y, p, zero_division=np.nan),
        "fpr": fp / (fp + tn) if fp + tn else math.nan,
        "fnr": fn / (fn + tp) if fn + tp else math.nan,
        "accuracy": accuracy_score(y, p),
        "ece": _ece(y, s),
    }
    if 0 < y.sum() < len(y):
        out["auroc"] = roc_auc_score(y, s)
        out["auprc"] = average_precision_score(y, s)
    return out


def test_every_slice_agrees_with_sklearn(evaluation, table: pd.DataFrame) -> None:  # type: ignore[no-untyped-def]
    m = evaluation.metrics
    assert set(m["slice_kind"]) == {"all", "language", "script", "code_mixed", "transliterated", "source"}
    checked = 0
    for sl in evaluation.slices:
        for model in ("a", "b"):
            part = table.iloc[sl.index]
            expected = _sklearn(
                part["label"].to_numpy(),
                part[model].astype(int).to_numpy(),
                part[f"score_{model}"].to_numpy(),
            )
            row = m[(m.model == model) & (m.slice_kind == sl.kind) & (m.slice == sl.name)].iloc[0]
            assert row["n"] == len(part) and row["positives"] == part["label"].sum()
            for metric, value in expected.items():
                if math.isnan(value):
                    assert math.isnan(row[metric]) and row["flag"], (sl.key, metric)
                else:
                    assert row[metric] == pytest.approx(value, abs=1e-12), (sl.key, model, metric)
                    checked += 1
    assert checked > 200


def test_language_rows_equal_fairlearn_metricframe(evaluation, table: pd.DataFrame) -> None:  # type: ignore[no-untyped-def]
    for model in ("a", "b"):
        frame = MetricFrame(
            metrics={"precision": precision_score, "recall": recall_score, "f1": f1_score, "accuracy": accuracy_score},
            y_true=table["label"], y_pred=table[model].astype(int), sensitive_features=table["lang"],
        )  # fmt: skip
        rows = evaluation.metrics.query("model == @model and slice_kind == 'language'").set_index("slice")
        for lang, values in frame.by_group.iterrows():
            for metric, value in values.items():
                assert rows.loc[lang, metric] == pytest.approx(value, abs=1e-12), (model, lang, metric)
        overall = evaluation.metrics.query("model == @model and slice_kind == 'all'").iloc[0]
        assert overall["f1"] == pytest.approx(frame.overall["f1"])


def test_slices_found_from_text_and_labels(evaluation) -> None:  # type: ignore[no-untyped-def]
    keys = {sl.key: len(sl.index) for sl in evaluation.slices}
    assert keys[("all", "all")] == 300 and keys[("language", "hin")] == 120
    assert keys[("transliterated", "hin_Latn")] == 60  # labelled hin_Latn; no English or Russian
    assert keys[("code_mixed", "hin_Deva+Latn")] == 60  # the Hindi-English texts only
    assert keys[("script", "Cyrl")] == 60 and keys[("script", "Deva")] >= 60
    assert {k for k in keys if k[0] == "source"} == {("source", "s0"), ("source", "s1"), ("source", "s2")}


def test_romanized_text_of_an_unlabelled_script_is_transliterated() -> None:
    data = {
        "text": ["mujhe phone karna", "Позвони мне", "call me"],
        "lang": ["hin", "rus", "eng"],
        "y": [1, 0, 1],
        "p": [1, 0, 0],
    }
    ev = evaluate_slices(
        data, text="text", lang="lang", label="y", predictions={"m": "p"}, config=EvalConfig(n_boot=0)
    )
    assert [sl.key for sl in ev.slices if sl.kind == "transliterated"] == [("transliterated", "hin_Latn")]


def test_intervals_cover_points_and_are_deterministic(evaluation, table: pd.DataFrame) -> None:  # type: ignore[no-untyped-def]
    m = evaluation.metrics
    ok = m["f1"].notna() & m["f1_lo"].notna()
    assert (
        (m.loc[ok, "f1_lo"] <= m.loc[ok, "f1"] + 1e-12) & (m.loc[ok, "f1"] <= m.loc[ok, "f1_hi"] + 1e-12)
    ).mean() > 0.95
    assert (m.loc[ok, "f1_hi"] > m.loc[ok, "f1_lo"]).all()
    again = evaluate_slices(
        table, text="text", label="label", predictions={"a": "a", "b": "b"}, scores={"a": "score_a", "b": "score_b"},
        lang="lang", slices=("source",), config=EvalConfig(n_boot=200, min_support=20),
    )  # fmt: skip
    pd.testing.assert_frame_equal(again.metrics, m)
    assert m.attrs["n_boot"] == 200 and m.attrs["seed"] == 0 and m.attrs["level"] == 0.95


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.booleans(), st.booleans(), st.integers(0, 10)), min_size=2, max_size=25),
    st.lists(st.integers(0, 3), min_size=25, max_size=25),
)
def test_resampled_metrics_equal_sklearn_on_the_resampled_items(
    items: list[tuple[bool, bool, int]], counts: list[int]
) -> None:
    """A weight row counts each item that many times: the metrics equal sklearn's on the repeated items."""
    y = np.array([t[0] for t in items])
    p = np.array([t[1] for t in items])
    s = np.array([t[2] / 10 for t in items])
    w = np.array(counts[: len(items)], dtype=np.float64)
    got = {k: float(v[0]) for k, v in slice_metrics(w[None, :], y, p, s).items()}
    keep = np.repeat(np.arange(len(items)), w.astype(int))
    if keep.size == 0:
        assert math.isnan(got["accuracy"])
        return
    expected = _sklearn(y[keep].astype(int), p[keep].astype(int), s[keep])
    for metric, value in expected.items():
        assert (math.isnan(value) and math.isnan(got[metric])) or got[metric] == pytest.approx(
            value, abs=1e-12
        ), metric


def test_multiclass_is_one_vs_rest_per_class() -> None:
    rng = np.random.default_rng(1)
    classes = ["hate", "violence", "none"]
    y = rng.choice(classes, 300, p=[0.3, 0.2, 0.5])
    pred = np.where(rng.random(300) < 0.7, y, rng.choice(classes, 300))
    data = pd.DataFrame({"y": y, "pred": pred, "lang": rng.choice(["eng", "deu"], 300)})
    ev = evaluate_slices(
        data,
        label="y",
        predictions={"m": "pred"},
        positive=["hate", "violence"],
        lang="lang",
        config=EvalConfig(n_boot=0),
    )
    for lang in ("eng", "deu"):
        part = data[data["lang"] == lang]
        prec, rec, f1, support = precision_recall_fscore_support(
            part["y"], part["pred"], labels=["hate", "violence"], zero_division=np.nan
        )
        rows = ev.metrics.query("slice == @lang").set_index("class")
        assert rows.loc[["hate", "violence"], "precision"].tolist() == pytest.approx(list(prec))
        assert rows.loc[["hate", "violence"], "recall"].tolist() == pytest.approx(list(rec))
        assert rows.loc[["hate", "violence"], "f1"].tolist() == pytest.approx(list(f1))
        assert rows.loc[["hate", "violence"], "positives"].tolist() == list(support)


def test_flags_explain_every_nan_and_unranked_row() -> None:
    data = pd.DataFrame({
        "y": [0] * 40 + [1, 0] * 20 + [1, 0] * 5, "p": [0] * 40 + [1, 1] * 20 + [1, 0] * 5,
        "lang": ["deu"] * 40 + ["eng"] * 40 + ["fra"] * 10,
    })  # fmt: skip
    ev = evaluate_slices(
        data, label="y", predictions={"m": "p"}, lang="lang", config=EvalConfig(n_boot=50, min_support=20)
    )
    rows = ev.metrics.set_index("slice")
    assert rows.loc["deu", "flag"] == "no positives; no predicted positives" and math.isnan(
        rows.loc["deu", "recall"]
    )
    assert rows.loc["fra", "flag"] == "support 10 < 20" and pd.isna(rows.loc["fra", "rank"])
    assert rows.loc["eng", "flag"] == "" and rows.loc["eng", "rank"] == 1
    metric_cols = [c for c in ev.metrics.columns if c in ("precision", "recall", "f1", "fpr", "fnr")]
    unexplained = ev.metrics[ev.metrics[metric_cols].isna().any(axis=1) & (ev.metrics["flag"] == "")]
    assert unexplained.empty


def _base() -> dict[str, list[object]]:
    return {
        "text": ["a", "b", "c"],
        "y": [1, 0, 1],
        "p": [1, 0, 0],
        "s": [0.9, 0.2, 0.4],
        "lang": ["eng"] * 3,
    }


@pytest.mark.parametrize(
    ("change", "kwargs", "message"),
    [
        ({}, {"lang": "language"}, "no column 'language' in the data .*pass lang="),
        (
            {"y": [1, 0, "maybe"], "p": [1, 0, 0]},
            {},
            "label column 'y' holds values outside the positive set \\[1\\]: 0 \\(row 1\\), 'maybe' \\(row 2\\)",
        ),
        ({"y": [1, 0, None]}, {}, "label column 'y' is empty at row 2"),
        ({"p": [1, 0, 2]}, {}, "prediction column 'p' holds 2 \\(row 2\\), not a label value"),
        ({"s": [0.9, float("nan"), 0.4]}, {}, "score column 's' holds nan at row 1 .*in \\[0, 1\\]"),
        ({"s": [0.9, 1.5, 0.4]}, {}, "score column 's' holds 1.5 at row 1"),
        ({}, {"predictions": {"m": [1, 0]}}, "predictions\\['m'\\] has 2 values but the data has 3 rows"),
        ({"text": ["a", 3, "c"]}, {}, "text column 'text' holds 3 at row 1, not a string"),
        ({"lang": ["eng", None, "eng"]}, {}, "lang column 'lang' is empty at row 1"),
    ],
)
def test_bad_input_is_one_line_naming_column_and_value(
    change: dict[str, list[object]], kwargs: dict[str, object], message: str
) -> None:
    data = _base() | change
    args: dict[str, object] = {
        "text": "text",
        "label": "y",
        "predictions": {"m": "p"},
        "scores": {"m": "s"},
        "lang": "lang",
    }
    with pytest.raises(CorpusError, match=message) as info:
        evaluate_slices(data, **(args | kwargs))  # type: ignore[arg-type]
    assert "\n" not in str(info.value)


def test_mismatched_column_lengths_and_config_errors() -> None:
    with pytest.raises(CorpusError, match="different lengths \\(y: 3, p: 2\\)"):
        evaluate_slices({"y": [1, 0, 1], "p": [1, 0]}, label="y", predictions={"m": "p"})
    with pytest.raises(ConfigError, match="unknown metric 'f2'"):
        EvalConfig(rank_by="f2")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="level must be in"):
        EvalConfig(level=95)


def test_policy_slices_and_multiclass_scores_against_sklearn() -> None:
    rng = np.random.default_rng(2)
    classes = ["hate", "violence", "none"]
    y = rng.choice(classes, 240, p=[0.3, 0.3, 0.4])
    p_hate = np.round(np.clip((y == "hate") * 0.5 + 0.5 * rng.random(240), 0, 1), 2)
    p_violence = np.round(np.clip((y == "violence") * 0.4 + 0.6 * rng.random(240), 0, 1), 2)
    data = pd.DataFrame(
        {"y": y, "p_hate": p_hate, "p_violence": p_violence, "policy": rng.choice(["threat", "slur"], 240)}
    )
    ev = evaluate_slices(
        data, label="y", positive=["hate", "violence"], policy="policy",
        scores={"m": {"hate": "p_hate", "violence": "p_violence"}}, config=EvalConfig(n_boot=0),
    )  # fmt: skip
    assert {sl.key for sl in ev.slices} == {("all", "all"), ("policy", "slur"), ("policy", "threat")}
    for sl in ev.slices:
        part = data.iloc[sl.index]
        for cls in ("hate", "violence"):
            row = ev.metrics[(ev.metrics["class"] == cls) & (ev.metrics.slice == sl.name)].iloc[0]
            assert row["auroc"] == pytest.approx(roc_auc_score(part["y"] == cls, part[f"p_{cls}"]))
            assert row["auprc"] == pytest.approx(average_precision_score(part["y"] == cls, part[f"p_{cls}"]))
    # predictions from scores: the class of the highest score when it reaches the threshold, else "none"
    best = np.where(p_hate >= p_violence, "hate", "violence")
    decided = np.where(np.maximum(p_hate, p_violence) >= 0.5, best, "none")
    expected = precision_score(y, decided, labels=["hate"], average=None, zero_division=np.nan)[0]
    row = ev.metrics[(ev.metrics["class"] == "hate") & (ev.metrics.slice == "all")].iloc[0]
    assert row["precision"] == pytest.approx(expected)
    with pytest.raises(CorpusError, match="needs one score column per class"):
        evaluate_slices(data, label="y", positive=["hate", "violence"], scores={"m": "p_hate"})


def test_a_table_file_reads_like_its_dataframe(table: pd.DataFrame, tmp_path) -> None:  # type: ignore[no-untyped-def]
    table.to_parquet(tmp_path / "t.parquet")
    args = dict(text="text", label="label", predictions={"a": "a"}, lang="lang", config=EvalConfig(n_boot=20))
    from_file = evaluate_slices(tmp_path / "t.parquet", **args)  # type: ignore[arg-type]
    pd.testing.assert_frame_equal(from_file.metrics, evaluate_slices(table, **args).metrics)  # type: ignore[arg-type]
    with pytest.raises(CorpusError, match="no such file"):
        evaluate_slices(tmp_path / "missing.csv", **args)  # type: ignore[arg-type]
