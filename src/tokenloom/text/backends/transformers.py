"""The ``transformers`` backend: a tokenizer loaded by the user (fast or slow) behind ``EngineBackend``.

Ids are exactly what the tokenizer gives for ``tok(texts, add_special_tokens=False)`` (one batch call; no
BOS/EOS, whatever its post-processor would add); text decodes with ``batch_decode`` keeping special tokens
and without clean-up of tokenization spaces, so a round trip is judged on what the tokenizer really returns.
A fast tokenizer (``is_fast``, backed by a ``tokenizers.Tokenizer``) gives its own offsets, and its vocabulary
facts (algorithm, byte pieces, byte-level partial-character tokens, normalizer) are read from that pipeline;
a slow one (Python or sentencepiece) gives offsets through its decoder (:func:`~tokenloom.text.offsets.
decoder_offsets`, slow) and its normalization is unknown (reported as missing). Loading a folder:
:func:`load_transformers_folder` (``AutoTokenizer.from_pretrained(folder, local_files_only=True)``: nothing is
downloaded). What it does not do: train or save.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokenloom.errors import TokenizerError
from tokenloom.text.backends.base import (
    ByteFallback,
    Capabilities,
    Offsets,
    OffsetsFn,
    flat_ids,
    list_lengths,
    panic_safe,
)
from tokenloom.text.backends.hf import HFBackend
from tokenloom.text.offsets import PieceWidths, decoder_offsets

if TYPE_CHECKING:
    import numpy as np

__all__ = ["TransformersBackend", "load_transformers_folder"]

_BYTE_RE = re.compile(r"^<0x[0-9A-F]{2}>$")


class TransformersBackend:
    """A ``transformers`` tokenizer (see module docstring)."""

    kind = "transformers"

    def __init__(self, tok: Any) -> None:
        self._tok = tok
        inner = getattr(tok, "backend_tokenizer", None) if getattr(tok, "is_fast", False) else None

        self._hf = HFBackend(inner) if inner is not None else None
        self.vocab_size: int = len(tok)
        unk = getattr(tok, "unk_token_id", None)
        self.unk_id: int | None = unk if isinstance(unk, int) and 0 <= unk < self.vocab_size else None
        if self._hf is not None:
            self.algorithm: str = self._hf.algorithm
            self.byte_ids: frozenset[int] = self._hf.byte_ids
            self.byte_fallback: ByteFallback | None = self._hf.byte_fallback
        else:
            self.algorithm = "unknown"
            found = [i for p, i in tok.get_vocab().items() if _BYTE_RE.match(p)]
            self.byte_ids = frozenset(found) if len(found) == 256 else frozenset()
            self.byte_fallback = "byte_pieces" if self.byte_ids else None
        self.capabilities = Capabilities(normalizer=self._hf is not None)

    @property
    def handle(self) -> Any:
        return self._tok

    @property
    def partial_ids(self) -> frozenset[int]:
        return self._hf.partial_ids if self._hf is not None else frozenset()

    def _call(self, texts: Sequence[str], *, offsets: bool) -> Any:
        return self._tok(
            list(texts), add_special_tokens=False, return_attention_mask=False, return_token_type_ids=False,
            return_offsets_mapping=offsets,
        )  # fmt: skip

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [list(ids) for ids in self._call(texts, offsets=False)["input_ids"]] if texts else []

    def count_batch(self, texts: Sequence[str]) -> np.ndarray:
        return list_lengths(self.encode_batch(texts))

    def encode_batch_flat(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        return flat_ids(self.encode_batch(texts))

    @property
    def encode_batch_with_offsets(self) -> OffsetsFn:
        return self._with_offsets

    def _with_offsets(self, texts: Sequence[str]) -> list[tuple[list[int], Offsets]]:
        if not texts:
            return []
        if self._hf is None:  # slow tokenizers give no offsets: ask the decoder
            lists = self.encode_batch(texts)
            return [
                (ids, decoder_offsets(self._decode_one, ids, t)) for ids, t in zip(lists, texts, strict=True)
            ]
        enc = self._call(texts, offsets=True)
        return [
            (list(ids), [(int(s), int(e)) for s, e in spans])
            for ids, spans in zip(enc["input_ids"], enc["offset_mapping"], strict=True)
        ]

    def _decode_one(self, ids: list[int]) -> str:
        return self.decode_batch([ids])[0]

    def decode_batch(self, batch: Sequence[Sequence[int]]) -> list[str]:
        if not batch:
            return []
        out = self._tok.batch_decode(
            [list(ids) for ids in batch], skip_special_tokens=False, clean_up_tokenization_spaces=False
        )
        return [str(t) for t in out]

    def id_to_piece(self, token_id: int) -> str | None:
        piece = self._tok.convert_ids_to_tokens(int(token_id))
        return None if piece is None else str(piece)

    def normalize_batch(self, texts: Sequence[str]) -> list[str]:
        return self._hf.normalize_batch(texts) if self._hf is not None else list(texts)

    def piece_widths(self) -> PieceWidths | None:
        return None  # offsets come from the tokenizer (fast) or its decoder (slow)

    def hf_export(self) -> Any:
        if self._hf is None:
            raise TokenizerError(
                "a slow transformers tokenizer has no tokenizer.json form; use its own files"
            )
        return self._hf.hf_export()

    def verify_export(self, texts: Sequence[str]) -> int:
        return 0

    def save(self, folder: Path) -> dict[str, Any]:
        raise TokenizerError("save a transformers tokenizer with its own save_pretrained")


def load_transformers_folder(folder: str | os.PathLike[str]) -> TransformersBackend:
    """``AutoTokenizer.from_pretrained(folder, local_files_only=True)``; TokenizerError naming the folder."""
    path = Path(folder)
    if not path.is_dir():
        raise TokenizerError(
            f"transformers folder {str(path)!r} does not exist or is not a folder; pass a folder written by "
            "save_pretrained (nothing is downloaded)"
        )
    from transformers import AutoTokenizer

    tok = panic_safe(
        f"{path}: transformers could not load a tokenizer from this folder",
        AutoTokenizer.from_pretrained, str(path), local_files_only=True,
    )  # fmt: skip
    return TransformersBackend(tok)
