"""``Encoder`` (a stack of blocks), its front ends ``TextEmbed`` / ``ImageEmbed``, a KV cache, ``ImageClassifier``.

One ``Encoder`` runs any ``[B, N, d]`` token batch: text from ``TextEmbed`` (token ids + absolute positions,
with a padding mask) or image patches from ``ImageEmbed`` (``PatchEmbed`` + class token + positions).
Its parameters are the block stack and the optional final norm only (COMMON.md contract 7); embeddings,
absolute positions and heads live in the front ends and ``ImageClassifier``.

Causal use (``config.causal=True``): ``cache = encoder.prefill(x)`` runs a prompt and keeps every layer's
keys and values; ``encoder.decode_step(x_t, cache)`` runs the next token(s) against the cache. Token by
token this equals the full causal forward. The cache holds ``2·L·B·M·Hkv·D`` elements (``cache.nbytes``).

This module does no training, no tokenization and no image decoding.

Shape legend: ``B`` batch, ``N`` tokens, ``M`` cached positions, ``d`` width, ``V`` vocabulary,
``C, H, W`` image, ``P`` patch, ``gh, gw`` patch grid, ``L`` blocks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, NamedTuple

import torch
from torch import nn

from tokenloom.encoder import masks
from tokenloom.encoder.config import EncoderConfig
from tokenloom.encoder.layers import Block, LayerKV, make_norm
from tokenloom.encoder.positions import LearnedGridPositions, LearnedPositions, sinusoidal_1d, sinusoidal_2d
from tokenloom.errors import ConfigError
from tokenloom.vision.patches import PatchEmbed, grid_size

__all__ = ["Embedded", "Encoder", "ImageClassifier", "ImageEmbed", "KVCache", "TextEmbed", "init_weights"]

AbsPosition = Literal["learned", "sinusoidal", "none"]


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

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        self._check(x)
        for block in self.blocks:
            x = block(x, mask)  # [B, N, d]
        return self.norm(x)

    def _require_causal(self, what: str) -> None:
        if not self.config.causal:
            raise ConfigError(
                f"Encoder.{what} needs a causal encoder (later tokens must not change earlier ones); "
                "build it with EncoderConfig(causal=True)"
            )

    def prefill(self, x: torch.Tensor) -> KVCache:
        """Run a prompt ``x [B, N, d]`` causally and return the cache; ``cache.output`` is ``[B, N, d]``."""
        self._require_causal("prefill")
        self._check(x)
        cache = KVCache(len(self.blocks))
        for block, kv in zip(self.blocks, cache.layers, strict=True):
            x = block(x, kv_cache=kv)  # [B, N, d]
        cache.output = self.norm(x)
        return cache

    def decode_step(self, x_t: torch.Tensor, cache: KVCache) -> torch.Tensor:
        """Run the next token(s) ``x_t [B, T, d]`` (or ``[B, d]``) after the cached positions; updates ``cache``.

        Returns ``[B, T, d]`` (``[B, d]`` for ``[B, d]`` input): the rows the full causal forward gives
        these positions.
        """
        self._require_causal("decode_step")
        single = x_t.dim() == 2
        x = x_t[:, None] if single else x_t  # [B, T, d]
        self._check(x)
        if len(cache.layers) != len(self.blocks):
            raise ValueError(f"cache has {len(cache.layers)} layers but the encoder has {len(self.blocks)}")
        if cache.length and cache.layers[0].k is not None and cache.layers[0].k.shape[0] != x.shape[0]:
            raise ValueError(f"cache batch {cache.layers[0].k.shape[0]} != x_t batch {x.shape[0]}")
        for block, kv in zip(self.blocks, cache.layers, strict=True):
            x = block(x, kv_cache=kv)  # [B, T, d]
        x = self.norm(x)
        return x[:, 0] if single else x


class Embedded(NamedTuple):
    """A front end's output: tokens ``x [B, N, d]`` and a bool mask ``[B, 1, 1, N]`` (True = real) or None."""

    x: torch.Tensor
    mask: torch.Tensor | None


def _abs_position(position: str) -> AbsPosition:
    if position not in ("learned", "sinusoidal", "none"):
        raise ConfigError(
            f"front-end position must be 'learned', 'sinusoidal' or 'none' (use 'none' with RoPE), got {position!r}"
        )
    return position  # type: ignore[return-value]


class TextEmbed(nn.Module):
    """Token ids ``[B, N]`` -> ``Embedded(x [B, N, d], mask)``: token embedding + absolute positions.

    The padding mask (``[B, 1, 1, N]``, True = real token) comes from ``lengths`` when given, else from
    ``pad_id`` (every position whose id is ``pad_id``), else it is None. ``start`` offsets the positions
    (for ``Encoder.decode_step``). Use ``position="none"`` with a RoPE encoder.
    """

    def __init__(
        self,
        vocab_size: int,
        width: int,
        *,
        max_len: int = 512,
        position: AbsPosition = "learned",
        pad_id: int | None = None,
    ) -> None:
        super().__init__()
        if vocab_size <= 0 or width <= 0 or max_len <= 0:
            raise ConfigError(
                f"TextEmbed needs positive sizes, got vocab={vocab_size} width={width} max_len={max_len}"
            )
        if pad_id is not None and not 0 <= pad_id < vocab_size:
            raise ConfigError(f"pad_id={pad_id} is outside the vocabulary [0, {vocab_size})")
        if position == "sinusoidal" and width % 2:
            raise ConfigError(f"sinusoidal positions need an even width, got {width}")
        self.vocab_size, self.width, self.max_len = vocab_size, width, max_len
        self.position = _abs_position(position)
        self.pad_id = pad_id
        self.tok = nn.Embedding(vocab_size, width)
        nn.init.trunc_normal_(self.tok.weight, std=0.02)
        self.pos = LearnedPositions(max_len, width) if position == "learned" else None

    def forward(
        self,
        ids: torch.Tensor,
        *,
        lengths: torch.Tensor | Sequence[int] | None = None,
        start: int = 0,
    ) -> Embedded:
        if ids.dim() != 2 or ids.dtype not in (torch.int64, torch.int32, torch.int16, torch.uint8):
            raise ValueError(
                f"TextEmbed expects integer ids [B, N], got {ids.dtype} shape {tuple(ids.shape)}"
            )
        if ids.numel():
            lo, hi = int(ids.min()), int(ids.max())
            if lo < 0 or hi >= self.vocab_size:
                bad = lo if lo < 0 else hi
                raise ValueError(
                    f"token id {bad} is outside the vocabulary [0, {self.vocab_size}); "
                    "encode with the tokenizer this TextEmbed was built for (vocab_size must match)"
                )
        b, n = ids.shape
        x = self.tok(ids.long())  # [B, N, d]
        if self.pos is not None:
            x = self.pos(x, start=start)
        elif self.position == "sinusoidal":
            x = x + sinusoidal_1d(n, self.width, start=start, dtype=x.dtype, device=x.device)  # + [N, d]
        mask = None
        if lengths is not None:
            mask = masks.key_padding(lengths, n, device=ids.device)  # [B, 1, 1, N]; checks 0 <= len <= N
            if mask.shape[0] != b:
                raise ValueError(f"lengths has {mask.shape[0]} entries but the batch has {b} sequences")
        elif self.pad_id is not None:
            mask = (ids != self.pad_id)[:, None, None, :]  # [B, 1, 1, N]
        return Embedded(x, mask)


class ImageEmbed(nn.Module):
    """Images ``[B, C, H, W]`` -> tokens ``[B, T + gh*gw, d]``: ``PatchEmbed``, class token, positions.

    Learned positions form a 2-D grid built for ``image_size`` and are resampled bicubically (as timm
    does) for other sizes; sinusoidal positions are computed for the actual grid (the class token gets
    none). H and W must be multiples of ``patch_size``.
    """

    def __init__(
        self,
        *,
        image_size: int | tuple[int, int] = 224,
        patch_size: int = 16,
        in_chans: int = 3,
        width: int = 768,
        class_token: bool = True,
        position: AbsPosition = "learned",
        patch_bias: bool = True,
    ) -> None:
        super().__init__()
        if position == "sinusoidal" and width % 4:
            raise ConfigError(f"2-D sinusoidal positions need width divisible by 4, got {width}")
        size = (image_size, image_size) if isinstance(image_size, int) else tuple(image_size)
        self.grid = grid_size(size, patch_size)  # (gh, gw)
        self.patch_size, self.width = patch_size, width
        self.position = _abs_position(position)
        self.num_prefix_tokens = 1 if class_token else 0
        self.patch_embed = PatchEmbed(patch_size, in_chans, width, bias=patch_bias)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, width)) if class_token else None
        if self.cls_token is not None:
            nn.init.trunc_normal_(self.cls_token, std=1e-6)
        self.pos = (
            LearnedGridPositions(self.grid, width, num_prefix_tokens=self.num_prefix_tokens)
            if position == "learned"
            else None
        )

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        if images.dim() != 4:
            raise ValueError(f"ImageEmbed expects images [B, C, H, W], got shape {tuple(images.shape)}")
        grid = grid_size(tuple(images.shape[-2:]), self.patch_size)  # (gh, gw); ValueError if not divisible
        x = self.patch_embed(images)  # [B, N, d]
        if self.cls_token is not None:
            x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1)  # [B, 1 + N, d]
        if self.pos is not None:
            x = self.pos(x, grid=grid)
        elif self.position == "sinusoidal":
            table = sinusoidal_2d(grid, self.width, dtype=x.dtype, device=x.device)  # [N, d]
            x = torch.cat((x[:, : self.num_prefix_tokens], x[:, self.num_prefix_tokens :] + table), dim=1)
        return x


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
        pool: Literal["token", "avg"] = "token",
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
