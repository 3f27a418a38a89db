"""Decode any image file robustly to an RGB ``torch.uint8`` tensor ``[3, H, W]``.

What :func:`load_image` does, in order:

1. reads the file (or takes the bytes) — a missing or empty file is an :class:`ImageDecodeError`;
2. identifies it with Pillow — a non-image, a corrupt header, a decompression bomb (more pixels than
   ``DecodeConfig.max_pixels``) or a zlib-bomb chunk is an :class:`ImageDecodeError` naming file and cause;
3. takes the first frame of animations and multi-page files;
4. for JPEGs, when ``target_size`` is given and ``DecodeConfig.draft`` is on, decodes at 1/2, 1/4 or 1/8
   scale in the DCT domain (``Image.draft``) while keeping the shorter side >= ``target_size`` — the
   caller resizes afterwards anyway, and this is several times faster on large photos;
5. loads the pixels — truncated or corrupt data is an :class:`ImageDecodeError` ("truncated"). Fast path:
   full-size RGB/grayscale JPEGs that end with their EOI marker are decoded by torchvision's
   ``decode_jpeg`` (libjpeg-turbo straight into a tensor, ~1.4x faster than Pillow + copy); everything
   else, and anything ``decode_jpeg`` declines, takes the Pillow path, which is also the reference
   (``DecodeConfig(backend="pil")`` / :func:`decode_to_array`) the tests compare the fast path against;
6. applies the EXIF orientation (JPEG APP1 and PNG eXIf); a corrupt EXIF block is ignored with a warning;
7. converts every mode to RGB: ``1``, ``L``, ``P``, ``RGB``, ``CMYK``, ``YCbCr`` directly; anything with
   transparency (``LA``, ``RGBA``, ``PA``, ``P``/``L``/``RGB``/``1`` with a tRNS key) composited over
   ``DecodeConfig.background``; high bit depth scaled to 8 bits: ``I;16*`` by 255/65535; ``I`` (32-bit int)
   the same when its values lie in [0, 65535], else min-max; ``F`` x255 when its values lie in [0, 1],
   else min-max.

The result is a ``[3, H, W]`` uint8 tensor, normally a channels-last view (strides ``(1, 3W, 3)``) of the
decoded ``[H, W, 3]`` buffer — the layout torchvision's uint8 resize is fastest on; call ``.contiguous()``
if you need the standard layout.
This module does not resize, crop or normalize (``transforms.py``) and does not cache.
"""

from __future__ import annotations

import io
import logging
import os
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Literal

from tokenloom.errors import ConfigError, ImageDecodeError

if TYPE_CHECKING:
    import numpy as np
    import torch
    from PIL import Image

__all__ = [
    "DecodeConfig",
    "ErrorKind",
    "ImageSource",
    "decode_to_array",
    "error_kind",
    "load_image",
    "read_source",
    "to_rgb",
]

logger = logging.getLogger(__name__)

ImageSource = str | os.PathLike[str] | bytes | bytearray | memoryview | BinaryIO

_PIL_DEFAULT_MAX_PIXELS = 89_478_485  # Pillow's own default Image.MAX_IMAGE_PIXELS (~0.25 GiB of RGB)
_OPEN_LOCK = threading.Lock()  # guards the temporary lift of Pillow's global pixel limit
Backend = Literal["auto", "pil"]
ErrorKind = Literal[
    "missing",
    "unreadable",
    "empty",
    "not_an_image",
    "corrupt_header",
    "too_large",
    "truncated",
    "unsupported_mode",
]
_ALPHA_MODES = frozenset({"LA", "La", "RGBA", "RGBa", "PA"})


@dataclass(frozen=True)
class DecodeConfig:
    """How :func:`load_image` decodes; every field has a safe default."""

    background: tuple[int, int, int] = (255, 255, 255)  # RGB that transparent pixels are composited onto
    # refuse images with more pixels (decompression bombs); None: no limit
    max_pixels: int | None = _PIL_DEFAULT_MAX_PIXELS
    draft: bool = True  # reduced-scale JPEG decode when the caller passes target_size
    exif_transpose: bool = True  # rotate/flip as the EXIF Orientation tag says
    # "auto": torchvision decode_jpeg for full-size RGB/L JPEGs, Pillow otherwise; "pil": always Pillow
    backend: Backend = "auto"

    def __post_init__(self) -> None:
        bg = self.background
        if len(bg) != 3 or not all(isinstance(v, int) and 0 <= v <= 255 for v in bg):
            raise ConfigError(f"background must be three ints in 0..255 (an RGB colour), got {bg!r}")
        if self.backend not in ("auto", "pil"):
            raise ConfigError(f"backend must be 'auto' or 'pil', got {self.backend!r}")
        if self.max_pixels is not None and self.max_pixels < 1:
            raise ConfigError(
                f"max_pixels must be a positive int or None (no limit), got {self.max_pixels!r}"
            )


def _error(kind: ErrorKind, message: str) -> ImageDecodeError:
    """An :class:`ImageDecodeError` carrying a short machine-readable ``kind`` (used in reject summaries)."""
    exc = ImageDecodeError(message)
    exc.kind = kind  # type: ignore[attr-defined]
    return exc


def error_kind(exc: BaseException) -> str:
    """The ``kind`` of an error raised here (e.g. ``"truncated"``); ``"error"`` for anything else."""
    return getattr(exc, "kind", "error")


def read_source(source: ImageSource, *, name: str | None = None) -> tuple[bytes, str]:
    """The raw bytes of ``source`` and a name for messages; ``ImageDecodeError`` if unreadable or empty."""
    if isinstance(source, bytes | bytearray | memoryview):
        data, label = bytes(source), name or "<bytes>"
    elif isinstance(source, str | os.PathLike):
        label = name or str(source)
        try:
            data = Path(source).read_bytes()
        except FileNotFoundError:
            raise _error("missing", f"{label}: file not found; check the path") from None
        except IsADirectoryError:
            raise _error("unreadable", f"{label}: is a folder, not an image file") from None
        except OSError as exc:
            raise _error("unreadable", f"{label}: cannot read the file ({exc.strerror or exc})") from exc
    elif hasattr(source, "read"):
        label = name or str(getattr(source, "name", "<stream>"))
        data = source.read()
    else:
        raise TypeError(
            f"load_image takes a path, bytes or a binary file object, got {type(source).__name__}"
        )
    if not data:
        raise _error("empty", f"{label}: empty file (0 bytes); it is not an image")
    return data, label


def load_image(
    source: ImageSource,
    *,
    target_size: int | None = None,
    config: DecodeConfig | None = None,
    name: str | None = None,
) -> torch.Tensor:
    """Decode ``source`` (path, bytes or binary file) to an RGB uint8 tensor ``[3, H, W]``.

    ``target_size``: the shorter side the caller will resize to; JPEGs are then decoded at the smallest
    DCT scale (1/8, 1/4, 1/2) that keeps the shorter side >= ``target_size`` (``config.draft`` turns it off).
    ``name`` labels error messages when ``source`` is bytes. Raises :class:`ImageDecodeError` naming the
    file and the cause for anything that is not a decodable image.
    """
    import torch

    config = config or DecodeConfig()
    _check_target(target_size)
    data, label = read_source(source, name=name)
    image = _open(data, label, config)  # header only: format, mode, size, EXIF; bombs refused here
    try:
        if config.backend == "auto" and _fast_jpeg_ok(image, data, target_size, config):
            decoded = _decode_jpeg_torchvision(data)  # [3, H, W] or None when it declines
            if decoded is not None:
                orientation = _orientation(image, label) if config.exif_transpose else 1
                return _orient(decoded, orientation)
        array = _decode_pil(image, label, target_size, config)  # [H, W, 3]
    finally:
        image.close()
    return torch.from_numpy(array).permute(2, 0, 1)  # [H, W, 3] -> [3, H, W] (channels-last view)


def decode_to_array(
    source: ImageSource,
    *,
    target_size: int | None = None,
    config: DecodeConfig | None = None,
    name: str | None = None,
) -> np.ndarray:
    """The Pillow path of :func:`load_image` (the reference), as an ``[H, W, 3]`` uint8 numpy array."""
    config = config or DecodeConfig()
    _check_target(target_size)
    data, label = read_source(source, name=name)
    image = _open(data, label, config)
    try:
        return _decode_pil(image, label, target_size, config)
    finally:
        image.close()


def _check_target(target_size: int | None) -> None:
    if target_size is not None and (not isinstance(target_size, int) or target_size < 1):
        raise ConfigError(f"target_size must be a positive int (shorter side) or None, got {target_size!r}")


def _decode_pil(image: Image.Image, label: str, target_size: int | None, config: DecodeConfig) -> np.ndarray:
    import numpy as np

    if config.draft and target_size is not None and image.format == "JPEG":
        image.draft("RGB", (target_size, target_size))  # both sides stay >= target_size
    try:
        image.load()
    except (OSError, ValueError, SyntaxError, EOFError) as exc:
        raise _error("truncated", f"{label}: truncated or corrupt image data ({exc})") from exc
    if config.exif_transpose:
        image = _exif_transpose(image, label)
    rgb = to_rgb(image, background=config.background, label=label)
    return np.array(rgb)  # [H, W, 3], writable (np.asarray would be a read-only view of a bytes copy)


def _fast_jpeg_ok(image: Image.Image, data: bytes, target_size: int | None, config: DecodeConfig) -> bool:
    """True when torchvision's decode_jpeg gives the same pixels faster than Pillow would.

    Only full-size baseline/progressive RGB or grayscale JPEGs that end with an EOI marker (a truncated file
    goes to Pillow, which reports it); when a draft scale of 1/2 or less applies, Pillow's DCT scaling wins.
    """
    if image.format != "JPEG" or image.mode not in ("RGB", "L"):
        return False
    if config.draft and target_size is not None:
        width, height = image.size
        if min(width // target_size, height // target_size) >= 2:
            return False
    return data[:2] == b"\xff\xd8" and data.rstrip(b"\x00")[-2:] == b"\xff\xd9"  # SOI first, EOI last


def _decode_jpeg_torchvision(data: bytes) -> torch.Tensor | None:
    import torch

    try:
        from torchvision.io import ImageReadMode, decode_jpeg
    except ImportError:  # torchvision.io decoding is deprecated since 0.29; without it Pillow does the work
        return None
    try:
        encoded = torch.frombuffer(bytearray(data), dtype=torch.uint8)  # [L] (a writable copy)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # "moving to TorchCodec": fallback above
            return decode_jpeg(encoded, mode=ImageReadMode.RGB)  # [3, H, W]
    except (RuntimeError, ValueError):
        return None  # anything odd: Pillow decodes it or reports the cause


def _orientation(image: Image.Image, label: str) -> int:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = image.getexif().get(0x0112, 1)
    except Exception as exc:  # a corrupt EXIF block must not lose the pixels
        logger.warning("%s: ignoring unreadable EXIF orientation (%s)", label, exc)
        return 1
    return value if isinstance(value, int) and 1 <= value <= 8 else 1


def _orient(image: torch.Tensor, orientation: int) -> torch.Tensor:
    """Apply an EXIF orientation (1..8) to ``[3, H, W]``, as ``ImageOps.exif_transpose`` does."""
    if orientation == 2:
        return image.flip(-1)  # mirror left-right
    if orientation == 3:
        return image.flip(-1, -2)  # rotate 180
    if orientation == 4:
        return image.flip(-2)  # mirror top-bottom
    if orientation == 5:
        return image.transpose(-1, -2)  # transpose: [3, H, W] -> [3, W, H]
    if orientation == 6:
        return image.transpose(-1, -2).flip(-1)  # rotate 90 clockwise: [3, W, H]
    if orientation == 7:
        return image.transpose(-1, -2).flip(-1, -2)  # transverse: [3, W, H]
    if orientation == 8:
        return image.transpose(-1, -2).flip(-2)  # rotate 90 counter-clockwise: [3, W, H]
    return image


def _open(data: bytes, label: str, config: DecodeConfig) -> Image.Image:
    from PIL import Image, UnidentifiedImageError

    limit = config.max_pixels
    try:
        pil_limit = Image.MAX_IMAGE_PIXELS  # Pillow raises above 2x this, warns above 1x
        if pil_limit is None or (limit is not None and limit <= 2 * pil_limit):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # our own limit decides
                image = Image.open(io.BytesIO(data))
        else:
            # a looser limit than Pillow's global one: lift the global check while opening, then apply ours
            # (a lock, because MAX_IMAGE_PIXELS is process-global)
            with _OPEN_LOCK:
                saved = Image.MAX_IMAGE_PIXELS
                Image.MAX_IMAGE_PIXELS = None
                try:
                    image = Image.open(io.BytesIO(data))
                finally:
                    Image.MAX_IMAGE_PIXELS = saved
    except Image.DecompressionBombError as exc:
        raise _error(
            "too_large",
            f"{label}: decompression bomb refused, more than max_pixels={limit} ({exc}); "
            "raise DecodeConfig.max_pixels if the image is genuine",
        ) from None
    except UnidentifiedImageError:
        head = data[:8].hex(" ")
        raise _error(
            "not_an_image",
            f"{label}: not a recognised image format or a corrupt header (first bytes: {head})",
        ) from None
    except (OSError, ValueError, SyntaxError, EOFError) as exc:
        if isinstance(exc, EOFError) or "truncated" in str(exc).lower():
            raise _error("truncated", f"{label}: truncated file, cut off inside the header ({exc})") from exc
        raise _error(
            "corrupt_header", f"{label}: corrupt image header ({type(exc).__name__}: {exc})"
        ) from exc
    width, height = image.size
    if width < 1 or height < 1:
        raise _error("corrupt_header", f"{label}: image has zero size {width}x{height}")
    if limit is not None and width * height > limit:
        image.close()
        raise _error(
            "too_large",
            f"{label}: {width}x{height} = {width * height} pixels exceeds max_pixels={limit} "
            "(decompression-bomb guard); raise DecodeConfig.max_pixels if the image is genuine",
        )
    if getattr(image, "n_frames", 1) > 1:
        image.seek(0)  # animations and multi-page files: the first frame
    return image


def _exif_transpose(image: Image.Image, label: str) -> Image.Image:
    from PIL import ImageOps

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "Corrupt EXIF data" and friends: handled below
            transposed = ImageOps.exif_transpose(image)
    except Exception as exc:  # a corrupt EXIF block must not lose the pixels
        logger.warning("%s: ignoring unreadable EXIF orientation (%s)", label, exc)
        return image
    return transposed if transposed is not None else image


def to_rgb(
    image: Image.Image, *, background: tuple[int, int, int] = (255, 255, 255), label: str = "<image>"
) -> Image.Image:
    """Convert a loaded Pillow image of any mode to ``RGB`` (see the module docstring for the rules)."""
    from PIL import Image

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
            raise _error(
                "unsupported_mode", f"{label}: cannot convert mode {mode} with transparency to RGB ({exc})"
            ) from exc
        canvas = Image.new("RGBA", rgba.size, (*background, 255))
        return Image.alpha_composite(canvas, rgba).convert("RGB")
    try:
        return image.convert("RGB")  # 1, L, P, CMYK (Adobe-inverted handled by the JPEG decoder), YCbCr, ...
    except (ValueError, OSError) as exc:
        raise _error(
            "unsupported_mode", f"{label}: cannot convert image mode {mode!r} to RGB ({exc})"
        ) from exc


def _high_depth_to_rgb(
    image: Image.Image, background: tuple[int, int, int], transparency: object
) -> Image.Image:
    """I;16*, I and F images to 8-bit RGB; a tRNS grey key becomes ``background``."""
    import numpy as np
    from PIL import Image

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
