"""An object that keeps the ``Tokenizer`` contract itself (a proxy, a foreign wrapper) behind ``EngineBackend``.

The contract it keeps: ``encode_batch_with_offsets(texts) -> [(ids, offsets)]`` with code-point offsets whose
byte pieces already carry their character's span (applying the byte-run rule again changes nothing),
``decode(ids) -> str``, ``vocab_size`` and ``name``. Read when present: ``decode_batch``, ``normalize_batch``
or ``normalize``, ``byte_fallback_ids``, ``fallback_ids`` (when it differs from ``byte_fallback_ids``: the
partial-character tokens of a byte-level vocabulary), ``unk_id``, ``engine``, ``algorithm`` and
``capabilities``. Every id comes from ``encode_batch_with_offsets``: it is the one encoding call the object
is asked for. What it does not do: save or export.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from tokenloom.errors import TokenizerError
from tokenloom.text.backends.base import (
    ByteFallback,
    Capabilities,
    Offsets,
    OffsetsFn,
    decode_each,
    flat_ids,
    list_lengths,
)

if TYPE_CHECKING:
    import numpy as np

    from tokenloom.text.offsets import PieceWidths

__all__ = ["ContractBackend", "OffsetsTokenizer"]


@runtime_checkable
class OffsetsTokenizer(Protocol):
    """The least an object keeping the Tokenizer contract has (see the module docstring)."""

    def encode_batch_with_offsets(self, texts: list[str], /) -> Sequence[tuple[Sequence[int], Offsets]]: ...

    def decode(self, ids: list[int], /) -> str: ...


class ContractBackend:
    """An :class:`OffsetsTokenizer` object (see the module docstring)."""

    def __init__(self, obj: OffsetsTokenizer) -> None:
        self._obj = obj
        self.kind = str(getattr(obj, "engine", "unknown"))
        self.algorithm = str(getattr(obj, "algorithm", "unknown"))
        self.vocab_size = int(getattr(obj, "vocab_size", 0) or 0)
        self.unk_id: int | None = getattr(obj, "unk_id", None)
        self.byte_ids: frozenset[int] = frozenset(getattr(obj, "byte_fallback_ids", ()))
        fallback = frozenset(getattr(obj, "fallback_ids", self.byte_ids))
        self.byte_fallback: ByteFallback | None = "byte_pieces" if self.byte_ids else None
        self.partial_ids: frozenset[int] = frozenset()
        if fallback != self.byte_ids:  # a byte-level vocabulary: its partial-character tokens
            self.byte_fallback, self.partial_ids = "byte_level", fallback
        self._normalize = getattr(obj, "normalize_batch", None)
        self._normalize_one = getattr(obj, "normalize", None)
        given = getattr(obj, "capabilities", None)
        self.capabilities: Capabilities = (
            given
            if isinstance(given, Capabilities)
            else Capabilities(
                vocabulary=self.vocab_size > 0,
                normalizer=self._normalize is not None or self._normalize_one is not None,
            )
        )

    @property
    def handle(self) -> Any:
        return self._obj

    def _pairs(self, texts: Sequence[str]) -> list[tuple[list[int], Offsets]]:
        got = self._obj.encode_batch_with_offsets(list(texts))
        return [([int(i) for i in ids], [(int(s), int(e)) for s, e in offs]) for ids, offs in got]

    @property
    def encode_batch_with_offsets(self) -> OffsetsFn:
        return self._pairs

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [ids for ids, _ in self._pairs(texts)]

    def count_batch(self, texts: Sequence[str]) -> np.ndarray:
        return list_lengths(self.encode_batch(texts))

    def encode_batch_flat(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        return flat_ids(self.encode_batch(texts))

    def decode_batch(self, batch: Sequence[Sequence[int]]) -> list[str]:
        return decode_each(self._obj, batch)

    def id_to_piece(self, token_id: int) -> str | None:
        return None

    def normalize_batch(self, texts: Sequence[str]) -> list[str]:
        if self._normalize is not None:
            return [str(t) for t in self._normalize(list(texts))]
        if self._normalize_one is not None:
            return [str(self._normalize_one(t)) for t in texts]
        return list(texts)  # unknown: capabilities.normalizer is False

    def piece_widths(self) -> PieceWidths | None:
        return None  # offsets come from the object

    def hf_export(self) -> Any:
        raise TokenizerError(
            f"{type(self._obj).__name__} has no tokenizer.json form here; evaluate it as it is"
        )

    def verify_export(self, texts: Sequence[str]) -> int:
        return 0

    def save(self, folder: Path) -> dict[str, Any]:
        raise TokenizerError(f"{type(self._obj).__name__} cannot be saved as a tokenloom folder")
