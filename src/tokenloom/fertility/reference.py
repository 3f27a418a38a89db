"""The definitions, text by text in plain Python: token offsets, round trips and the per-text counts.

Written to be read, not to be fast. The fast paths — :meth:`Tokenizer.encode_flat
<tokenloom.text.tokenizer.Tokenizer.encode_flat>` (:mod:`tokenloom.text.offsets`: piece widths or the
engine's offsets, vectorized) and :func:`tokenloom.fertility.metrics.count_flat` (every text of a batch
at once) — are tested against these functions on FLORES-200 text (``tests/test_offsets.py``,
``tests/test_fertility_encoding.py``, ``tests/test_fertility_metrics.py``); nothing in the library calls
them.

- **Offsets** (:func:`encode_with_offsets`): the engine's own offsets (:meth:`Tokenizer.engine_offsets`),
  then every byte piece gets the span of the one character its byte belongs to (:func:`fix_byte_runs`):
  a *run* of consecutive byte pieces covers ``[start, end)``; when it has as many pieces as
  ``text[start:end]`` has UTF-8 bytes, piece k gets the character holding byte k, otherwise (normalization
  changed the text) every piece keeps the run's span.
- **Round trip** (:func:`encode_flat`): ``tok.decode(ids) == text``, decoded text by text.
- **Counts** (:func:`count_text`): tokens, characters, UTF-8 bytes, words, continued words (words
  overlapping two or more tokens: a token ``[s, e)`` overlaps a word ``[ws, we)`` when ``s < we and
  e > ws``), byte-fallback and unknown tokens, round-trip and normalization flags of one text.
- **Retention, integrity, unknown characters** (:func:`text_integrity`): words overlapping exactly one
  token; characters overlapped by two or more tokens (split); tokens overlapping a split character
  (partial); characters overlapped by an unknown token.
- **Numbers** (:func:`text_numbers`): each run of decimal digits, the starts of non-empty tokens strictly
  inside it, and whether they are exactly the positions with a multiple of 3 digits to their right; a run
  of two or more digits is split into single digits when a token starts at each of its inner positions.
- **Vocabulary use** (:func:`vocabulary_use`): Python sets of ids per language — distinct ids, the ids no
  other language uses, and the shared ids and Jaccard overlap of every pair of languages.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from tokenloom.text.backends.base import Offsets, flat_ids
from tokenloom.text.offsets import FlatBatch
from tokenloom.text.tokenizer import Tokenizer
from tokenloom.unicode.flat import Span, flat_spans, text_bases

__all__ = [
    "TextCounts",
    "TextIntegrity",
    "TextNumbers",
    "continued_words",
    "count_text",
    "encode_flat",
    "encode_with_offsets",
    "fix_byte_runs",
    "text_integrity",
    "text_numbers",
    "vocabulary_use",
]


def fix_byte_runs(ids: Sequence[int], offsets: Offsets, text: str, byte_ids: Collection[int]) -> Offsets:
    """Give every byte piece of one text the span of the one character its byte belongs to (module rule)."""
    out = list(offsets)
    where = [k for k, i in enumerate(ids) if i in byte_ids]  # positions of byte pieces, in order
    r = 0
    while r < len(where):
        i = j = where[r]
        while r < len(where) and where[r] == j:  # a run: consecutive byte pieces [i, j)
            j += 1
            r += 1
        start = min(s for s, _ in offsets[i:j])
        end = max(e for _, e in offsets[i:j])
        lengths = [len(ch.encode("utf-8")) for ch in text[start:end]]
        if sum(lengths) == j - i:
            k = i
            for pos, n in enumerate(lengths, start=start):
                for _ in range(n):
                    out[k] = (pos, pos + 1)
                    k += 1
        else:  # normalization changed the text: every piece of the run gets the run's span
            out[i:j] = [(start, end)] * (j - i)
    return out


def encode_with_offsets(tok: Tokenizer, texts: Sequence[str]) -> list[tuple[list[int], Offsets]]:
    """(ids, offsets) per text: the engine's offsets, byte runs split by :func:`fix_byte_runs`."""
    pairs = tok.engine_offsets(texts)
    return [
        (ids, fix_byte_runs(ids, offs, t, tok.byte_fallback_ids))
        for t, (ids, offs) in zip(texts, pairs, strict=True)
    ]


def encode_flat(tok: Tokenizer, texts: Sequence[str], *, decode: bool = False) -> FlatBatch:
    """What :meth:`Tokenizer.encode_flat` gives, built text by text: :func:`encode_with_offsets` laid out
    in whole-batch coordinates and, with ``decode``, ``tok.decode(ids) == text`` per text."""
    bases = text_bases(texts)
    if tok.capabilities.offsets:
        pairs = encode_with_offsets(tok, texts)
    else:  # ids only: every token an empty span at the start of its text
        pairs = [(ids, [(0, 0)] * len(ids)) for ids in tok.encode_batch(texts)]
    lengths, ids = flat_ids([i for i, _ in pairs])
    _, offsets = flat_spans([o for _, o in pairs], bases)
    roundtrip = None
    if decode and tok.capabilities.decode:
        back = [tok.decode(i) for i, _ in pairs]
        roundtrip = np.array([d == t for d, t in zip(back, texts, strict=True)], dtype=bool)
    return FlatBatch(lengths, ids, offsets, bases, roundtrip)


@dataclass(frozen=True)
class TextCounts:
    """Counts for one text under one tokenizer."""

    tokens: int  # number of token ids
    chars: int  # code points of the text
    bytes: int  # UTF-8 bytes of the text
    words: int  # word-like segments (from the segmenter)
    continued: int  # words overlapping two or more tokens
    byte_fallback: int  # tokens whose id is a byte-fallback piece <0x00>..<0xFF>
    unk: int  # tokens equal to the unk id
    roundtrip_exact: bool  # decode(encode(text)) == text
    normalization_changed: bool  # tokenizer.normalize(text) != text


def continued_words(word_spans: Sequence[Span], offsets: Sequence[Span]) -> int:
    """Words overlapping two or more tokens: a loop over words and tokens."""
    n = 0
    for ws, we in word_spans:
        overlapping = sum(1 for s, e in offsets if s < we and e > ws)
        n += overlapping >= 2
    return n


def count_text(
    text: str,
    ids: Sequence[int],
    offsets: Sequence[Span],
    word_spans: Sequence[Span],
    *,
    byte_fallback_ids: Collection[int] = frozenset(),
    unk_id: int | None = None,
    decoded: str | None = None,
    normalized: str | None = None,
) -> TextCounts:
    """Counts of one text (module docstring). ``decoded`` is ``decode(ids)`` and ``normalized`` the
    tokenizer's normalization of ``text``; when omitted, the text is taken as round-tripping / unchanged."""
    if len(ids) != len(offsets):
        raise ValueError(f"{len(ids)} ids but {len(offsets)} offsets; pass the offsets of the same encoding")
    return TextCounts(
        tokens=len(ids),
        chars=len(text),
        bytes=len(text.encode("utf-8")),
        words=len(word_spans),
        continued=continued_words(word_spans, offsets),
        byte_fallback=sum(1 for i in ids if i in byte_fallback_ids),
        unk=sum(1 for i in ids if unk_id is not None and i == unk_id),
        roundtrip_exact=decoded is None or decoded == text,
        normalization_changed=normalized is not None and normalized != text,
    )


@dataclass(frozen=True)
class TextIntegrity:
    """Retention and UTF-8 integrity counts of one text (module docstring)."""

    single: int  # words overlapping exactly one token
    partial: int  # tokens overlapping a split character
    split_chars: int  # characters overlapped by two or more tokens
    unk_chars: int  # characters overlapped by an unknown token


def text_integrity(
    text: str, ids: Sequence[int], offsets: Sequence[Span], word_spans: Sequence[Span], *, unk_id: int | None
) -> TextIntegrity:
    """:class:`TextIntegrity` of one text: a loop over its words, characters and tokens."""

    def covering(pos: int) -> list[int]:
        return [k for k, (s, e) in enumerate(offsets) if s <= pos < e]

    single = sum(1 for ws, we in word_spans if sum(1 for s, e in offsets if s < we and e > ws) == 1)
    split = {pos for pos in range(len(text)) if len(covering(pos)) >= 2}
    partial = sum(1 for s, e in offsets if any(p in split for p in range(s, e)))
    unk = sum(1 for pos in range(len(text)) if any(ids[k] == unk_id for k in covering(pos)))
    return TextIntegrity(single=single, partial=partial, split_chars=len(split), unk_chars=unk)


@dataclass(frozen=True)
class TextNumbers:
    """Place-value counts of the digit runs of one text (module docstring)."""

    numbers: int
    place_value: int  # runs whose inner token boundaries are exactly their place-value boundaries
    multi_digit: int  # runs of 2+ digits
    single_digits: int  # runs of 2+ digits with a token boundary between every two digits
    placed: int  # inner token boundaries
    expected: int  # place-value boundaries
    hits: int  # inner token boundaries that are place-value boundaries


def text_numbers(text: str, offsets: Sequence[Span]) -> TextNumbers:
    """:class:`TextNumbers` of one text: every digit run against the token starts inside it."""
    starts = {s for s, e in offsets if e > s}
    runs = [m.span() for m in re.finditer(r"\d+", text)]
    counts = [0, 0, 0, 0, 0, 0]
    for a, b in runs:
        inner = {p for p in starts if a < p < b}
        groups = {p for p in range(a + 1, b) if (b - p) % 3 == 0}
        counts[0] += inner == groups
        counts[1] += b - a >= 2
        counts[2] += b - a >= 2 and inner == set(range(a + 1, b))
        counts[3] += len(inner)
        counts[4] += len(groups)
        counts[5] += len(inner & groups)
    return TextNumbers(len(runs), *counts)


def vocabulary_use(
    ids: Mapping[str, Sequence[int]],
) -> tuple[dict[str, int], dict[str, int], dict[tuple[str, str], tuple[int, float]]]:
    """(distinct ids, ids no other language uses, (shared ids, Jaccard) per pair) of each language's ids."""
    sets = {k: set(v) for k, v in ids.items()}
    distinct = {k: len(v) for k, v in sets.items()}
    only = {k: len(v - set().union(*(w for j, w in sets.items() if j != k))) for k, v in sets.items()}
    pairs = {}
    for a, b in itertools.combinations(sets, 2):
        union = sets[a] | sets[b]
        shared = len(sets[a] & sets[b])
        pairs[(a, b)] = (shared, shared / len(union) if union else float("nan"))
    return distinct, only, pairs
