"""Commit one chunk of preprocessing results: its ``.npy`` (the ok images), then its ``.jsonl`` (one row per
input item, the commit marker).

A local run (``shards.py``) and a Ray task (``_distribute.py``) write a chunk with this same code, so the
files and their bytes do not depend on where the chunk ran. Both files are written atomically (temporary
name, then rename). What it does not do: decode images or write the manifest.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tokenloom._atomic import atomic_open, atomic_write
from tokenloom.vision.encoding import EncodedView
from tokenloom.vision.store import pack

if TYPE_CHECKING:
    from tokenloom.vision.shards import PreprocessConfig

__all__ = ["relative_path", "write_chunk"]


def relative_path(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` in POSIX form, or the whole path when it lies outside ``root``."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def _atomic_npy(path: Path, array: Any) -> None:

    with atomic_open(path) as f:
        np.save(f, array, allow_pickle=False)


def write_chunk(
    shard_dir: Path,
    name: str,
    chunk: list[int],
    items: Sequence[Any],
    root: Path,
    results: Iterator[tuple],
    config: PreprocessConfig,
) -> int:
    """Consume this chunk's results in order; write its .npy then its .jsonl (the commit marker).

    ``items`` is indexed by global item index; ``results`` yields one ``_shard_work.Result`` per index of
    ``chunk``, in order. Returns the number of inputs in the chunk.
    """
    arrays: list[Any] = []
    rows: list[dict[str, Any]] = []
    for index in chunk:
        got_index, sha, array, kind, reason, said = next(results)
        assert got_index == index, (got_index, index)
        item = items[index]
        row: dict[str, Any] = {
            "index": index,
            "path": relative_path(item.path, root),
            "label": item.label,
            "sha256": sha,
            "warnings": said,
        }
        if array is None:
            row.update(status="rejected", kind=kind, reason=reason)
        elif isinstance(array, EncodedView):  # encoded bytes: shape is the decoded [3, h, w]
            row.update(status="ok", shape=list(array.shape), shard=f"{name}.npy", row=len(arrays))
            row.update(encoding=config.encoding, nbytes=int(array.data.size))
            arrays.append(array.data)
        else:
            row.update(status="ok", shape=list(array.shape), shard=f"{name}.npy", row=len(arrays))
            arrays.append(array)
        rows.append(row)
    encoded = config.encoding != "raw"  # encoded images of either store kind: one flat byte buffer
    packed, offsets = pack(arrays, store="full" if encoded else config.store, size=config.size)
    if config.store == "full" or encoded:  # rows address the flat buffer by offset (see store.py)
        for row in rows:
            if row["status"] == "ok":
                row["offset"] = offsets[row["row"]]
    _atomic_npy(shard_dir / f"{name}.npy", packed)  # [n, 3, S, S] or flat [sum(3·h·w)]
    atomic_write(shard_dir / f"{name}.jsonl", "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    return len(chunk)
