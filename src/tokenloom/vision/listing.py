"""Find images: a folder with class subfolders, a list file or a CSV -> sorted ``ImageItem(path, label)`` lists.

* :func:`list_folder`: classes are the sorted immediate subfolders (like torchvision's ImageFolder), files
  are found recursively; symbolic links to folders (a class folder that is a link, as to files) are
  followed, each real folder once (a link back to an ancestor does not loop); files directly in the root
  get label -1; files without an image suffix are
  returned separately so callers can report them (nothing is dropped silently);
* :func:`list_file`: one path per line (``#`` comments and blank lines skipped), labels -1;
* :func:`list_csv`: a CSV with a header (``path,label``); integer labels kept, other labels mapped to
  sorted class indices;
* :func:`list_items`: dispatch on what the source is.

Relative paths in list files and CSVs are relative to the file's folder. This module opens no image.
"""

from __future__ import annotations

import csv
import logging
import os
from pathlib import Path
from typing import NamedTuple

from tokenloom.errors import ConfigError

__all__ = ["IMAGE_EXTENSIONS", "ImageItem", "list_csv", "list_file", "list_folder", "list_items"]

logger = logging.getLogger(__name__)

IMAGE_EXTENSIONS = frozenset(
    [
        ".apng",
        ".avif",
        ".avifs",
        ".blp",
        ".bmp",
        ".bw",
        ".cur",
        ".dcx",
        ".dds",
        ".dib",
        ".fit",
        ".fits",
        ".flc",
        ".fli",
        ".ftc",
        ".ftu",
        ".gbr",
        ".gif",
        ".heic",
        ".icb",
        ".icns",
        ".ico",
        ".iim",
        ".im",
        ".j2c",
        ".j2k",
        ".jfif",
        ".jp2",
        ".jpc",
        ".jpe",
        ".jpeg",
        ".jpf",
        ".jpg",
        ".jpx",
        ".msp",
        ".pbm",
        ".pcd",
        ".pcx",
        ".pfm",
        ".pgm",
        ".png",
        ".pnm",
        ".ppm",
        ".psd",
        ".pxr",
        ".qoi",
        ".ras",
        ".rgb",
        ".rgba",
        ".sgi",
        ".tga",
        ".tif",
        ".tiff",
        ".vda",
        ".vst",
        ".webp",
        ".xbm",
        ".xpm",
    ]
)  # suffixes of every raster format Pillow (with its plugins) may open; other files are reported as ignored,
# never read. Left out on purpose: video (.mpg), vector and metafile stubs (.eps, .ps, .emf, .wmf) and
# scientific containers that need a registered handler (.h5, .hdf, .grib, .bufr).
NOT_IMAGES = frozenset([".bufr", ".emf", ".eps", ".grib", ".h5", ".hdf", ".mpeg", ".mpg", ".ps", ".wmf"])


def _identity(folder: Path) -> tuple[int, int]:
    stat = folder.stat()  # follows links: the real folder
    return stat.st_dev, stat.st_ino


class ImageItem(NamedTuple):
    """One image to read: its path and integer label (-1: no label)."""

    path: Path
    label: int


def list_folder(
    root: str | os.PathLike[str], *, extensions: frozenset[str] = IMAGE_EXTENSIONS
) -> tuple[list[ImageItem], list[str], list[Path]]:
    """Items under ``root`` (classes = sorted immediate subfolders), the class names, and ignored files.

    Files are found recursively and sorted; hidden files/folders are skipped; files whose extension is
    not in ``extensions`` are returned as the third element (for the caller to report, not lost silently).
    """
    root = Path(root)
    if not root.is_dir():
        raise ConfigError(f"image folder {str(root)!r} does not exist or is not a folder")
    classes = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    label_of = {name: i for i, name in enumerate(classes)}
    items: list[ImageItem] = []
    ignored: list[Path] = []
    # (device, inode) of each walked folder's ancestors: a link back into its own ancestry is not entered
    chains: dict[str, frozenset[tuple[int, int]]] = {str(root): frozenset({_identity(root)})}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        chain = chains.pop(dirpath)
        kept = []
        for d in dirnames:
            if d.startswith("."):
                continue
            try:
                identity = _identity(Path(dirpath) / d)
            except OSError:  # unreadable: os.walk skips it the same way it skips any unreadable folder
                continue
            if identity in chain:
                logger.warning("%s: not following a link back into its own parent folders", Path(dirpath) / d)
                continue
            chains[os.path.join(dirpath, d)] = chain | {identity}
            kept.append(d)
        dirnames[:] = kept
        rel = Path(dirpath).relative_to(root)
        label = label_of[rel.parts[0]] if rel.parts else -1
        for name in filenames:
            if name.startswith("."):
                continue
            path = Path(dirpath) / name
            if path.suffix.lower() in extensions:
                items.append(ImageItem(path, label))
            else:
                ignored.append(path)
    items.sort(key=lambda it: str(it.path))
    return items, classes, sorted(ignored)


def list_file(path: str | os.PathLike[str]) -> list[ImageItem]:
    """Items from a text file: one image path per line (relative paths are relative to the file); label -1."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the image list {str(path)!r}: {exc}") from exc
    return [
        ImageItem(path.parent / line.strip(), -1)
        for line in lines
        if line.strip() and not line.startswith("#")
    ]


def list_csv(
    path: str | os.PathLike[str], *, path_column: str = "path", label_column: str = "label"
) -> tuple[list[ImageItem], list[str]]:
    """Items from a CSV with a header (``path,label``); relative paths are relative to the CSV.

    Integer labels are kept; any other label strings become class indices in sorted order (the returned
    class names; empty when labels are integers). A missing column or an empty path names the line.
    """
    path = Path(path)
    with path.open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        fields = reader.fieldnames or []
        if path_column not in fields:
            raise ConfigError(f"{path}: no {path_column!r} column (columns: {fields}); pass path_column=...")
        rows = list(reader)
    raw_labels: list[str] = []
    for line, row in enumerate(rows, start=2):
        if not (row.get(path_column) or "").strip():
            raise ConfigError(f"{path}: line {line}: empty {path_column!r} value")
        raw_labels.append((row.get(label_column) or "").strip() if label_column in fields else "")
    if all(v.lstrip("-").isdigit() for v in raw_labels if v):
        classes: list[str] = []
        labels = [int(v) if v else -1 for v in raw_labels]
    else:
        classes = sorted({v for v in raw_labels if v})
        index = {name: i for i, name in enumerate(classes)}
        labels = [index[v] if v else -1 for v in raw_labels]
    items = [
        ImageItem(path.parent / row[path_column].strip(), lab) for row, lab in zip(rows, labels, strict=True)
    ]
    return items, classes


def list_items(source: str | os.PathLike[str]) -> tuple[list[ImageItem], list[str], list[Path]]:
    """Dispatch on ``source``: a folder, a ``.csv`` (path,label) or any other file (one path per line)."""
    source = Path(source)
    if source.is_dir():
        return list_folder(source)
    if not source.is_file():
        raise ConfigError(
            f"image source {str(source)!r} not found: pass a folder, a .csv (path,label) or a list"
        )
    if source.suffix.lower() == ".csv":
        items, classes = list_csv(source)
        return items, classes, []
    return list_file(source), [], []
