"""Two-stage cascades measured honestly: routing errors, escalation, end-to-end quality, cost and latency.

A binary cascade settles some items with a cheap first stage and escalates the rest to a second stage:

- :class:`ScoreStage`: a score column with two thresholds — ``score >= high`` settles positive,
  ``score < low`` settles negative, anything between is escalated (``low == high``: nothing escalates);
- :class:`KeywordStage`: a keyword rule list applied by tokenloom (:mod:`~tokenloom.evaluate.keywords`):
  a match settles positive or escalates (``on_match``), a miss settles negative or escalates (``on_miss``).

The second stage is a prediction column for every item (what it would say if asked). Per slice
(:mod:`~tokenloom.evaluate.slices`) :func:`evaluate_cascade` reports the items settled positive and
negative and the escalation rate; the **routing confusion** — items stage 1 settled that stage 2
contradicts (``settled_pos_stage2_neg``, ``settled_neg_stage2_pos``) or the label contradicts
(``settled_pos_label_neg``: stage-1 false positives; ``settled_neg_label_pos``: positives stage 1 let
through); the end-to-end metrics with bootstrap intervals, beside stage 2 alone; and cost and latency per
1,000 items (``1000 x (stage-1 cost + escalation rate x stage-2 cost)``, in the units given). For a score
stage, :func:`cascade_frontier` sweeps the thresholds and marks the Pareto frontier of quality against
cost. With a keyword stage, the keyword matches are also judged as labels: their precision and recall
against the human labels per slice (``CascadeResult.keywords``).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from tokenloom.errors import ConfigError
from tokenloom.evaluate.config import EvalConfig
from tokenloom.evaluate.items import Column, as_table, column_values, prepare_items, scores_in_unit_interval
from tokenloom.evaluate.keywords import Match, check_keywords, keyword_matches
from tokenloom.evaluate.samples import all_samples, slice_samples
from tokenloom.evaluate.slices import item_slices
from tokenloom.evaluate.table import metric_table
from tokenloom.fertility.bootstrap import percentile_interval

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "CascadeResult",
    "KeywordStage",
    "ScoreStage",
    "StageCost",
    "cascade_frontier",
    "evaluate_cascade",
    "route",
]

SETTLED_POS, SETTLED_NEG, ESCALATED = 1, 0, -1  # first-stage decisions


@dataclass(frozen=True)
class ScoreStage:
    """A first stage that scores items: settle positive at ``score >= high``, negative below ``low``."""

    column: Column  # the score column (a probability in [0, 1])
    low: float = 0.5  # below this the item is settled negative
    high: float = 0.5  # at or above this the item is settled positive; in [low, high) it is escalated

    def __post_init__(self) -> None:
        if not 0.0 <= self.low <= self.high <= 1.0:
            raise ConfigError(f"ScoreStage needs 0 <= low <= high <= 1, got low={self.low}, high={self.high}")


@dataclass(frozen=True)
class KeywordStage:
    """A first stage that applies keyword rules: what a match and a miss decide."""

    keywords: tuple[str, ...]  # keywords or phrases (see tokenloom.evaluate.keywords)
    match: Match = "word"  # exact, casefold or word (case-folded, on ICU word boundaries)
    on_match: Literal["positive", "escalate"] = "positive"  # a match settles positive, or asks stage 2
    on_miss: Literal["negative", "escalate"] = "escalate"  # a miss settles negative, or asks stage 2

    def __post_init__(self) -> None:
        object.__setattr__(self, "keywords", check_keywords(self.keywords, self.match))
        if self.on_match not in ("positive", "escalate") or self.on_miss not in ("negative", "escalate"):
            raise ConfigError(
                f"KeywordStage: on_match is 'positive' or 'escalate', on_miss 'negative' or 'escalate'; "
                f"got {self.on_match!r}, {self.on_miss!r}"
            )


@dataclass(frozen=True)
class StageCost:
    """What one stage costs per item it sees."""

    cost: float = 0.0  # per item, in any unit (dollars, GPU-seconds)
    latency: float = 0.0  # per item, in any unit (milliseconds)

    def __post_init__(self) -> None:
        if (
            not (math.isfinite(self.cost) and math.isfinite(self.latency))
            or self.cost < 0
            or self.latency < 0
        ):
            raise ConfigError(
                f"StageCost needs finite cost and latency >= 0, got {self.cost}, {self.latency}"
            )


def route(scores: np.ndarray, low: float, high: float) -> np.ndarray:
    """[n] first-stage decisions of a score stage: 1 settled positive, 0 settled negative, -1 escalated."""
    return np.where(scores >= high, SETTLED_POS, np.where(scores < low, SETTLED_NEG, ESCALATED))


def _keyword_route(matches: np.ndarray, stage: KeywordStage) -> np.ndarray:
    hit = SETTLED_POS if stage.on_match == "positive" else ESCALATED
    miss = SETTLED_NEG if stage.on_miss == "negative" else ESCALATED
    return np.where(matches, hit, miss)


@dataclass(frozen=True)
class CascadeResult:
    """What :func:`evaluate_cascade` found."""

    table: pd.DataFrame  # one row per slice: routing confusion, escalation, metrics, cost, latency
    frontier: pd.DataFrame | None  # thresholds against quality and cost (score stages only)
    keywords: pd.DataFrame | None  # the keyword matches judged as labels, per slice (keyword stages only)


def _interval(boot: np.ndarray, value: float, level: float) -> tuple[float, float]:
    if boot.size == 0 or not math.isfinite(value):
        return math.nan, math.nan
    return percentile_interval(boot, level=level)


def _slice_row(
    decision: np.ndarray,
    stage2: np.ndarray,
    y: np.ndarray,
    costs: tuple[StageCost, StageCost],
    config: EvalConfig,
) -> dict[str, Any]:
    final = np.where(decision == ESCALATED, stage2, decision == SETTLED_POS)  # [n] bool
    pos, neg, esc = decision == SETTLED_POS, decision == SETTLED_NEG, decision == ESCALATED
    n = len(y)
    rate = float(esc.mean()) if n else math.nan
    row: dict[str, Any] = {
        "n": n, "positives": int(y.sum()), "settled_pos": int(pos.sum()), "settled_neg": int(neg.sum()),
        "escalated": int(esc.sum()), "escalation_rate": rate,
        "settled_pos_stage2_neg": int((pos & ~stage2).sum()), "settled_neg_stage2_pos": int((neg & stage2).sum()),
        "settled_pos_label_neg": int((pos & ~y).sum()), "settled_neg_label_pos": int((neg & y).sum()),
    }  # fmt: skip
    for prefix, pred in (("", final), ("stage2_", stage2)):
        point, boot = slice_samples(y, pred, None, config=config)
        for metric in ("precision", "recall", "f1", "fpr", "fnr"):
            row[prefix + metric] = point[metric]
            if not prefix:
                row[f"{metric}_lo"], row[f"{metric}_hi"] = _interval(
                    boot[metric], point[metric], config.level
                )
    first, second = costs
    row["cost_per_1k"] = 1000 * (first.cost + rate * second.cost)
    row["latency_per_1k"] = 1000 * (first.latency + rate * second.latency)
    row["stage2_cost_per_1k"] = 1000 * second.cost
    return row


def evaluate_cascade(
    data: Any,
    *,
    label: Column,
    first: ScoreStage | KeywordStage,
    second: Column,
    costs: tuple[StageCost, StageCost] = (StageCost(), StageCost()),
    text: Column | None = None,
    lang: Column | None = None,
    policy: Column | None = None,
    positive: Hashable = 1,
    slices: Sequence[str] = (),
    config: EvalConfig | None = None,
) -> CascadeResult:
    """Measure a binary two-stage cascade on every slice of ``data`` (module docstring).

    ``second`` is the second stage's prediction column (for every item), ``costs`` the (first, second)
    stage's cost and latency per item. A keyword stage needs ``text``.
    """
    config = config or EvalConfig()
    data = as_table(data)
    items = prepare_items(
        data, label=label, positive=positive, predictions={"stage2": second}, text=text, lang=lang,
        policy=policy, slices=slices,
    )  # fmt: skip
    y, stage2 = items.truth(positive), items.predicted("stage2", positive)
    frontier = keywords = None
    if isinstance(first, ScoreStage):
        role = first.column if isinstance(first.column, str) else "<first-stage scores>"
        scores = scores_in_unit_interval(
            column_values(data, first.column, role="first", n=items.n), column=role
        )
        decision = route(scores, first.low, first.high)
        frontier = cascade_frontier(scores, stage2, y, costs=costs)
    else:
        if items.texts is None:
            raise ConfigError("a KeywordStage needs the texts: pass text= the name of the text column")
        matches = keyword_matches(items.texts, first.keywords, match=first.match, lang=items.lang)
        decision = _keyword_route(matches, first)
        kw_items = prepare_items(
            data, label=label, positive=positive, predictions={"keywords": matches.tolist()}, text=text,
            lang=lang, policy=policy, slices=slices,
        )  # fmt: skip
        found = item_slices(kw_items, mixed_min_share=config.mixed_min_share)
        keywords = metric_table(all_samples(kw_items, found, config=config), config=config)
    rows = []
    for sl in item_slices(items, mixed_min_share=config.mixed_min_share):
        idx = sl.index
        row = {"slice_kind": sl.kind, "slice": sl.name}
        row.update(_slice_row(decision[idx], stage2[idx], y[idx], costs, config))
        rows.append(row)
    import pandas as pd

    table = pd.DataFrame(rows)
    table.attrs.update(n_boot=config.n_boot, seed=config.seed, level=config.level)
    return CascadeResult(table=table, frontier=frontier, keywords=keywords)


def cascade_frontier(
    scores: np.ndarray,
    stage2: np.ndarray,
    y: np.ndarray,
    *,
    costs: tuple[StageCost, StageCost] = (StageCost(), StageCost()),
    thresholds: Sequence[float] | None = None,
) -> pd.DataFrame:
    """Every (low, high) pair of ``thresholds`` (default 0, 0.05, ..., 1) with low <= high: escalation
    rate, cost and latency per 1,000 items and end-to-end precision, recall and F1 on all items;
    ``pareto`` marks the points no other point beats on both F1 (higher) and cost (lower)."""
    import pandas as pd

    grid = (
        np.linspace(0.0, 1.0, 21) if thresholds is None else np.asarray(sorted(set(thresholds)), dtype=float)
    )
    first, second = costs
    rows = []
    for i, low in enumerate(grid):
        for high in grid[i:]:
            decision = route(scores, float(low), float(high))
            final = np.where(decision == ESCALATED, stage2, decision == SETTLED_POS)
            tp, fp, fn = int((final & y).sum()), int((final & ~y).sum()), int((~final & y).sum())
            rate = float((decision == ESCALATED).mean())
            rows.append({
                "low": float(low), "high": float(high), "escalation_rate": rate,
                "cost_per_1k": 1000 * (first.cost + rate * second.cost),
                "latency_per_1k": 1000 * (first.latency + rate * second.latency),
                "precision": tp / (tp + fp) if tp + fp else math.nan,
                "recall": tp / (tp + fn) if tp + fn else math.nan,
                "f1": 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else math.nan,
            })  # fmt: skip
    df = pd.DataFrame(rows)
    f1, cost = df["f1"].fillna(-1.0).to_numpy(), df["cost_per_1k"].to_numpy()
    beaten = ((f1[None, :] >= f1[:, None]) & (cost[None, :] <= cost[:, None])) & (
        (f1[None, :] > f1[:, None]) | (cost[None, :] < cost[:, None])
    )  # [P, P] point j beats point i
    df["pareto"] = (~beaten.any(axis=1)).tolist()
    return df
