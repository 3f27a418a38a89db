"""Build Hugging Face ``tokenizers`` pipelines: byte-fallback models for HF-trained vocabularies, and the
sentencepiece → ``tokenizer.json`` exporter.

What it does:

- :func:`byte_fallback_model` rebuilds a model the HF trainers produced so that the 256 pieces
  ``<0x00>..<0xFF>`` are *ordinary vocabulary entries* (ids right after the special tokens, as in
  sentencepiece) and ``byte_fallback=True`` — the trainers never add them, and ``UnigramTrainer``
  always returns ``byte_fallback=False`` (tokenizers#1515). Special tokens become ordinary vocabulary
  entries too (not added tokens), so a literal ``"<s>"`` in the text is encoded as text, not as a control id.
- :func:`export_spm` converts a sentencepiece model into an equivalent ``tokenizers.Tokenizer`` (the same
  idea as HF's ``SpmConverter``): Unigram with the model's scores, or BPE with merges recovered from the
  vocabulary (every split of a piece into two pieces, ranked by the merged piece's score); normalization
  by the model's precompiled charsmap; whitespace as U+2581 with no pre-tokenization (sentencepiece does
  not split at spaces when encoding).
- In Unigram models, pieces that must never be matched from text (special, unknown, byte pieces) get a
  very low score: the HF lattice, unlike sentencepiece's, would otherwise match the literal text
  ``"<0x41>"`` to the byte piece. The characters that spell those pieces are kept in the alphabet by the
  trainer (see ``train.py``), so the text path always wins.

What it does not do: train, verify (``tokenizer.py`` checks the export id-for-id), or write files.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from tokenloom.errors import TokenizerError
from tokenloom.text._spm_model import model_type

__all__ = [
    "BYTE_PIECES",
    "META",
    "NEVER_SCORE",
    "byte_fallback_model",
    "decoder",
    "export_spm",
    "spelling_chars",
]

META = "\u2581"  # the SentencePiece whitespace meta-symbol ▁
BYTE_PIECES: tuple[str, ...] = tuple(f"<0x{b:02X}>" for b in range(256))
NEVER_SCORE = -1.0e6  # Unigram score of pieces that text must never match (special/unknown/byte)


def spelling_chars(special_tokens: Sequence[str], *, byte_fallback: bool) -> str:
    """The characters that spell the special and byte pieces (kept in the alphabet, see module doc)."""
    chars = set("".join(special_tokens))
    if byte_fallback:
        chars |= set("".join(BYTE_PIECES))
    return "".join(sorted(chars))


def decoder(*, strip_dummy_prefix: bool = False) -> Any:
    """Meta-symbol → space, byte pieces → bytes → UTF-8, fused into one string."""
    from tokenizers import decoders

    steps = [decoders.Replace(META, " "), decoders.ByteFallback(), decoders.Fuse()]
    if strip_dummy_prefix:
        steps.append(decoders.Strip(" ", 1, 0))
    return decoders.Sequence(steps)


def byte_fallback_model(
    trained: Any,
    *,
    special_tokens: Sequence[str],
    byte_fallback: bool,
    unk_token: str | None,
) -> Any:
    """Rebuild an HF-trained BPE/Unigram model: specials, then byte pieces, then the learned pieces."""
    from tokenizers import models

    data = json.loads(trained.to_str())["model"]
    kind = data["type"]
    head = list(special_tokens) + (list(BYTE_PIECES) if byte_fallback else [])
    fixed = set(head)
    if kind == "BPE":
        learned = sorted(data["vocab"].items(), key=lambda item: item[1])
        order = head + [piece for piece, _ in learned if piece not in fixed]
        vocab = {piece: i for i, piece in enumerate(order)}
        pairs = [m.split(" ", 1) if isinstance(m, str) else m for m in data["merges"]]
        merges = [(str(a), str(b)) for a, b in pairs]
        return models.BPE(
            vocab,
            merges,
            unk_token=unk_token,
            byte_fallback=byte_fallback,
            fuse_unk=False,
        )
    if kind == "Unigram":
        learned_pairs = [(piece, score) for piece, score in data["vocab"] if piece not in fixed]
        pairs = [(piece, NEVER_SCORE) for piece in head] + learned_pairs
        unk_id = pairs.index((unk_token, NEVER_SCORE)) if unk_token in fixed else None
        return models.Unigram(pairs, unk_id, byte_fallback)
    raise AssertionError(f"unexpected trained model type {kind}")


def _spm_merges(sp: Any, normal: dict[str, int]) -> list[tuple[str, str]]:
    """BPE merges recovered from a sentencepiece BPE vocabulary (see module doc)."""
    ranked: list[tuple[float, int, int, int, str, str]] = []
    for piece, pid in normal.items():
        score = sp.get_score(pid)
        for cut in range(1, len(piece)):
            left, right = piece[:cut], piece[cut:]
            lid, rid = normal.get(left), normal.get(right)
            if lid is not None and rid is not None:
                ranked.append((-score, pid, lid, rid, left, right))
    ranked.sort()
    return [(left, right) for *_, left, right in ranked]


def export_spm(sp: Any, proto: Any) -> Any:
    """A ``tokenizers.Tokenizer`` that encodes like the sentencepiece processor ``sp`` (``proto``: its
    ``sentencepiece_model_pb2.ModelProto``, for the trainer and normalizer settings)."""
    from tokenizers import Regex, models, normalizers
    from tokenizers import Tokenizer as HFTokenizer

    kind, byte_fallback, spec = model_type(proto), proto.trainer_spec.byte_fallback, proto.normalizer_spec

    size = sp.get_piece_size()
    pieces = [sp.id_to_piece(i) for i in range(size)]
    is_normal = [
        not (sp.is_control(i) or sp.is_unknown(i) or sp.is_byte(i) or sp.is_unused(i)) for i in range(size)
    ]
    unk_id = sp.unk_id() if 0 <= sp.unk_id() < size else None
    model: Any
    if kind == "unigram":
        pairs = [(p, sp.get_score(i) if is_normal[i] else NEVER_SCORE) for i, p in enumerate(pieces)]
        model = models.Unigram(pairs, unk_id, byte_fallback)
    elif kind == "bpe":
        vocab = {p: i for i, p in enumerate(pieces)}
        normal = {p: i for i, p in enumerate(pieces) if is_normal[i]}
        model = models.BPE(
            vocab,
            _spm_merges(sp, normal),
            unk_token=pieces[unk_id] if unk_id is not None else None,
            byte_fallback=byte_fallback,
            fuse_unk=True,
        )
    else:
        raise TokenizerError(
            f"cannot export a sentencepiece {kind!r} model to tokenizer.json; "
            "only 'unigram' and 'bpe' models are supported"
        )
    steps: list[Any] = []
    if spec.precompiled_charsmap:
        steps.append(normalizers.Precompiled(spec.precompiled_charsmap))
    if spec.remove_extra_whitespaces:
        steps += [normalizers.Strip(left=True, right=True), normalizers.Replace(Regex(" {2,}"), " ")]
    if spec.escape_whitespaces:
        steps.append(normalizers.Replace(" ", META))
    if spec.add_dummy_prefix:
        steps.append(normalizers.Prepend(META))
    tok = HFTokenizer(model)
    if steps:
        tok.normalizer = normalizers.Sequence(steps)
    tok.decoder = decoder(strip_dummy_prefix=spec.add_dummy_prefix)
    return tok
