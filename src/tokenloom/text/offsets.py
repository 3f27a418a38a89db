"""Token offsets of a batch as flat arrays: :func:`encode_flat`, and the byte-run rule it applies.

Contract (``Tokenizer.encode_with_offsets``): offsets are ``[start, end)`` in code points of the input, and
the byte-fallback pieces of one character all carry that character's span. Engines differ on byte pieces,
so the same rule is applied to them: a *run* of consecutive byte pieces covers ``[start, end)``; when it has
as many pieces as ``text[start:end]`` has UTF-8 bytes, piece k gets the character holding byte k, otherwise
(normalization changed the text) every piece keeps the run's span.

:func:`encode_flat` gives a :class:`FlatBatch`: ids, tokens per text and offsets of a whole batch in the
coordinates of :mod:`tokenloom.unicode.flat` (text j starts at ``bases[j]`` in ``"\\n".join(texts)``), and
when asked the round-trip flags, made once and read as they are by the fertility counts. Two routes give
the same offsets: when the backend's :meth:`~tokenloom.text.backends.EngineBackend.piece_widths` says its
offsets are running sums of piece widths (no normalization, no prefix space: tokenloom's default), the
engine is asked for ids only and the offsets are cumulative sums of per-id widths
(:meth:`PieceWidths.offsets`, checked text by text: widths add up to the text's length, no unknown piece,
byte runs spell whole characters); otherwise, or when a check fails, the engine's offsets with byte runs
split vectorized (:func:`split_byte_runs`).

Engines that give no offsets get them from their decoder: :func:`byte_offsets` from each token's bytes (a
byte-level vocabulary such as tiktoken's: exact, a token that splits a character gets that character's span,
as byte pieces do) and :func:`decoder_offsets` from decoding growing prefixes (any decoder: exact where each
decoded prefix is a prefix of the text).

The definition these are tested against, text by text in plain Python, is
:mod:`tokenloom.fertility.reference` (``tests/test_offsets.py``, on FLORES text). What this module does not
do: translate engine errors (``Tokenizer`` does) or count anything.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from tokenloom.errors import TokenizerError
from tokenloom.text.backends.base import flat_ids
from tokenloom.unicode import code_points
from tokenloom.unicode.flat import flat_spans, text_bases

if TYPE_CHECKING:
    from tokenloom.text.backends.base import EngineBackend, Offsets

__all__ = [
    "FlatBatch",
    "PieceWidths",
    "byte_offsets",
    "decoder_offsets",
    "encode_flat",
    "piece_widths",
    "split_byte_runs",
]


@dataclass(frozen=True)
class FlatBatch:
    """A batch of n texts encoded into T tokens, as flat arrays in whole-batch coordinates."""

    lengths: np.ndarray  # [n] tokens per text
    ids: np.ndarray  # [T] token ids, texts one after another
    offsets: np.ndarray  # [T, 2] [start, end) code points of "\n".join(texts): text j starts at bases[j]
    bases: np.ndarray  # [n] start of each text (tokenloom.unicode.flat.text_bases)
    roundtrip: np.ndarray | None = None  # [n] bool decode(ids) == text; None: not asked, or no decoder
    widths: PieceWidths | None = None  # the tables that gave the offsets; None: the engine's offsets did

    def pairs(self) -> list[tuple[list[int], Offsets]]:
        """(ids, offsets local to each text) per text: what ``Tokenizer.encode_batch_with_offsets`` returns."""
        local = self.offsets - np.repeat(self.bases, self.lengths)[:, None]  # [T, 2] - [T, 1] broadcast
        spans = list(zip(local[:, 0].tolist(), local[:, 1].tolist(), strict=True))
        return [(ids, spans[e - len(ids) : e]) for ids, e in zip(self.id_lists(), self._ends(), strict=True)]

    def id_lists(self) -> list[list[int]]:
        """The ids of each text as lists."""
        flat = self.ids.tolist()
        return [flat[e - n : e] for e, n in zip(self._ends(), self.lengths.tolist(), strict=True)]

    def _ends(self) -> list[int]:
        ends: list[int] = np.cumsum(self.lengths).tolist()
        return ends


def _batches(texts: Sequence[str], batch_size: int | None) -> list[Sequence[str]]:
    step = batch_size or max(len(texts), 1)
    return [texts[s : s + step] for s in range(0, len(texts), step)]


def _engine_ids(backend: EngineBackend, batches: list[Sequence[str]]) -> tuple[np.ndarray, np.ndarray]:
    """([n] tokens per text, [T] ids) of every batch, in the engine's ids-only call."""
    parts = [backend.encode_batch_flat(b) for b in batches]
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def _engine_pairs(backend: EngineBackend, texts: Sequence[str]) -> list[tuple[list[int], Offsets]]:
    encode = backend.encode_batch_with_offsets
    if encode is None:
        raise TokenizerError(f"the {backend.kind} engine gives no token offsets")
    return encode(texts)


def _width_offsets(
    backend: EngineBackend, texts: Sequence[str], batches: list[Sequence[str]], bases: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, PieceWidths] | None:
    """([n] lengths, [T] ids, [T, 2] offsets, tables) by the piece widths; ``None`` where they do not hold."""
    widths = backend.piece_widths()
    if widths is None:
        return None
    lengths, ids = _engine_ids(backend, batches)
    cps = None  # the texts' code points end to end, only needed to check byte runs
    if ids.size and widths.is_byte[np.clip(ids, 0, len(widths.width) - 1)].any():
        cps = code_points("\n".join(texts))  # [C]
    chars = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))  # [n]
    offsets, ok = widths.offsets(ids, lengths, chars, bases, cps=cps)  # [T, 2], [n]
    return (lengths, ids, offsets, widths) if ok.all() else None


def encode_flat(
    backend: EngineBackend, texts: Sequence[str], *, decode: bool = False, batch_size: int | None = None
) -> FlatBatch:
    """Ids and whole-batch offsets of ``texts`` (module docstring), ``batch_size`` texts per engine call
    (``None``: one call). ``decode``: also the round-trip flags, where the engine has a decoder (with the
    plain decoder of piece widths they are known without decoding: the pieces spell the text)."""
    bases = text_bases(texts)  # [n]
    batches = _batches(texts, batch_size)
    widths: PieceWidths | None = None
    if not backend.capabilities.offsets:  # ids only (a plain function): every token an empty span
        lengths, ids = _engine_ids(backend, batches)
        offsets = np.repeat(bases, lengths)[:, None].repeat(2, axis=1)  # [T, 2] at its text's start
    elif (by_widths := _width_offsets(backend, texts, batches, bases)) is not None:
        lengths, ids, offsets, widths = by_widths
    else:
        pairs = [pair for b in batches for pair in _engine_pairs(backend, b)]
        lengths, ids = flat_ids([i for i, _ in pairs])  # [n], [T]
        _, offsets = flat_spans([o for _, o in pairs], bases)  # [T, 2]
        offsets = split_byte_runs(texts, ids, offsets, lengths, backend.byte_ids)
    roundtrip = None
    if decode and backend.capabilities.decode:
        roundtrip = widths.roundtrip_exact(texts) if widths is not None else None
        if roundtrip is None:
            batch = FlatBatch(lengths, ids, offsets, bases)
            back = backend.decode_batch(batch.id_lists()) if len(texts) else []
            roundtrip = np.fromiter(map(str.__eq__, back, texts), dtype=bool, count=len(texts))
    return FlatBatch(lengths, ids, offsets, bases, roundtrip, widths)


def _utf8_prefix(texts: Sequence[str]) -> np.ndarray:
    """[C + 1] UTF-8 bytes before each end-to-end position (texts joined by one separator character)."""
    cps = code_points("\n".join(texts))  # [C] code points
    width = 1 + (cps >= 0x80) + (cps >= 0x800) + (cps >= 0x10000)  # [C] UTF-8 bytes per code point
    return np.concatenate([[0], np.cumsum(width, dtype=np.int64)])


def split_byte_runs(
    texts: Sequence[str], ids: np.ndarray, offsets: np.ndarray, lengths: np.ndarray, byte_ids: Collection[int]
) -> np.ndarray:
    """The byte-run rule (module docstring) for many texts at once, vectorized; ``offsets`` [T, 2] in
    whole-batch coordinates (:mod:`tokenloom.unicode.flat`). Equal to ``fertility.reference.fix_byte_runs``
    text by text."""
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


# ---------------------------------------------------------------- offsets from a decoder
def byte_offsets(
    texts: Sequence[str], lengths: np.ndarray, ids: np.ndarray, nbytes: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """([T, 2] whole-batch code-point offsets, [n] bool text whose tokens' bytes spell it exactly).

    ``ids`` [T] the texts' ids one after another, ``lengths`` [n] tokens per text, ``nbytes`` [V] UTF-8 bytes
    each id spells. A token covers the characters holding its first through last byte."""
    bases = text_bases(texts)  # [n]
    chars = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))  # [n]
    prefix = _utf8_prefix(texts)  # [C + 1] bytes before each end-to-end position
    tb = nbytes[ids] if ids.size else np.zeros(0, np.int64)  # [T] bytes per token
    tok_text = np.repeat(np.arange(len(lengths)), lengths)  # [T]
    spelled = np.bincount(tok_text, weights=tb, minlength=len(lengths)).astype(np.int64)  # [n]
    text_start = prefix[bases]  # [n] byte position of each text, end to end
    ok = spelled == prefix[bases + chars] - text_start
    csum = np.concatenate([[0], np.cumsum(tb, dtype=np.int64)])  # [T + 1] bytes before each token
    first = np.cumsum(lengths) - lengths  # [n] index of each text's first token
    end_b = csum[1:] + np.repeat(text_start - csum[first], lengths)  # [T] end byte, end to end
    start_b = end_b - tb  # [T]
    start = np.searchsorted(prefix, start_b, side="right") - 1  # [T] character holding the first byte
    last = np.searchsorted(prefix, np.maximum(end_b - 1, start_b), side="right") - 1  # [T] ... the last byte
    return np.stack([start, np.where(tb > 0, last + 1, start)], axis=1), ok  # [T, 2]


def _common_prefix(a: str, b: str) -> int:
    """Length of the longest common prefix of two strings."""
    if b.startswith(a):
        return len(a)
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def decoder_offsets(decode: Callable[[list[int]], str], ids: Sequence[int], text: str) -> Offsets:
    """Offsets of one text from its decoder: token k ends where the decoded prefix ``ids[:k + 1]`` stops
    matching ``text`` (a token that only completes a character later gets an empty span). O(len(ids)) decodes."""
    spans: Offsets = []
    done = 0
    for k in range(len(ids)):
        head = decode(list(ids[: k + 1]))
        end = max(_common_prefix(head, text), done)
        spans.append((done, end))
        done = end
    return spans


# ---------------------------------------------------------------- piece widths (the fast path's tables)
@dataclass(frozen=True)
class PieceWidths:
    """Per-id tables of one vocabulary (V ids) whose pieces each cover exactly their own characters.

    This holds when the tokenizer does not normalize its input and adds no prefix space (sentencepiece
    ``identity`` without dummy prefix or whitespace removal; a ``tokenizers`` pipeline without normalizer
    whose pre-tokenizer is ``Metaspace`` with ``prepend_scheme="never"``): the meta-symbol ``▁`` stands for
    one space or one ``▁``. A piece holding a UTF-8 lead byte opens a character (width 1), a continuation
    byte belongs to the character before it (width 0). The backends decide when the rule applies.
    """

    width: np.ndarray  # [V] int64 code points a piece covers (byte pieces: 1 lead byte, 0 continuation)
    is_byte: np.ndarray  # [V] bool byte-fallback piece
    unsafe: np.ndarray  # [V] bool piece whose surface is not its spelling (unk, control): no fast offsets
    # decode joins the pieces, meta-symbol as space, byte runs as UTF-8 (and nothing else): then a text whose
    # widths hold decodes back to itself with every U+2581 as a space (see :meth:`roundtrip_exact`)
    plain_decoder: bool = False

    def roundtrip_exact(self, texts: Sequence[str]) -> np.ndarray | None:
        """[n] ``decode(encode(t)) == t`` for texts whose :meth:`offsets` hold, without decoding: the pieces
        spell the text (spaces as U+2581), so decoding gives ``t.replace("\u2581", " ")``. ``None`` when the
        decoder is not the plain one (then decode)."""
        if not self.plain_decoder:
            return None
        if "\u2581" not in "".join(texts):  # the usual case: one scan
            return np.ones(len(texts), dtype=bool)
        return np.fromiter(("\u2581" not in t for t in texts), dtype=bool, count=len(texts))

    def offsets(
        self,
        ids: np.ndarray,
        lengths: np.ndarray,
        chars: np.ndarray,
        bases: np.ndarray,
        *,
        cps: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """([T, 2] code-point offsets in whole-batch coordinates, [n] bool text whose offsets hold).

        ``ids`` [T] the texts' ids one after another, ``lengths`` [n] tokens per text, ``chars`` [n] code
        points per text, ``bases`` [n] where each text starts (:func:`tokenloom.unicode.flat.text_bases`).
        Offsets of texts marked False are meaningless (ask the engine for them).
        With ``cps`` (the code points of ``"\\n".join(texts)``), a text also
        holds only if every byte run spells whole characters (a lead piece followed by as many continuation
        pieces as its character has further UTF-8 bytes), the case in which giving each byte piece its
        character's span needs no other rule (:func:`split_byte_runs` would change nothing).
        """
        n = len(lengths)
        ids = np.asarray(ids, dtype=np.int64)
        if ids.size and (ids.min() < 0 or ids.max() >= len(self.width)):
            return np.zeros((ids.size, 2), dtype=np.int64), np.zeros(n, dtype=bool)
        w = self.width[ids]  # [T]
        ends = np.cumsum(w)  # [T] running sum over all texts
        last = np.cumsum(lengths)  # [n] one past each text's last piece
        text_end = np.where(lengths > 0, ends[np.maximum(last - 1, 0)] if ids.size else 0, 0)  # [n]
        before = np.maximum.accumulate(np.concatenate([[0], text_end]))[:-1]  # [n] running sum before text j
        total = np.where(lengths > 0, text_end - before, 0)  # [n] code points the pieces cover
        start = ends - w + np.repeat(bases - before, lengths)  # [T] start of each piece, whole batch
        byte = self.is_byte[ids]  # [T]
        out = np.empty((ids.size, 2), dtype=np.int64)  # [T, 2]
        bad = np.zeros(n, dtype=np.int64)
        broken = self.unsafe[ids]  # [T] unknown piece (its surface is not its spelling)
        if byte.any():
            cont = byte & (w == 0)  # [T] continuation byte: the character opened before it
            start = np.where(cont, start - 1, start)  # [T]
            out[:, 1] = np.where(byte, start + 1, start + w)
            after_byte = np.zeros(ids.size, dtype=bool)  # [T] the piece before, in the same text, is a byte
            after_byte[1:] = byte[:-1]
            after_byte[(last - lengths)[lengths > 0]] = False  # a text's first piece follows nothing
            broken = broken | (cont & ~after_byte)  # a byte run that opens with a continuation byte
            if cps is not None:
                bad += self._wrong_runs(ids, byte, cont, start, last, cps, n)
        else:
            out[:, 1] = start + w
        out[:, 0] = start
        if broken.any():
            bad += np.bincount(np.searchsorted(last, np.flatnonzero(broken), side="right"), minlength=n)
        ok = (total == chars) & (bad == 0)
        return out, ok

    @staticmethod
    def _wrong_runs(
        ids: np.ndarray, byte: np.ndarray, cont: np.ndarray, start: np.ndarray, last: np.ndarray,
        cps: np.ndarray, n: int,
    ) -> np.ndarray:  # fmt: skip
        """[n] per text: byte runs whose lead piece is not followed by its character's continuation bytes."""
        heads = np.flatnonzero(~cont)  # [H] pieces that are not continuation bytes
        follow = np.diff(np.append(heads, ids.size)) - 1  # [H] continuation pieces right after each
        lead = byte[heads]  # [H] the head is a lead byte piece
        pos = heads[lead]  # [L]
        text_of = np.searchsorted(last, pos, side="right")  # [L] text of each lead piece
        at = np.clip(start[pos], 0, max(len(cps) - 1, 0))  # [L] its character
        c = cps[at]  # [L] code points
        need = (c >= 0x80).astype(np.int64) + (c >= 0x800) + (c >= 0x10000)  # [L] further bytes
        wrong = need != follow[lead]  # [L]
        return np.bincount(text_of[wrong], minlength=n) if wrong.any() else np.zeros(n, dtype=np.int64)


def _byte_value(piece: str) -> int:
    return int(piece[3:5], 16)  # "<0xNN>"


def piece_widths(
    pieces: Sequence[str],
    *,
    byte_ids: Collection[int],
    unsafe_ids: Collection[int],
    plain_decoder: bool = False,
) -> PieceWidths:
    """Tables for a vocabulary whose piece ``i`` is spelled ``pieces[i]`` (see :class:`PieceWidths`)."""
    v = len(pieces)
    width = np.fromiter(map(len, pieces), dtype=np.int64, count=v)
    is_byte = np.zeros(v, dtype=bool)
    unsafe = np.zeros(v, dtype=bool)
    for i in byte_ids:
        is_byte[i] = True
        width[i] = 0 if 0x80 <= _byte_value(pieces[i]) < 0xC0 else 1  # continuation bytes are 10xxxxxx
    for i in unsafe_ids:
        unsafe[i] = True
    return PieceWidths(width=width, is_byte=is_byte, unsafe=unsafe, plain_decoder=plain_decoder)
