"""Decode any image file robustly to an RGB ``torch.uint8`` tensor ``[3, H, W]``.

What :func:`load_image` does, in order:

1. reads the file (or takes the bytes) — a missing or empty file is an :class:`ImageDecodeError`;
2. identifies it with Pillow — a non-image, a corrupt header, a decompression bomb (more pixels than
   ``DecodeConfig.max_pixels``) or a zlib-bomb chunk is an :class:`ImageDecodeError` naming file and cause;
3. uses the frame ``Image.open`` selects: the first frame of animations and multi-page files, the
   composite of a layered PSD. The frame count is never read, so a file whose later frames are broken
   (a TIFF whose second page has no dimensions, a PSD with a bad layer block) still gives its first frame;
4. for JPEGs, when ``target_size`` is given and ``DecodeConfig.draft`` is on, decodes at 1/2, 1/4 or 1/8
   scale in the DCT domain (``Image.draft``) while keeping the shorter side >= ``target_size`` — the
   caller resizes afterwards anyway, and this is several times faster on large photos;
5. loads the pixels — truncated or broken data is an :class:`ImageDecodeError` (``truncated``,
   ``corrupt``). Fast path: full-size RGB/grayscale JPEGs that end with their EOI marker are decoded by
   torchvision's ``decode_jpeg`` (libjpeg-turbo straight into a tensor, ~1.4x faster than Pillow + copy);
   everything else, and anything ``decode_jpeg`` declines, takes the Pillow path, which is also the
   reference (``DecodeConfig(backend="pil")`` / :func:`decode_to_array`) the tests compare it against;
6. applies the EXIF orientation (JPEG APP1 and PNG eXIf); a corrupt EXIF block is ignored with a warning;
7. converts every mode to RGB, compositing transparency over ``DecodeConfig.background`` and scaling high
   bit depths to 8 bits (:func:`tokenloom.vision.modes.to_rgb` states the rules).

Failures: every exception raised while opening, decoding or converting (Pillow raises ``OSError``,
``ValueError``, ``SyntaxError``, ``EOFError``, ``TypeError``, ``NotImplementedError``, ``MemoryError``,
``DecompressionBombError`` and more on hostile files) becomes an :class:`ImageDecodeError` whose ``kind``
(:data:`~tokenloom.errors.ImageErrorKind`) says why and whose message keeps the library's own; nothing
else leaves :func:`load_image` (``KeyboardInterrupt`` aside). Warnings: Python warnings and C-library
messages on stderr during the decode (libjpeg's "Corrupt JPEG data ...") are captured, never printed
(``tokenloom.vision._capture``); pass ``warnings=[]`` to receive them, otherwise they are logged at INFO.
No time limit applies here: :func:`tokenloom.vision.shards.preprocess_images` bounds each file.

The result is a ``[3, H, W]`` uint8 tensor, normally a channels-last view (strides ``(1, 3W, 3)``) of the
decoded ``[H, W, 3]`` buffer — the layout torchvision's uint8 resize is fastest on; call ``.contiguous()``
if you need the standard layout.
This module does not resize, crop or normalize (``transforms.py``) and does not cache.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import re
import threading
import warnings as pywarnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Literal, TypeVar

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from tokenloom.errors import ConfigError, ImageDecodeError, ImageErrorKind
from tokenloom.vision._capture import capture_diagnostics
from tokenloom.vision.modes import to_rgb

if TYPE_CHECKING:
    import torch

__all__ = [
    "DecodeConfig",
    "DecodeWarning",
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
ErrorKind = ImageErrorKind  # the one definition lives in tokenloom.errors
_T = TypeVar("_T")


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


class DecodeWarning(UserWarning):
    """Something was ignored to save the pixels (e.g. an unreadable EXIF orientation); recorded per file."""


def _error(kind: ErrorKind, label: str, detail: str) -> ImageDecodeError:
    return ImageDecodeError(detail, kind=kind, path=label)


def error_kind(exc: BaseException) -> str:
    """The ``kind`` of an :class:`ImageDecodeError` (e.g. ``"truncated"``); ``"error"`` for anything else."""
    return exc.kind if isinstance(exc, ImageDecodeError) else "error"


def read_source(source: ImageSource, *, name: str | None = None) -> tuple[bytes, str]:
    """The raw bytes of ``source`` and a name for messages; ``ImageDecodeError`` if unreadable or empty."""
    if isinstance(source, bytes | bytearray | memoryview):
        data, label = bytes(source), name or "<bytes>"
    elif isinstance(source, str | os.PathLike):
        label = name or str(source)
        try:
            data = Path(source).read_bytes()
        except FileNotFoundError:
            raise _error("missing", label, "file not found; check the path") from None
        except IsADirectoryError:
            raise _error("unreadable", label, "is a folder, not an image file") from None
        except OSError as exc:
            raise _error("unreadable", label, f"cannot read the file ({exc.strerror or exc})") from exc
    elif hasattr(source, "read"):
        label = name or str(getattr(source, "name", "<stream>"))
        try:
            data = source.read()
        except OSError as exc:
            raise _error("unreadable", label, f"cannot read the stream ({exc})") from exc
    else:
        raise TypeError(
            f"load_image takes a path, bytes or a binary file object, got {type(source).__name__}"
        )
    if not data:
        raise _error("empty", label, "empty file (0 bytes); it is not an image")
    return data, label


def load_image(
    source: ImageSource,
    *,
    target_size: int | None = None,
    config: DecodeConfig | None = None,
    name: str | None = None,
    warnings: list[str] | None = None,
) -> torch.Tensor:
    """Decode ``source`` (path, bytes or binary file) to an RGB uint8 tensor ``[3, H, W]``.

    ``target_size``: the shorter side the caller will resize to; JPEGs are then decoded at the smallest
    DCT scale (1/8, 1/4, 1/2) that keeps the shorter side >= ``target_size`` (``config.draft`` turns it off).
    ``name`` labels error messages when ``source`` is bytes. ``warnings``: a list that receives the
    decoder's warnings for this file (also when it fails); without it they are logged at INFO.
    Raises :class:`ImageDecodeError` naming the file, the kind and the cause for anything that is not a
    decodable image, and no other exception.
    """
    import torch

    config = config or DecodeConfig()
    _check_target(target_size)
    data, label = read_source(source, name=name)

    def decode() -> torch.Tensor:
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

    return _guarded(decode, label, config, warnings)


def decode_to_array(
    source: ImageSource,
    *,
    target_size: int | None = None,
    config: DecodeConfig | None = None,
    name: str | None = None,
    warnings: list[str] | None = None,
) -> np.ndarray:
    """The Pillow path of :func:`load_image` (the reference), as an ``[H, W, 3]`` uint8 numpy array."""
    config = config or DecodeConfig()
    _check_target(target_size)
    data, label = read_source(source, name=name)

    def decode() -> np.ndarray:
        image = _open(data, label, config)
        try:
            return _decode_pil(image, label, target_size, config)
        finally:
            image.close()

    return _guarded(decode, label, config, warnings)


def _guarded(decode: Callable[[], _T], label: str, config: DecodeConfig, sink: list[str] | None) -> _T:
    """Run ``decode`` under the pixel limit with diagnostics captured; any failure -> ImageDecodeError."""
    said: list[str] = []
    try:
        with capture_diagnostics() as said, _pixel_limit(config.max_pixels):
            return decode()
    except ImageDecodeError:
        raise
    except Exception as exc:  # hostile files raise anything; the cause is kept in the message
        raise _classify(exc, label, "pixels", config.max_pixels) from exc
    finally:  # the capture block has exited here, so ``said`` is complete
        if sink is not None:
            sink.extend(said)
        else:
            for message in said:
                logger.info("%s: %s", label, message)


def _check_target(target_size: int | None) -> None:
    if target_size is not None and (not isinstance(target_size, int) or target_size < 1):
        raise ConfigError(f"target_size must be a positive int (shorter side) or None, got {target_size!r}")


Phase = Literal["header", "pixels"]


def _classify(exc: BaseException, label: str, phase: Phase, limit: int | None) -> ImageDecodeError:
    """The :class:`ImageDecodeError` for an exception raised by a decoder while reading ``phase``."""

    name = type(exc).__name__
    text = str(exc).lower()
    if isinstance(exc, Image.DecompressionBombError):
        found = re.search(r"\((\d+) pixels\)", str(exc))  # Pillow: "Image size (N pixels) exceeds limit..."
        count = f"{found.group(1)} pixels" if found else f"too many pixels ({exc})"
        return _error(
            "too_large",
            label,
            f"{count} declared inside the file exceeds max_pixels={limit} (decompression-bomb guard); "
            "raise DecodeConfig.max_pixels (--max-pixels) if the image is genuine",
        )
    if isinstance(exc, MemoryError):
        return _error("too_large", label, f"out of memory while decoding ({name}: {exc})")
    if "too large" in text:  # e.g. a zlib bomb in a PNG text chunk
        return _error("too_large", label, f"a part of the file decompresses to too much data ({name}: {exc})")
    if isinstance(exc, UnidentifiedImageError):
        return _error("not_an_image", label, f"not a recognised image format or a corrupt header ({exc})")
    if isinstance(exc, NotImplementedError):
        return _error(
            "unsupported", label, f"a variant of the format Pillow does not implement ({name}: {exc})"
        )
    if isinstance(exc, EOFError) or "truncat" in text or "premature end" in text:
        where = "inside the header" if phase == "header" else "in the image data"
        return _error("truncated", label, f"truncated file, cut off {where} ({name}: {exc})")
    if phase == "header":
        return _error("corrupt_header", label, f"corrupt image header ({name}: {exc})")
    return _error("corrupt", label, f"corrupt image data ({name}: {exc})")


@contextmanager
def _pixel_limit(limit: int | None) -> Iterator[None]:
    """Decode under ``limit`` pixels: Pillow's global check is kept when it is looser than ``limit``
    (its DecompressionBombWarning silenced: our own check decides), lifted under a lock when stricter."""

    pil_limit = Image.MAX_IMAGE_PIXELS  # Pillow raises above 2x this, warns above 1x
    if pil_limit is None or (limit is not None and limit <= 2 * pil_limit):
        with pywarnings.catch_warnings():
            pywarnings.simplefilter("ignore", Image.DecompressionBombWarning)
            yield
        return
    with _OPEN_LOCK:  # MAX_IMAGE_PIXELS is process-global: decodes with a looser limit take turns
        saved = Image.MAX_IMAGE_PIXELS
        Image.MAX_IMAGE_PIXELS = None
        try:
            yield
        finally:
            Image.MAX_IMAGE_PIXELS = saved


def _decode_pil(image: Image.Image, label: str, target_size: int | None, config: DecodeConfig) -> np.ndarray:

    if config.draft and target_size is not None and image.format == "JPEG":
        image.draft("RGB", (target_size, target_size))  # both sides stay >= target_size
    try:
        image.load()
    except Exception as exc:
        raise _classify(exc, label, "pixels", config.max_pixels) from exc
    _check_pixels(image, label, config.max_pixels)  # a size known only after decoding (ICNS, ICO)
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


def import_decoders() -> None:
    """Import what decoding imports lazily (torch, torchvision's JPEG decoder), so that a per-file time
    limit measures decoding, not the first file's imports (an import cut off by the limit would also leave
    the modules half-imported)."""
    import torch  # noqa: F401

    with contextlib.suppress(ImportError):
        import torchvision.io  # noqa: F401


def _decode_jpeg_torchvision(data: bytes) -> torch.Tensor | None:
    import torch

    try:
        from torchvision.io import ImageReadMode, decode_jpeg
    except ImportError:  # torchvision.io decoding is deprecated since 0.29; without it Pillow does the work
        return None
    try:
        encoded = torch.frombuffer(bytearray(data), dtype=torch.uint8)  # [L] (a writable copy)
        with pywarnings.catch_warnings():
            pywarnings.simplefilter("ignore", DeprecationWarning)  # "moving to TorchCodec": fallback above
            return decode_jpeg(encoded, mode=ImageReadMode.RGB)  # [3, H, W]
    except (RuntimeError, ValueError):
        return None  # anything odd: Pillow decodes it or reports the cause


def _orientation(image: Image.Image, label: str) -> int:
    try:
        value = image.getexif().get(0x0112, 1)  # "Corrupt EXIF data" warnings are recorded per file
    except Exception as exc:  # a corrupt EXIF block must not lose the pixels
        pywarnings.warn(f"ignoring unreadable EXIF orientation ({exc})", DecodeWarning, stacklevel=1)
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
    """Identify the file and read its header (the caller holds :func:`_pixel_limit`)."""

    limit = config.max_pixels
    try:
        image = Image.open(io.BytesIO(data))
    except Exception as exc:
        error = _classify(exc, label, "header", limit)
        if error.kind == "not_an_image":
            head = data[:8].hex(" ")
            detail = f"not a recognised image format or a corrupt header (first bytes: {head})"
            error = _error("not_an_image", label, detail)
        raise error from exc
    try:
        _check_pixels(image, label, limit)
    except ImageDecodeError:
        image.close()
        raise
    return image  # the first frame (page, composite): the frame count is deliberately not read


def _check_pixels(image: Image.Image, label: str, limit: int | None) -> None:
    width, height = image.size
    if width < 1 or height < 1:
        raise _error("corrupt_header", label, f"image has zero size {width}x{height}")
    if limit is not None and width * height > limit:
        raise _error(
            "too_large",
            label,
            f"{width}x{height} = {width * height} pixels exceeds max_pixels={limit} "
            "(decompression-bomb guard); raise DecodeConfig.max_pixels (--max-pixels) if the image is genuine",
        )


def _exif_transpose(image: Image.Image, label: str) -> Image.Image:

    try:
        transposed = ImageOps.exif_transpose(image)  # "Corrupt EXIF data" warnings are recorded per file
    except Exception as exc:  # a corrupt EXIF block must not lose the pixels
        pywarnings.warn(f"ignoring unreadable EXIF orientation ({exc})", DecodeWarning, stacklevel=1)
        return image
    return transposed if transposed is not None else image
