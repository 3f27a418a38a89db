"""The scaling lesson: why scores are divided by √d.

For random q, k with independent unit-variance entries, ``q·k`` is a sum of d unit-variance products, so
its variance is d: the measured variance over many seeded samples grows like d (4 … 1024), while
``q·k / √d`` keeps variance ≈ 1. Unscaled scores of large d push softmax towards one-hot (the largest weight
→ 1, gradients → 0); scaled ones keep it soft. The weights come from
``tokenloom.encoder.attention.attention_weights`` with ``scale=1`` and with the default 1/√d.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from tokenloom.explain._format import figure, num, table, write_png

__all__ = ["explain_scaling", "plot_scaling", "render_scaling"]


def explain_scaling(
    dims: Sequence[int] = (4, 8, 16, 32, 64, 128, 256, 512, 1024),
    *,
    samples: int = 4096,  # (q, k) pairs per d for the variance
    keys: int = 64,  # keys per query for the softmax
    queries: int = 256,  # queries averaged for the largest weight
    seed: int = 0,
) -> dict[str, Any]:
    """Per d: measured var(q·k), var(q·k/√d), mean largest softmax weight unscaled and scaled."""
    import torch

    from tokenloom.encoder.attention import attention_weights

    gen = torch.Generator().manual_seed(seed)
    rows = []
    for d in dims:
        q = torch.randn(samples, d, generator=gen, dtype=torch.float64)
        k = torch.randn(samples, d, generator=gen, dtype=torch.float64)
        dots = (q * k).sum(-1)  # [samples]
        qa = torch.randn(1, 1, queries, d, generator=gen, dtype=torch.float64)  # [1, 1, N, d]
        ka = torch.randn(1, 1, keys, d, generator=gen, dtype=torch.float64)  # [1, 1, M, d]
        raw = attention_weights(qa, ka, scale=1.0)  # [1, 1, N, M]
        scaled = attention_weights(qa, ka)  # default scale 1/√d
        rows.append(
            {
                "d": d, "var_qk": float(dots.var()), "var_qk_scaled": float((dots / d**0.5).var()),
                "max_weight_unscaled": float(raw.amax(-1).mean()), "max_weight_scaled": float(scaled.amax(-1).mean()),
            }
        )  # fmt: skip
    return {"samples": samples, "keys": keys, "queries": queries, "seed": seed, "rows": rows}


def render_scaling(r: dict[str, Any]) -> str:
    """The table as text."""
    header = ["d", "var(q·k)", "var(q·k/√d)", "max weight, unscaled", "max weight, scaled"]
    body = [
        [x["d"], num(x["var_qk"], 1), num(x["var_qk_scaled"], 3), num(x["max_weight_unscaled"]), num(x["max_weight_scaled"])]
        for x in r["rows"]
    ]  # fmt: skip
    return "\n".join(
        [
            f"q, k with unit-variance entries ({r['samples']} pairs per d); softmax over {r['keys']} keys, "
            f"largest weight averaged over {r['queries']} queries",
            table(header, body),
            "var(q·k) ≈ d, so unscaled scores grow like √d and softmax turns one-hot; dividing by √d keeps "
            f"the variance ≈ 1 and the weights spread (uniform would be {num(1 / r['keys'])}).",
        ]
    )


def plot_scaling(r: dict[str, Any], path: str | os.PathLike[str]) -> str:
    """var(q·k) and var(q·k/√d) against d, log-log."""
    fig, ax = figure(5.5, 3.8)
    d = [x["d"] for x in r["rows"]]
    ax.plot(d, [x["var_qk"] for x in r["rows"]], "o-", label="var(q·k) ≈ d")
    ax.plot(d, [x["var_qk_scaled"] for x in r["rows"]], "s-", label="var(q·k/√d) ≈ 1")
    ax.set(xscale="log", yscale="log", xlabel="head width d", ylabel="variance", title="why 1/√d")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return str(write_png(fig, path))
