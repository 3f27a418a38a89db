"""Front ends that turn inputs into encoder tokens: ``TextEmbed``, ``ImageEmbed`` and ``PatchEmbed``.

``TextEmbed`` maps token ids to vectors plus absolute positions (with a padding mask); ``ImageEmbed`` is
``PatchEmbed`` + class token + positions; ``PatchEmbed`` is a linear layer over ``patchify`` that equals a
stride-P, kernel-P convolution. This module runs no encoder blocks and decodes no images.

Shape legend: ``B`` batch, ``N`` tokens, ``d`` width, ``V`` vocabulary, ``C, H, W`` image, ``P`` patch,
``gh, gw`` patch grid, ``K = C·P·P`` values per patch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, NamedTuple

import torch
from torch import nn

from tokenloom.encoder import masks
from tokenloom.encoder.patches import grid_size, patchify
from tokenloom.encoder.positions import (
    LearnedGridPositions,
    LearnedPositions,
    host_bounds,
    sinusoidal_1d,
    sinusoidal_2d,
    sinusoidal_at,
)
from tokenloom.errors import ConfigError

__all__ = ["AbsPosition", "Embedded", "ImageEmbed", "PatchEmbed", "TextEmbed"]

AbsPosition = Literal["learned", "sinusoidal", "none"]


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


def _is_integer(dtype: torch.dtype) -> bool:
    """True for every signed or unsigned integer dtype (not bool, float or complex)."""
    return not (dtype.is_floating_point or dtype.is_complex or dtype == torch.bool)


class TextEmbed(nn.Module):
    """Token ids ``[B, N]`` -> ``Embedded(x [B, N, d], mask)``: token embedding + absolute positions.

    The padding mask (``[B, 1, 1, N]``, True = real token) comes from ``lengths`` when given, else from
    ``pad_id`` (every position whose id is ``pad_id``), else it is None. ``start`` offsets the positions
    (for ``Encoder.decode_step``): an int, or an integer tensor ``[B]`` with one first position per row
    (``start=cache.lengths`` continues each ragged row at its own length). ``positions`` (integer ``[N]``
    or ``[B, N]``) gives every token its own position instead, e.g. each packed document's own ``0..n-1``
    (``tokenloom.encoder.positions.segment_positions``). Use ``position="none"`` with a RoPE encoder.
    An id outside the vocabulary raises ValueError for CPU ids; on an accelerator the check would stall
    every step on a device sync, so the gather kernel's own device-side assertion reports it.
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
        start: int | torch.Tensor = 0,
        positions: torch.Tensor | None = None,
    ) -> Embedded:
        if ids.dim() != 2 or not _is_integer(ids.dtype):
            raise ValueError(
                f"TextEmbed expects integer ids [B, N] (any integer dtype), got {ids.dtype} shape "
                f"{tuple(ids.shape)}"
            )
        ids = ids.long()  # [B, N] int64: every integer dtype (uint16..uint64 have no min/max kernels)
        bounds = host_bounds(ids)  # a uint64 id >= 2**63 wraps negative: still refused
        if bounds is not None:
            lo, hi = bounds
            if lo < 0 or hi >= self.vocab_size:
                bad = lo if lo < 0 else hi
                raise ValueError(
                    f"token id {bad} is outside the vocabulary [0, {self.vocab_size}); "
                    "encode with the tokenizer this TextEmbed was built for (vocab_size must match)"
                )
        b, n = ids.shape
        if isinstance(start, torch.Tensor) and start.shape != (b,):
            raise ValueError(
                f"start must be an int or one first position per row [B={b}], got shape {tuple(start.shape)}"
            )
        if positions is not None:
            _check_positions(positions, b, n, start)
        x = self.tok(ids)  # [B, N, d]
        if self.pos is not None:
            x = self.pos(x, start=start, positions=positions)
        elif self.position == "sinusoidal" and positions is not None:
            x = x + sinusoidal_at(positions.to(x.device), self.width, dtype=x.dtype)  # + [N, d] or [B, N, d]
        elif self.position == "sinusoidal":
            # + [N, d] (int start) or [B, N, d] (a start per row)
            x = x + sinusoidal_1d(n, self.width, start=start, dtype=x.dtype, device=x.device)
        mask = None
        if lengths is not None:
            mask = masks.key_padding(lengths, n, device=ids.device)  # [B, 1, 1, N]; checks 0 <= len <= N
            if mask.shape[0] != b:
                raise ValueError(f"lengths has {mask.shape[0]} entries but the batch has {b} sequences")
        elif self.pad_id is not None:
            mask = (ids != self.pad_id)[:, None, None, :]  # [B, 1, 1, N]
        return Embedded(x, mask)


def _check_positions(positions: torch.Tensor, b: int, n: int, start: int | torch.Tensor) -> None:
    if not isinstance(start, int) or start != 0:
        raise ValueError(
            "give either start or positions, not both (positions already say where each token is)"
        )
    if not isinstance(positions, torch.Tensor) or not _is_integer(positions.dtype):
        raise ValueError(f"positions must be an integer tensor [N] or [B, N], got {positions!r}")
    if tuple(positions.shape) not in ((n,), (b, n)):
        raise ValueError(
            f"positions must have shape [N={n}] or [B={b}, N={n}] (one per token), got {tuple(positions.shape)}"
        )
    bounds = host_bounds(positions)
    if bounds is not None and bounds[0] < 0:
        raise ValueError(f"positions must be non-negative, got {bounds[0]}")


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
        h, w = (image_size, image_size) if isinstance(image_size, int) else image_size
        self.grid = _image_grid((h, w), patch_size, what="image_size")  # (gh, gw)
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
        grid = _image_grid((images.shape[-2], images.shape[-1]), self.patch_size, what="images")  # (gh, gw)
        x = self.patch_embed(images)  # [B, N, d]
        if self.cls_token is not None:
            x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1)  # [B, 1 + N, d]
        if self.pos is not None:
            x = self.pos(x, grid=grid)
        elif self.position == "sinusoidal":
            table = sinusoidal_2d(grid, self.width, dtype=x.dtype, device=x.device)  # [N, d]
            x = torch.cat((x[:, : self.num_prefix_tokens], x[:, self.num_prefix_tokens :] + table), dim=1)
        return x


def _image_grid(size: tuple[int, int], patch_size: int, *, what: str) -> tuple[int, int]:
    """``grid_size`` with ImageEmbed's own fix in the message (ImageEmbed does not pad)."""
    try:
        return grid_size(size, patch_size)
    except ValueError:
        if not isinstance(patch_size, int) or patch_size < 1 or min(size) < 1:
            raise  # grid_size's message already names the bad value
        p = patch_size
        fix = (
            f"resize or crop the images to a multiple of {p}, e.g. with "
            f"tokenloom.eval_transform(tokenloom.TransformConfig(size={p * max(1, round(min(size) / p))}))"
            if what == "images"
            else f"choose an image_size that is a multiple of {p}"
        )
        raise ValueError(
            f"ImageEmbed: {what} (H, W) = {tuple(size)} is not divisible by patch_size={p}; {fix}"
        ) from None


class PatchEmbed(nn.Module):
    """Patch embedding: ``[B, C, H, W] -> [B, N, embed_dim]`` = ``proj(patchify(images))``.

    ``proj`` is ``nn.Linear(C*P*P, embed_dim)``; with ``proj.weight = conv.weight.reshape(d, -1)`` it equals
    ``nn.Conv2d(C, d, kernel_size=P, stride=P)`` followed by ``flatten(2).transpose(1, 2)`` (and timm's
    ``timm.layers.PatchEmbed``). Any H, W divisible by P is accepted (``pad=True``: any size, zero-padded).
    """

    def __init__(
        self,
        patch_size: int = 16,
        in_chans: int = 3,
        embed_dim: int = 768,
        *,
        bias: bool = True,
        pad: bool = False,
    ) -> None:
        super().__init__()
        grid_size((patch_size, patch_size), patch_size)  # validates patch_size
        if in_chans < 1 or embed_dim < 1:
            raise ValueError(f"in_chans and embed_dim must be positive, got {in_chans}, {embed_dim}")
        self.patch_size = patch_size
        self.in_chans = in_chans
        self.embed_dim = embed_dim
        self.pad = pad
        self.proj = nn.Linear(in_chans * patch_size * patch_size, embed_dim, bias=bias)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        if images.dim() != 4 or images.shape[1] != self.in_chans:
            raise ValueError(
                f"PatchEmbed expects images [B, {self.in_chans}, H, W], got shape {tuple(images.shape)}"
            )
        if not images.is_floating_point():
            raise TypeError(
                f"PatchEmbed expects float images (normalized), got {images.dtype}; "
                "apply the transforms' normalize step (or images.float()) first"
            )
        tokens = patchify(images.to(self.proj.weight.dtype), self.patch_size, pad=self.pad)  # [B, N, K]
        return self.proj(tokens)  # [B, N, d]

    @torch.no_grad()
    def load_conv_weights(self, weight: torch.Tensor, bias: torch.Tensor | None = None) -> PatchEmbed:
        """Copy a conv weight ``[d, C, P, P]`` (and bias ``[d]``) into ``proj``; returns ``self``."""
        expected = (self.embed_dim, self.in_chans, self.patch_size, self.patch_size)
        if tuple(weight.shape) != expected:
            raise ValueError(f"conv weight must have shape {expected}, got {tuple(weight.shape)}")
        self.proj.weight.copy_(weight.reshape(self.embed_dim, -1))  # [d, C, P, P] -> [d, K] in (c, p_h, p_w)
        if bias is not None:
            if self.proj.bias is None:
                raise ValueError("this PatchEmbed was built with bias=False; it cannot take a conv bias")
            if tuple(bias.shape) != (self.embed_dim,):
                raise ValueError(f"conv bias must have shape ({self.embed_dim},), got {tuple(bias.shape)}")
            self.proj.bias.copy_(bias)
        elif self.proj.bias is not None:
            self.proj.bias.zero_()  # a conv without bias adds nothing
        return self

    def conv_weight(self) -> torch.Tensor:
        """The equivalent conv weight ``[d, C, P, P]`` (a view of ``proj.weight``)."""
        p = self.patch_size
        return self.proj.weight.reshape(self.embed_dim, self.in_chans, p, p)  # [d, K] -> [d, C, P, P]

    def num_patches(self, image_size: tuple[int, int]) -> int:
        """N for an ``(H, W)`` image."""
        gh, gw = grid_size(image_size, self.patch_size, pad=self.pad)
        return gh * gw

    def extra_repr(self) -> str:
        return f"patch_size={self.patch_size}, in_chans={self.in_chans}, embed_dim={self.embed_dim}, pad={self.pad}"
