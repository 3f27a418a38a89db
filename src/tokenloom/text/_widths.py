"""Offsets from piece widths: for tokenizers whose offsets are the running sum of their pieces' lengths.

When a tokenizer does not normalize its input and adds no prefix space (sentencepiece ``identity`` without
dummy prefix or whitespace removal; a ``tokenizers`` pipeline without normalizer whose pre-tokenizer is
``Metaspace`` with ``prepend_scheme="never"``), every piece covers exactly its own characters in the text
(the meta-symbol ``▁`` stands for one space or one ``▁``). Token offsets are then a running sum of widths
looked up per id, with the byte-fallback pieces of one character all given that character's span (the
contract of ``Tokenizer.encode_with_offsets``): a piece holding a UTF-8 lead byte opens a character (width
1), a continuation byte belongs to the character before it (width 0).

:meth:`PieceWidths.offsets` is the vectorized fast path; it checks every text (the widths must add up to
its length and no unknown piece may occur, whose surface is not its spelling) and reports the texts where
the rule does not hold, so that the caller asks the engine for those. The engines' own offsets are the
reference (``tests/test_fertility_encoding.py`` compares them).

What it does not do: decide when the rule applies (``Tokenizer.piece_widths`` does) or call an engine.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np

__all__ = ["PieceWidths", "encode_by_widths", "engine_widths", "local_offsets", "piece_widths"]


def code_points(text: str) -> np.ndarray:
    """The code points of ``text`` as a uint32 array ``[C]`` (lone surrogates kept as their values)."""
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


@dataclass(frozen=True)
class PieceWidths:
    """Per-id tables of one vocabulary (V ids)."""

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
        *,
        cps: np.ndarray | None = None,
        bases: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """([T, 2] code-point offsets local to each text, [n] bool text whose offsets hold).

        ``ids`` [T] the texts' ids one after another, ``lengths`` [n] tokens per text, ``chars`` [n] code
        points per text. Offsets of texts marked False are meaningless (ask the engine for them).
        With ``cps`` (the code points of the texts laid end to end, text j from ``bases[j]``), a text also
        holds only if every byte run spells whole characters (a lead piece followed by as many continuation
        pieces as its character has further UTF-8 bytes), the case in which giving each byte piece its
        character's span needs no other rule (``split_byte_runs`` would change nothing).
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
        start = ends - w - np.repeat(before, lengths)  # [T] local start of each piece
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
            if cps is not None and bases is not None:
                heads = np.flatnonzero(~cont)  # [H] pieces that are not continuation bytes
                follow = np.diff(np.append(heads, ids.size)) - 1  # [H] continuation pieces right after each
                lead = byte[heads]  # [H] the head is a lead byte piece
                pos = heads[lead]  # [L]
                text_of = np.searchsorted(last, pos, side="right")  # [L] text of each lead piece
                at = np.clip(start[pos] + bases[text_of], 0, max(len(cps) - 1, 0))  # [L] its character
                c = cps[at]  # [L] code points
                need = (c >= 0x80).astype(np.int64) + (c >= 0x800) + (c >= 0x10000)  # [L] further bytes
                wrong = need != follow[lead]  # [L]
                if wrong.any():
                    bad += np.bincount(text_of[wrong], minlength=n)
        else:
            out[:, 1] = start + w
        out[:, 0] = start
        if broken.any():
            bad += np.bincount(np.searchsorted(last, np.flatnonzero(broken), side="right"), minlength=n)
        ok = (total == chars) & (bad == 0)
        return out, ok


def _byte_value(piece: str) -> int:
    return int(piece[3:5], 16)  # "<0xNN>"


def piece_widths(
    pieces: Sequence[str],
    *,
    byte_ids: Collection[int],
    unsafe_ids: Collection[int],
    plain_decoder: bool = False,
) -> PieceWidths:
    """Tables for a vocabulary whose piece ``i`` is spelled ``pieces[i]`` (see the module docstring)."""
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


def engine_widths(
    *, sp: Any, spec: Any, hf: Any, vocab_size: int, byte_ids: Collection[int], unk_id: int | None
) -> PieceWidths | None:
    """Tables for a sentencepiece model (``sp`` and its ``spec``) or, when ``sp`` is None, a ``tokenizers``
    pipeline ``hf``; ``None`` when its offsets are not running sums of piece lengths."""
    if sp is not None:
        plain = spec is not None and spec.normalizer_name == "identity" and not spec.precompiled_charsmap
        if not plain or spec.add_dummy_prefix or spec.remove_extra_whitespaces:
            return None
        unsafe = [i for i in range(vocab_size) if sp.is_unknown(i) or sp.is_control(i)]
        return piece_widths(
            [sp.id_to_piece(i) for i in range(vocab_size)],
            byte_ids=byte_ids,
            unsafe_ids=unsafe,
            plain_decoder=True,  # sentencepiece strips a leading space only with a dummy prefix or
            # whitespace removal (both ruled out above); otherwise it joins pieces, "▁" as " ", bytes as UTF-8
        )
    config = json.loads(hf.to_str())
    model, pre = config.get("model") or {}, config.get("pre_tokenizer") or {}
    if config.get("normalizer") is not None or config.get("added_tokens"):
        return None  # normalization moves offsets; added tokens are matched before the model
    if pre.get("type") != "Metaspace" or pre.get("prepend_scheme") != "never":
        return None  # other pre-tokenizers may drop or add characters
    if model.get("type") not in ("BPE", "Unigram"):
        return None
    if model.get("continuing_subword_prefix") or model.get("end_of_word_suffix"):
        return None  # pieces spelled with characters that are not in the text
    pieces = [hf.id_to_token(i) for i in range(vocab_size)]
    if any(p is None for p in pieces):
        return None
    unsafe = [unk_id] if unk_id is not None else []
    plain = config.get("decoder") == _PLAIN_DECODER
    return piece_widths(pieces, byte_ids=byte_ids, unsafe_ids=unsafe, plain_decoder=plain)


# the decoder tokenloom writes for Metaspace pipelines: "▁" -> " ", byte pieces -> UTF-8, join
_PLAIN_DECODER = {
    "type": "Sequence",
    "decoders": [
        {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
        {"type": "ByteFallback"},
        {"type": "Fuse"},
    ],
}


def local_offsets(
    widths: PieceWidths, texts: Sequence[str], ids: np.ndarray, lengths: np.ndarray
) -> np.ndarray | None:
    """[T, 2] offsets local to each text from ``widths`` with every check of :meth:`PieceWidths.offsets`
    (byte runs included); ``None`` when some text fails one (ask the engine for offsets)."""
    n = len(texts)
    chars = np.fromiter(map(len, texts), dtype=np.int64, count=n)
    cps = bases = None
    if n and ids.size and widths.is_byte[np.clip(ids, 0, len(widths.width) - 1)].any():
        cps = code_points("\n".join(texts))  # [C]
        bases = np.zeros(n, dtype=np.int64)
        bases[1:] = np.cumsum(chars + 1)[:-1]  # [n] text j starts here, texts joined by one separator
    offsets, ok = widths.offsets(ids, lengths, chars, cps=cps, bases=bases)
    return offsets if ok.all() else None


def encode_by_widths(
    handle: Any, engine: str, texts: list[str], widths: PieceWidths
) -> list[tuple[list[int], list[tuple[int, int]]]] | None:
    """``Tokenizer.encode_batch_with_offsets`` by an ids-only engine call (``handle``: the
    ``SentencePieceProcessor`` or ``tokenizers.Tokenizer``) and :func:`local_offsets`; ``None`` when a check
    fails (the caller then asks the engine for offsets)."""
    if engine == "sentencepiece":
        lists: list[list[int]] = [a.tolist() for a in handle.encode(texts, out_type="numpy")]
    else:
        lists = [e.ids for e in handle.encode_batch_fast(texts, add_special_tokens=False)]
    lengths = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    ids = np.fromiter(chain.from_iterable(lists), dtype=np.int64, count=int(lengths.sum()))
    offsets = local_offsets(widths, texts, ids, lengths)
    if offsets is None:
        return None
    spans = list(zip(offsets[:, 0].tolist(), offsets[:, 1].tolist(), strict=True))
    ends = np.cumsum(lengths).tolist()
    return [(got, spans[end - len(got) : end]) for got, end in zip(lists, ends, strict=True)]
