"""The ``EngineBackend`` protocol every tokenizer engine implements, and the error translation they share.

A backend wraps one engine object (a ``tokenizers.Tokenizer``, a ``SentencePieceProcessor``; later kinds:
tiktoken encodings, ``transformers`` tokenizers, plain callables) and answers in plain Python types.
:class:`~tokenloom.text.tokenizer.Tokenizer` holds exactly one backend and never asks which engine it is;
:mod:`tokenloom.text.offsets` computes offsets from what a backend offers.

Contract of every backend: ids carry no BOS/EOS or other post-processing; offsets returned by
``encode_batch_with_offsets`` are the engine's own ``[start, end)`` code-point spans (byte pieces not yet
split, see :func:`tokenloom.text.offsets.fix_byte_runs`); engine failures, Rust panics included, surface as
:class:`~tokenloom.errors.TokenizerError`. What this module does not do: implement an engine.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from tokenloom.errors import TokenizerError

if TYPE_CHECKING:
    import numpy as np

    from tokenloom.text.offsets import PieceWidths

__all__ = [
    "ByteFallback",
    "EngineBackend",
    "Offsets",
    "OffsetsFn",
    "clear_input_errors",
    "flat_ids",
    "panic_safe",
]

Offsets = list[tuple[int, int]]
OffsetsFn = Callable[[Sequence[str]], list[tuple[list[int], Offsets]]]
# how text the vocabulary cannot spell is encoded: "byte_pieces" = sentencepiece-style <0xNN> pieces,
# "byte_level" = GPT-2-style byte alphabet (every piece spells bytes), None = an unknown token
ByteFallback = Literal["byte_pieces", "byte_level"]


class EngineBackend(Protocol):
    """One tokenizer engine behind the interface :class:`~tokenloom.text.tokenizer.Tokenizer` uses."""

    @property
    def kind(self) -> str:
        """Engine name: "hf" | "sentencepiece" (later: "tiktoken", "transformers", "callable")."""
        ...

    @property
    def algorithm(self) -> str:
        """ "bpe" | "unigram" | "wordpiece" | "unknown"."""
        ...

    @property
    def vocab_size(self) -> int:
        """Ids are 0 .. vocab_size - 1."""
        ...

    @property
    def unk_id(self) -> int | None:
        """Id of the unknown token; None when there is none."""
        ...

    @property
    def byte_fallback(self) -> ByteFallback | None:
        """How unspellable text is encoded (see :data:`ByteFallback`)."""
        ...

    @property
    def byte_ids(self) -> frozenset[int]:
        """Ids of the 256 ``<0xNN>`` pieces when ``byte_fallback == "byte_pieces"``, else empty."""
        ...

    @property
    def handle(self) -> Any:
        """The engine object itself (read-only use by callers that need a native call)."""
        ...

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of each text, in one engine call."""
        ...

    def encode_batch_flat(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """([n] tokens per text, [T] ids one text after another) in the engine's fastest ids-only call."""
        ...

    @property
    def encode_batch_with_offsets(self) -> OffsetsFn | None:
        """The engine's ids and raw offsets per text, or ``None`` when the engine gives no offsets."""
        ...

    def decode_batch(self, batch: Sequence[Sequence[int]]) -> list[str]:
        """Text of each id sequence (ids already checked to be in range)."""
        ...

    def id_to_piece(self, token_id: int) -> str | None:
        """The piece (token string) of an id; ``None`` when the engine has no spelling for it."""
        ...

    def normalize_batch(self, texts: Sequence[str]) -> list[str]:
        """Each text after the engine's normalization, whitespace as the engine writes it (may be U+2581)."""
        ...

    def piece_widths(self) -> PieceWidths | None:
        """Width tables when offsets are running sums of piece lengths (see ``offsets``), else ``None``."""
        ...

    def hf_export(self) -> Any:
        """An equivalent ``tokenizers.Tokenizer``; TokenizerError when the engine has no such form."""
        ...

    def verify_export(self, texts: Sequence[str]) -> int:
        """Check :meth:`hf_export` id-for-id against the engine on ``texts``; 0 when nothing needs checking."""
        ...

    def save(self, folder: Path) -> dict[str, Any]:
        """Write the engine's files into ``folder``; returns entries for the ``tokenloom.json`` record."""
        ...


def flat_ids(lists: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """([n] lengths, [T] ids) of id lists: the ``encode_batch_flat`` of engines that only return lists."""
    from itertools import chain

    import numpy as np

    lengths = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    ids = np.fromiter(chain.from_iterable(lists), dtype=np.int64, count=int(lengths.sum()))
    return lengths, ids


def panic_safe(what: str, func: Any, *args: Any, **kwargs: Any) -> Any:
    """Call an engine function; any failure (Rust panics derive from BaseException) → TokenizerError."""
    try:
        return func(*args, **kwargs)
    except (KeyboardInterrupt, SystemExit, TokenizerError):
        raise
    except BaseException as exc:  # pyo3 PanicException is a BaseException
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TokenizerError(f"{what}: {first}") from None


_SURROGATE = re.compile("[\ud800-\udfff]")


@contextlib.contextmanager
def clear_input_errors(texts: Sequence[str]) -> Iterator[None]:
    """Engines reject lone surrogates with cryptic binding errors: name the text and index instead."""
    try:
        yield
    except (TypeError, RuntimeError, UnicodeEncodeError):
        for number, text in enumerate(texts):
            if not isinstance(text, str):
                raise TokenizerError(f"text #{number} is {type(text).__name__}, not str") from None
            bad = _SURROGATE.search(text)
            if bad:
                raise TokenizerError(
                    f"text #{number} has a lone surrogate U+{ord(bad.group()):04X} at index {bad.start()}, which "
                    "is not Unicode text and cannot be encoded as UTF-8; decode your input with "
                    "errors='replace' or 'surrogatepass' handling first"
                ) from None
        raise
