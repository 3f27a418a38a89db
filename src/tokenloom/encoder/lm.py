"""``LanguageModel``: a causal language model on the shared encoder (``TextEmbed`` + causal ``Encoder`` + head).

``forward(ids)`` gives next-token logits for every position; ``loss`` is the mean next-token cross-entropy;
``prefill`` / ``decode_step`` run through the encoder's ``KVCache``; ``generate`` samples (greedy at
``temperature=0``). Packed rows (several documents in one row) pass ``segment_ids``: attention stays inside
each document and, unless ``positions`` are given, every document's positions restart at 0, so each token's
output equals that of its document run alone. The output head is tied to the token embedding by default
(``logits = h · Eᵀ``, no bias). Parameters and FLOPs are those of ``tokenloom.costs.lm_params`` /
``lm_flops`` (tested).

This module does no tokenization, no data loading and no training loop.

Shape legend: ``B`` batch, ``N`` tokens, ``T`` new tokens, ``d`` width, ``V`` vocabulary.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from tokenloom.encoder.config import LanguageModelConfig
from tokenloom.encoder.embed import TextEmbed
from tokenloom.encoder.model import Encoder, KVCache
from tokenloom.encoder.positions import segment_positions
from tokenloom.errors import ConfigError

__all__ = ["IGNORE_INDEX", "LanguageModel", "next_token_targets"]

IGNORE_INDEX = -100  # a target that counts in no loss (torch's cross_entropy default)


def next_token_targets(ids: torch.Tensor, segment_ids: torch.Tensor | None = None) -> torch.Tensor:
    """``[B, N]`` targets: ``ids[:, t + 1]`` at position ``t``, ``IGNORE_INDEX`` where there is no next token
    of the same document (the last column, a segment's last token, padding with a negative segment id)."""
    targets = torch.full_like(ids, IGNORE_INDEX, dtype=torch.long)  # [B, N]
    targets[:, :-1] = ids[:, 1:]
    if segment_ids is not None:
        same = (segment_ids[:, 1:] == segment_ids[:, :-1]) & (segment_ids[:, :-1] >= 0)  # [B, N-1]
        targets[:, :-1] = targets[:, :-1].masked_fill(~same, IGNORE_INDEX)
    return targets


class LanguageModel(nn.Module):
    """Token ids ``[B, N]`` -> next-token logits ``[B, N, V]`` (see the module docstring)."""

    def __init__(self, config: LanguageModelConfig) -> None:
        super().__init__()
        if not isinstance(config, LanguageModelConfig):
            raise TypeError(f"LanguageModel needs a LanguageModelConfig, got {type(config).__name__}")
        self.config = config
        enc = config.encoder
        self.embed = TextEmbed(
            config.vocab_size, enc.width, max_len=config.context, position=config.front_position
        )
        self.encoder = Encoder(enc)
        self.head: nn.Linear | None = None
        if not config.tie_embeddings:
            self.head = nn.Linear(enc.width, config.vocab_size, bias=False)
            nn.init.trunc_normal_(self.head.weight, std=0.02)

    @property
    def output_weight(self) -> torch.Tensor:
        """``[V, d]``: the head's matrix (the token embedding itself when tied)."""
        return self.embed.tok.weight if self.head is None else self.head.weight

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """``[..., d] -> [..., V]``: the output head on final-norm hidden states."""
        return F.linear(hidden, self.output_weight)

    def _check(self, ids: torch.Tensor, segment_ids: torch.Tensor | None) -> None:
        if ids.dim() != 2:
            raise ValueError(f"LanguageModel expects token ids [B, N], got shape {tuple(ids.shape)}")
        if ids.shape[1] > self.config.context:
            raise ValueError(
                f"{ids.shape[1]} tokens exceed the model's context of {self.config.context}; split the rows "
                "(tokenloom.lm scores long documents with a sliding window) or build a longer context"
            )
        if segment_ids is not None and (
            not isinstance(segment_ids, torch.Tensor) or segment_ids.shape != ids.shape
        ):
            shape = tuple(segment_ids.shape) if isinstance(segment_ids, torch.Tensor) else segment_ids
            raise ValueError(f"segment_ids must have the shape of ids {tuple(ids.shape)}, got {shape}")

    def hidden(
        self,
        ids: torch.Tensor,
        *,
        segment_ids: torch.Tensor | None = None,
        positions: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``[B, N] -> [B, N, d]``: the final-norm hidden states (``forward`` without the head)."""
        self._check(ids, segment_ids)
        if segment_ids is not None:
            segment_ids = segment_ids.to(ids.device)
            if positions is None:
                positions = segment_positions(segment_ids)  # [B, N]: each document from 0
        if positions is not None:
            positions = positions.to(ids.device)
        x = self.embed(ids, positions=positions).x  # [B, N, d]
        return self.encoder(x, segment_ids=segment_ids, positions=positions)  # [B, N, d]

    def forward(
        self,
        ids: torch.Tensor,
        *,
        segment_ids: torch.Tensor | None = None,
        positions: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``ids [B, N] -> logits [B, N, V]``; position ``t`` predicts token ``t + 1``.

        ``segment_ids [B, N]``: packed documents (attention within equal ids; negative = padding).
        ``positions [N]`` or ``[B, N]``: each token's position (default ``0..N-1``, or each document's
        own ``0..n-1`` with ``segment_ids``), for learned, sinusoidal and RoPE positions alike.
        """
        return self.logits(self.hidden(ids, segment_ids=segment_ids, positions=positions))

    def loss(
        self,
        ids: torch.Tensor,
        targets: torch.Tensor | None = None,
        *,
        segment_ids: torch.Tensor | None = None,
        positions: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Mean next-token cross-entropy (nats) over the counted targets, computed in float32 (or float64).

        ``targets [B, N]`` (``IGNORE_INDEX`` = not counted); by default :func:`next_token_targets` — the next
        token of the same document, so no document is asked to predict the start of the next one.
        """
        if targets is None:
            targets = next_token_targets(ids, segment_ids)
        if targets.shape != ids.shape:
            raise ValueError(
                f"targets must have the shape of ids {tuple(ids.shape)}, got {tuple(targets.shape)}"
            )
        logits = self(ids, segment_ids=segment_ids, positions=positions)  # [B, N, V]
        wide = logits if logits.dtype == torch.float64 else logits.float()  # [B, N, V]
        return F.cross_entropy(
            wide.flatten(0, 1), targets.to(logits.device).long().flatten(), ignore_index=IGNORE_INDEX
        )

    def prefill(
        self, ids: torch.Tensor, *, lengths: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, KVCache]:
        """Run a prompt ``ids [B, N]`` and keep its keys and values: ``(logits [B, N, V], cache)``.

        ``lengths [B]``: prompts of different lengths right-padded to N (any valid id as padding); each
        row then continues at its own length in ``decode_step``.
        """
        self._check(ids, None)
        x = self.embed(ids).x  # [B, N, d]
        cache = self.encoder.prefill(x, key_lengths=lengths)
        assert cache.output is not None
        return self.logits(cache.output), cache

    def decode_step(
        self, ids: torch.Tensor, cache: KVCache, *, lengths: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Run the next token(s) ``ids [B]`` (or ``[B, T]``) after the cache: logits ``[B, V]`` (``[B, T, V]``).

        Equals the rows ``forward`` gives these positions on the whole sequence; updates ``cache``.
        """
        single = ids.dim() == 1
        ids2 = ids[:, None] if single else ids  # [B, T]
        if cache.length + ids2.shape[1] > self.config.context:
            raise ValueError(
                f"decoding past the model's context of {self.config.context} tokens "
                f"(cached {cache.length}, new {ids2.shape[1]})"
            )
        x = self.embed(ids2, start=cache.lengths.to(ids2.device)).x  # [B, T, d]
        hidden = self.encoder.decode_step(x, cache, key_lengths=lengths)  # [B, T, d]
        logits = self.logits(hidden)  # [B, T, V]
        return logits[:, 0] if single else logits

    @torch.no_grad()
    def generate(
        self,
        prompt_ids: torch.Tensor,
        max_new_tokens: int,
        *,
        temperature: float = 1.0,
        top_k: int | None = None,
        seed: int | None = None,
    ) -> torch.Tensor:
        """Continue ``prompt_ids [B, P]`` (or ``[P]``) by ``max_new_tokens``: ``[B, P + T]`` (or ``[P + T]``).

        One prefill, then one ``decode_step`` per token through the KV cache. ``temperature=0`` is greedy
        (argmax); otherwise tokens are drawn from ``softmax(logits / temperature)``, restricted to the
        ``top_k`` most likely when given, with a generator seeded by ``seed`` (same seed, same tokens).
        Runs in eval mode and restores the previous mode.
        """
        single = prompt_ids.dim() == 1
        ids = prompt_ids[None] if single else prompt_ids  # [B, P]
        _check_sampling(ids, max_new_tokens, temperature, top_k, self.config.context)
        generator = torch.Generator(device=ids.device)
        generator.manual_seed(seed) if seed is not None else generator.seed()
        was_training = self.training
        self.eval()
        try:
            logits, cache = self.prefill(ids)
            step = logits[:, -1]  # [B, V]
            out = [ids]
            for index in range(max_new_tokens):
                token = _sample(step, temperature, top_k, generator)  # [B]
                out.append(token[:, None])
                if index + 1 < max_new_tokens:
                    step = self.decode_step(token, cache)  # [B, V]
        finally:
            self.train(was_training)
        result = torch.cat(out, dim=1)  # [B, P + T]
        return result[0] if single else result


def _check_sampling(
    ids: torch.Tensor, max_new_tokens: int, temperature: float, top_k: int | None, context: int
) -> None:
    if ids.dim() != 2 or ids.shape[1] == 0:
        raise ValueError(f"prompt_ids must be [B, P] or [P] with P >= 1 tokens, got shape {tuple(ids.shape)}")
    if not isinstance(max_new_tokens, int) or max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be a non-negative int, got {max_new_tokens!r}")
    if ids.shape[1] + max_new_tokens > context:
        raise ValueError(
            f"prompt of {ids.shape[1]} + {max_new_tokens} new tokens exceeds the context of {context}; "
            f"ask for at most {context - ids.shape[1]} new tokens"
        )
    if not temperature >= 0:
        raise ConfigError(f"temperature must be >= 0 (0 = greedy), got {temperature!r}")
    if top_k is not None and (not isinstance(top_k, int) or top_k < 1):
        raise ConfigError(f"top_k must be a positive int or None, got {top_k!r}")


def _sample(
    logits: torch.Tensor, temperature: float, top_k: int | None, generator: torch.Generator
) -> torch.Tensor:
    """One token per row ``[B]`` from ``logits [B, V]``."""
    if temperature == 0:
        return logits.argmax(dim=-1)
    scaled = logits.float() / temperature  # [B, V]
    if top_k is not None and top_k < scaled.shape[-1]:
        kth = scaled.topk(top_k, dim=-1).values[:, -1:]  # [B, 1]
        scaled = scaled.masked_fill(scaled < kth, float("-inf"))
    probs = scaled.softmax(dim=-1)  # [B, V]
    return torch.multinomial(probs, 1, generator=generator)[:, 0]
