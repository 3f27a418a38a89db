"""Atomic outputs: a reader sees the old file (or folder) or the new one, never half of one.

``atomic_write`` (and ``atomic_open``, for writers that stream) write to a temporary name in the destination
folder and rename it over the target;
``atomic_dir`` builds a whole folder under a temporary name and renames it into place at the end,
refusing to replace an existing folder unless ``overwrite=True``. This module does no other I/O.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from tokenloom.errors import ConfigError

__all__ = ["atomic_dir", "atomic_open", "atomic_write"]


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """A binary file to write ``path`` through: temp file in the same folder, fsync, rename on success."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"{str(path)!r} is a folder; give the name of a file to write")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; a written file gets the usual mode
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write(path: str | os.PathLike[str], data: bytes | str, *, encoding: str = "utf-8") -> Path:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_open`)."""
    with atomic_open(path) as f:
        f.write(data.encode(encoding) if isinstance(data, str) else data)
    return Path(path)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike[str], *, overwrite: bool = False) -> Iterator[Path]:
    """Yield a temporary folder beside ``path``; on success it replaces ``path``, on error it is removed.

    An existing ``path`` is refused with :class:`ConfigError` unless ``overwrite`` is true; it is
    checked before any work starts and replaced only after the new folder is complete.
    """
    path = Path(path)
    if path.exists() and not overwrite:
        raise ConfigError(
            f"output folder {str(path)!r} already exists; pass overwrite=True (--overwrite) to replace it"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    tmp.chmod(0o777 & ~_umask())  # mkdtemp makes 0700; the finished folder gets the usual mode
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if path.exists():
        old = path.with_name(f".{path.name}.old-{os.getpid()}")
        os.replace(path, old)
        os.replace(tmp, path)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, path)
