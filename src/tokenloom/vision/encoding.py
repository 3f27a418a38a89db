"""How a stored view is encoded inside a shard: raw uint8, or JPEG / WebP / PNG bytes, and back.

``PreprocessConfig.encoding`` picks one for a whole run (full views and eval crops alike):

* ``"raw"``: the uint8 ``[3, h, w]`` pixels as they are (the default; memory-mapped, no decode on read);
* ``"jpeg"``: baseline JPEG, 4:2:0 chroma subsampling, ``quality`` 1..100 (default 90), no metadata;
* ``"webp"``: lossy WebP, ``quality`` 1..100 (default 90), encoder method 4, no metadata;
* ``"png"``: lossless PNG, zlib level 6 (decodes to the raw pixels exactly).

Encoding uses Pillow with every setting fixed, so the same view always encodes to the same bytes (reruns
stay byte-identical). :func:`decode_view` (Pillow, the reference) is the inverse; it returns
``uint8 [h, w, 3]`` (channels last, as the decoder writes it). :func:`decode_stored` is what readers call:
``[3, h, w]``, with JPEGs decoded by torchvision's ``decode_jpeg`` (the same libjpeg-turbo output as Pillow,
bit for bit — the tests compare them on the sample photos — at about half the time per view). This module neither chooses what to store (``store.py``) nor
writes files (``_chunks.py``).

Shape legend: ``h, w`` stored size; ``nbytes`` length of one encoded image.
"""

from __future__ import annotations

import difflib
import io
import warnings
from dataclasses import dataclass
from typing import Literal

import numpy as np
from PIL import Image

from tokenloom.errors import ConfigError

__all__ = [
    "DEFAULT_QUALITY",
    "ENCODINGS",
    "LOSSY",
    "EncodedView",
    "Encoding",
    "check_encoding",
    "decode_stored",
    "decode_view",
    "encode_view",
    "psnr",
]

Encoding = Literal["raw", "jpeg", "webp", "png"]
ENCODINGS: tuple[str, ...] = ("raw", "jpeg", "webp", "png")
LOSSY: tuple[str, ...] = ("jpeg", "webp")
DEFAULT_QUALITY = 90
_FORMATS = {"jpeg": "JPEG", "webp": "WEBP", "png": "PNG"}


@dataclass(frozen=True)
class EncodedView:
    """One encoded image: the ``[3, h, w]`` shape it decodes to and its bytes ``uint8 [nbytes]``."""

    shape: tuple[int, int, int]
    data: np.ndarray


def check_encoding(encoding: str, quality: int | None) -> int | None:
    """Validate an ``(encoding, quality)`` pair; returns the quality to use (``None`` for lossless ones)."""
    if encoding not in ENCODINGS:
        close = difflib.get_close_matches(str(encoding), ENCODINGS, n=1, cutoff=0.5)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ConfigError(
            f"unknown encoding (--encode) {encoding!r}: pass one of {', '.join(ENCODINGS)}{hint}"
        )
    if encoding not in LOSSY:
        if quality is not None:
            raise ConfigError(
                f"quality (--quality) {quality!r} applies to the lossy encodings only ({', '.join(LOSSY)}); "
                f"drop it for --encode {encoding}"
            )
        return None
    if quality is None:
        return DEFAULT_QUALITY
    if isinstance(quality, bool) or not isinstance(quality, int) or not 1 <= quality <= 100:
        raise ConfigError(
            f"quality (--quality) {quality!r} is out of range for --encode {encoding}: "
            f"pass an integer in 1..100 (default {DEFAULT_QUALITY})"
        )
    return quality


def encode_view(view: np.ndarray, encoding: Encoding, quality: int | None) -> EncodedView:
    """``uint8 [3, h, w]`` -> its encoded bytes (deterministic: fixed settings, no metadata)."""

    if encoding == "raw":
        raise ConfigError("encode_view: raw views are stored as they are, not encoded")
    quality = check_encoding(encoding, quality)
    c, h, w = view.shape
    if c != 3 or view.dtype != np.uint8:
        raise ValueError(f"encode_view expects uint8 [3, h, w], got {view.dtype} {view.shape}")
    pixels = np.ascontiguousarray(view.transpose(1, 2, 0))  # [3, h, w] -> [h, w, 3]
    options: dict[str, object]
    if encoding == "jpeg":
        options = {"quality": quality, "subsampling": "4:2:0", "optimize": False, "progressive": False}
    elif encoding == "webp":
        options = {"quality": quality, "method": 4, "lossless": False}
    else:
        options = {"compress_level": 6, "optimize": False}
    buf = io.BytesIO()
    Image.fromarray(pixels, "RGB").save(buf, format=_FORMATS[encoding], **options)
    data = np.frombuffer(buf.getvalue(), dtype=np.uint8).copy()  # [nbytes]
    return EncodedView((3, h, w), data)


def decode_view(data: np.ndarray | bytes, encoding: str, shape: tuple[int, ...]) -> np.ndarray:
    """Encoded bytes -> ``uint8 [h, w, 3]``; ``shape`` (``[3, h, w]``, from the manifest) is checked."""

    if encoding not in _FORMATS:
        raise ConfigError(f"cannot decode a stored view with encoding {encoding!r} ({', '.join(ENCODINGS)})")
    raw = data.tobytes() if isinstance(data, np.ndarray) else data
    with Image.open(io.BytesIO(raw), formats=[_FORMATS[encoding]]) as image:
        image.load()
        rgb = image if image.mode == "RGB" else image.convert("RGB")
        pixels = np.asarray(rgb)  # [h, w, 3]
    if (3, *pixels.shape[:2]) != tuple(shape):
        raise ConfigError(
            f"a stored {encoding} view decodes to {pixels.shape[1]}x{pixels.shape[0]} but the manifest "
            f"says {tuple(shape)}; the folder is damaged: rerun `tokenloom images preprocess` into a new folder"
        )
    return pixels


def decode_stored(data: np.ndarray, encoding: str, shape: tuple[int, ...]) -> np.ndarray:
    """Encoded bytes ``uint8 [nbytes]`` -> writable ``uint8 [3, h, w]`` (fast path of :func:`decode_view`:
    planar for JPEG, a channels-last view otherwise); ``shape`` is checked."""
    if encoding != "jpeg":
        return np.array(decode_view(data, encoding, shape)).transpose(2, 0, 1)  # [h, w, 3] -> [3, h, w]
    import torch

    try:
        from torchvision.io import ImageReadMode, decode_jpeg
    except ImportError:  # torchvision.io decoding is deprecated since 0.29; without it Pillow does the work
        return np.array(decode_view(data, encoding, shape)).transpose(2, 0, 1)
    buf = torch.from_numpy(np.ascontiguousarray(data)) if data.flags.writeable else torch.tensor(data)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # "moving to TorchCodec": fallback above
            pixels = decode_jpeg(buf, mode=ImageReadMode.RGB).numpy()  # [3, h, w]
    except (RuntimeError, ValueError):  # whatever libjpeg refuses, the reference path explains
        return np.array(decode_view(data, encoding, shape)).transpose(2, 0, 1)
    if pixels.shape != tuple(shape):
        decode_view(data, encoding, shape)  # raises the damaged-folder error
    return pixels


def psnr(reference: np.ndarray, other: np.ndarray) -> float:
    """Peak signal-to-noise ratio in dB of two uint8 images of one shape (``inf`` when equal)."""
    if reference.shape != other.shape:
        raise ValueError(f"psnr needs equal shapes, got {reference.shape} and {other.shape}")
    mse = float(np.mean((reference.astype(np.float64) - other.astype(np.float64)) ** 2))
    return float("inf") if mse == 0 else 10.0 * np.log10(255.0**2 / mse)
