"""Judging a language model by the text it predicts: bits per byte per slice, and the order-0 byte baseline.

Submodules: ``scoring`` (whole-document negative log-likelihood in bits, a sliding window beyond the
context; torch), ``bpb`` (bits per byte per slice with bootstrap intervals over documents;
``evaluate_bpb``: encode, score, aggregate), ``baseline`` (the entropy of the byte distribution), ``train``
(:class:`LmTrainConfig`, :func:`train_lm` on token shards into a run folder, :func:`load_run`),
``evaluate`` (a held-out corpus through the corpus reader: one table per language and script), ``runs``
(a trained run judged: :func:`evaluate_run`), ``writers`` (its table, CSV, Markdown and HTML),
``correlation`` (Spearman's rho with a cluster bootstrap), ``compare`` (one model per tokenizer on a
matched budget: :func:`compare_tokenizers`). The model is ``tokenloom.encoder.LanguageModel`` (or any
callable ``ids -> logits``). Names are imported lazily: ``import tokenloom.lm`` pulls in neither numpy nor torch.
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
    "Documents": "tokenloom.lm.evaluate",
    "LmEvalConfig": "tokenloom.lm.evaluate",
    "evaluate_documents": "tokenloom.lm.evaluate",
    "read_documents": "tokenloom.lm.evaluate",
    "evaluate_run": "tokenloom.lm.runs",
    "bpb_table": "tokenloom.lm.writers",
    "write_bpb": "tokenloom.lm.writers",
    "Correlation": "tokenloom.lm.correlation",
    "rank_correlation": "tokenloom.lm.correlation",
    "spearman": "tokenloom.lm.correlation",
    "CompareConfig": "tokenloom.lm.compare",
    "compare_tokenizers": "tokenloom.lm.compare",
    "LmTrainConfig": "tokenloom.lm.run_config",
    "load_run": "tokenloom.lm.train",
    "train_lm": "tokenloom.lm.train",
}

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time _LAZY imports each name on first use
    from tokenloom.lm.baseline import byte_cross_entropy, byte_entropy
    from tokenloom.lm.bpb import BpbRow, bits_per_byte, evaluate_bpb
    from tokenloom.lm.compare import CompareConfig, compare_tokenizers
    from tokenloom.lm.correlation import Correlation, rank_correlation, spearman
    from tokenloom.lm.evaluate import Documents, LmEvalConfig, evaluate_documents, read_documents
    from tokenloom.lm.run_config import LmTrainConfig
    from tokenloom.lm.runs import evaluate_run
    from tokenloom.lm.scoring import ScoreConfig, document_bits
    from tokenloom.lm.train import load_run, train_lm
    from tokenloom.lm.writers import bpb_table, write_bpb

__all__ = [
    "BpbRow",
    "CompareConfig",
    "Correlation",
    "Documents",
    "LmEvalConfig",
    "LmTrainConfig",
    "ScoreConfig",
    "bits_per_byte",
    "bpb_table",
    "byte_cross_entropy",
    "byte_entropy",
    "compare_tokenizers",
    "document_bits",
    "evaluate_bpb",
    "evaluate_documents",
    "evaluate_run",
    "load_run",
    "rank_correlation",
    "read_documents",
    "spearman",
    "train_lm",
    "write_bpb",
]


__getattr__, __dir__ = lazy_exports(globals(), _LAZY)
