"""``Encoder`` (a stack of blocks), a KV cache, and ``ImageClassifier``.

One ``Encoder`` runs any ``[B, N, d]`` token batch: text from ``TextEmbed`` (token ids + absolute positions,
with a padding mask) or image patches from ``ImageEmbed`` (``PatchEmbed`` + class token + positions); the
front ends live in ``embed.py``. An ``Encoder``'s parameters are the block stack and the optional final
norm only; embeddings, absolute positions and heads live in the front ends and ``ImageClassifier``.

Causal use (``config.causal=True``): ``cache = encoder.prefill(x)`` runs a prompt and keeps every layer's
keys and values; ``encoder.decode_step(x_t, cache)`` runs the next token(s) against the cache. Token by
token this equals the full causal forward. Ragged rows (``key_lengths`` in ``prefill`` or ``decode_step``)
each continue at their own length (``cache.lengths``), and each row equals its own real tokens run alone.
The cache holds ``2·L·B·M·Hkv·D`` elements (``cache.nbytes``).

This module does no training, no tokenization and no image decoding.

Shape legend: ``B`` batch, ``N`` tokens, ``M`` cached positions, ``d`` width, ``V`` vocabulary,
``C, H, W`` image, ``P`` patch, ``gh, gw`` patch grid, ``L`` blocks.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn

from tokenloom.encoder.config import EncoderConfig
from tokenloom.encoder.embed import Embedded, ImageEmbed, TextEmbed
from tokenloom.encoder.layers import Block, LayerKV, make_norm
from tokenloom.errors import ConfigError

__all__ = ["Embedded", "Encoder", "ImageClassifier", "ImageEmbed", "KVCache", "TextEmbed", "init_weights"]

Pool = Literal["token", "avg"]  # how ImageClassifier pools the encoder's tokens


def init_weights(module: nn.Module, *, std: float = 0.02) -> None:
    """ViT/BERT-style init for ``module.apply``: Linear/Embedding weights ~ trunc-normal(std), biases 0."""
    if isinstance(module, nn.Linear):
        nn.init.trunc_normal_(module.weight, std=std)
        if module.bias is not None:
            nn.init.zeros_(module.bias)
    elif isinstance(module, nn.Embedding):
        nn.init.trunc_normal_(module.weight, std=std)


class KVCache:
    """Keys and values of every layer, ``[B, Hkv, M, D]`` each; ``output`` is the prefill's ``[B, N, d]``."""

    def __init__(self, layers: int) -> None:
        self.layers = [LayerKV() for _ in range(layers)]
        self.output: torch.Tensor | None = None

    @property
    def length(self) -> int:
        """M, the number of cached positions."""
        return self.layers[0].length

    @property
    def lengths(self) -> torch.Tensor:
        """``[B]`` int64: the tokens cached for each row, i.e. each row's next position (``M`` for every
        row unless the rows are ragged). Front ends continue each row there: ``text(ids, start=cache.lengths)``."""
        first = self.layers[0]
        if first.lengths is not None:
            return first.lengths.clone()
        if first.k is None:
            raise ValueError(
                "the cache holds no rows yet; start it with encoder.prefill(x) (x may have 0 tokens)"
            )
        return torch.full((first.k.shape[0],), first.length, dtype=torch.long, device=first.k.device)

    @property
    def nbytes(self) -> int:
        """Bytes of all cached keys and values: ``2·L·B·M·Hkv·D·element_size``."""
        return sum(layer.nbytes for layer in self.layers)

    def __repr__(self) -> str:
        return f"KVCache(layers={len(self.layers)}, length={self.length}, nbytes={self.nbytes})"


class Encoder(nn.Module):
    """A stack of ``config.depth`` blocks and an optional final norm: ``forward(x [B, N, d], mask) -> [B, N, d]``.

    ``mask``: bool broadcastable to ``[B, H, N, N]``, True = may attend (e.g. ``TextEmbed``'s padding
    mask ``[B, 1, 1, N]``); ``config.causal`` adds the causal constraint.
    """

    def __init__(self, config: EncoderConfig) -> None:
        super().__init__()
        if not isinstance(config, EncoderConfig):
            raise TypeError(f"Encoder needs an EncoderConfig, got {type(config).__name__}")
        self.config = config
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.depth))
        self.norm = (
            make_norm(config.norm, config.width, eps=config.norm_eps) if config.final_norm else nn.Identity()
        )
        self.apply(init_weights)

    def _check(self, x: torch.Tensor) -> None:
        if x.dim() != 3 or x.shape[-1] != self.config.width:
            raise ValueError(
                f"Encoder expects x [B, N, {self.config.width}] (width={self.config.width}), got shape "
                f"{tuple(x.shape)}; embed token ids with TextEmbed or images with ImageEmbed first"
            )
        weight = next(self.parameters(), None)
        if weight is not None and x.dtype != weight.dtype:
            raise TypeError(
                f"Encoder weights are {weight.dtype} but x is {x.dtype}; convert one to the other: "
                f"x.to({weight.dtype}) or encoder.to({x.dtype}) (the front end too)"
            )

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor | None = None,
        *,
        key_lengths: torch.Tensor | None = None,
        segment_ids: torch.Tensor | None = None,
        memory: torch.Tensor | None = None,
        memory_lengths: torch.Tensor | None = None,
        positions: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``x [B, N, d] -> [B, N, d]``. Padded batches: ``key_lengths [B]`` (real tokens per row, the
        padding at the end); packed batches: ``segment_ids [B, N]`` (one id per packed sequence, negative
        = padding). Both reach the attention kernels as they are: no dense ``[B, 1, N, N]`` mask is built
        on the Triton path. ``positions`` (``[N]`` or ``[B, N]``) are the RoPE positions (default
        ``0..N-1``; packed rows pass each document's own, absolute positions are the front end's). With ``EncoderConfig(cross_attention=True)`` every block also attends to
        ``memory [B, M, cross_width]`` (e.g. image patch tokens for a text batch), ``memory_lengths [B]``
        marking its padding."""
        self._check(x)
        for block in self.blocks:
            x = block(  # [B, N, d]
                x, mask, key_lengths=key_lengths, segment_ids=segment_ids, memory=memory,
                memory_lengths=memory_lengths, positions=positions,
            )  # fmt: skip
        return self.norm(x)

    def _require_causal(self, what: str) -> None:
        if not self.config.causal:
            raise ConfigError(
                f"Encoder.{what} needs a causal encoder (later tokens must not change earlier ones); "
                "build it with EncoderConfig(causal=True)"
            )

    def prefill(self, x: torch.Tensor, *, key_lengths: torch.Tensor | None = None) -> KVCache:
        """Run a prompt ``x [B, N, d]`` causally and return the cache; ``cache.output`` is ``[B, N, d]``.

        ``key_lengths [B]``: prompts of different lengths, right-padded to N. Each row's output (up to
        its length) and its later ``decode_step`` outputs equal running that prompt alone; the cache
        then keeps one length per row and writes each new token at its row's own position.
        """
        self._require_causal("prefill")
        self._check(x)
        if key_lengths is not None:
            key_lengths = _check_lengths(key_lengths, x.shape[0], x.shape[1], "key_lengths").to(x.device)
        cache = KVCache(len(self.blocks))
        for block, kv in zip(self.blocks, cache.layers, strict=True):
            x = block(x, kv_cache=kv, key_lengths=key_lengths)  # [B, N, d]
        cache.output = self.norm(x)
        return cache

    def decode_step(
        self, x_t: torch.Tensor, cache: KVCache, *, key_lengths: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Run the next token(s) ``x_t [B, T, d]`` (or ``[B, d]``) after the cached positions; updates ``cache``.

        Returns ``[B, T, d]`` (``[B, d]`` for ``[B, d]`` input): the rows the full causal forward gives
        these positions. ``key_lengths [B]``: how many of the T new tokens of each row are real (the
        rest is padding, its output rows are unspecified). With ragged rows (a prefill with
        ``key_lengths``, or ``key_lengths`` here) tokens are run one at a time, each row continuing at
        its own length, so that every row equals its prompt run alone — also on an empty cache
        (``prefill`` of 0 tokens) and over any number of ragged steps. RoPE follows each row's length;
        absolute positions are the front end's: ``text(ids, start=cache.lengths)``.
        """
        self._require_causal("decode_step")
        single = x_t.dim() == 2
        x = x_t[:, None] if single else x_t  # [B, T, d]
        self._check(x)
        if len(cache.layers) != len(self.blocks):
            raise ValueError(f"cache has {len(cache.layers)} layers but the encoder has {len(self.blocks)}")
        cached = cache.layers[0].k
        if cached is not None and cached.shape[0] != x.shape[0]:
            raise ValueError(
                f"cache batch {cached.shape[0]} != x_t batch {x.shape[0]}; decode the rows the cache was "
                "prefilled with"
            )
        if key_lengths is not None:
            key_lengths = _check_lengths(key_lengths, x.shape[0], x.shape[1], "key_lengths").to(x.device)
            if cache.layers[0].lengths is None:  # becomes ragged: every row is full so far (maybe empty)
                for kv in cache.layers:
                    kv.lengths = torch.full((x.shape[0],), cache.length, dtype=torch.long, device=x.device)
        if cache.layers[0].lengths is None:
            for block, kv in zip(self.blocks, cache.layers, strict=True):
                x = block(x, kv_cache=kv)  # [B, T, d]
        else:
            x = self._decode_ragged(x, cache, key_lengths)  # [B, T, d]
        x = self.norm(x)
        return x[:, 0] if single else x

    def _decode_ragged(
        self, x: torch.Tensor, cache: KVCache, key_lengths: torch.Tensor | None
    ) -> torch.Tensor:
        """One token at a time, each row at its own position; rows advance only on real tokens."""
        outputs = []
        for t in range(x.shape[1]):
            h = x[:, t : t + 1]  # [B, 1, d]
            for block, kv in zip(self.blocks, cache.layers, strict=True):
                h = block(h, kv_cache=kv)  # [B, 1, d]
            for kv in cache.layers:
                assert kv.lengths is not None
                kv.lengths = kv.lengths + (1 if key_lengths is None else (key_lengths > t).long())
            outputs.append(h)
        return torch.cat(outputs, dim=1)  # [B, T, d]


def _check_lengths(lengths: torch.Tensor, batch: int, n: int, name: str) -> torch.Tensor:
    if not isinstance(lengths, torch.Tensor) or lengths.shape != (batch,) or lengths.is_floating_point():
        raise ValueError(f"{name} must be an integer tensor [B={batch}], got {lengths!r}")
    if lengths.device.type == "cpu" and lengths.numel() and (lengths.min() < 0 or lengths.max() > n):
        raise ValueError(f"{name} must lie in [0, {n}] (tokens of each row), got {lengths.tolist()}")
    return lengths.long()


class ImageClassifier(nn.Module):
    """``ImageEmbed`` + ``Encoder`` + pooling + linear ``head``: images ``[B, C, H, W]`` -> logits ``[B, K]``.

    ``pool="token"`` takes the class token, ``"avg"`` averages the patch tokens; ``head_norm`` (optional,
    timm's ``fc_norm``) normalizes the pooled vector; ``head`` may be ``nn.Identity`` (features only).
    """

    def __init__(
        self,
        embed: ImageEmbed,
        encoder: Encoder,
        head: nn.Module,
        *,
        pool: Pool = "token",
        head_norm: nn.Module | None = None,
    ) -> None:
        super().__init__()
        if pool not in ("token", "avg"):
            raise ConfigError(f"pool must be 'token' or 'avg', got {pool!r}")
        if pool == "token" and embed.cls_token is None:
            raise ConfigError("pool='token' needs an ImageEmbed with class_token=True; use pool='avg'")
        self.embed, self.encoder, self.head, self.pool = embed, encoder, head, pool
        self.head_norm = nn.Identity() if head_norm is None else head_norm

    def forward_features(self, images: torch.Tensor) -> torch.Tensor:
        """``[B, C, H, W] -> [B, T + N, d]`` (after the final norm)."""
        return self.encoder(self.embed(images))

    def forward_head(self, features: torch.Tensor) -> torch.Tensor:
        """``[B, T + N, d] -> [B, K]``."""
        if self.pool == "token":
            pooled = features[:, 0]  # [B, d]
        else:
            pooled = features[:, self.embed.num_prefix_tokens :].mean(dim=1)  # [B, d]
        return self.head(self.head_norm(pooled))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.forward_head(self.forward_features(images))
