"""Write token shards in datatrove's layout, plus tokenloom's per-document sidecar.

One shard ``NAME`` is three files, each written atomically (temporary name, then rename):

- ``NAME.ds``: the documents' token ids, concatenated, little-endian ``uint16`` (vocabulary <= 65536)
  or ``uint32`` (datatrove's ``TokenizedFile``: 2 or 4 bytes a token);
- ``NAME.ds.index``: ``uint64`` little-endian document ends (the token count after each document, from
  the shard's start), as datatrove writes them;
- ``NAME.ds.docs.npy``: one row per document (:data:`DOC_DTYPE`): language, script, source (an index
  into the manifest's ``sources``), the document's input bytes (UTF-8) and its tokens.

:func:`token_dtype` picks the id type from the vocabulary size. What it does not do: tokenize, order
documents or write the manifest (``encode.py``, ``documents.py``, ``manifest.py``).
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tokenloom._atomic import atomic_open
from tokenloom.errors import ConfigError

__all__ = ["DOC_DTYPE", "ShardFile", "token_dtype", "write_shard"]

# per-document sidecar row: language, script, source index, input bytes (UTF-8), tokens
DOC_DTYPE = np.dtype(
    [("lang", "<U24"), ("script", "<U8"), ("source", "<i4"), ("bytes", "<i8"), ("tokens", "<i8")]
)


def token_dtype(vocab_size: int) -> np.dtype:
    """``<u2`` when every id of a ``vocab_size`` vocabulary fits 16 bits, else ``<u4``."""
    if not isinstance(vocab_size, int) or vocab_size < 1:
        raise ConfigError(f"the tokenizer's vocabulary size must be a positive int, got {vocab_size!r}")
    if vocab_size > 2**32:
        raise ConfigError(
            f"a vocabulary of {vocab_size} ids does not fit uint32 token shards; use a tokenizer of at most "
            f"{2**32} ids"
        )
    return np.dtype("<u2") if vocab_size <= 2**16 else np.dtype("<u4")


@dataclass(frozen=True)
class ShardFile:
    """A written shard file: its name in the folder, size and SHA-256 (kept in the manifest)."""

    name: str
    bytes: int
    sha256: str

    def as_dict(self) -> dict[str, object]:
        return {"name": self.name, "bytes": self.bytes, "sha256": self.sha256}


def _write(path: Path, data: bytes | np.ndarray) -> ShardFile:
    view = (np.ascontiguousarray(data).data if isinstance(data, np.ndarray) else memoryview(data)).cast("B")
    with atomic_open(path) as f:
        f.write(view)
    return ShardFile(path.name, len(view), hashlib.sha256(view).hexdigest())


def write_shard(
    folder: Path, name: str, tokens: np.ndarray, lengths: np.ndarray, meta: np.ndarray, dtype: np.dtype
) -> list[ShardFile]:
    """Write shard ``name``: ``tokens [T]`` (the documents' ids one after another, ``lengths [n]`` each) as
    ``dtype``, and the documents' sidecar rows ``meta [n]`` (DOC_DTYPE)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    if int(lengths.sum()) != len(tokens):
        raise ValueError(
            f"shard {name}: the lengths add up to {int(lengths.sum())} tokens, not {len(tokens)}"
        )
    tokens = np.asarray(tokens).astype(dtype, copy=False)  # [T]
    ends = np.cumsum(lengths).astype("<u8")  # [n_docs]
    sidecar = np.asarray(meta, dtype=DOC_DTYPE).copy()
    sidecar["tokens"] = lengths
    buf = io.BytesIO()
    np.save(buf, sidecar, allow_pickle=False)
    return [
        _write(folder / f"{name}.ds", tokens),
        _write(folder / f"{name}.ds.index", ends),
        _write(folder / f"{name}.ds.docs.npy", buf.getvalue()),
    ]
