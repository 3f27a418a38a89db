"""``tokenloom evaluate``: a classifier's predictions judged by slice, models compared, cascades, feedback.

Reads one table (CSV / TSV / JSON Lines / Parquet, compressed too) with a label column, prediction and
score columns per model and optional text, language and policy columns; prints the summary and, with
``--out``, writes the tables, the Markdown and the HTML page (``tokenloom.evaluate.writers``). A cascade
(``--second`` with ``--first-score`` or ``--keywords``) and selection-bias estimates (``--reviewed``) are
measured on the same table. Flip rates under transforms need a predict function: use the Python API.
"""

from __future__ import annotations

import argparse
from typing import Any

NAME = "evaluate"
HELP = "judge classifiers by language, script, code-mixed and transliterated slices; compare them; cascades"


def _named(text: str) -> tuple[str, str]:
    name, sep, column = text.partition("=")
    if not name or (sep and not column):
        raise argparse.ArgumentTypeError(f"invalid {text!r}: give NAME=COLUMN or COLUMN")
    return (name, column) if sep else (text, text)


def _pair(text: str) -> tuple[float, float]:
    try:
        a, b = (float(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"invalid {text!r}: give two numbers, stage 1 and stage 2: 0.1,2"
        ) from None
    return a, b


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="the labelled table: .csv, .tsv, .jsonl or .parquet")
    parser.add_argument("--label", required=True, metavar="COL", help="the human-label column")
    parser.add_argument(
        "--pred",
        type=_named,
        action="append",
        metavar="NAME=COL",
        help="a model's prediction column (repeatable)",
    )
    parser.add_argument(
        "--score",
        type=_named,
        action="append",
        metavar="NAME=COL",
        help="a model's score column, P(positive) (repeatable)",
    )
    parser.add_argument(
        "--positive",
        default="1",
        help="the positive label, or classes separated by commas (one-vs-rest each)",
    )
    parser.add_argument(
        "--text", metavar="COL", help="the text column: script, code-mixed and transliterated slices"
    )
    parser.add_argument("--lang", metavar="COL", help="the language column (hin, hin_Deva, hin_Latn)")
    parser.add_argument("--policy", metavar="COL", help="the policy-category column (a slice per category)")
    parser.add_argument("--slice", action="append", metavar="COL", help="an extra slice column (repeatable)")
    parser.add_argument("--out", metavar="DIR", help="write CSV, Markdown, HTML and charts into this folder")
    parser.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples of every interval")
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap draws")
    parser.add_argument(
        "--min-support", type=int, default=30, help="slices with fewer items are flagged, not ranked"
    )
    parser.add_argument("--level", type=float, default=0.95, help="coverage of every interval")
    parser.add_argument(
        "--rank-by", default="f1", metavar="METRIC", help="the metric whose gap ranks the slices"
    )
    parser.add_argument(
        "--compare", default="precision,recall,f1,fpr,fnr,auroc", metavar="M1,M2",
        help="metrics the paired comparison of two or more models differences (Holm over all of them)",
    )  # fmt: skip
    cascade = parser.add_argument_group("cascade (binary)")
    cascade.add_argument("--second", metavar="COL", help="the second stage's prediction column")
    cascade.add_argument("--first-score", metavar="COL", help="a first stage's score column ...")
    cascade.add_argument("--low", type=float, default=0.5, help="... settling negative below this")
    cascade.add_argument("--high", type=float, default=0.5, help="... and positive at or above this")
    cascade.add_argument(
        "--keywords", metavar="K1,K2", help="or a keyword first stage: keywords separated by commas"
    )
    cascade.add_argument(
        "--match", default="word", choices=("exact", "casefold", "word"), help="how keywords match"
    )
    cascade.add_argument(
        "--on-match",
        default="positive",
        choices=("positive", "escalate"),
        help="what a keyword match decides",
    )
    cascade.add_argument(
        "--on-miss", default="escalate", choices=("negative", "escalate"), help="what a miss decides"
    )
    cascade.add_argument(
        "--cost", type=_pair, default=(0.0, 0.0), metavar="C1,C2", help="cost per item of stage 1 and 2"
    )
    cascade.add_argument(
        "--latency", type=_pair, default=(0.0, 0.0), metavar="L1,L2", help="latency per item of stage 1 and 2"
    )
    review = parser.add_argument_group("human review and selection bias (binary)")
    review.add_argument("--reviewed", metavar="COL", help="True/False: the item was reviewed (labelled)")
    review.add_argument("--propensity", metavar="COL", help="each item's probability of having been reviewed")
    review.add_argument("--holdout", metavar="COL", help="True/False: the item is in a random review holdout")
    review.add_argument(
        "--review-model",
        metavar="NAME",
        help="the model whose feedback metrics are estimated (default: the first)",
    )


def _typed(value: str, column: Any) -> Any:
    """``value`` as the label column's type: a number for a numeric column, else the string."""
    if column.dtype.kind in "iufb":
        try:
            number = float(value)
        except ValueError:
            return value
        return int(number) if number.is_integer() else number
    return value


def run(args: argparse.Namespace) -> int:
    args.pred, args.score, args.slice = args.pred or [], args.score or [], args.slice or []
    from tokenloom.errors import CorpusError
    from tokenloom.evaluate import EvalConfig, evaluate_slices
    from tokenloom.evaluate.read import read_table
    from tokenloom.evaluate.writers import write_evaluation

    table = read_table(args.file)
    for option, column in (("--label", args.label), ("--reviewed", args.reviewed)):
        if column is not None and column not in table.columns:
            shown = ", ".join(map(str, table.columns))
            raise CorpusError(f"{args.file}: no column {column!r} (columns: {shown}); pass {option} COL")
    data = table
    if args.reviewed:  # only reviewed items have labels: the slice metrics are the naive ones
        data = table[table[args.reviewed].astype(bool)].reset_index(drop=True)
        print(f"slice metrics on the {len(data)} reviewed items (naive; the corrected estimates follow)")
    positive = [_typed(v.strip(), data[args.label]) for v in args.positive.split(",") if v.strip()]
    config = EvalConfig(
        n_boot=args.n_boot, seed=args.seed, min_support=args.min_support, level=args.level, rank_by=args.rank_by,
        compare=tuple(m.strip() for m in args.compare.split(",") if m.strip()),
    )  # fmt: skip
    common = dict(text=args.text, lang=args.lang, policy=args.policy, slices=tuple(args.slice), config=config)
    evaluation = evaluate_slices(
        data, label=args.label, predictions=dict(args.pred), scores=dict(args.score),
        positive=positive if len(positive) > 1 else positive[0], quiet=args.quiet, **common,
    )  # fmt: skip
    print(evaluation.summary())
    cascade = _cascade(args, data, positive[0], common) if args.second else None
    selection = (
        _selection(args, table, positive[0], common, evaluation.items.models) if args.reviewed else None
    )
    if selection is not None:
        for warning in selection.warnings:
            print(f"warning: {warning}")
    if args.out:
        written = write_evaluation(evaluation, args.out, cascade=cascade, selection=selection)
        print(f"wrote {len(written)} files into {args.out} (open {written['html']})")
    return 0


def _cascade(args: argparse.Namespace, data: Any, positive: Any, common: dict[str, Any]) -> Any:
    from tokenloom.errors import ConfigError
    from tokenloom.evaluate.cascade import KeywordStage, ScoreStage, StageCost, evaluate_cascade

    if bool(args.first_score) == bool(args.keywords):
        raise ConfigError("--second needs one first stage: --first-score COL or --keywords K1,K2")
    first = (
        ScoreStage(args.first_score, low=args.low, high=args.high) if args.first_score else
        KeywordStage(tuple(k.strip() for k in args.keywords.split(",") if k.strip()), match=args.match,
                     on_match=args.on_match, on_miss=args.on_miss)
    )  # fmt: skip
    costs = (StageCost(args.cost[0], args.latency[0]), StageCost(args.cost[1], args.latency[1]))
    result = evaluate_cascade(
        data, label=args.label, first=first, second=args.second, costs=costs, positive=positive, **common
    )
    row = result.table.iloc[0]
    print(
        f"cascade: escalation {row.escalation_rate:.1%}, F1 {row.f1:.3f} (stage 2 alone {row.stage2_f1:.3f}), "
        f"cost per 1,000 items {row.cost_per_1k:g} (stage 2 alone {row.stage2_cost_per_1k:g}); settled by stage 1 "
        f"against the label: {row.settled_pos_label_neg} false positives, {row.settled_neg_label_pos} missed"
    )
    return result


def _selection(
    args: argparse.Namespace, data: Any, positive: Any, common: dict[str, Any], models: list[str]
) -> Any:
    from tokenloom.errors import ConfigError
    from tokenloom.evaluate.selection import selection_estimates

    model = args.review_model or models[0]
    if model not in dict(args.pred):
        raise ConfigError(f"--review-model {model!r} needs a prediction column: give --pred {model}=COL")
    return selection_estimates(
        data, label=args.label, prediction=dict(args.pred)[model], reviewed=args.reviewed, propensity=args.propensity,
        holdout=args.holdout, positive=positive, **common,
    )  # fmt: skip
