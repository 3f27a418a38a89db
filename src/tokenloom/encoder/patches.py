"""Image patches: ``patchify`` / ``unpatchify`` (``tokenloom.encoder.embed.PatchEmbed`` projects them).

The encoder's image front end and the image pipeline both cut images into patches, so the operation lives
here, below both; :mod:`tokenloom.vision.patches` re-exports it for the image side.

A 224×224 RGB image with patch size 16 becomes a 14×14 grid of N = 196 patches of C·P·P = 768 values.

Order, fixed by contract:

* patches are listed in **row-major grid order** (left to right, then top to bottom);
* the values inside one patch vector are in **(c, p_h, p_w)** order — channel outermost, then the row
  inside the patch, then the column — which is exactly ``torch.nn.functional.unfold``'s order and the
  flattening of a conv weight ``[d, C, P, P]``. Hence ``PatchEmbed.proj.weight == conv.weight.reshape(d, -1)``
  and ``PatchEmbed(x) == conv(x).flatten(2).transpose(1, 2)``.

H or W not divisible by P raises ``ValueError`` unless ``pad=True``, which zero-pads at the bottom and right;
``unpatchify(..., image_size=(H, W))`` with the original size crops that padding away again, so the round
trip is exact either way.

Two paths compute the same thing: ``_patchify_reference`` (``F.unfold``, the obvious definition) and the
fast path (one reshape/permute/copy), selected by ``impl``. This module does not decode, resize or
normalize images (see :mod:`tokenloom.vision.io` and :mod:`tokenloom.vision.transforms`).

Shape legend: ``B`` batch, ``C`` channels, ``H, W`` image height/width, ``P`` patch size,
``gh, gw`` patch grid height/width, ``N = gh * gw`` patches, ``K = C * P * P`` values per patch,
``d`` embedding width.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import torch
import torch.nn.functional as F

__all__ = ["grid_size", "patchify", "unpatchify"]

Impl = Literal["fast", "reference"]


def grid_size(image_size: tuple[int, int], patch_size: int = 16, *, pad: bool = False) -> tuple[int, int]:
    """The patch grid ``(gh, gw)`` of an ``(H, W)`` image; ``ValueError`` when not divisible and not ``pad``."""
    _check_patch_size(patch_size)
    h, w = image_size
    if h <= 0 or w <= 0:
        raise ValueError(f"image size must be positive, got (H, W) = {(h, w)}")
    if not pad and (h % patch_size or w % patch_size):
        raise ValueError(
            f"image size (H, W) = {(h, w)} is not divisible by patch_size={patch_size}; "
            f"resize/crop to a multiple of {patch_size} or pass pad=True to zero-pad at the bottom/right"
        )
    return math.ceil(h / patch_size), math.ceil(w / patch_size)


def _check_patch_size(patch_size: int) -> None:
    if not isinstance(patch_size, int) or isinstance(patch_size, bool) or patch_size < 1:
        raise ValueError(f"patch_size must be a positive int, got {patch_size!r}")


def _as_batch(images: torch.Tensor, name: str, dims: int) -> tuple[torch.Tensor, bool]:
    """Add a batch dimension to an unbatched input; returns (batched, was_unbatched)."""
    if images.dim() == dims - 1:
        return images.unsqueeze(0), True
    if images.dim() != dims:
        raise ValueError(f"{name} must have {dims - 1} or {dims} dimensions, got shape {tuple(images.shape)}")
    return images, False


def _pad_to_multiple(images: torch.Tensor, patch_size: int) -> torch.Tensor:
    h, w = images.shape[-2:]
    pad_h, pad_w = (-h) % patch_size, (-w) % patch_size
    if pad_h or pad_w:
        images = F.pad(images, (0, pad_w, 0, pad_h))  # zeros at the right and bottom
    return images


def _patchify_reference(images: torch.Tensor, patch_size: int) -> torch.Tensor:
    """The definition: ``F.unfold`` with kernel = stride = P, transposed. [B,C,H,W] -> [B,N,K]."""
    if images.dtype in (torch.uint8, torch.bool) or not images.is_floating_point():
        # unfold (im2col) is only defined for floating tensors; every integer value of uint8/int16 is exact in float64
        cols = F.unfold(images.double(), kernel_size=patch_size, stride=patch_size)  # [B, K, N]
        return cols.transpose(1, 2).to(images.dtype)  # [B, N, K]
    cols = F.unfold(images, kernel_size=patch_size, stride=patch_size)  # [B, K, N]
    return cols.transpose(1, 2)  # [B, N, K]


_WORDS = ((16, "complex128"), (8, "int64"), (4, "int32"), (2, "int16"))  # bytes -> dtype moved as one unit
_WIDENABLE = ("uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64")


def _patchify_fast(x: torch.Tensor, p: int) -> torch.Tensor:
    """One permuting copy; each row of P values inside a patch moves as a few wide words.

    The copy moves runs of P contiguous values (a patch row); torch's copy loop costs about the same per
    element whatever its size, so the run is reinterpreted as 16/8/4/2-byte words (``Tensor.view(dtype)``,
    bit-exact) when the layout allows — about 2-3x faster for uint8 — and copied as plain values otherwise
    (non-contiguous input, or autograd needs to see the op). On CPU the wide-word copy runs in numpy.
    """
    b, c, h, w = x.shape
    gh, gw = h // p, w // p
    dtype, size = x.dtype, x.element_size()
    k = 1
    if (
        str(x.dtype)[6:] in _WIDENABLE
        and x.is_contiguous()
        and not (x.requires_grad and torch.is_grad_enabled())
    ):
        for word, name in _WORDS:
            if word > size and (p * size) % word == 0 and (x.storage_offset() * size) % word == 0:
                k = word // size  # values per word
                x = x.view(getattr(torch, name))  # [B, C, H, W] -> [B, C, H, W/k] (same bytes)
                break
    grid = x.reshape(b, c, gh, p, gw, p // k).permute(0, 2, 4, 1, 3, 5)  # [B, gh, gw, C, P, P/k] (a view)
    if k > 1 and x.device.type == "cpu":
        # numpy's strided copy loop handles these short rows ~2x faster than torch's on CPU (bit-exact)

        src = grid.numpy()  # the same view, as numpy
        dst = np.empty(src.shape, dtype=src.dtype)  # [B, gh, gw, C, P, P/k]
        np.copyto(dst, src)
        out = torch.from_numpy(dst)
    else:
        out = grid.contiguous()  # the one copy (none when the order is already right, e.g. a single patch)
    out = out.view(b, gh * gw, c * p * (p // k))  # [B, gh, gw, C, P, P/k] -> [B, N, K/k]
    return out.view(dtype) if k > 1 else out  # [B, N, K] in the input dtype


def patchify(
    images: torch.Tensor, patch_size: int = 16, *, pad: bool = False, impl: Impl = "fast"
) -> torch.Tensor:
    """Split images into flattened patches: ``[B, C, H, W] -> [B, N, C*P*P]`` (or ``[C,H,W] -> [N, C*P*P]``).

    Patches are in row-major grid order; values inside a patch in (c, p_h, p_w) order. The output is
    contiguous, of the input's dtype and device (like ``reshape``, it may share memory with the input when
    no reordering is needed, e.g. a single patch per image). ``pad=True`` zero-pads H and W up to a
    multiple of ``patch_size`` instead of raising. ``impl="reference"`` uses ``F.unfold`` (for tests).
    """
    x, unbatched = _as_batch(images, "images [B, C, H, W]", 4)
    grid_size((x.shape[-2], x.shape[-1]), patch_size, pad=pad)  # validates; raises if not divisible, not pad
    x = _pad_to_multiple(x, patch_size)  # [B, C, gh*P, gw*P]
    p = patch_size
    if impl == "reference":
        out = _patchify_reference(x, p)
    elif impl == "fast":
        out = _patchify_fast(x, p)
    else:
        raise ValueError(f"impl must be 'fast' or 'reference', got {impl!r}")
    return out[0] if unbatched else out


def unpatchify(
    patches: torch.Tensor,
    patch_size: int = 16,
    image_size: tuple[int, int] = (224, 224),
    channels: int = 3,
) -> torch.Tensor:
    """Inverse of :func:`patchify`: ``[B, N, C*P*P] -> [B, C, H, W]`` (or ``[N, K] -> [C, H, W]``).

    ``image_size`` is the original ``(H, W)``; when it is not a multiple of ``patch_size`` the patches are
    taken to come from ``patchify(..., pad=True)`` and the padding is cropped away.
    """
    _check_patch_size(patch_size)
    x, unbatched = _as_batch(patches, "patches [B, N, K]", 3)
    b, n, k = x.shape
    p = patch_size
    h, w = image_size
    gh, gw = grid_size((h, w), p, pad=True)
    if k != channels * p * p:
        raise ValueError(
            f"patch vectors have {k} values but channels * patch_size**2 = {channels}*{p}*{p} = "
            f"{channels * p * p}; pass the channels and patch_size used by patchify"
        )
    if n != gh * gw:
        raise ValueError(
            f"got N={n} patches but image_size={(h, w)} with patch_size={p} needs a {gh}x{gw} grid "
            f"= {gh * gw} patches; pass the image_size used by patchify"
        )
    out = (
        x.reshape(b, gh, gw, channels, p, p)  # [B, gh, gw, C, P, P]
        .permute(0, 3, 1, 4, 2, 5)  # [B, C, gh, P, gw, P]
        .reshape(b, channels, gh * p, gw * p)  # [B, C, gh*P, gw*P]
    )
    if gh * p != h or gw * p != w:
        out = out[:, :, :h, :w].contiguous()  # [B, C, H, W]: crop the zero padding
    return out[0] if unbatched else out
