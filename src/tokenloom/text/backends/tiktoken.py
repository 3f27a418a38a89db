"""The tiktoken backend: a ``tiktoken.Encoding``, or any object shaped like one, behind ``EngineBackend``.

Shape it needs: ``encode(str) -> list[int]`` and ``decode(list[int]) -> str``; it uses, when present,
``encode_ordinary`` / ``encode_ordinary_batch`` (never special tokens: a special token's text is encoded as
text), ``decode_batch``, ``decode_single_token_bytes`` (the bytes of one id: offsets and partial-character
tokens come from them) and ``n_vocab``. Without ``n_vocab`` the vocabulary size is unknown (reported as
missing); without per-token bytes, offsets come from decoding prefixes (slow, exact for whole characters).

Family facts: tiktoken is byte-level BPE — no normalization, no unknown token, and the analog of byte
fallback is a token that is not a whole number of UTF-8 characters (:attr:`partial_ids`).
:func:`load_tiktoken_file` reads a local ``.tiktoken`` ranks file (base64 token, space, rank per line) with
a pre-tokenizer pattern; nothing is downloaded. What it does not do: train or write ranks files.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tokenloom.errors import TokenizerError
from tokenloom.text.backends.base import (
    ByteFallback,
    Capabilities,
    Offsets,
    OffsetsFn,
    decode_each,
    flat_ids,
    list_lengths,
    panic_safe,
    partial_char_ids,
)
from tokenloom.text.bytelevel import PATTERNS
from tokenloom.text.offsets import FlatBatch, PieceWidths, byte_offsets, decoder_offsets
from tokenloom.unicode.flat import text_bases

__all__ = ["TiktokenBackend", "load_tiktoken_file"]


class TiktokenBackend:
    """A tiktoken ``Encoding`` or an object shaped like one (see module docstring)."""

    kind = "tiktoken"
    algorithm = "bytelevel-bpe"
    byte_fallback: ByteFallback | None = "byte_level"
    byte_ids: frozenset[int] = frozenset()
    unk_id: int | None = None

    def __init__(self, encoding: Any) -> None:
        if not callable(getattr(encoding, "encode", None)) or not callable(getattr(encoding, "decode", None)):
            raise TokenizerError(
                f"{encoding!r} is not shaped like a tiktoken Encoding (needs encode and decode)"
            )
        self._enc = encoding
        n_vocab = getattr(encoding, "n_vocab", None)
        self.vocab_size: int = int(n_vocab) if isinstance(n_vocab, int) and n_vocab > 0 else 0
        self.capabilities = Capabilities(vocabulary=self.vocab_size > 0)
        self._one = getattr(encoding, "encode_ordinary", None) or encoding.encode
        self._bytes_of = getattr(encoding, "decode_single_token_bytes", None)
        self._nbytes: np.ndarray | None = None
        self._partial: frozenset[int] | None = None
        self._spelled: list[bytes | None] | None = None  # every id's bytes, read once for both tables

    @property
    def handle(self) -> Any:
        return self._enc

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        batch = getattr(self._enc, "encode_ordinary_batch", None)
        if batch is not None:
            return [list(ids) for ids in batch(list(texts), num_threads=os.cpu_count() or 1)]
        return [list(self._one(t)) for t in texts]

    def count_batch(self, texts: Sequence[str]) -> np.ndarray:
        return list_lengths(self.encode_batch(texts))

    def encode_batch_flat(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        return flat_ids(self.encode_batch(texts))

    @property
    def encode_batch_with_offsets(self) -> OffsetsFn:
        return self._with_offsets

    def _with_offsets(self, texts: Sequence[str]) -> list[tuple[list[int], Offsets]]:

        lists = self.encode_batch(texts)
        nbytes = self.token_lengths()
        if nbytes is None:
            return [
                (ids, decoder_offsets(self._decode_one, ids, t)) for ids, t in zip(lists, texts, strict=True)
            ]
        lengths, ids = flat_ids(lists)
        offsets, ok = byte_offsets(texts, lengths, ids, nbytes)  # [T, 2], [n]
        pairs = FlatBatch(lengths, ids, offsets, text_bases(texts)).pairs()
        for j in (j for j, good in enumerate(ok.tolist()) if not good):  # bytes do not spell the text
            pairs[j] = (lists[j], decoder_offsets(self._decode_one, lists[j], texts[j]))
        return pairs

    def _decode_one(self, ids: list[int]) -> str:
        return str(self._enc.decode(ids))

    def token_bytes(self, token_id: int) -> bytes | None:
        """The bytes of one id; ``None`` when the encoding has no such id or gives no per-token bytes."""
        if self._bytes_of is None:
            return None
        try:
            return bytes(self._bytes_of(token_id))
        except (KeyError, ValueError, IndexError):
            return None

    def _vocabulary_bytes(self) -> list[bytes | None]:
        """:meth:`token_bytes` of every id (one pass over the vocabulary, kept)."""
        if self._spelled is None:
            self._spelled = [self.token_bytes(i) for i in range(self.vocab_size)]
        return self._spelled

    def token_lengths(self) -> np.ndarray | None:
        """[V] bytes per id (0 for ids the encoding does not have); ``None`` without per-token bytes or size."""

        if self._nbytes is None and self._bytes_of is not None and self.vocab_size:
            spelled = self._vocabulary_bytes()
            self._nbytes = np.fromiter((len(b or b"") for b in spelled), dtype=np.int64, count=len(spelled))
        return self._nbytes

    @property
    def partial_ids(self) -> frozenset[int]:
        if self._partial is None:
            spelled = enumerate(self._vocabulary_bytes())
            self._partial = partial_char_ids((i, b) for i, b in spelled if b is not None)
        return self._partial

    def decode_batch(self, batch: Sequence[Sequence[int]]) -> list[str]:
        return decode_each(self._enc, batch)

    def id_to_piece(self, token_id: int) -> str | None:
        raw = self.token_bytes(token_id)
        return None if raw is None else raw.decode("utf-8", errors="backslashreplace")

    def normalize_batch(self, texts: Sequence[str]) -> list[str]:
        return list(texts)  # tiktoken does not normalize

    def piece_widths(self) -> PieceWidths | None:
        return None  # offsets come from the tokens' bytes

    def hf_export(self) -> Any:
        raise TokenizerError("a tiktoken encoding has no tokenizer.json form here; evaluate it as it is")

    def verify_export(self, texts: Sequence[str]) -> int:
        return 0

    def save(self, folder: Path) -> dict[str, Any]:
        raise TokenizerError(
            "a tiktoken encoding cannot be saved as a tokenloom folder; keep its .tiktoken file"
        )


def read_ranks(path: Path) -> dict[bytes, int]:
    """A ``.tiktoken`` ranks file: one ``base64(token) rank`` per line; TokenizerError naming file and line."""
    ranks: dict[bytes, int] = {}
    try:
        lines = path.read_text(encoding="ascii").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise TokenizerError(f"{path}: not a .tiktoken ranks file ({exc})") from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        token, _, rank = line.partition(" ")
        try:
            ranks[base64.b64decode(token, validate=True)] = int(rank)
        except ValueError:
            raise TokenizerError(
                f"{path}:{number}: expected 'BASE64 RANK', got {line[:60]!r}; pass a tiktoken ranks file"
            ) from None
    if not ranks:
        raise TokenizerError(f"{path}: empty ranks file")
    return ranks


def load_tiktoken_file(
    path: str | os.PathLike[str], pattern: str, *, special_tokens: dict[str, int] | None = None
) -> TiktokenBackend:
    """A local ``.tiktoken`` ranks file with its split ``pattern`` as a backend: a name of
    :data:`tokenloom.text.bytelevel.PATTERNS` or a regex, used as given (tiktoken drops text it does not
    match, so give the pattern the file was made with)."""

    path = Path(path)
    if not path.is_file():
        raise TokenizerError(f"tiktoken ranks file {str(path)!r} does not exist")
    try:
        import tiktoken
    except ImportError:
        raise TokenizerError(
            f"{path}: reading a tiktoken ranks file needs tiktoken, which is not installed; pip install tiktoken "
            "(or tokenloom[tiktoken])"
        ) from None
    ranks = read_ranks(path)
    regex = PATTERNS.get(pattern, pattern)
    encoding = panic_safe(
        f"{path}: tiktoken refused the ranks file or the pattern {pattern!r} (a name: "
        f"{', '.join(PATTERNS)}, or a regex)",
        tiktoken.Encoding,
        path.stem,
        pat_str=regex,
        mergeable_ranks=ranks,
        special_tokens=dict(special_tokens or {}),
    )
    return TiktokenBackend(encoding)
