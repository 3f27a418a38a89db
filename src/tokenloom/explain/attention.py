"""The attention lesson: one query's scaled dot-product attention, step by step.

By default the lesson's two-token example: ``q = k = [[1, 0], [0, 1]]``, ``v = [[2, 0], [0, 4]]``, d = 2.
Query 0 scores the keys ``[1, 0]``, scaled by 1/√2 ``[0.7071, 0]``, softmax weights ``[0.6698, 0.3302]``,
weighted values ``[1.3395, 0]`` and ``[0, 1.3210]``, output ``[1.3395, 1.3210]``. Without the scaling the
weights are ``[0.7311, 0.2689]`` (output ``[1.4621, 1.0758]``); with the causal mask the first query sees
only itself: weights ``[1, 0]``, output ``[2, 0]``.

Weights and outputs come from ``tokenloom.encoder.attention`` (``attention_weights`` and the reference
path); this module only arranges them. It does not handle batches or several heads.

Shapes: ``N`` queries, ``M`` keys, ``D`` head width.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

from tokenloom.explain._format import figure, jsonable, num, table, vec, write_png

__all__ = ["DEFAULT_Q", "DEFAULT_V", "explain_attention", "parse_rows", "plot_attention", "render_attention"]

DEFAULT_Q: list[list[float]] = [[1.0, 0.0], [0.0, 1.0]]  # queries = keys: the lesson's two tokens
DEFAULT_V: list[list[float]] = [[2.0, 0.0], [0.0, 4.0]]


def parse_rows(text: str) -> list[list[float]]:
    """``"1,0;0,1"`` → ``[[1.0, 0.0], [0.0, 1.0]]`` (rows split by ``;``, values by ``,``)."""
    try:
        rows = [[float(x) for x in row.split(",")] for row in text.split(";") if row.strip()]
    except ValueError:
        rows = []
    if not rows or len({len(r) for r in rows}) != 1:
        raise ValueError(
            f"invalid rows {text!r}: give numbers like 1,0;0,1 (rows split by ';', equal lengths)"
        )
    return rows


def _inputs(
    q: Sequence[Sequence[float]] | None,
    k: Sequence[Sequence[float]] | None,
    v: Sequence[Sequence[float]] | None,
    n: int | None,
    d: int | None,
    seed: int,
) -> tuple[Any, Any, Any]:
    import torch

    if n is not None or d is not None:  # random tokens of the requested size
        gen = torch.Generator().manual_seed(seed)
        n, d = n or 4, d or 4
        return tuple(torch.randn(n, d, generator=gen, dtype=torch.float64) for _ in range(3))  # type: ignore[return-value]
    qt = torch.tensor(q if q is not None else DEFAULT_Q, dtype=torch.float64)  # [N, D]
    kt = torch.tensor(
        k if k is not None else (q if q is not None else DEFAULT_Q), dtype=torch.float64
    )  # [M, D]
    vt = torch.tensor(v if v is not None else DEFAULT_V, dtype=torch.float64)  # [M, Dv]
    if qt.dim() != 2 or kt.dim() != 2 or vt.dim() != 2:
        raise ValueError("q, k and v must be matrices (rows of numbers)")
    if qt.shape[1] != kt.shape[1]:
        raise ValueError(f"q rows have {qt.shape[1]} values but k rows {kt.shape[1]}: they must match (d)")
    if vt.shape[0] != kt.shape[0]:
        raise ValueError(f"k has {kt.shape[0]} rows but v {vt.shape[0]}: one value per key")
    return qt, kt, vt


def explain_attention(
    q: Sequence[Sequence[float]] | None = None,
    k: Sequence[Sequence[float]] | None = None,
    v: Sequence[Sequence[float]] | None = None,
    *,
    query: int = 0,  # which query row to walk through
    scale: bool = True,  # False: skip the 1/√d scaling (scale 1)
    causal: bool = False,  # query i sees keys j ≤ i + (M − N)
    n: int | None = None,  # random tokens instead: N = M = n of width d
    d: int | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """The walk-through as a JSON-ready dict: inputs, scores, scaled scores, weights, outputs, one row's steps."""
    import torch

    from tokenloom.encoder.attention import attention, attention_weights

    qt, kt, vt = _inputs(q, k, v, n, d, seed)
    if not 0 <= query < qt.shape[0]:
        raise ValueError(
            f"--query {query} is out of range: there are {qt.shape[0]} queries (0..{qt.shape[0] - 1})"
        )
    width = qt.shape[1]
    factor = 1.0 / math.sqrt(width) if scale else 1.0
    q4, k4, v4 = qt[None, None], kt[None, None], vt[None, None]  # [N, D] -> [1, 1, N, D]
    weights = attention_weights(q4, k4, causal=causal, scale=factor)[0, 0]  # [N, M]
    out = attention(q4, k4, v4, causal=causal, scale=factor, impl="reference")[0, 0]  # [N, Dv]
    scores = qt @ kt.T  # [N, M] raw dot products
    scaled = scores * factor
    if causal:
        allowed = torch.ones_like(scores, dtype=torch.bool).tril(kt.shape[0] - qt.shape[0])  # [N, M]
        scaled = scaled.masked_fill(~allowed, float("-inf"))
    row_w = weights[query]  # [M]
    return jsonable(
        {
            "q": qt, "k": kt, "v": vt, "d": width, "scale": factor, "scaled": scale, "causal": causal,
            "query": query, "scores": scores, "scaled_scores": scaled, "weights": weights, "output": out,
            "row": {
                "query": qt[query], "dot_products": scores[query], "scaled_scores": scaled[query],
                "weights": row_w, "weighted_values": row_w[:, None] * vt, "output": out[query],
            },
        }
    )  # fmt: skip


def render_attention(r: dict[str, Any]) -> str:
    """The walk-through as text."""
    row, i = r["row"], r["query"]
    scale = f"1/√{r['d']} = {num(r['scale'])}" if r["scaled"] else "1 (scaling off: --no-scale)"
    mask = ", causal mask: query i sees keys j ≤ i" if r["causal"] else ""
    keys = len(r["k"])
    lines = [
        f"attention of query {i} over {keys} keys (d = {r['d']}, scale {scale}{mask})",
        f"q{i} = {vec(row['query'])}",
        f"keys   k = {'; '.join(vec(x) for x in r['k'])}",
        f"values v = {'; '.join(vec(x) for x in r['v'])}",
        "",
        _step(f"1. scores q{i}·k_j:", vec(row["dot_products"])),
        _step(f"2. scaled (× {num(r['scale'])}):", vec(row["scaled_scores"]))
        + ("   (-inf = masked)" if r["causal"] else ""),
        _step("3. softmax weights:", f"{vec(row['weights'])}   (sum {num(sum(row['weights']))})"),
        _step("4. weighted values w_j·v_j:", "  ".join(vec(x) for x in row["weighted_values"])),
        _step("5. output Σ_j w_j·v_j:", vec(row["output"])),
        "",
        "all weights (rows: queries, columns: keys):",
        table(["", *[f"k{j}" for j in range(keys)]], [[f"q{a}", *[num(x) for x in w]] for a, w in enumerate(r["weights"])]),
    ]  # fmt: skip
    return "\n".join(lines)


def _step(label: str, value: str) -> str:
    return f"{label:<30}{value}"


def plot_attention(r: dict[str, Any], path: str | os.PathLike[str]) -> str:
    """Heatmap of the weight matrix (queries × keys), each cell labelled."""
    fig, ax = figure(1.2 + 0.9 * len(r["k"]), 1.0 + 0.8 * len(r["q"]))
    image = ax.imshow(r["weights"], vmin=0.0, vmax=1.0, cmap="viridis")
    for a, w in enumerate(r["weights"]):
        for b, x in enumerate(w):
            ax.text(b, a, num(x, 3), ha="center", va="center", color="w" if x < 0.6 else "k", fontsize=8)
    ax.set(xlabel="key j", ylabel="query i", title="attention weights" + (" (causal)" if r["causal"] else ""))
    ax.set_xticks(range(len(r["k"])))
    ax.set_yticks(range(len(r["q"])))
    fig.colorbar(image, ax=ax)
    return str(write_png(fig, path))
