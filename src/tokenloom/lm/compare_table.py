"""The comparison table of several tokenizers' models: one row per tokenizer and language, and the rank
correlations between each intrinsic metric and bits per byte.

:func:`compare_table` joins, on (tokenizer, language), the language rows of each model's bits-per-byte
table (:func:`tokenloom.lm.evaluate.evaluate_documents`), the same languages' rows of a fertility report on
the same held-out corpus (:func:`tokenloom.fertility_report`: fertility, premium against the pivot, STRR,
bytes per token) and each training run's totals (:class:`RunTotals`: tokens and bytes read, training FLOPs,
wall time, parameters). :func:`metric_correlations` gives, for each intrinsic metric, Spearman's rho with
bits per byte over every (tokenizer, language) point, with a bootstrap interval that resamples languages
(:func:`tokenloom.lm.correlation.rank_correlation`). pandas and numpy only; no model, no training.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from tokenloom.errors import ConfigError
from tokenloom.lm.correlation import Correlation, rank_correlation

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "COMPARE_COLUMNS",
    "INTRINSIC",
    "RunTotals",
    "compare_table",
    "correlation_frame",
    "metric_correlations",
]

# intrinsic metric column of the comparison table -> the fertility report column it comes from
INTRINSIC: dict[str, str] = {
    "fertility": "fertility",
    "premium": "premium_mean",
    "strr": "strr",
    "bytes_per_token": "bytes_per_token",
}
_FERTILITY_EXTRA = {"fertility_lo": "fertility_lo", "fertility_hi": "fertility_hi",
                    "premium_lo": "premium_lo", "premium_hi": "premium_hi"}  # fmt: skip


@dataclass(frozen=True)
class RunTotals:
    """What one tokenizer's training run spent (from its run record)."""

    vocab_size: int  # the tokenizer's vocabulary (the model's embedding rows)
    params: int  # every parameter of the model
    non_embedding_params: int  # the same for every tokenizer in a comparison
    train_tokens: int  # tokens the model was trained on
    train_bytes: int  # UTF-8 bytes of the text behind those tokens
    train_flops: float  # training FLOPs (the cost model's 3 x forward per token)
    wall_seconds: float  # the run's wall-clock time


# the columns of the comparison table, in order
COMPARE_COLUMNS = (
    "tokenizer", "language", "documents", "eval_tokens", "eval_bytes", "bpb", "bpb_lo", "bpb_hi", "order0",
    "bits_per_token", *INTRINSIC, *_FERTILITY_EXTRA, *(f.name for f in RunTotals.__dataclass_fields__.values()),
)  # fmt: skip


def compare_table(
    bpb: Mapping[str, pd.DataFrame], fertility: pd.DataFrame, runs: Mapping[str, RunTotals]
) -> pd.DataFrame:
    """One row per tokenizer and language (columns :data:`COMPARE_COLUMNS`), in the order of ``bpb`` and of
    each table's language rows. ``bpb``: ``{tokenizer: evaluation table}``; ``fertility``: a fertility
    report of the same tokenizers (by the same names) on the same corpus; ``runs``: ``{tokenizer: totals}``.
    A language the fertility report lacks is an error (the two read one corpus, so it is a bug upstream)."""
    import pandas as pd

    langs = fertility[fertility["slice_kind"] == "language"]
    at = {
        (str(t), str(sl)): i for i, (t, sl) in enumerate(zip(langs["tokenizer"], langs["slice"], strict=True))
    }
    rows = []
    for name, table in bpb.items():
        if name not in runs:
            raise ConfigError(f"no training totals for tokenizer {name!r}; give one RunTotals per tokenizer")
        totals = asdict(runs[name])
        for r in table[table["slice_kind"] == "language"].itertuples(index=False):
            where = at.get((name, str(r.slice)))
            if where is None:
                raise ConfigError(
                    f"the fertility report has no row for tokenizer {name!r}, language {r.slice!r}; "
                    "compute both tables on the same corpus with the same tokenizer names"
                )
            fert = langs.iloc[where]
            rows.append(
                {
                    "tokenizer": name, "language": r.slice, "documents": r.documents, "eval_tokens": r.tokens,
                    "eval_bytes": r.bytes, "bpb": r.bpb, "bpb_lo": r.bpb_lo, "bpb_hi": r.bpb_hi,
                    "order0": r.order0, "bits_per_token": r.bits_per_token,
                    **{col: float(fert[src]) for col, src in {**INTRINSIC, **_FERTILITY_EXTRA}.items()},
                    **totals,
                }
            )  # fmt: skip
    return pd.DataFrame(rows, columns=list(COMPARE_COLUMNS))


def metric_correlations(
    table: pd.DataFrame,
    metrics: Sequence[str] = tuple(INTRINSIC),
    *,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> list[Correlation]:
    """Spearman's rho between each metric and ``bpb`` over the table's (tokenizer, language) points, with a
    percentile bootstrap interval resampling languages (a language's points, one per tokenizer, together).
    Points where either value is NaN are left out (``Correlation.points`` counts the rest)."""
    missing = [m for m in (*metrics, "bpb", "language") if m not in table]
    if missing:
        raise ConfigError(f"the table has no column {missing[0]!r}; pass a table from compare_table")
    return [
        rank_correlation(
            metric,
            table[metric].to_numpy(float),
            table["bpb"].to_numpy(float),
            list(table["language"]),
            n_boot=n_boot,
            seed=seed,
            level=level,
        )
        for metric in metrics
    ]


def correlation_frame(correlations: Sequence[Correlation]) -> pd.DataFrame:
    """The correlations as a table: metric, rho, lo, hi, points, groups."""
    import pandas as pd

    return pd.DataFrame([asdict(c) for c in correlations], columns=list(Correlation.__dataclass_fields__))
