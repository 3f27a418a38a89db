"""Cost tables built from :mod:`tokenloom.costs`: per component, across sequence lengths, per language.

``encoder_cost_rows`` splits one encoder into components (params, forward FLOPs, per-layer activation or
score memory, and whether each grows with N or N²); ``sweep_rows`` repeats the totals across lengths;
``language_costs`` turns a fertility report (the columns ``tokenloom fertility`` writes) into the
sequence length, attention FLOPs, KV-cache bytes and encoder FLOPs each language needs for the same
content. ``encoder_table``, ``sweep_table`` and ``language_table`` render them as the text tables the
``tokenloom costs`` commands print, through the shared :func:`tokenloom._tables.format_table`. This module
does no plotting and no printing; pandas is imported only by the per-language functions.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from tokenloom import costs
from tokenloom._tables import format_table
from tokenloom.errors import ConfigError, CorpusError

if TYPE_CHECKING:
    import pandas as pd

    from tokenloom.encoder.config import EncoderConfig

__all__ = [
    "LANGUAGE_COLUMNS",
    "ComponentCost",
    "SweepRow",
    "Units",
    "describe",
    "encoder_cost_rows",
    "encoder_table",
    "format_memory",
    "language_costs",
    "language_table",
    "load_fertility_report",
    "sweep_rows",
    "sweep_table",
]

Growth = Literal["N", "N²", "-"]
Units = Literal["binary", "decimal", "both", "bytes"]  # MiB, MB, "MB (MiB)" or exact bytes


def format_memory(n: int, units: Units = "binary") -> str:
    """Bytes as the tables print them: ``"512.0 MiB"`` (binary), ``"536.9 MB"`` (decimal),
    ``"140.0 GB (130.4 GiB)"`` (both: how model sizes are quoted) or ``"536870912"`` (bytes)."""
    if units == "bytes":
        return str(n)
    if units == "both":
        return f"{costs.format_bytes(n, system='decimal')} ({costs.format_bytes(n)})"
    return costs.format_bytes(n, system=units)


def describe(config: EncoderConfig, name: str) -> str:
    """One line naming an encoder's shape: ``vit-b16: d=768 L=12 H=12 Hkv=12 D=64 f=3072 ...``."""
    return (
        f"{name}: d={config.width} L={config.depth} H={config.heads} Hkv={config.resolved_kv_heads} "
        f"D={config.resolved_head_dim} f={config.resolved_mlp_hidden} mlp={config.mlp} norm={config.norm}"
        + (" causal" if config.causal else "")
    )


@dataclass(frozen=True)
class ComponentCost:
    """One component of an encoder: parameters, forward FLOPs and the memory of what it produces."""

    component: str  # e.g. "q, k, v projections"
    params: int  # parameters, all layers
    flops: int | None  # forward FLOPs, all layers; None = not counted by the model (elementwise work)
    flops_growth: Growth  # how the FLOPs grow with sequence length N
    memory: int  # bytes of the tensor it produces, one layer (what a naive forward materializes)
    memory_growth: Growth  # how that memory grows with N
    shape: str  # the tensor whose memory is counted, in shape letters


def encoder_cost_rows(
    config: EncoderConfig, *, batch: int, seq_len: int, dtype: str | float = "fp32"
) -> list[ComponentCost]:
    """Per-component costs of ``Encoder(config)`` on ``batch`` × ``seq_len`` tokens (self-attention, M = N).

    Memory is the output of each component for one layer at ``dtype`` (activations a naive forward holds;
    a training step keeps them for every layer). The scores ``S`` and the probabilities ``P`` are the two
    ``B·H·N²`` buffers FlashAttention avoids (Dao et al. 2022). FLOPs are :func:`costs.encoder_flops`.
    """
    b, n = batch, seq_len
    d, h, hkv = config.width, config.heads, config.resolved_kv_heads
    hd, f, L = config.resolved_head_dim, config.resolved_mlp_hidden, config.depth
    flops = costs.encoder_flops(config, b, n)
    params = costs.encoder_param_breakdown(config)
    act = lambda elements: costs.tensor_bytes(elements, dtype)  # noqa: E731
    score = costs.score_bytes(b, h, n, n, dtype)
    hidden, hidden_shape = (f, "B·N·f") if config.mlp == "gelu" else (2 * f, "B·N·2f")
    rows = [
        ComponentCost("norms (2 per block)", params["norms"], None, "N", act(b * n * d), "N", "B·N·d"),
        ComponentCost(
            "q, k, v projections",
            params["qkv"],
            L * flops.qkv,
            "N",
            act(b * n * (h + 2 * hkv) * hd),
            "N",
            "B·N·(H+2Hkv)·D",
        ),
        ComponentCost("scores S = QKᵀ", 0, L * flops.scores, "N²", score, "N²", "B·H·N·N"),
        ComponentCost("softmax P = softmax(S)", 0, None, "N²", score, "N²", "B·H·N·N"),
        ComponentCost("P V", 0, L * flops.values, "N²", act(b * n * h * hd), "N", "B·N·H·D"),
        ComponentCost("output projection", params["out"], L * flops.out, "N", act(b * n * d), "N", "B·N·d"),
        ComponentCost(
            f"MLP ({config.mlp})", params["mlp"], L * flops.mlp, "N", act(b * n * hidden), "N", hidden_shape
        ),
    ]
    if config.final_norm:
        rows.append(
            ComponentCost("final norm", params["final_norm"], None, "N", act(b * n * d), "N", "B·N·d")
        )
    return rows


def vocab_cost_rows(
    config: EncoderConfig, *, batch: int, seq_len: int, vocab_size: int, tied: bool = True, dtype: str | float
) -> list[ComponentCost]:
    """The token embedding ``[V, d]`` and the output layer ``d -> V`` (:func:`costs.embedding_params`).

    The embedding is a lookup (no FLOPs counted); the output layer costs ``2·B·N·d·V`` FLOPs and produces
    logits ``[B, N, V]``. With ``tied`` the output layer reuses the embedding matrix (no parameters of its
    own).
    """
    b, n, d, v = batch, seq_len, config.width, vocab_size
    table = costs.embedding_params(v, d, tied=True)
    act = lambda elements: costs.tensor_bytes(elements, dtype)  # noqa: E731
    out_name = "output layer (tied)" if tied else "output layer"
    return [
        ComponentCost("token embedding", table, None, "N", act(b * n * d), "N", "B·N·d"),
        ComponentCost(
            out_name, 0 if tied else table, costs.linear_flops(b * n, d, v), "N", act(b * n * v), "N", "B·N·V"
        ),
    ]


@dataclass(frozen=True)
class SweepRow:
    """Totals of one encoder at one sequence length."""

    seq_len: int  # N
    linear_flops: int  # forward, all layers, projections + MLP (∝ N)
    attention_flops: int  # forward, all layers, QKᵀ + PV (∝ N²)
    total_flops: int  # forward, all layers
    score_bytes: int  # one layer's materialized score matrix, B·H·N² (∝ N²)
    kv_cache_bytes: int  # K and V of every layer, 2·L·B·N·Hkv·D (∝ N)

    @property
    def attention_share(self) -> float:
        """Fraction of the forward FLOPs spent in QKᵀ and PV."""
        return self.attention_flops / self.total_flops


def sweep_rows(
    config: EncoderConfig, seq_lens: Sequence[int], *, batch: int = 1, dtype: str | float = "bf16"
) -> list[SweepRow]:
    """:class:`SweepRow` for each length in ``seq_lens`` (in the given order)."""
    rows = []
    for n in seq_lens:
        fl = costs.encoder_flops(config, batch, n)
        rows.append(
            SweepRow(
                seq_len=n,
                linear_flops=fl.linear,
                attention_flops=fl.attention,
                total_flops=fl.total,
                score_bytes=costs.score_bytes(batch, config.heads, n, n, dtype),
                kv_cache_bytes=costs.encoder_kv_cache_bytes(config, batch, n, dtype),
            )
        )
    return rows


def encoder_table(
    config: EncoderConfig,
    *,
    batch: int,
    seq_len: int,
    dtype: str | float = "fp32",
    units: Units = "binary",
    vocab_size: int | None = None,
    tied: bool = True,
) -> str:
    """:func:`encoder_cost_rows` as a text table with a total row (what ``tokenloom costs encoder`` prints).

    With ``vocab_size`` the token embedding and the output layer (:func:`vocab_cost_rows`) are rows too and
    count in the totals.
    """
    rows = encoder_cost_rows(config, batch=batch, seq_len=seq_len, dtype=dtype)
    if vocab_size is not None:
        rows += vocab_cost_rows(
            config, batch=batch, seq_len=seq_len, vocab_size=vocab_size, tied=tied, dtype=dtype
        )
    L = config.depth
    header = ["component", "params", f"FLOPs ({L} layers)", "FLOPs ∝", "memory/layer", "memory ∝", "tensor"]
    cells: list[list[str]] = [
        [
            r.component,
            f"{r.params:,}",
            "not counted" if r.flops is None else costs.format_count(r.flops),
            r.flops_growth,
            format_memory(r.memory, units),
            r.memory_growth,
            r.shape,
        ]
        for r in rows
    ]
    total = sum(r.flops or 0 for r in rows)  # == costs.encoder_flops(...).total without a vocabulary
    params = sum(r.params for r in rows)
    cells.append(["total", f"{params:,}", costs.format_count(total), "", "", "", ""])
    return format_table(header, cells, align="lrrrrrl")


def sweep_table(
    rows: Sequence[SweepRow], labels: Sequence[str], *, units: Units = "binary", label_header: str = "N"
) -> str:
    """:func:`sweep_rows` as a text table, one line per length labelled by ``labels``."""
    header = [
        label_header,
        "FLOPs ∝N",
        "FLOPs ∝N²",
        "N² share",
        "total FLOPs",
        "scores/layer ∝N²",
        "KV cache ∝N",
    ]
    cells = [
        [
            label,
            costs.format_count(r.linear_flops),
            costs.format_count(r.attention_flops),
            f"{r.attention_share:.1%}",
            costs.format_count(r.total_flops),
            format_memory(r.score_bytes, units),
            format_memory(r.kv_cache_bytes, units),
        ]
        for label, r in zip(labels, rows, strict=True)
    ]
    return format_table(header, cells)


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
            _num(r["kv_cache_ratio"], ".2f"), costs.format_count(int(r["encoder_flops"])) if known else "-",
            _num(r["encoder_flops_ratio"], ".2f"),
        ])  # fmt: skip
    return format_table(header, cells)


# --------------------------------------------------------------------------- per language

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
    """What each language pays for the same content, from a fertility report's token premiums.

    A language with premium p (its tokens for a text ÷ the pivot's tokens for the same text) needs
    ``seq_len = round(p · context)`` tokens for the content the pivot fits in ``context`` tokens, so only
    ``1/p`` of that content fits in the context; attention FLOPs grow ≈ p² (:func:`costs.attention_flops`),
    KV-cache bytes ∝ p (:func:`costs.kv_cache_bytes`); ``encoder_flops`` (forward, all layers) mixes the two
    (:func:`costs.encoder_flops`). Ratios are against the pivot at ``context`` tokens.

    Rows are the report's ``slice_kind == "language"`` rows, per tokenizer. Premiums come from
    ``premium_<statistic>``; when the report was made against another pivot, each is divided by the chosen
    pivot's (exact for ratios of totals, approximate for per-text averages; the interval columns are then
    NaN). Languages without pivot-aligned text (NaN premium) keep NaN costs: nothing is guessed.
    """
    import pandas as pd

    column = f"premium_{statistic}"
    if column not in report.columns:
        raise ConfigError(
            f"statistic must be 'mean' or 'median' (a premium_<statistic> column), got {statistic!r}"
        )
    if not (isinstance(context, int) and context > 0):
        raise ConfigError(f"context must be a positive int, got {context!r}")
    languages = report[report["slice_kind"] == "language"]
    if languages.empty:
        raise CorpusError(
            "the fertility report has no slice_kind == 'language' rows; make it from files named "
            "<lang>_<Script>.txt (e.g. eng_Latn.txt) so tokens can be compared across languages"
        )
    base = costs.encoder_flops(config, batch, context)
    base_kv = costs.encoder_kv_cache_bytes(config, batch, context, dtype)
    out = []
    for tokenizer, group in languages.groupby("tokenizer", sort=True):
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
        own_pivot = pivot_premium == 1.0
        for _, row in group.iterrows():
            p = float(row[column]) / pivot_premium
            record: dict[str, object] = {"tokenizer": tokenizer, "lang": row["slice"], "premium": p}
            record["premium_lo"] = float(row["premium_lo"]) if own_pivot else math.nan
            record["premium_hi"] = float(row["premium_hi"]) if own_pivot else math.nan
            if math.isfinite(p) and p > 0:
                n = max(1, round(p * context))
                fl = costs.encoder_flops(config, batch, n)
                kv = costs.encoder_kv_cache_bytes(config, batch, n, dtype)
                record.update(
                    seq_len=n,
                    content_in_context=1 / p,
                    attention_flops_ratio=p * p,
                    kv_cache_bytes=kv,
                    kv_cache_ratio=kv / base_kv,
                    encoder_flops=fl.total,
                    encoder_flops_ratio=fl.total / base.total,
                )
            out.append(record)
    frame = pd.DataFrame(out).reindex(columns=list(LANGUAGE_COLUMNS))
    frame["seq_len"] = frame["seq_len"].astype("Int64")
    frame["kv_cache_bytes"] = frame["kv_cache_bytes"].astype("Int64")
    frame["encoder_flops"] = frame["encoder_flops"].astype("Int64")
    return frame.sort_values(["tokenizer", "premium", "lang"], na_position="last").reset_index(drop=True)
