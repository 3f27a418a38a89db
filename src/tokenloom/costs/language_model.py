"""What a causal language model costs: parameters (with or without the embedding) and FLOPs per token.

Pure functions over a :class:`~tokenloom.encoder.config.LanguageModelConfig` (token embedding, optional
learned positions, the encoder stack, the output head), with the conventions of
:mod:`tokenloom.costs.formulas`: one multiply-add = 2 FLOPs, matrix products only, forward pass, training
≈ 3 × forward. ``lm_params`` equals the parameter count of ``LanguageModel(config)``, and ``lm_flops`` the
FLOPs torch's ``FlopCounterMode`` counts in its forward pass (tested).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tokenloom.costs._check import check_count
from tokenloom.costs.formulas import EncoderFlops, encoder_flops, linear_flops
from tokenloom.costs.weights import embedding_params, encoder_params

if TYPE_CHECKING:
    from tokenloom.encoder.config import LanguageModelConfig

__all__ = ["LanguageModelFlops", "lm_flops", "lm_param_breakdown", "lm_params"]


def lm_param_breakdown(config: LanguageModelConfig) -> dict[str, int]:
    """Parameters of ``LanguageModel(config)`` per component.

    Keys: ``embedding`` (``V·d``), ``positions`` (``context·d`` for learned positions, else 0), ``encoder``
    (:func:`~tokenloom.costs.weights.encoder_params`: blocks and final norm), ``head`` (0 when tied to the
    embedding, as in GPT-2, Radford et al. 2019; ``V·d`` otherwise, no bias).
    """
    d = config.encoder.width
    tied = embedding_params(config.vocab_size, d, tied=config.tie_embeddings)
    return {
        "embedding": config.vocab_size * d,
        "positions": config.context * d if config.front_position == "learned" else 0,
        "encoder": encoder_params(config.encoder),
        "head": tied - config.vocab_size * d,
    }


def lm_params(config: LanguageModelConfig, *, embedding: bool = True) -> int:
    """Parameters of ``LanguageModel(config)``; ``embedding=False``: the non-embedding count.

    The non-embedding count leaves out the token embedding, learned positions and an untied output head —
    Kaplan et al. 2020's ``N`` (§2.1), the size that scaling laws and a tokenizer comparison hold fixed
    while the embedding follows the vocabulary.
    """
    parts = lm_param_breakdown(config)
    return parts["encoder"] if not embedding else sum(parts.values())


@dataclass(frozen=True)
class LanguageModelFlops:
    """Forward FLOPs of a language model on ``tokens = B·N`` tokens: the encoder stack and the output head."""

    encoder: EncoderFlops  # the blocks (projections, attention, MLP)
    head: int  # the output layer: 2·B·N·d·V
    tokens: int  # B·N

    @property
    def total(self) -> int:
        """Forward FLOPs of the whole model (the embedding lookup costs none)."""
        return self.encoder.total + self.head

    @property
    def per_token(self) -> float:
        """Forward FLOPs per token: ≈ 2·params + the attention term (Kaplan et al. 2020, Table 1)."""
        return self.total / self.tokens

    @property
    def training(self) -> int:
        """≈ one training step (forward + backward): 3 × forward (Kaplan et al. 2020, §2.1)."""
        return 3 * self.total


def lm_flops(
    config: LanguageModelConfig, batch: int, seq_len: int, *, causal: bool | None = None
) -> LanguageModelFlops:
    """Forward FLOPs of ``LanguageModel(config)`` on ``batch`` rows of ``seq_len`` tokens.

    The encoder's :func:`~tokenloom.costs.formulas.encoder_flops` plus the output head ``2·d·V`` per token
    (Kaplan et al. 2020, Table 1, "De-embed"). ``causal`` (default: the encoder's, i.e. True) counts only
    the ``N(N+1)/2`` attended pairs, the work of a path that skips masked pairs; ``causal=False`` counts
    all ``N²``, what the reference path and a dense-mask kernel compute. Norms, softmax, biases and the
    embedding lookup are not counted.
    """
    b, n = check_count("batch", batch), check_count("seq_len", seq_len)
    d = config.encoder.width
    return LanguageModelFlops(
        encoder=encoder_flops(config.encoder, b, n, causal=causal),
        head=linear_flops(b * n, d, config.vocab_size),
        tokens=b * n,
    )
