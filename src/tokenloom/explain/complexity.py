"""The complexity lesson: how attention's edges, FLOPs and score memory grow with N, dense and sparse.

For each N and pattern: the allowed query–key pairs (``tokenloom.costs.attention_edges``), the FLOPs of
``QKᵀ`` and ``PV`` over them (``4·H·D·edges``, ``tokenloom.costs.attention_flops``), the bytes of the score
matrix if it were materialized (dense ``H·N²·s``; the allowed pairs only ``H·edges·s``) and the ratio to
dense. Dense grows as N², a window of W keys as N·W. For N ≤ 32 it also draws each pattern's mask in ASCII
(``#`` = may attend, ``.`` = masked). No torch: pictures come from the patterns' row intervals.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from tokenloom.costs import (
    attention_edges,
    attention_flops,
    bytes_per_element,
    format_bytes,
    format_count,
    score_bytes,
    tensor_bytes,
)
from tokenloom.encoder.patterns import parse_pattern
from tokenloom.explain._format import figure, table, write_png

__all__ = ["ascii_mask", "explain_complexity", "plot_complexity", "render_complexity"]

PICTURE_MAX = 32  # draw masks up to this N


def ascii_mask(pattern: Any, n: int) -> str:
    """``n`` lines of ``n`` characters: ``#`` where query i may attend key j, ``.`` elsewhere."""
    lines = []
    for i in range(n):
        row = ["."] * n
        for a, b in pattern.row_runs(i, n, n):
            row[a:b] = ["#"] * (b - a)
        lines.append("".join(row))
    return "\n".join(lines)


def explain_complexity(
    lengths: Sequence[int] = (1024, 4096, 16384),
    patterns: Sequence[str] = ("dense", "causal", "window:256", "bigbird"),
    *,
    heads: int = 1,
    head_dim: int = 64,
    dtype: str = "bf16",
) -> dict[str, Any]:
    """Rows of (N, pattern, edges, FLOPs, score bytes, ratio to dense), plus ASCII masks for small N."""
    parsed = [parse_pattern(p) for p in patterns]
    s = bytes_per_element(dtype)
    rows, pictures = [], []
    for n in lengths:
        for pattern in parsed:
            edges = attention_edges(pattern, n)
            rows.append(
                {
                    "n": n, "pattern": pattern.spec(), "edges": edges, "edges_per_query": edges / n,
                    "flops": attention_flops(1, heads, n, n, head_dim, pattern=pattern),
                    "dense_score_bytes": score_bytes(1, heads, n, n, s),
                    "pattern_score_bytes": tensor_bytes(heads * edges, s), "ratio_to_dense": edges / (n * n),
                }
            )  # fmt: skip
            if n <= PICTURE_MAX:
                pictures.append(
                    {"n": n, "pattern": pattern.spec(), "mask": ascii_mask(pattern, n).split("\n")}
                )
    return {"heads": heads, "head_dim": head_dim, "dtype": dtype, "rows": rows, "pictures": pictures}


def render_complexity(r: dict[str, Any]) -> str:
    """The table (and pictures) as text."""
    header = ["N", "pattern", "edges", "edges/N", "FLOPs", "scores dense", "scores pattern", "ratio"]
    body = [
        [f"{x['n']:,}", x["pattern"], f"{x['edges']:,}", f"{x['edges_per_query']:,.1f}", format_count(x["flops"]),
         format_bytes(x["dense_score_bytes"]), format_bytes(x["pattern_score_bytes"]), f"{x['ratio_to_dense']:.4f}"]
        for x in r["rows"]
    ]  # fmt: skip
    lines = [
        f"attention cost per layer: H={r['heads']}, D={r['head_dim']}, scores at {r['dtype']}; "
        "FLOPs = 4·H·D·edges (QKᵀ and PV, forward)",
        table(header, body),
        "dense grows as N², a W-key window as N·W: doubling N doubles a window's edges and quadruples dense.",
    ]
    for pic in r["pictures"]:
        lines += ["", f"{pic['pattern']} at N={pic['n']} (# = may attend; rows: queries, columns: keys)"]
        lines += pic["mask"]
    return "\n".join(lines)


def plot_complexity(r: dict[str, Any], path: str | os.PathLike[str]) -> str:
    """Edges against N per pattern, log-log."""
    fig, ax = figure(6.0, 4.0)
    for spec in dict.fromkeys(x["pattern"] for x in r["rows"]):
        pts = sorted((x["n"], x["edges"]) for x in r["rows"] if x["pattern"] == spec)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=spec)
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="N",
        ylabel="edges (query-key pairs)",
        title="edges grow as N² or N·w",
    )
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return str(write_png(fig, path))
