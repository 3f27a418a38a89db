"""A trained tokenizer saved with the fertility of the lines its training held out.

:func:`save_with_fertility` writes what ``tokenloom train`` writes: the tokenizer's folder
(``Tokenizer.save``) plus ``fertility.csv``, the per-script and per-language fertility of the held-out lines
(:func:`~tokenloom.fertility.report.fertility_by_source`) — the tokenizer itself knows nothing of reports,
so this lives on the fertility side. What it does not do: train (``tokenloom.text.train``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tokenloom._atomic import atomic_write
from tokenloom.fertility.report import fertility_by_source

if TYPE_CHECKING:
    import pandas as pd

    from tokenloom.text.tokenizer import SaveFormat
    from tokenloom.text.train import TrainResult

__all__ = ["save_with_fertility"]


def save_with_fertility(
    result: TrainResult,
    out: Path,
    *,
    overwrite: bool = False,
    formats: tuple[SaveFormat, ...] = ("tokenizer.json",),
    strict: bool = False,
) -> pd.DataFrame | None:
    """Save the trained tokenizer to ``out`` (in ``formats``; ``strict``: see ``Tokenizer.save``) and, when
    lines were held out, their per-script and per-language fertility as ``out/fertility.csv`` (written
    atomically); returns that table or ``None``."""

    tok = result.tokenizer
    table = None
    if result.heldout:
        table = fertility_by_source(tok, result.heldout)
    tok.save(out, overwrite=overwrite, formats=formats, strict=strict)
    if table is not None:
        atomic_write(out / "fertility.csv", table.to_csv(index=False))
    return table
