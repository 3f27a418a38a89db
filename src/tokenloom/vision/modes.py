"""Convert a decoded Pillow image of any mode to 8-bit ``RGB`` (step 7 of :mod:`tokenloom.vision.io`).

``1``, ``L``, ``P``, ``RGB``, ``CMYK``, ``YCbCr`` convert directly; anything with transparency (``LA``,
``RGBA``, ``PA``, ``P``/``L``/``RGB``/``1`` with a tRNS key) is composited over ``background``; high bit
depth is scaled to 8 bits: ``I;16*`` by 255/65535; ``I`` (32-bit int) the same when its values lie in
[0, 65535], else min-max; ``F`` x255 when its values lie in [0, 1], else min-max. A mode Pillow cannot
convert is an :class:`~tokenloom.errors.ImageDecodeError` of kind ``unsupported_mode``.
This module does not decode files (``io.py``).
"""

from __future__ import annotations

import numpy as np
from PIL import Image

from tokenloom.errors import ImageDecodeError

__all__ = ["to_rgb"]

_ALPHA_MODES = frozenset({"LA", "La", "RGBA", "RGBa", "PA"})


def _error(label: str, detail: str) -> ImageDecodeError:
    return ImageDecodeError(detail, kind="unsupported_mode", path=label)


def to_rgb(
    image: Image.Image, *, background: tuple[int, int, int] = (255, 255, 255), label: str = "<image>"
) -> Image.Image:
    """Convert a loaded Pillow image of any mode to ``RGB`` (see the module docstring for the rules)."""

    mode = image.mode
    transparency = image.info.get("transparency")
    if mode == "RGB" and transparency is None:
        return image
    if mode.startswith("I") or mode == "F":
        return _high_depth_to_rgb(image, background, transparency)
    palette_alpha = mode == "P" and image.palette is not None and image.palette.mode == "RGBA"
    if mode in _ALPHA_MODES or transparency is not None or palette_alpha:
        try:
            rgba = image.convert("RGBA")  # applies a P palette alpha or an L/RGB/1 tRNS colour key
        except (ValueError, OSError) as exc:
            raise _error(label, f"cannot convert mode {mode} with transparency to RGB ({exc})") from exc
        canvas = Image.new("RGBA", rgba.size, (*background, 255))
        return Image.alpha_composite(canvas, rgba).convert("RGB")
    try:
        return image.convert("RGB")  # 1, L, P, CMYK (Adobe-inverted handled by the JPEG decoder), YCbCr, ...
    except (ValueError, OSError) as exc:
        raise _error(label, f"cannot convert image mode {mode!r} to RGB ({exc})") from exc


def _high_depth_to_rgb(
    image: Image.Image, background: tuple[int, int, int], transparency: object
) -> Image.Image:
    """I;16*, I and F images to 8-bit RGB; a tRNS grey key becomes ``background``."""

    values = np.asarray(image)  # [H, W]: uint16 (I;16*), int32 (I) or float32 (F)
    mode = image.mode
    if mode.startswith("I;16"):
        scaled = values.astype(np.float64) * (255.0 / 65535.0)
    else:
        lo, hi = (float(values.min()), float(values.max())) if values.size else (0.0, 0.0)
        if mode == "F" and lo >= 0.0 and hi <= 1.0:
            scaled = values.astype(np.float64) * 255.0
        elif mode != "F" and lo >= 0 and hi <= 65535:
            scaled = values.astype(np.float64) * (255.0 / 65535.0)
        else:
            span = hi - lo
            scaled = (values.astype(np.float64) - lo) * (255.0 / span) if span > 0 else np.zeros(values.shape)
    gray = np.clip(np.rint(np.nan_to_num(scaled)), 0, 255).astype(np.uint8)  # [H, W]
    rgb = np.repeat(gray[:, :, None], 3, axis=2)  # [H, W] -> [H, W, 3]
    if isinstance(transparency, int):
        rgb[values == transparency] = background  # tRNS: this exact grey value is transparent
    return Image.fromarray(rgb, "RGB")
