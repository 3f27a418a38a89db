"""The ``EngineBackend`` protocol every tokenizer engine implements, and the error translation they share.

A backend wraps one engine object (a ``tokenizers.Tokenizer``, a ``SentencePieceProcessor``, a tiktoken
``Encoding`` or an object shaped like it, a ``transformers`` tokenizer, a plain callable) and answers in plain
Python types. What an engine cannot answer (a callable has no decoder, no vocabulary and no offsets) its
:class:`Capabilities` say, so that measurements needing it are reported as missing instead of guessed.
:class:`~tokenloom.text.tokenizer.Tokenizer` holds exactly one backend and never asks which engine it is;
:mod:`tokenloom.text.offsets` computes offsets from what a backend offers.

Contract of every backend: ids carry no BOS/EOS or other post-processing; offsets returned by
``encode_batch_with_offsets`` are the engine's own ``[start, end)`` code-point spans (byte pieces not yet
split, see :func:`tokenloom.text.offsets.split_byte_runs`); engine failures, Rust panics included, surface as
:class:`~tokenloom.errors.TokenizerError`. What this module does not do: implement an engine.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

import numpy as np

from tokenloom.errors import TokenizerError

if TYPE_CHECKING:
    from tokenloom.text.offsets import PieceWidths

__all__ = [
    "ByteFallback",
    "Capabilities",
    "EngineBackend",
    "Offsets",
    "OffsetsFn",
    "byte_level_bytes",
    "clear_input_errors",
    "decode_each",
    "first_difference",
    "flat_ids",
    "panic_safe",
    "partial_char_ids",
]

Offsets = list[tuple[int, int]]
OffsetsFn = Callable[[Sequence[str]], list[tuple[list[int], Offsets]]]
# how text the vocabulary cannot spell is encoded: "byte_pieces" = sentencepiece-style <0xNN> pieces,
# "byte_level" = GPT-2-style byte alphabet (every piece spells bytes), None = an unknown token
ByteFallback = Literal["byte_pieces", "byte_level"]


@dataclass(frozen=True)
class Capabilities:
    """What an engine can answer beyond token ids (every field True for ``tokenizers`` and sentencepiece)."""

    decode: bool = True  # decode_batch works: round trips can be checked
    offsets: bool = True  # token offsets (the engine's, or derived from its decoder): words can be aligned
    vocabulary: bool = True  # vocab_size is known: ids can be range-checked, Rényi efficiency computed
    normalizer: bool = True  # normalize_batch is the engine's own normalization (identity when it has none)
    flat: bool = False  # encode_batch_flat builds no per-text lists: a call of any size holds only its arrays


class EngineBackend(Protocol):
    """One tokenizer engine behind the interface :class:`~tokenloom.text.tokenizer.Tokenizer` uses."""

    @property
    def kind(self) -> str:
        """Engine name: "hf" | "sentencepiece" | "tiktoken" | "transformers" | "callable"."""
        ...

    @property
    def algorithm(self) -> str:
        """ "bpe" | "bytelevel-bpe" | "unigram" | "wordpiece" | "unknown"."""
        ...

    @property
    def vocab_size(self) -> int:
        """Ids are 0 .. vocab_size - 1 (0 when the engine does not say: ``capabilities.vocabulary`` is False)."""
        ...

    @property
    def capabilities(self) -> Capabilities:
        """What this engine can answer (see :class:`Capabilities`)."""
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
    def partial_ids(self) -> frozenset[int]:
        """Ids of tokens that are not whole UTF-8 characters when ``byte_fallback == "byte_level"`` (the
        byte-level analog of byte fallback), else empty."""
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

    def count_batch(self, texts: Sequence[str]) -> np.ndarray:
        """[n] int64 tokens per text: the lengths of :meth:`encode_batch`'s lists, built no faster way
        than the engine allows (no id lists where the engine can say how many)."""
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


def list_lengths(lists: Sequence[Sequence[Any]]) -> np.ndarray:
    """[n] int64 lengths of ``lists``: the ``count_batch`` of engines that only return lists."""
    return np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))


def flat_ids(lists: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """([n] lengths, [T] ids) of id lists: the ``encode_batch_flat`` of engines that only return lists."""

    lengths = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    ids = np.fromiter(chain.from_iterable(lists), dtype=np.int64, count=int(lengths.sum()))
    return lengths, ids


def decode_each(obj: Any, batch: Sequence[Sequence[int]]) -> list[str]:
    """``obj.decode_batch`` of the id lists where ``obj`` has one, else ``obj.decode`` list by list."""
    many = getattr(obj, "decode_batch", None)
    if many is not None:
        return [str(t) for t in many([list(ids) for ids in batch])]
    return [str(obj.decode(list(ids))) for ids in batch]


def partial_char_ids(token_bytes: Iterable[tuple[int, bytes]]) -> frozenset[int]:
    """Ids whose bytes are not a whole number of UTF-8 characters (a piece of a character at either end).

    In valid UTF-8 text, a token that decodes on its own starts on a character boundary (a lead byte) and ends
    on one, so whether a byte-level token splits a character is a property of its id alone."""
    out = []
    for token_id, raw in token_bytes:
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            out.append(token_id)
    return frozenset(out)


def _byte_level_table() -> dict[str, int]:
    """GPT-2's byte-level alphabet: printable bytes stand for themselves, the rest for U+0100 onward."""
    keep = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    shifted = [b for b in range(256) if b not in keep]
    table = {chr(b): b for b in keep}
    table.update({chr(0x100 + k): b for k, b in enumerate(shifted)})
    return table


_BYTE_LEVEL = _byte_level_table()


def byte_level_bytes(piece: str) -> bytes | None:
    """The bytes a byte-level piece (``"Ġthe"``) spells; ``None`` when it holds a character outside the alphabet
    (an added or special token written as plain text)."""
    try:
        return bytes(_BYTE_LEVEL[ch] for ch in piece)
    except KeyError:
        return None


def first_difference(want: Sequence[int], got: Sequence[int]) -> str:
    """Where two id sequences part: the first differing position and a few ids either side."""
    k = next((i for i, (a, b) in enumerate(zip(want, got, strict=False)) if a != b), min(len(want), len(got)))
    lo = max(0, k - 3)
    return (
        f"first difference at token {k} of {len(want)} vs {len(got)}: "
        f"{list(want[lo : k + 4])} vs {list(got[lo : k + 4])} (from token {lo})"
    )


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
