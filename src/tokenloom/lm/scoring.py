"""Whole-document negative log-likelihood in bits, with a sliding window beyond the model's context.

A document's token ids ``x_1..x_T`` are scored after a start token ``bos_id`` (the document separator the
model was trained with): its bits are ``-Σ_t log2 p(x_t | bos, x_1..x_{t-1})``, every token scored exactly
once. The start token itself is context, never scored. The end of a document is not scored unless
``eos_id`` is given; then ``-log2 p(eos | document)`` is added (the model then also pays for knowing
where the text ends). When ``1 + T (+ 1)`` exceeds the window, windows of ``context`` tokens start every
``stride`` tokens; the first window scores all its tokens, each later one only its last ``stride`` (so
every later token sees at least ``context - stride`` tokens of context; ``stride=1`` gives every token
the whole window, the most exact and the slowest). Windows of all documents are batched, right-padded
(a causal model's outputs do not depend on later padding).

The model is any callable ``ids [B, N] -> logits [B, N, V]`` where position ``t`` predicts token ``t + 1``
(a ``LanguageModel``, or a hand-built distribution in the tests). This module does no tokenization and
no aggregation (see :mod:`tokenloom.lm.bpb`).

Shape legend: ``B`` windows in a batch, ``N`` window length, ``V`` vocabulary.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from tokenloom.errors import ConfigError

__all__ = ["ScoreConfig", "Window", "document_bits", "plan_windows"]

Scorer = Callable[[torch.Tensor], torch.Tensor]  # ids [B, N] -> logits [B, N, V]


@dataclass(frozen=True)
class ScoreConfig:
    """How documents are scored: window, stride, start/end tokens, batching."""

    context: int  # window length in tokens, start token included (the model's context)
    bos_id: int  # put before every document as its first context (e.g. the EOS separator used in training)
    stride: int | None = None  # tokens scored per window after the first; None = context // 2
    eos_id: int | None = None  # None: the end of a document is not scored; an id: its bits are added
    batch_size: int = 32  # windows per forward pass

    def __post_init__(self) -> None:
        if not isinstance(self.context, int) or self.context < 2:
            raise ConfigError(
                f"ScoreConfig.context must be an int >= 2 (start token + one), got {self.context!r}"
            )
        if self.stride is not None and not (isinstance(self.stride, int) and 1 <= self.stride < self.context):
            raise ConfigError(
                f"ScoreConfig.stride must be in [1, context={self.context}) or None, got {self.stride!r}"
            )
        for name in ("bos_id", "eos_id"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 0):
                raise ConfigError(f"ScoreConfig.{name} must be a non-negative token id, got {value!r}")
        if not isinstance(self.batch_size, int) or self.batch_size < 1:
            raise ConfigError(f"ScoreConfig.batch_size must be a positive int, got {self.batch_size!r}")

    @property
    def resolved_stride(self) -> int:
        """``stride``, or ``context // 2`` when None."""
        return self.context // 2 if self.stride is None else self.stride


@dataclass(frozen=True)
class Window:
    """One forward pass: ``sequence[begin:end]`` of one document, scoring its targets from ``first`` on."""

    document: int  # index of the document
    begin: int  # first token of the window in the sequence (start token + document [+ end])
    end: int  # one past the last token
    first: int  # first scored target (a sequence index, begin < first < end); targets first..end-1


def plan_windows(length: int, context: int, stride: int, *, document: int = 0) -> list[Window]:
    """The windows over a sequence of ``length`` tokens (start token included); each target ``1..length-1``
    is scored in exactly one window."""
    if length <= 1:
        return []
    windows = [Window(document, 0, min(context, length), 1)]
    scored = windows[0].end  # targets below this index are scored
    begin = 0
    while scored < length:
        begin += stride
        end = min(begin + context, length)
        windows.append(Window(document, begin, end, scored))
        scored = end
    return windows


def _sequences(documents: Sequence[Sequence[int]], config: ScoreConfig) -> list[list[int]]:
    tail = [] if config.eos_id is None else [config.eos_id]
    return [[config.bos_id, *map(int, doc), *tail] for doc in documents]


@torch.no_grad()
def document_bits(
    model: Scorer,
    documents: Sequence[Sequence[int]],
    config: ScoreConfig,
    *,
    device: torch.device | str | None = None,
) -> list[float]:
    """Negative log-likelihood in bits of each document (token ids), scored whole (module docstring).

    An ``nn.Module`` runs in eval mode (its previous mode is restored). An empty document scores 0 bits
    (or the end token's bits with ``eos_id``).
    """
    if not isinstance(model, torch.nn.Module):
        return _bits(model, documents, config, device)
    was_training = model.training
    model.eval()
    try:
        return _bits(model, documents, config, device or next(model.parameters()).device)
    finally:
        model.train(was_training)


def _bits(
    model: Scorer, documents: Sequence[Sequence[int]], config: ScoreConfig, device: torch.device | str | None
) -> list[float]:
    sequences = _sequences(documents, config)
    windows = [
        window
        for index, seq in enumerate(sequences)
        for window in plan_windows(len(seq), config.context, config.resolved_stride, document=index)
    ]
    nats = [0.0] * len(sequences)
    for start in range(0, len(windows), config.batch_size):
        batch = windows[start : start + config.batch_size]
        width = max(w.end - w.begin for w in batch)
        ids = torch.zeros(len(batch), width, dtype=torch.long)  # [B, N], right-padded with id 0
        for row, w in enumerate(batch):
            ids[row, : w.end - w.begin] = torch.tensor(sequences[w.document][w.begin : w.end])
        ids = ids.to(device)
        logits = model(ids)  # [B, N, V]
        logp = torch.log_softmax(logits.double() if logits.dtype == torch.float64 else logits.float(), dim=-1)
        for row, w in enumerate(batch):
            lo, hi = w.first - w.begin, w.end - w.begin  # scored targets, window-relative
            targets = ids[row, lo:hi]  # [k]
            picked = logp[row, lo - 1 : hi - 1].gather(
                -1, targets[:, None]
            )  # [k, 1]: predicted one step before
            nats[w.document] -= float(picked.sum())
    return [value / math.log(2) for value in nats]
