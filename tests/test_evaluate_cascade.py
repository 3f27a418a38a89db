"""Cascades: routing confusion, escalation, end-to-end metrics, cost and latency on a hand-built example;
the threshold frontier; keyword stages (exact, case-folded, ICU word boundaries) and keyword rules judged
as labels."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import precision_score, recall_score

from tokenloom.errors import ConfigError, CorpusError
from tokenloom.evaluate import EvalConfig
from tokenloom.evaluate.cascade import KeywordStage, ScoreStage, StageCost, cascade_frontier, evaluate_cascade
from tokenloom.evaluate.keywords import keyword_matches

# item: stage-1 score, label, stage-2 prediction (low 0.3, high 0.7); worked out by hand in the tests
HAND = pd.DataFrame({
    "s": [0.9, 0.8, 0.75, 0.1, 0.2, 0.05, 0.5, 0.4, 0.6, 0.3],
    "y": [1, 0, 0, 1, 0, 1, 1, 0, 1, 0],
    "p2": [1, 1, 0, 1, 0, 0, 1, 1, 0, 0],
    "lang": ["eng"] * 5 + ["hin"] * 5,
})  # fmt: skip
COSTS = (StageCost(cost=0.1, latency=1.0), StageCost(cost=2.0, latency=50.0))


@pytest.fixture(scope="module")
def hand():  # type: ignore[no-untyped-def]
    return evaluate_cascade(
        HAND, label="y", first=ScoreStage("s", low=0.3, high=0.7), second="p2", costs=COSTS, lang="lang",
        config=EvalConfig(n_boot=50),
    )  # fmt: skip


def test_routing_confusion_of_the_hand_built_example(hand) -> None:  # type: ignore[no-untyped-def]
    row = hand.table.set_index("slice").loc["all"]
    assert (row.settled_pos, row.settled_neg, row.escalated) == (3, 3, 4)  # {0,1,2}, {3,4,5}, {6,7,8,9}
    assert row.escalation_rate == pytest.approx(0.4)
    assert row.settled_pos_stage2_neg == 1  # item 2
    assert row.settled_neg_stage2_pos == 1  # item 3
    assert row.settled_pos_label_neg == 2  # items 1, 2: stage-1 false positives
    assert row.settled_neg_label_pos == 2  # items 3, 5: positives stage 1 let through
    # end to end: tp {0, 6}, fp {1, 2, 7}, fn {3, 5, 8}, tn {4, 9}
    assert (row.precision, row.recall, row.f1) == pytest.approx((0.4, 0.4, 0.4))
    assert row.fpr == pytest.approx(3 / 5) and row.fnr == pytest.approx(3 / 5)
    assert row.stage2_f1 == pytest.approx(0.6)  # stage 2 alone: tp 3, fp 2, fn 2
    assert row.cost_per_1k == pytest.approx(1000 * (0.1 + 0.4 * 2.0))
    assert row.latency_per_1k == pytest.approx(1000 * (1.0 + 0.4 * 50.0))
    assert row.stage2_cost_per_1k == pytest.approx(2000)


def test_routing_confusion_per_slice(hand) -> None:  # type: ignore[no-untyped-def]
    t = hand.table.set_index("slice")
    assert (t.loc["eng", "settled_pos"], t.loc["eng", "settled_neg"], t.loc["eng", "escalated"]) == (3, 2, 0)
    assert (t.loc["hin", "settled_pos"], t.loc["hin", "settled_neg"], t.loc["hin", "escalated"]) == (0, 1, 4)
    assert t.loc["eng", "cost_per_1k"] == pytest.approx(100) and t.loc[
        "hin", "escalation_rate"
    ] == pytest.approx(0.8)
    assert t.loc["hin", "settled_neg_label_pos"] == 1  # item 5


def test_frontier_ends_are_stage_one_alone_and_stage_two_alone(hand) -> None:  # type: ignore[no-untyped-def]
    scores, p2, y = HAND["s"].to_numpy(), HAND["p2"].to_numpy() == 1, HAND["y"].to_numpy() == 1
    f = cascade_frontier(scores, p2, y, costs=COSTS, thresholds=[0.0, 0.3, 0.7, 1.0]).set_index(
        ["low", "high"]
    )
    assert f.loc[(0.3, 0.7), "f1"] == pytest.approx(0.4) and f.loc[
        (0.3, 0.7), "escalation_rate"
    ] == pytest.approx(0.4)
    assert f.loc[(0.0, 1.0), "f1"] == pytest.approx(0.6) and f.loc[
        (0.0, 1.0), "cost_per_1k"
    ] == pytest.approx(2100)
    assert f.loc[(0.3, 0.3), "escalation_rate"] == 0 and f.loc[(0.3, 0.3), "cost_per_1k"] == pytest.approx(
        100
    )
    pareto = f[f["pareto"]]
    for (lo, hi), r in f.iterrows():  # nothing beats a Pareto point on both F1 and cost
        if r["pareto"]:
            assert not (
                (f["f1"] >= r["f1"])
                & (f["cost_per_1k"] <= r["cost_per_1k"])
                & ((f["f1"] > r["f1"]) | (f["cost_per_1k"] < r["cost_per_1k"]))
            ).any(), (lo, hi)
    assert pareto.index.tolist() == [(0.0, 0.0)]  # everything positive: F1 2/3 at stage 1's cost alone
    assert hand.frontier is not None and len(hand.frontier) == 21 * 22 // 2


def test_keyword_matching_modes() -> None:
    texts = [
        "I will KILL you",
        "skills matter",
        "STRASSE gesperrt",
        "kill-switch",
        "उसे मार दो",
        "usko maar do",
        "a killer",
    ]
    assert keyword_matches(texts, ["kill"], match="exact").tolist() == [
        False,
        True,
        False,
        True,
        False,
        False,
        True,
    ]
    assert keyword_matches(texts, ["kill"], match="casefold").tolist() == [
        True,
        True,
        False,
        True,
        False,
        False,
        True,
    ]
    assert keyword_matches(texts, ["kill"]).tolist() == [True, False, False, True, False, False, False]
    assert keyword_matches(texts, ["straße", "मार"]).tolist() == [
        False,
        False,
        True,
        False,
        True,
        False,
        False,
    ]
    assert keyword_matches(["will kill you now", "kill, you"], ["kill you"]).tolist() == [True, False]
    with pytest.raises(ConfigError, match="wrap it"):
        keyword_matches(texts, "kill")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="non-empty"):
        keyword_matches(texts, ["kill", " "])


def test_keyword_stage_and_keyword_rules_as_labels() -> None:
    texts = [
        "I will kill you",
        "kill time with a game",
        "usko maar do",
        "उसे मार दो",
        "nice weather",
        "you idiot, I kill",
    ]
    data = pd.DataFrame({
        "text": texts * 10, "y": [1, 0, 1, 1, 0, 1] * 10, "p2": [1, 0, 1, 0, 0, 1] * 10,
        "lang": ["eng", "eng", "hin_Latn", "hin", "eng", "eng"] * 10,
    })  # fmt: skip
    stage = KeywordStage(("kill", "मार"), on_match="positive", on_miss="escalate")
    res = evaluate_cascade(
        data, label="y", first=stage, second="p2", text="text", lang="lang", config=EvalConfig(n_boot=20)
    )
    row = res.table.set_index(["slice_kind", "slice"]).loc[("all", "all")]
    assert (row.settled_pos, row.settled_neg, row.escalated) == (40, 0, 20)  # 4 of 6 texts match
    assert row.settled_pos_label_neg == 10  # "kill time": the keyword is not the policy
    translit = res.table.set_index(["slice_kind", "slice"]).loc[("transliterated", "hin_Latn")]
    assert translit.escalated == 10 and translit.settled_pos == 0  # "maar" is not on the list
    assert res.keywords is not None and res.frontier is None
    kw = res.keywords.set_index(["slice_kind", "slice"])
    match = keyword_matches(data["text"].tolist(), ["kill", "मार"])
    for lang in ("eng", "hin", "hin_Latn"):
        at = (data["lang"] == lang).to_numpy()
        expected_p = precision_score(data["y"][at], match[at], zero_division=np.nan)
        got_p = kw.loc[("language", lang), "precision"]
        assert (np.isnan(expected_p) and np.isnan(got_p)) or got_p == pytest.approx(expected_p)
        assert kw.loc[("language", lang), "recall"] == pytest.approx(recall_score(data["y"][at], match[at]))


def test_bad_cascade_input() -> None:
    with pytest.raises(ConfigError, match="low <= high"):
        ScoreStage("s", low=0.8, high=0.2)
    with pytest.raises(ConfigError, match="StageCost needs"):
        StageCost(cost=-1)
    with pytest.raises(ConfigError, match="needs the texts"):
        evaluate_cascade(HAND, label="y", first=KeywordStage(("x",)), second="p2")
    bad = HAND.assign(s=[*HAND["s"][:-1], 1.2])
    with pytest.raises(CorpusError, match=r"score column 's' holds 1\.2 at row 9"):
        evaluate_cascade(bad, label="y", first=ScoreStage("s"), second="p2")


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.text(alphabet="aAbB ,.é", max_size=12), min_size=1, max_size=6),
    st.lists(st.text(alphabet="aAbBé", min_size=1, max_size=3), min_size=1, max_size=3),
)
def test_word_matches_are_casefold_matches_and_exact_ones_too(texts: list[str], keys: list[str]) -> None:
    exact = keyword_matches(texts, keys, match="exact")
    folded = keyword_matches(texts, keys, match="casefold")
    word = keyword_matches(texts, keys, match="word")
    assert not (exact & ~folded).any() and not (word & ~folded).any()
    whole = keyword_matches(keys, keys, match="word")  # a keyword alone is a word of itself
    assert whole.all()
