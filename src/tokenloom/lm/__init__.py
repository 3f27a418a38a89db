"""Judging a language model by the text it predicts: bits per byte per slice, and the order-0 byte baseline.

Submodules: ``scoring`` (whole-document negative log-likelihood in bits, a sliding window beyond the
context; torch), ``bpb`` (bits per byte per slice with bootstrap intervals over documents;
``evaluate_bpb``: encode, score, aggregate), ``baseline`` (the entropy of the byte distribution), ``train``
(:class:`LmTrainConfig`, :func:`train_lm` on token shards into a run folder, :func:`load_run`). The model
is ``tokenloom.encoder.LanguageModel`` (or any callable ``ids -> logits``). Names are imported lazily:
``import tokenloom.lm`` pulls in neither numpy nor torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tokenloom._lazy import lazy_exports

# public name -> module that defines it (imported on first access)
_LAZY: dict[str, str] = {
    "ScoreConfig": "tokenloom.lm.scoring",
    "document_bits": "tokenloom.lm.scoring",
    "BpbRow": "tokenloom.lm.bpb",
    "bits_per_byte": "tokenloom.lm.bpb",
    "evaluate_bpb": "tokenloom.lm.bpb",
    "byte_entropy": "tokenloom.lm.baseline",
    "byte_cross_entropy": "tokenloom.lm.baseline",
    "LmTrainConfig": "tokenloom.lm.run_config",
    "load_run": "tokenloom.lm.train",
    "train_lm": "tokenloom.lm.train",
}

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time _LAZY imports each name on first use
    from tokenloom.lm.baseline import byte_cross_entropy, byte_entropy
    from tokenloom.lm.bpb import BpbRow, bits_per_byte, evaluate_bpb
    from tokenloom.lm.run_config import LmTrainConfig
    from tokenloom.lm.scoring import ScoreConfig, document_bits
    from tokenloom.lm.train import load_run, train_lm

__all__ = [
    "BpbRow",
    "LmTrainConfig",
    "ScoreConfig",
    "bits_per_byte",
    "byte_cross_entropy",
    "byte_entropy",
    "document_bits",
    "evaluate_bpb",
    "load_run",
    "train_lm",
]


__getattr__, __dir__ = lazy_exports(globals(), _LAZY)
