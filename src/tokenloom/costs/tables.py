"""Cost tables built from :mod:`tokenloom.costs`: per component and across sequence lengths.

``encoder_cost_rows`` splits one encoder into components (params, forward FLOPs, per-layer activation or
score memory, and whether each grows with N or N²); ``sweep_rows`` repeats the totals across lengths.
``encoder_table`` and ``sweep_table`` render them as the text tables the ``tokenloom costs`` commands
print, through the shared :func:`tokenloom._tables.format_table`. What each language costs is
:mod:`tokenloom.costs.languages`. This module does no plotting and no printing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from tokenloom import costs
from tokenloom._tables import format_table

if TYPE_CHECKING:
    from tokenloom.encoder.config import EncoderConfig

__all__ = [
    "ComponentCost",
    "SweepRow",
    "Units",
    "describe",
    "encoder_cost_rows",
    "encoder_table",
    "format_memory",
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
