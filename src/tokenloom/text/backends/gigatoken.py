"""The gigatoken backend: token ids from gigatoken's Rust engine, everything else from the reference engine.

gigatoken reads a ``tokenizer.json`` of byte-level BPE (a split pattern it has a fast pre-tokenizer for) or
of BPE with byte fallback (sentencepiece style), and answers ids only: :meth:`GigatokenBackend.encode_batch`,
:meth:`~GigatokenBackend.count_batch` and :meth:`~GigatokenBackend.encode_batch_flat` return its ids, the
latter two as flat NumPy arrays straight from the engine's own array (no Python int per token). Offsets,
decoding, normalization, the vocabulary facts, exports and saving are the reference backend's, so a
:class:`GigatokenBackend` keeps the whole :class:`~tokenloom.text.backends.base.EngineBackend` protocol.

:func:`gigatoken_backend` builds one for a reference backend — the tokenizers engine (``hf``), a
sentencepiece BPE model (through its exported ``tokenizer.json``, which encodes literal control-token text
as text, as sentencepiece does) or a tiktoken encoding (converted to the equivalent ``tokenizer.json``
first, ``tiktoken_json``) — or raises
:class:`EngineUnavailable` saying why it cannot (not installed, a kind it does not serve, a split pattern it
has no fast pre-tokenizer for). Whether its ids are right is not decided here: ``dispatch.py`` checks them
against the reference before using them. A batch the engine fails on is encoded by the reference (which
raises the error the user would have seen). What it does not do: offsets, decoding or training.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tokenloom.errors import TokenizerError
from tokenloom.text.backends.base import ByteFallback, Capabilities, EngineBackend, OffsetsFn
from tokenloom.text.bytelevel import PATTERNS
from tokenloom.text.ranks import tiktoken_json

if TYPE_CHECKING:
    from tokenloom.text.offsets import PieceWidths

__all__ = ["EngineUnavailable", "GigatokenBackend", "gigatoken_backend", "gigatoken_json", "serves"]

log = logging.getLogger(__name__)

_ONE_BY_ONE = (
    32  # batches of at most this many texts: one engine call per text (see GigatokenBackend._arrays)
)
# the ByteLevel pre-tokenizer with its own regex: GPT-2's pattern, which gigatoken knows in this form
_GPT2_BYTELEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}


class EngineUnavailable(TokenizerError):
    """The fast engine cannot serve this tokenizer; the message says why."""


def serves(reference: EngineBackend) -> str | None:
    """``None`` when gigatoken serves the kind of tokenizer ``reference`` is, else the reason it does not."""
    if reference.kind == "tiktoken":
        return None
    if reference.kind == "hf" and reference.algorithm == "bytelevel-bpe":
        return None
    byte_pieces = reference.algorithm == "bpe" and reference.byte_fallback == "byte_pieces"
    if reference.kind in ("hf", "sentencepiece") and byte_pieces:
        return None
    return (
        "gigatoken serves byte-level BPE, BPE with byte fallback and tiktoken encodings; this is "
        f"{reference.algorithm} on the {reference.kind} engine"
        + (" without byte fallback" if reference.algorithm == "bpe" else "")
    )


def gigatoken_json(config: dict[str, Any]) -> str:
    """A ``tokenizer.json`` (parsed) as gigatoken reads it: a split by GPT-2's own pattern followed by plain
    byte-level mapping becomes the equivalent ``ByteLevel`` pre-tokenizer with its regex (the form gigatoken
    recognises); everything else is passed as it is."""
    pre = config.get("pre_tokenizer") or {}
    steps = pre.get("pretokenizers") or [] if pre.get("type") == "Sequence" else []
    if len(steps) == 2 and steps[0].get("type") == "Split" and steps[1].get("type") == "ByteLevel":
        split, level = steps
        regex = (split.get("pattern") or {}).get("Regex")
        plain = not level.get("use_regex") and not level.get("add_prefix_space")
        if (
            regex == PATTERNS["gpt2"]
            and plain
            and split.get("behavior") == "Isolated"
            and not split.get("invert")
        ):
            config = {**config, "pre_tokenizer": dict(_GPT2_BYTELEVEL)}
    return json.dumps(config, ensure_ascii=False)


def _reference_json(reference: EngineBackend) -> dict[str, Any]:
    if reference.kind == "tiktoken":
        return tiktoken_json(reference.handle)
    loaded: dict[str, Any] = json.loads(reference.hf_export().to_str())
    return loaded


def gigatoken_backend(reference: EngineBackend) -> GigatokenBackend:
    """A :class:`GigatokenBackend` beside ``reference``; :class:`EngineUnavailable` naming why there is none."""
    why = serves(reference)
    if why is not None:
        raise EngineUnavailable(why)
    try:
        import gigatoken
    except ImportError:
        raise EngineUnavailable("gigatoken is not installed (pip install gigatoken)") from None
    try:
        data = gigatoken_json(_reference_json(reference))
    except TokenizerError as exc:
        raise EngineUnavailable(f"no tokenizer.json form for gigatoken: {exc}") from None
    try:
        engine = gigatoken.Tokenizer.from_json(data)
    except BaseException as exc:  # a Rust panic is a BaseException
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise EngineUnavailable(f"gigatoken does not read this tokenizer: {first[:300]}") from None
    return GigatokenBackend(reference, engine)


_NO_IDS = np.zeros(0, np.int64)


def _flat(ak: Any, got: Any, *, ids: bool) -> tuple[np.ndarray, np.ndarray]:
    """([n] tokens per text, [T] ids; no ids unless ``ids``) of the engine's jagged array: read from its
    offsets and content buffers when it is the usual list-offset layout (no copy but the int64 cast;
    ``ak.num`` / ``ak.flatten`` cost as much again as encoding a batch of 256 lines), through awkward's
    functions otherwise."""
    layout = got.layout
    if isinstance(layout, ak.contents.ListOffsetArray) and isinstance(layout.content, ak.contents.NumpyArray):
        offsets = np.asarray(layout.offsets.data)  # [n + 1]
        lengths = np.diff(offsets).astype(np.int64)  # [n]
        if not ids:
            return lengths, _NO_IDS
        return lengths, np.asarray(layout.content.data)[offsets[0] : offsets[-1]].astype(np.int64)  # [T]
    lengths = np.asarray(ak.num(got, axis=1), dtype=np.int64)
    return lengths, np.asarray(ak.flatten(got, axis=1), dtype=np.int64) if ids else _NO_IDS


class GigatokenBackend:
    """Ids from gigatoken, the rest from ``reference`` (see the module docstring)."""

    def __init__(self, reference: EngineBackend, engine: Any) -> None:
        self._ref = reference
        self._engine = engine
        self._capabilities = replace(reference.capabilities, flat=True)  # ids come as arrays

    kind = "gigatoken"

    @property
    def reference(self) -> EngineBackend:
        return self._ref

    @property
    def algorithm(self) -> str:
        return self._ref.algorithm

    @property
    def vocab_size(self) -> int:
        return self._ref.vocab_size

    @property
    def capabilities(self) -> Capabilities:
        return self._capabilities

    @property
    def unk_id(self) -> int | None:
        return self._ref.unk_id

    @property
    def byte_fallback(self) -> ByteFallback | None:
        return self._ref.byte_fallback

    @property
    def byte_ids(self) -> frozenset[int]:
        return self._ref.byte_ids

    @property
    def partial_ids(self) -> frozenset[int]:
        return self._ref.partial_ids

    @property
    def handle(self) -> Any:
        return self._engine

    def _arrays(self, texts: Sequence[str], *, ids: bool = True) -> tuple[np.ndarray, np.ndarray] | None:
        """([n] tokens per text, [T] ids; no ids unless ``ids``) from the engine; ``None`` when the engine
        failed. A batch call has a fixed cost (its jagged array, a per-call cache: 0.5–4 ms), so a few
        texts are encoded one by one."""
        import awkward as ak

        try:
            if len(texts) <= _ONE_BY_ONE:
                parts = [self._engine.encode(text) for text in texts]
                lengths = np.fromiter(map(len, parts), dtype=np.int64, count=len(parts))
                return lengths, np.concatenate(parts).astype(np.int64) if ids else _NO_IDS
            return _flat(ak, self._engine.encode_batch(list(texts)), ids=ids)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # the reference encodes the batch (and raises the user's error)
            log.debug("gigatoken failed on a batch (%s); the reference engine encodes it", exc)
            return None

    def encode_batch_flat(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        if not texts:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        got = self._arrays(texts)
        return self._ref.encode_batch_flat(texts) if got is None else got

    def count_batch(self, texts: Sequence[str]) -> np.ndarray:
        """[n] tokens per text from the engine's offsets alone: its ids are not copied."""
        if not texts:
            return np.zeros(0, np.int64)
        got = self._arrays(texts, ids=False)
        return self._ref.count_batch(texts) if got is None else got[0]

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        lengths, ids = self.encode_batch_flat(texts)
        flat: list[int] = ids.tolist()
        ends: list[int] = np.cumsum(lengths).tolist()
        return [flat[e - n : e] for e, n in zip(ends, lengths.tolist(), strict=True)]

    @property
    def encode_batch_with_offsets(self) -> OffsetsFn | None:
        return self._ref.encode_batch_with_offsets

    def decode_batch(self, batch: Sequence[Sequence[int]]) -> list[str]:
        return self._ref.decode_batch(batch)

    def id_to_piece(self, token_id: int) -> str | None:
        return self._ref.id_to_piece(token_id)

    def normalize_batch(self, texts: Sequence[str]) -> list[str]:
        return self._ref.normalize_batch(texts)

    def piece_widths(self) -> PieceWidths | None:
        return self._ref.piece_widths()

    def hf_export(self) -> Any:
        return self._ref.hf_export()

    def verify_export(self, texts: Sequence[str]) -> int:
        return self._ref.verify_export(texts)

    def save(self, folder: Path) -> dict[str, Any]:
        return self._ref.save(folder)
