"""A plain callable ``str -> Sequence[int]`` behind ``EngineBackend``: token counts and ids, nothing else.

It has no decoder, no vocabulary, no offsets and no known normalization (:class:`Capabilities` all False),
so measurements that need them (round trip, byte fallback, unknown tokens, continued words, Rényi efficiency,
normalization) are reported as missing rather than guessed. What it does not do: decode or save.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokenloom.errors import TokenizerError
from tokenloom.text.backends.base import ByteFallback, Capabilities, flat_ids, list_lengths

if TYPE_CHECKING:
    import numpy as np

    from tokenloom.text.offsets import PieceWidths

__all__ = ["CallableBackend"]


class CallableBackend:
    """``fn(text) -> token ids`` (see module docstring)."""

    kind = "callable"
    algorithm = "unknown"
    vocab_size = 0
    unk_id: int | None = None
    byte_fallback: ByteFallback | None = None
    byte_ids: frozenset[int] = frozenset()
    partial_ids: frozenset[int] = frozenset()
    capabilities = Capabilities(decode=False, offsets=False, vocabulary=False, normalizer=False)
    encode_batch_with_offsets = None

    def __init__(self, fn: Callable[[str], Sequence[int]]) -> None:
        self._fn = fn

    @property
    def handle(self) -> Any:
        return self._fn

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        out = []
        for number, text in enumerate(texts):
            ids = self._fn(text)
            try:
                out.append([int(i) for i in ids])
            except (TypeError, ValueError):
                raise TokenizerError(
                    f"the tokenizer function returned {type(ids).__name__} for text #{number}; it must return a "
                    "sequence of int token ids"
                ) from None
        return out

    def count_batch(self, texts: Sequence[str]) -> np.ndarray:
        return list_lengths(self.encode_batch(texts))

    def encode_batch_flat(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        return flat_ids(self.encode_batch(texts))

    def decode_batch(self, batch: Sequence[Sequence[int]]) -> list[str]:
        raise TokenizerError(
            "a plain tokenizer function has no decoder; wrap an object with decode() instead"
        )

    def id_to_piece(self, token_id: int) -> str | None:
        return None

    def normalize_batch(self, texts: Sequence[str]) -> list[str]:
        return list(texts)  # unknown: capabilities.normalizer is False

    def piece_widths(self) -> PieceWidths | None:
        return None

    def hf_export(self) -> Any:
        raise TokenizerError("a plain tokenizer function has no tokenizer.json form")

    def verify_export(self, texts: Sequence[str]) -> int:
        return 0

    def save(self, folder: Path) -> dict[str, Any]:
        raise TokenizerError("a plain tokenizer function cannot be saved")
