"""What a language costs: one token premium turned into a sequence length, KV-cache bytes, attention work and
encoder FLOPs at a reference context.

A language with premium ``p`` (its tokens for a text ÷ the pivot language's tokens for the same text) needs
``seq_len = max(1, round(p · context))`` tokens for the content the pivot fits in ``context`` tokens, so
only ``1/p`` of that content fits in the context; the KV cache grows ∝ N, so its bytes are ``p``× the
pivot's, and attention (``QKᵀ`` and ``PV``) ∝ N², so its work is ``p²``× the pivot's. Given an encoder, the
same length is priced exactly: KV-cache bytes (:func:`~tokenloom.costs.encoder_kv_cache_bytes`), attention
and total forward FLOPs (:func:`~tokenloom.costs.encoder_flops`), and their ratios to the pivot at
``context``.

:func:`language_cost` is that one definition: the fertility report's ``rel_kv_bytes`` and
``rel_attention_work`` columns (:func:`premium_cost_columns`, added after counting), ``tokenloom costs languages`` (:func:`language_costs`, one row per language
of a report) and ``tokenloom sweep``'s ``languages.csv`` are all made by it. The premium it takes is the
report's ``premium_mean`` (the mean over pivot-aligned texts of each text's premium). What it does not do:
count tokens or measure premiums. pandas is imported only by the report functions.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from tokenloom._tables import format_table
from tokenloom.costs.formulas import encoder_flops, encoder_kv_cache_bytes, format_count
from tokenloom.costs.tables import Units, format_memory
from tokenloom.errors import ConfigError, CorpusError

if TYPE_CHECKING:
    import pandas as pd

    from tokenloom.encoder.config import EncoderConfig

__all__ = [
    "LANGUAGE_COLUMNS",
    "LanguageCost",
    "language_cost",
    "language_costs",
    "language_table",
    "load_fertility_report",
    "premium_cost_columns",
]


@dataclass(frozen=True)
class LanguageCost:
    """What one language pays for the content the pivot fits in ``context`` tokens (see the module docstring).

    A premium that is not a positive number (NaN: no pivot-aligned text) has no length: ``seq_len`` and the
    priced fields are ``None``, the ratios NaN; nothing is guessed. The priced fields need an encoder.
    """

    premium: float  # p: tokens for a text ÷ the pivot's tokens for it (NaN: unknown)
    context: int  # the pivot's tokens for the reference content
    rel_kv_bytes: float  # KV-cache bytes ÷ the pivot's: p (the cache grows ∝ N)
    rel_attention_work: float  # attention work ÷ the pivot's: p·p (QKᵀ and PV grow ∝ N²)
    seq_len: int | None  # tokens for the reference content: max(1, round(p · context))
    content_in_context: float  # share of the reference content that fits in `context` tokens: 1/p
    kv_cache_bytes: int | None = None  # K and V of every layer at seq_len (needs an encoder)
    kv_cache_ratio: float = math.nan  # kv_cache_bytes ÷ the pivot's at `context` tokens
    attention_flops: int | None = None  # forward QKᵀ + PV, all layers, at seq_len
    encoder_flops: int | None = None  # forward, all layers, at seq_len
    encoder_flops_ratio: float = math.nan  # encoder_flops ÷ the pivot's at `context` tokens


def language_cost(
    premium: float,
    model: EncoderConfig | None = None,
    *,
    context: int = 4096,
    batch: int = 1,
    dtype: str | float = "bf16",
) -> LanguageCost:
    """The cost of a language with token premium ``premium`` (see :class:`LanguageCost`); with ``model``,
    its KV cache (``batch`` sequences at ``dtype``) and forward FLOPs at that length, and their ratios to
    the pivot at ``context`` tokens."""
    if isinstance(premium, bool) or not isinstance(premium, numbers.Real):
        raise ConfigError(f"premium must be a real number (NaN when unknown), got {premium!r}")
    for name, value in (("context", context), ("batch", batch)):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ConfigError(f"{name} must be a positive int, got {value!r}")
    p = float(premium)
    relative = dict(premium=p, context=context, rel_kv_bytes=p, rel_attention_work=p * p)
    if not (math.isfinite(p) and p > 0):
        return LanguageCost(**relative, seq_len=None, content_in_context=math.nan)
    n = max(1, round(p * context))
    if model is None:
        return LanguageCost(**relative, seq_len=n, content_in_context=1 / p)
    flops, base = encoder_flops(model, batch, n), encoder_flops(model, batch, context)
    kv = encoder_kv_cache_bytes(model, batch, n, dtype)
    return LanguageCost(
        **relative,
        seq_len=n,
        content_in_context=1 / p,
        kv_cache_bytes=kv,
        kv_cache_ratio=kv / encoder_kv_cache_bytes(model, batch, context, dtype),
        attention_flops=flops.attention,
        encoder_flops=flops.total,
        encoder_flops_ratio=flops.total / base.total,
    )


# --------------------------------------------------------------------------- per language of a report

# the columns of a fertility report (as `tokenloom fertility` writes it) that the per-language table reads
_REPORT_COLUMNS = ("tokenizer", "slice_kind", "slice", "tokens", "premium_mean", "premium_lo", "premium_hi")

# the columns of language_costs(), in order
LANGUAGE_COLUMNS = (
    "tokenizer",
    "lang",
    "premium",
    "premium_lo",
    "premium_hi",
    "seq_len",
    "content_in_context",
    "attention_flops_ratio",
    "kv_cache_bytes",
    "kv_cache_ratio",
    "encoder_flops",
    "encoder_flops_ratio",
)


def load_fertility_report(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a fertility report CSV and check it has the columns the cost table needs."""
    import pandas as pd

    try:
        frame = pd.read_csv(path)
    except FileNotFoundError:
        raise CorpusError(
            f"fertility report {str(path)!r} does not exist; write one with `tokenloom fertility`"
        ) from None
    except OSError as exc:
        raise CorpusError(f"cannot read fertility report {str(path)!r}: {exc.strerror or exc}") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise CorpusError(f"fertility report {str(path)!r} is not a readable CSV: {exc}") from None
    missing = [c for c in _REPORT_COLUMNS if c not in frame.columns]
    if missing:
        raise CorpusError(
            f"fertility report {str(path)!r} lacks the columns {missing}; expected a report with the columns "
            f"of `tokenloom fertility` (found {list(frame.columns)})"
        )
    return frame


def _pivot_premium(group: pd.DataFrame, tokenizer: str, pivot: str, column: str) -> float:
    """The pivot language's premium under one tokenizer of a report (what every premium is divided by)."""
    pivot_rows = group[group["slice"] == pivot]
    if pivot_rows.empty:
        raise ConfigError(
            f"pivot {pivot!r} is not a language of tokenizer {tokenizer!r} in the report; "
            f"choose --pivot among {sorted(group['slice'])}"
        )
    pivot_premium = float(pivot_rows[column].iloc[0])
    if not math.isfinite(pivot_premium) or pivot_premium <= 0:
        raise ConfigError(
            f"pivot {pivot!r} has no {column} in the report for tokenizer {tokenizer!r} (no pivot-aligned "
            "text); choose a pivot with parallel text, such as the report's own pivot"
        )
    return pivot_premium


def premium_cost_columns(premiums: Iterable[float]) -> dict[str, list[float]]:
    """The fertility report's cost columns for its ``premium_mean`` column, row by row:
    ``rel_kv_bytes`` and ``rel_attention_work`` of :func:`language_cost` (NaN where the premium is)."""
    costs = [language_cost(float(p)) for p in premiums]
    return {
        "rel_kv_bytes": [c.rel_kv_bytes for c in costs],
        "rel_attention_work": [c.rel_attention_work for c in costs],
    }


def language_costs(
    report: pd.DataFrame,
    config: EncoderConfig,
    *,
    pivot: str = "eng_Latn",
    context: int = 4096,
    batch: int = 1,
    dtype: str | float = "bf16",
    statistic: Literal["mean", "median"] = "mean",
) -> pd.DataFrame:
    """What each language pays for the same content, from a fertility report's token premiums: one
    :func:`language_cost` per ``slice_kind == "language"`` row, per tokenizer (columns
    :data:`LANGUAGE_COLUMNS`; ``attention_flops_ratio`` is :attr:`LanguageCost.rel_attention_work`).

    Premiums come from ``premium_<statistic>``; when the report was made against another pivot, each is
    divided by the chosen pivot's (exact for ratios of totals, approximate for per-text averages; the
    interval columns are then NaN). Languages without pivot-aligned text (NaN premium) keep NaN costs.
    """
    import pandas as pd

    column = f"premium_{statistic}"
    if column not in report.columns:
        raise ConfigError(
            f"statistic must be 'mean' or 'median' (a premium_<statistic> column), got {statistic!r}"
        )
    languages = report[report["slice_kind"] == "language"]
    if languages.empty:
        raise CorpusError(
            "the fertility report has no slice_kind == 'language' rows; make it from files named "
            "<lang>_<Script>.txt (e.g. eng_Latn.txt) so tokens can be compared across languages"
        )
    out = []
    for tokenizer, group in languages.groupby("tokenizer", sort=True):
        pivot_premium = _pivot_premium(group, str(tokenizer), pivot, column)
        own_pivot = pivot_premium == 1.0
        for _, row in group.iterrows():
            cost = language_cost(
                float(row[column]) / pivot_premium, config, context=context, batch=batch, dtype=dtype
            )
            record: dict[str, object] = {
                "tokenizer": tokenizer,
                "lang": row["slice"],
                "premium": cost.premium,
            }
            record["premium_lo"] = float(row["premium_lo"]) if own_pivot else math.nan
            record["premium_hi"] = float(row["premium_hi"]) if own_pivot else math.nan
            if cost.seq_len is not None:
                record.update(
                    seq_len=cost.seq_len,
                    content_in_context=cost.content_in_context,
                    attention_flops_ratio=cost.rel_attention_work,
                    kv_cache_bytes=cost.kv_cache_bytes,
                    kv_cache_ratio=cost.kv_cache_ratio,
                    encoder_flops=cost.encoder_flops,
                    encoder_flops_ratio=cost.encoder_flops_ratio,
                )
            out.append(record)
    frame = pd.DataFrame(out).reindex(columns=list(LANGUAGE_COLUMNS))
    frame["seq_len"] = frame["seq_len"].astype("Int64")
    frame["kv_cache_bytes"] = frame["kv_cache_bytes"].astype("Int64")
    frame["encoder_flops"] = frame["encoder_flops"].astype("Int64")
    return frame.sort_values(["tokenizer", "premium", "lang"], na_position="last").reset_index(drop=True)


def _num(value: object, spec: str) -> str:
    """A number formatted by ``spec``; ``-`` for a missing value (None, NaN, pandas NA)."""
    if not isinstance(value, numbers.Real) or math.isnan(value):
        return "-"
    return format(value, spec)


def language_table(frame: pd.DataFrame, *, units: Units = "binary") -> str:
    """Rows of :func:`language_costs` (one tokenizer's) as a text table; ``-`` where a premium is unknown."""
    header = ["lang", "premium", "95% CI", "tokens N", "content fits", "attn FLOPs ×", "KV cache", "KV ×",
              "encoder FLOPs", "encoder ×"]  # fmt: skip
    cells = []
    for r in frame.to_dict("records"):
        known = _num(r["premium"], "") != "-"
        lo, hi = _num(r["premium_lo"], ".2f"), _num(r["premium_hi"], ".2f")
        cells.append([
            r["lang"], _num(r["premium"], ".2f"), f"{lo}–{hi}" if lo != "-" else "-",
            f"{int(r['seq_len']):,}" if known else "-", _num(r["content_in_context"], ".0%"),
            _num(r["attention_flops_ratio"], ".2f"),
            format_memory(int(r["kv_cache_bytes"]), units) if known else "-",
            _num(r["kv_cache_ratio"], ".2f"), format_count(int(r["encoder_flops"])) if known else "-",
            _num(r["encoder_flops_ratio"], ".2f"),
        ])  # fmt: skip
    return format_table(header, cells)
