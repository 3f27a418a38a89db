"""The RoPE lesson: rotary positions make the score depend on the gap between positions only.

A query and a key (default both ``[1, 0]``, d = 2) are rotated by ``position × frequency`` (default π/4 per
position) with ``tokenloom.encoder.positions.apply_rope``; the score is the dot product of the rotated
vectors. At positions (1, 2) it is cos(π/4) ≈ 0.7071, and unchanged at (5, 6) or (101, 102): a common
shift cancels. A gap of 2 gives cos(π/2) = 0, a gap of 4 gives cos(π) = −1. (Su et al. 2021, RoFormer.)

It does not attend or scale (no 1/√d): the score here is the raw rotated dot product.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

from tokenloom.explain._format import figure, jsonable, num, table, vec, write_png

__all__ = ["explain_rope", "plot_rope", "render_rope"]


def _rotated(x: Sequence[float], position: int, frequency: float) -> Any:
    import torch

    from tokenloom.encoder.positions import apply_rope, rope_angles

    t = torch.tensor(x, dtype=torch.float64).view(1, 1, 1, -1)  # [D] -> [1, 1, 1, D]
    inv_freq = torch.full((t.shape[-1] // 2,), frequency, dtype=torch.float64)  # [D/2], one frequency
    cos, sin = rope_angles(torch.tensor([position]), inv_freq)  # [1, D/2] each
    return apply_rope(t, cos.double(), sin.double()).view(-1)  # [D]


def _score(q: Sequence[float], k: Sequence[float], m: int, n: int, frequency: float) -> float:
    return float(_rotated(q, m, frequency) @ _rotated(k, n, frequency))


def explain_rope(
    *,
    positions: tuple[int, int] = (1, 2),  # (m, n): query position m, key position n
    shifts: Sequence[int] = (0, 4, 100),  # common shifts added to both positions
    gaps: Sequence[int] = (1, 2, 4),  # key position n = m + gap
    q: Sequence[float] = (1.0, 0.0),
    k: Sequence[float] = (1.0, 0.0),
    frequency: float = math.pi / 4,  # radians per position (every pair of coordinates)
) -> dict[str, Any]:
    """Scores of the rotated pair under shifts and gaps, as a JSON-ready dict."""
    if len(q) != len(k) or len(q) % 2:
        raise ValueError(f"q and k need the same even width (RoPE rotates pairs), got {len(q)} and {len(k)}")
    m, n = positions
    shifted = [
        {"shift": s, "positions": [m + s, n + s], "score": _score(q, k, m + s, n + s, frequency)}
        for s in shifts
    ]
    by_gap = [{"gap": g, "positions": [m, m + g], "score": _score(q, k, m, m + g, frequency)} for g in gaps]
    grid = [[_score(q, k, m + s, m + s + g, frequency) for g in gaps] for s in shifts]
    return jsonable(
        {
            "q": list(q), "k": list(k), "frequency": frequency, "positions": [m, n],
            "rotated_q": _rotated(q, m, frequency), "rotated_k": _rotated(k, n, frequency),
            "score": _score(q, k, m, n, frequency), "shifts": shifted, "gaps": by_gap,
            "table": {"shifts": list(shifts), "gaps": list(gaps), "scores": grid},
        }
    )  # fmt: skip


def render_rope(r: dict[str, Any]) -> str:
    """The lesson as text."""
    m, n = r["positions"]
    t = r["table"]
    lines = [
        f"RoPE: rotate by position × {num(r['frequency'])} rad; q = {vec(r['q'])}, k = {vec(r['k'])}",
        f"q at position {m} → {vec(r['rotated_q'])}; k at position {n} → {vec(r['rotated_k'])}",
        f"score at (m, n) = ({m}, {n}): {num(r['score'])}",
        "",
        "same gap, shifted together — the score stays put:",
        *[f"  ({a}, {b}): {num(x['score'])}" for x in r["shifts"] for a, b in [x["positions"]]],
        "",
        "changing the gap changes the score:",
        *[f"  gap {x['gap']} ({x['positions'][0]}, {x['positions'][1]}): {num(x['score'])}" for x in r["gaps"]],
        "",
        "score by shift (rows) and gap (columns):",
        table(["shift", *[f"gap {g}" for g in t["gaps"]]], [[s, *map(num, row)] for s, row in zip(t["shifts"], t["scores"], strict=True)]),
    ]  # fmt: skip
    return "\n".join(lines)


def plot_rope(r: dict[str, Any], path: str | os.PathLike[str]) -> str:
    """Score against gap, one line per shift (the lines coincide)."""
    fig, ax = figure(5.5, 3.6)
    t = r["table"]
    for s, row in zip(t["shifts"], t["scores"], strict=True):
        ax.plot(t["gaps"], row, "o-", label=f"shift {s}", alpha=0.7)
    ax.set(xlabel="gap n − m", ylabel="score of rotated q·k", title="RoPE: the score depends on the gap only")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return str(write_png(fig, path))
