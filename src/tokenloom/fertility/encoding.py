"""Encode one part of a corpus for a report: token ids, code-point offsets and round trips as flat arrays.

Two paths, chosen by an explicit argument, with the same output (``tests/test_fertility_encoding.py``
compares them on real text):

- ``"reference"``: the Tokenizer contract — ``Tokenizer.encode_batch_with_offsets`` and ``Tokenizer.decode``
  per text. Always available.
- ``"engine"``: the engine's own batch API. For a sentencepiece tokenizer, its ``SentencePieceProcessor``
  (``Tokenizer.engine_handle()``): ``encode(list, out_type="offset_mapping")`` and ``decode(list)`` run in
  C++ on all cores — the very calls the reference makes, batched. For an ``hf`` tokenizer, its
  ``tokenizers.Tokenizer``: ``encode_batch`` and ``decode_batch`` run in Rust on all cores. Byte-fallback
  pieces are then given the span of the one character their byte belongs to, as the contract says, by
  :func:`split_byte_runs` (vectorized). ``"auto"`` takes it when available (any tokenloom ``Tokenizer``)
  and the reference path otherwise.

  Fast route of the engine path: when ``Tokenizer.piece_widths()`` says the offsets are running sums of
  piece widths (no normalization, no prefix space: tokenloom's default), the engines are asked for ids
  only (``encode(list, out_type="numpy")`` / ``encode_batch_fast``) and the offsets of the whole part come
  from the widths (:mod:`tokenloom.text._widths`), checked text by text (widths add up to the text's
  length, byte runs spell whole characters); with the plain decoder the round trip is known without
  decoding (the pieces spell the text: only U+2581 in the input decodes differently). Any text where a
  check fails sends the whole part down the engine-offsets route.

Offsets are returned in the end-to-end coordinates of :func:`tokenloom.fertility.metrics.text_bases`
(text j starts at ``bases[j]``), ready for :func:`tokenloom.fertility.metrics.count_flat`.
What it does not do: count or aggregate anything.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any, Literal

import numpy as np

from tokenloom.text._widths import code_points

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
    """The engine object the engine path uses for ``tok`` (a ``SentencePieceProcessor`` or a
    ``tokenizers.Tokenizer``), or ``None`` when it has none (a foreign tokenizer object)."""
    if getattr(tok, "engine", None) not in ("hf", "sentencepiece"):
        return None
    handle = getattr(tok, "engine_handle", None)
    return handle() if handle is not None else None


def _is_sentencepiece(engine: Any) -> bool:
    return not hasattr(engine, "encode_batch")  # a tokenizers.Tokenizer has it, a SentencePieceProcessor not


def _utf8_prefix(texts: Sequence[str]) -> np.ndarray:
    """[C + 1] UTF-8 bytes before each end-to-end position (texts joined by one separator character)."""
    cps = code_points("\n".join(texts))  # [C] code points
    width = 1 + (cps >= 0x80) + (cps >= 0x800) + (cps >= 0x10000)  # [C] UTF-8 bytes per code point
    return np.concatenate([[0], np.cumsum(width, dtype=np.int64)])


def split_byte_runs(
    texts: Sequence[str], ids: np.ndarray, offsets: np.ndarray, lengths: np.ndarray, byte_ids: Collection[int]
) -> np.ndarray:
    """Give every byte-fallback piece the span of the one character its byte belongs to.

    A run is a maximal sequence of byte pieces within one text; it covers ``[start, end)`` (the union of its
    spans). When the run has as many pieces as ``text[start:end]`` has UTF-8 bytes, piece k gets the
    character holding byte k; otherwise (normalization changed the text) every piece keeps the run's span.
    The same rule as ``Tokenizer.encode_batch_with_offsets``; ``offsets`` [T, 2] are end-to-end.
    """
    out = offsets.copy()
    if not byte_ids or ids.size == 0:
        return out
    is_byte = np.isin(ids, np.fromiter(byte_ids, dtype=np.int64))  # [T]
    if not is_byte.any():
        return out
    tok_text = np.repeat(np.arange(len(lengths)), lengths)  # [T]
    prev_byte = np.concatenate([[False], is_byte[:-1] & (tok_text[1:] == tok_text[:-1])])  # [T]
    where = np.flatnonzero(is_byte)  # [B] positions of byte pieces
    first = is_byte[where] & ~prev_byte[where]  # [B] first piece of its run
    run = np.cumsum(first) - 1  # [B] run index of each byte piece
    heads = np.flatnonzero(first)  # [R] index into `where` of each run's first piece
    start = np.minimum.reduceat(offsets[where, 0], heads)  # [R]
    end = np.maximum.reduceat(offsets[where, 1], heads)  # [R]
    count = np.diff(np.append(heads, len(where)))  # [R] pieces per run
    prefix = _utf8_prefix(texts)
    ok = (prefix[end] - prefix[start]) == count  # [R]
    k = np.arange(len(where)) - heads[run]  # [B] index of each piece within its run
    byte_pos = prefix[start[run]] + k  # [B] UTF-8 position of the piece's byte
    char = np.searchsorted(prefix, byte_pos, side="right") - 1  # [B] character holding that byte
    good = ok[run]
    out[where[good], 0] = char[good]
    out[where[good], 1] = char[good] + 1
    out[where[~good], 0] = start[run][~good]
    out[where[~good], 1] = end[run][~good]
    return out


def _flatten(
    lists: Sequence[Sequence[int]], spans: Sequence[Sequence[tuple[int, int]]], bases: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = len(lists)
    lengths = np.fromiter(map(len, lists), dtype=np.int64, count=n)
    total = int(lengths.sum())
    ids = np.fromiter(chain.from_iterable(lists), dtype=np.int64, count=total)
    offsets = np.fromiter(chain.from_iterable(chain.from_iterable(spans)), dtype=np.int64, count=2 * total)
    offsets = offsets.reshape(total, 2)  # [T, 2]
    offsets += np.repeat(bases, lengths)[:, None]  # [T, 1] broadcast: local -> end-to-end coordinates
    return lengths, ids, offsets


def _widths_part(
    tok: Any,
    kind: str,
    eng: Any,
    widths: Any,
    texts: Sequence[str],
    bases: np.ndarray,
    *,
    decode: bool,
    batch_size: int,
) -> EncodedBatch | None:
    """The engine path for tokenizers whose offsets are running sums of piece widths (``tokenloom.text.
    _widths``): ids-only engine calls per batch, then offsets for the whole part at once. ``None`` when the
    widths do not hold for some text (the caller then asks the engine for offsets)."""
    n = len(texts)
    lens: list[np.ndarray] = []
    flat: list[np.ndarray] = []
    decoded: list[str] | None = [] if decode and not widths.plain_decoder else None
    for start in range(0, n, batch_size):  # Python lists live for one batch, arrays for the part
        chunk = list(texts[start : start + batch_size])
        if kind == "sentencepiece":
            lists: Sequence[Any] = eng.encode(chunk, out_type="numpy")  # [n] int32 arrays, one C++ call
            lens.append(np.fromiter(map(len, lists), dtype=np.int64, count=len(chunk)))
            flat.append(np.concatenate(lists).astype(np.int64))
        else:
            encs = eng.encode_batch_fast(chunk, add_special_tokens=False)  # no offset tracking
            lists = [e.ids for e in encs]
            del encs
            lens.append(np.fromiter(map(len, lists), dtype=np.int64, count=len(chunk)))
            flat.append(np.fromiter(chain.from_iterable(lists), dtype=np.int64, count=int(lens[-1].sum())))
        if decoded is not None:
            decoded += eng.decode(lists) if kind == "sentencepiece" else eng.decode_batch(lists)
        del lists
    lengths = np.concatenate(lens) if lens else np.zeros(0, np.int64)
    ids = np.concatenate(flat) if flat else np.zeros(0, np.int64)
    del lens, flat
    chars = np.fromiter(map(len, texts), dtype=np.int64, count=n)
    cps = None  # the texts' code points end to end, only needed to check byte runs
    if n and widths.is_byte[ids].any():
        cps = code_points("\n".join(texts))  # [C]
    offsets, ok = widths.offsets(ids, lengths, chars, cps=cps, bases=bases)  # [T, 2] local, [n]
    if not ok.all():
        return None
    offsets += np.repeat(bases, lengths)[:, None]  # [T, 1] broadcast: local -> end-to-end coordinates
    if not decode:
        roundtrip = None
    elif decoded is not None:
        roundtrip = np.fromiter(map(str.__eq__, decoded, texts), dtype=bool, count=n)
    else:  # the pieces spell the text: no need to decode
        roundtrip = widths.roundtrip_exact(texts)
    return EncodedBatch(lengths, ids, offsets, decoded, "engine", roundtrip)


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

    ``engine``: the result of :func:`engine_of` when the caller has it already (saves building it again).
    """
    if path not in ("auto", "engine", "reference"):
        raise ValueError(f"path must be 'auto', 'engine' or 'reference', got {path!r}")
    eng = None if path == "reference" else engine if engine is not None else engine_of(tok)
    if path == "engine" and eng is None:
        raise ValueError(f"{tok!r} has no engine batch path; use path='reference' or 'auto'")
    kind = None if eng is None else "sentencepiece" if _is_sentencepiece(eng) else "hf"
    widths = getattr(tok, "piece_widths", None) if kind is not None else None
    widths = widths() if widths is not None else None  # offsets as running sums of piece widths, or None
    if kind is not None and widths is not None:
        fast = _widths_part(tok, kind, eng, widths, texts, bases, decode=decode, batch_size=batch_size)
        if fast is not None:
            return fast
    pieces: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    decoded: list[str] = []
    exact: list[np.ndarray] = []  # [n] per batch: decode(ids) == text
    for start in range(0, len(texts), batch_size):  # Python lists live for one batch, arrays for the part
        chunk = list(texts[start : start + batch_size])
        if kind == "sentencepiece" and eng is not None:
            raw = eng.encode(chunk, out_type="offset_mapping")  # one C++ call for the batch
            ids_lists, spans = [r["ids"] for r in raw], [r["offsets"] for r in raw]
            del raw
        elif kind == "hf" and eng is not None:
            encs = eng.encode_batch(chunk, add_special_tokens=False)
            ids_lists, spans = [e.ids for e in encs], [e.offsets for e in encs]
            del encs
        else:
            pairs = tok.encode_batch_with_offsets(chunk)
            ids_lists, spans = [i for i, _ in pairs], [o for _, o in pairs]
            del pairs
        pieces.append(_flatten(ids_lists, spans, bases[start : start + batch_size]))
        del spans
        if decode:
            if kind == "sentencepiece" and eng is not None:
                back = eng.decode(ids_lists)  # a list of id lists in, a list of str out
            elif kind == "hf" and eng is not None:
                back = eng.decode_batch(ids_lists)  # skips special tokens, as Tokenizer.decode does
            else:
                back = [tok.decode(i) for i in ids_lists]
            exact.append(np.fromiter(map(str.__eq__, back, chunk), dtype=bool, count=len(chunk)))
            decoded += back
        del ids_lists
    if pieces:
        lengths, ids, offsets = (np.concatenate(arrays) for arrays in zip(*pieces, strict=True))
    else:
        lengths, ids, offsets = np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, 2), np.int64)
    del pieces
    if eng is not None:
        offsets = split_byte_runs(texts, ids, offsets, lengths, tok.byte_fallback_ids)
    roundtrip = (np.concatenate(exact) if exact else np.zeros(0, dtype=bool)) if decode else None
    return EncodedBatch(
        lengths, ids, offsets, decoded if decode else None,
        "engine" if eng is not None else "reference", roundtrip,
    )  # fmt: skip
