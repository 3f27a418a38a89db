"""Encode one part of a corpus for a report: token ids, code-point offsets and round trips as flat arrays.

Two paths, chosen by an explicit argument, with the same output (``tests/test_fertility_encoding.py``
compares them on real text); the offsets themselves come from the two paths of
:mod:`tokenloom.text.offsets`:

- ``"reference"``: the Tokenizer contract — ``Tokenizer.encode_batch_with_offsets(path="reference")`` (the
  engine's own offsets, byte runs split text by text) and ``Tokenizer.decode`` per text. Any object with
  ``encode_batch_with_offsets`` and ``decode`` (a foreign tokenizer, a proxy) takes this path, its own
  ``encode_batch_with_offsets`` called as is.
- ``"engine"``: the tokenizer's backend (an engine without offsets, a plain function, gives ids only: its
  offsets are zeros and it is never decoded) (``Tokenizer.backend``) batch by batch — the fast offsets path
  (ids-only engine calls and piece widths where they hold, the engine's offsets otherwise) and the
  engine's batch decode, on all cores; with the plain decoder the round trip is known without decoding
  (the pieces spell the text: only U+2581 in the input decodes differently). ``"auto"`` takes it when
  the tokenizer has a backend and the reference path otherwise.

Offsets are returned in the end-to-end coordinates of :func:`tokenloom.fertility.metrics.text_bases`
(text j starts at ``bases[j]``), ready for :func:`tokenloom.fertility.metrics.count_flat`.
What it does not do: count or aggregate anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any, Literal

import numpy as np

from tokenloom.text.offsets import encode_fast, split_byte_runs
from tokenloom.text.tokenizer import Tokenizer

__all__ = ["EncodePath", "EncodedBatch", "encode_part", "engine_of", "split_byte_runs"]

EncodePath = Literal["auto", "engine", "reference"]


@dataclass(frozen=True)
class EncodedBatch:
    """One part under one tokenizer (T tokens in all, n texts)."""

    lengths: np.ndarray  # [n] tokens per text
    ids: np.ndarray  # [T] token ids, texts one after another
    offsets: np.ndarray  # [T, 2] [start, end) code points, end-to-end coordinates (text j from bases[j])
    decoded: list[str] | None  # decode(ids) per text; None when not asked for or not needed (see roundtrip)
    path: str  # "engine" or "reference"
    roundtrip: np.ndarray | None = None  # [n] bool decode(ids) == text; None when decoding was not asked for


def engine_of(tok: Any) -> Any | None:
    """The engine backend the engine path uses for ``tok`` (``Tokenizer.backend``, an
    :class:`~tokenloom.text.backends.EngineBackend`), or ``None`` when it has none (a foreign object)."""
    return getattr(tok, "backend", None)


def _reference_chunk(tok: Any, chunk: list[str]) -> tuple[list[list[int]], list[Any]]:
    """The Tokenizer contract: a tokenloom Tokenizer on its reference offsets path, any other object as is."""
    if isinstance(tok, Tokenizer):
        pairs = tok.encode_batch_with_offsets(chunk, path="reference")
    else:
        pairs = tok.encode_batch_with_offsets(chunk)
    return [list(i) for i, _ in pairs], [o for _, o in pairs]


def _flatten(
    lists: Sequence[Sequence[int]], spans: Sequence[Sequence[tuple[int, int]]]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = len(lists)
    lengths = np.fromiter(map(len, lists), dtype=np.int64, count=n)
    total = int(lengths.sum())
    ids = np.fromiter(chain.from_iterable(lists), dtype=np.int64, count=total)
    offsets = np.fromiter(chain.from_iterable(chain.from_iterable(spans)), dtype=np.int64, count=2 * total)
    return lengths, ids, offsets.reshape(total, 2)  # [n], [T], [T, 2]


def _split(lengths: np.ndarray, ids: np.ndarray) -> list[list[int]]:
    """Id lists per text from flat arrays."""
    flat = ids.tolist()
    ends = np.cumsum(lengths).tolist()
    return [flat[e - n : e] for e, n in zip(ends, lengths.tolist(), strict=True)]


def encode_part(
    tok: Any,
    texts: Sequence[str],
    bases: np.ndarray,
    *,
    path: EncodePath = "auto",
    decode: bool = True,
    batch_size: int = 256,
    engine: Any | None = None,
) -> EncodedBatch:
    """Encode ``texts`` with ``tok`` (and decode them back when ``decode``) on the chosen path.

    ``engine``: the result of :func:`engine_of` when the caller has it already.
    """
    if path not in ("auto", "engine", "reference"):
        raise ValueError(f"path must be 'auto', 'engine' or 'reference', got {path!r}")
    backend = None if path == "reference" else engine if engine is not None else engine_of(tok)
    if path == "engine" and backend is None:
        raise ValueError(f"{tok!r} has no engine batch path; use path='reference' or 'auto'")
    decode = decode and (backend is None or backend.capabilities.decode)
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    decoded: list[str] | None = [] if decode else None
    exact: list[np.ndarray] = []  # [n] per batch: decode(ids) == text
    for start in range(0, len(texts), batch_size):  # Python lists live for one batch, arrays for the part
        chunk = list(texts[start : start + batch_size])
        lists: list[list[int]] | None = None
        rule = None
        if backend is not None and not backend.capabilities.offsets:  # counts only (a plain function)
            lengths, ids = backend.encode_batch_flat(chunk)
            offsets = np.zeros((ids.size, 2), dtype=np.int64)  # [T, 2] unknown: continued words are missing
        elif backend is not None:
            enc = encode_fast(backend, chunk)
            lengths, ids, offsets = enc.lengths, enc.ids, enc.offsets
            rule = enc.widths.roundtrip_exact(chunk) if decode and enc.widths is not None else None
        else:
            lists, spans = _reference_chunk(tok, chunk)
            lengths, ids, offsets = _flatten(lists, spans)
            del spans
        offsets += np.repeat(bases[start : start + batch_size], lengths)[
            :, None
        ]  # [T, 1]: local -> end to end
        parts.append((lengths, ids, offsets))
        if not decode:
            continue
        if rule is not None:  # the pieces spell the text: no need to decode
            exact.append(rule)
            decoded = None
            continue
        lists = lists if lists is not None else _split(lengths, ids)
        back = backend.decode_batch(lists) if backend is not None else [tok.decode(i) for i in lists]
        exact.append(np.fromiter(map(str.__eq__, back, chunk), dtype=bool, count=len(chunk)))
        if decoded is not None:
            decoded += back
    if parts:
        lengths, ids, offsets = (np.concatenate(arrays) for arrays in zip(*parts, strict=True))
    else:
        lengths, ids, offsets = np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, 2), np.int64)
    roundtrip = (np.concatenate(exact) if exact else np.zeros(0, dtype=bool)) if decode else None
    used = "engine" if backend is not None else "reference"
    return EncodedBatch(lengths, ids, offsets, decoded, used, roundtrip)
