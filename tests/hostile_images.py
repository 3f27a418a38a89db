"""Hand-built hostile image files (for the decode and fuzz tests): each reproduces a failure seen in the wild.

Every builder returns the bytes of one file; :data:`HOSTILE` maps a file name to its builder and
:func:`write_hostile` writes them all into a folder. Nothing here is a fixture: tests import it.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Callable
from pathlib import Path

import numpy as np
from PIL import Image

__all__ = ["HOSTILE", "mutate", "seed_images", "write_hostile"]


def _pixels(height: int, width: int, channels: int = 3) -> np.ndarray:
    """A smooth test pattern, [H, W, C] uint8."""
    y, x = np.mgrid[0:height, 0:width]
    planes = [(x * 7 + y * 3 + 40 * c) % 256 for c in range(channels)]
    return np.stack(planes, axis=2).astype(np.uint8)


def _encode(array: np.ndarray, fmt: str, **options: object) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(array).save(buf, fmt, **options)
    return buf.getvalue()


def _tiff_ifd_offsets(data: bytes) -> list[int]:
    """Offsets of the IFDs of a little-endian TIFF, in chain order."""
    assert data[:4] == b"II*\x00", "little-endian classic TIFF expected"
    offsets, offset = [], struct.unpack_from("<I", data, 4)[0]
    while offset:
        offsets.append(offset)
        (count,) = struct.unpack_from("<H", data, offset)
        offset = struct.unpack_from("<I", data, offset + 2 + 12 * count)[0]
    return offsets


def tiff_second_page_without_dimensions() -> bytes:
    """A 2-page TIFF whose second IFD lacks ImageWidth/ImageLength: counting frames raises
    ``TypeError: Missing dimensions``; the first page is a valid image."""
    first = Image.fromarray(_pixels(16, 24))
    second = Image.fromarray(_pixels(8, 8))
    buf = io.BytesIO()
    first.save(buf, "TIFF", save_all=True, append_images=[second])
    data = bytearray(buf.getvalue())
    ifd = _tiff_ifd_offsets(bytes(data))[1]
    (count,) = struct.unpack_from("<H", data, ifd)
    for k in range(count):
        entry = ifd + 2 + 12 * k
        (tag,) = struct.unpack_from("<H", data, entry)
        if tag in (256, 257):  # ImageWidth, ImageLength -> private tags nobody reads
            struct.pack_into("<H", data, entry, 65000 + tag - 256)
    return bytes(data)


def _psd(height: int, width: int, layer_block: bytes) -> bytes:
    """An 8-bit RGB PSD with the given layer-info block and a raw composite image."""
    header = b"8BPS" + struct.pack(">H6xHIIHH", 1, 3, height, width, 8, 3)
    layer_and_mask = struct.pack(">I", len(layer_block)) + layer_block
    composite = struct.pack(">H", 0) + _pixels(height, width).transpose(2, 0, 1).tobytes()  # raw, planar
    return (
        header
        + struct.pack(">I", 0)
        + struct.pack(">I", 0)
        + (struct.pack(">I", len(layer_and_mask)) + layer_and_mask)
        + composite
    )


def psd_with_two_layers() -> bytes:
    """A valid PSD with two grey layers: its frame count is 2 and ``seek(0)`` raises ``EOFError``
    (PSD frames start at 1), so only the frame that ``Image.open`` selected may be used."""
    height, width = 6, 5
    records = b""
    for _ in range(2):
        records += struct.pack(">iiii", 0, 0, height, width)  # top, left, bottom, right
        records += struct.pack(">H", 1) + struct.pack(">hI", 0, 2 + height * width)  # one channel (R)
        records += b"8BIMnorm" + bytes([255, 0, 0, 0])  # blend mode, opacity, clipping, flags, filler
        records += struct.pack(">I", 0)  # no extra data
    tiles = b"".join(struct.pack(">H", 0) + bytes([60 * (k + 1)]) * (height * width) for k in range(2))
    body = struct.pack(">h", 2) + records + tiles
    if len(body) % 2:
        body += b"\x00"
    return _psd(height, width, body)


def psd_layer_block_too_short() -> bytes:
    """A PSD that claims 40 layers in a 4-byte layer block: ``SyntaxError: Layer block too short``."""
    return _psd(6, 5, struct.pack(">h", 40) + b"\x00\x00")


def dds_unknown_fourcc() -> bytes:
    """A DDS header with a FourCC pixel format Pillow does not implement: ``NotImplementedError``."""
    header = bytearray(124)
    struct.pack_into(
        "<IIIIIII", header, 0, 124, 0x1007, 8, 8, 32, 0, 1
    )  # size, flags, h, w, pitch, depth, mips
    struct.pack_into("<II4s", header, 72, 32, 0x4, b"ZZZZ")  # pixel format: size, DDPF_FOURCC, fourcc
    struct.pack_into("<I", header, 104, 0x1000)  # caps: texture
    return b"DDS " + bytes(header) + bytes(64)


def icns_png_bomb() -> bytes:
    """An ICNS whose 1024x1024 slot holds a PNG declaring 60000x60000 pixels: loading it raises
    ``DecompressionBombError`` although the file is tiny."""
    png = bytearray(_encode(_pixels(4, 4), "PNG"))
    struct.pack_into(">II", png, 16, 60000, 60000)  # IHDR width, height (CRC left stale: Pillow reports it)
    import zlib

    struct.pack_into(">I", png, 29, zlib.crc32(bytes(png[12:29])) & 0xFFFFFFFF)
    block = b"ic10" + struct.pack(">I", 8 + len(png)) + bytes(png)
    return b"icns" + struct.pack(">I", 8 + len(block)) + block


def jpeg_extraneous_bytes() -> bytes:
    """A small valid JPEG with 5 junk bytes before its first DQT marker: libjpeg writes "Corrupt JPEG
    data: 5 extraneous bytes before marker 0xdb" to stderr (through torchvision's decoder) and decodes it."""
    data = _encode(_pixels(48, 48), "JPEG", quality=90)
    at = data.index(b"\xff\xdb")
    return data[:at] + b"\x00" * 5 + data[at:]


HOSTILE: dict[str, Callable[[], bytes]] = {
    "extraneous_bytes.jpg": jpeg_extraneous_bytes,
    "missing_dimensions.tif": tiff_second_page_without_dimensions,
    "two_layers.psd": psd_with_two_layers,
    "layer_block_too_short.psd": psd_layer_block_too_short,
    "unknown_fourcc.dds": dds_unknown_fourcc,
    "png_bomb.icns": icns_png_bomb,
}


def write_hostile(folder: Path) -> list[Path]:
    """Write every :data:`HOSTILE` file into ``folder``; returns their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, build in HOSTILE.items():
        (folder / name).write_bytes(build())
        paths.append(folder / name)
    return paths


SEED_FILES = {  # one real file per format from the shared edge-case images
    "jpeg": "hopper.jpg",
    "png": "hopper.png",
    "gif": "transparent.gif",
    "tiff": "hopper.tif",
    "webp": "hopper.webp",
    "bmp": "hopper.bmp",
}


def seed_images(edge: Path) -> dict[str, bytes]:
    """The bytes of one real file per fuzzed format (see :data:`SEED_FILES`)."""
    return {fmt: (edge / name).read_bytes() for fmt, name in SEED_FILES.items()}


def mutate(data: bytes, ops: list[tuple[str, int, int]]) -> bytes:
    """Apply mutations ``(op, position, value)``: ``flip`` (xor a bit), ``cut`` (truncate), ``insert``
    (a byte), ``dup`` (repeat a header slice of ``value % 32 + 1`` bytes); positions wrap around."""
    out = bytearray(data)
    for op, position, value in ops:
        if not out:
            break
        at = position % len(out)
        if op == "flip":
            out[at] ^= 1 << (value % 8)
        elif op == "cut":
            del out[at:]
        elif op == "insert":
            out[at:at] = bytes([value % 256])
        elif op == "dup":
            span = value % 32 + 1
            out[at:at] = out[at : at + span]
        else:
            raise ValueError(f"unknown mutation {op!r}")
    return bytes(out)
