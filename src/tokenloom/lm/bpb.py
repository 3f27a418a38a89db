"""Bits per byte per slice: summed negative log-likelihood in bits over the UTF-8 bytes of the same text.

``bits_per_byte(bits, texts, slices)`` takes each document's bits (from
:func:`tokenloom.lm.scoring.document_bits`), its text and its slice label (a language, a script) and gives
one row per slice: ``Σ bits / Σ bytes`` over the slice's documents with a percentile bootstrap interval
over documents (:func:`tokenloom.fertility.bootstrap.bootstrap_ratio`; seeded, so slices of equal size
are resampled alike: a paired bootstrap across parallel languages). The bytes are those of the text as
given (before any tokenizer normalization): the same denominator for every tokenizer, which is what makes
BPB comparable across tokenizers. ``evaluate_bpb`` runs the whole road: encode, score, aggregate.

This module imports no torch itself (``evaluate_bpb`` reaches the model through ``document_bits``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from tokenloom.fertility.bootstrap import bootstrap_ratio

if TYPE_CHECKING:
    from tokenloom.lm.scoring import ScoreConfig, Scorer

__all__ = ["ALL", "BpbRow", "Encodes", "bits_per_byte", "evaluate_bpb"]

ALL = "(all)"  # the slice label of the row over every document


class Encodes(Protocol):
    """What ``evaluate_bpb`` needs of a tokenizer: texts to token ids (``tokenloom.Tokenizer`` has it)."""

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]: ...


@dataclass(frozen=True)
class BpbRow:
    """Bits per byte of one slice, with its bootstrap interval over documents."""

    slice: str  # slice label (a language, a script), or ALL
    documents: int  # documents in the slice
    tokens: int  # tokens scored (0 when not given)
    bytes: int  # UTF-8 bytes of the slice's text
    bits: float  # summed negative log-likelihood in bits
    bpb: float  # bits / bytes
    lo: float  # lower end of the bootstrap interval
    hi: float  # upper end

    @property
    def bits_per_token(self) -> float:
        """bits / tokens (NaN without token counts): not comparable across tokenizers, unlike ``bpb``."""
        return self.bits / self.tokens if self.tokens else float("nan")


def bits_per_byte(
    bits: Sequence[float],
    texts: Sequence[str],
    slices: Sequence[str] | None = None,
    *,
    tokens: Sequence[int] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> list[BpbRow]:
    """One row per slice (in first-seen order) and a last row ``ALL`` over every document.

    ``bits[i]``, ``texts[i]``, ``slices[i]`` (and ``tokens[i]``) describe document ``i``; ``slices=None``
    gives the ``ALL`` row only. Documents of 0 bytes add their bits but no bytes.
    """
    n = len(bits)
    for name, values in (("texts", texts), ("slices", slices), ("tokens", tokens)):
        if values is not None and len(values) != n:
            raise ValueError(f"{name} has {len(values)} entries but bits has {n}; give one per document")
    num = np.asarray(bits, dtype=np.float64)  # [n]
    den = np.asarray([len(text.encode("utf-8")) for text in texts], dtype=np.float64)  # [n]
    tok = np.asarray(tokens if tokens is not None else [0] * n, dtype=np.int64)  # [n]
    groups: dict[str, list[int]] = {}
    for index, label in enumerate(slices or []):
        groups.setdefault(str(label), []).append(index)
    groups[ALL] = list(range(n))
    rows = []
    for label, members in groups.items():
        idx = np.asarray(members, dtype=np.int64)
        point, lo, hi = bootstrap_ratio(num[idx], den[idx], n_boot=n_boot, seed=seed, level=level)
        rows.append(
            BpbRow(
                label,
                len(members),
                int(tok[idx].sum()),
                int(den[idx].sum()),
                float(num[idx].sum()),
                point,
                lo,
                hi,
            )
        )
    return rows


def evaluate_bpb(
    model: Scorer,
    tokenizer: Encodes,
    texts: Sequence[str],
    slices: Sequence[str] | None,
    config: ScoreConfig,
    *,
    n_boot: int = 1000,
    seed: int = 0,
) -> list[BpbRow]:
    """Encode ``texts`` with ``tokenizer``, score each whole with ``model`` (``document_bits``) and return
    :func:`bits_per_byte` per slice. The tokenizer must add no start/end tokens of its own: ``config``'s
    ``bos_id`` / ``eos_id`` are the only ones."""
    from tokenloom.lm.scoring import document_bits  # torch, loaded only when a model is scored

    ids = tokenizer.encode_batch(list(texts))
    bits = document_bits(model, ids, config)
    return bits_per_byte(bits, texts, slices, tokens=[len(doc) for doc in ids], n_boot=n_boot, seed=seed)
