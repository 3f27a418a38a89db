"""Export a preprocessed folder as WebDataset tar shards (``images export-webdataset``).

Each stored image becomes three tar members sharing one key (the item's global index, 8 digits):
``{key}.png`` (lossless, default) or ``{key}.jpg`` (``quality``), ``{key}.cls`` (the label as decimal text)
and ``{key}.json`` (index, path, label, sha256 of the source file, stored shape). Tars are named
``shard-NNNNN.tar`` with ``samples_per_tar`` samples each, written atomically, with fixed member metadata
(mtime 0, uid/gid 0, mode 0644) so a rerun writes the same bytes. The ``webdataset`` library reads them
(``wds.WebDataset(urls).decode("rgb8")``). This module writes no other format and does not decode sources.
"""

from __future__ import annotations

import io
import json
import os
import tarfile
from pathlib import Path
from typing import Any, Literal

from PIL import Image

from tokenloom._atomic import atomic_open
from tokenloom.errors import ConfigError
from tokenloom.vision.data import ShardDataset

__all__ = ["export_webdataset"]

ImageFormat = Literal["png", "jpg"]


def _member(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = len(data), 0, 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    tar.addfile(info, io.BytesIO(data))


def _encode(image: Any, image_format: ImageFormat, quality: int) -> bytes:

    array = image.permute(1, 2, 0).numpy()  # [3, h, w] -> [h, w, 3]
    buf = io.BytesIO()
    if image_format == "png":
        Image.fromarray(array).save(buf, format="PNG", compress_level=6)
    else:
        Image.fromarray(array).save(buf, format="JPEG", quality=quality)
    return buf.getvalue()


def export_webdataset(
    shards: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    samples_per_tar: int = 1000,
    image_format: ImageFormat = "png",
    quality: int = 95,
) -> list[Path]:
    """Write the images of the preprocessed folder ``shards`` as WebDataset tars under ``out``; returns them."""
    if samples_per_tar < 1:
        raise ConfigError(f"samples_per_tar must be positive, got {samples_per_tar}")
    if image_format not in ("png", "jpg"):
        raise ConfigError(f"image_format must be 'png' or 'jpg', got {image_format!r}")
    if not 1 <= quality <= 100:
        raise ConfigError(f"quality must be in 1..100, got {quality}")
    dataset = ShardDataset(shards)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for t, start in enumerate(range(0, len(dataset), samples_per_tar)):
        path = out / f"shard-{t:05d}.tar"
        with atomic_open(path) as f, tarfile.open(fileobj=f, mode="w", format=tarfile.USTAR_FORMAT) as tar:
            for i in range(start, min(start + samples_per_tar, len(dataset))):
                row = dataset.rows[i]
                image = dataset.uint8(i)  # [3, h, w]
                key = f"{int(row['index']):08d}"
                meta = {k: row[k] for k in ("index", "path", "label", "sha256")}
                meta["shape"] = list(image.shape)
                _member(tar, f"{key}.{image_format}", _encode(image, image_format, quality))
                _member(tar, f"{key}.cls", str(int(row["label"])).encode())
                _member(tar, f"{key}.json", json.dumps(meta, sort_keys=True).encode())
        written.append(path)
    return written
