"""Read the few fields of a sentencepiece ``ModelProto`` that the exporter needs, without protobuf.

``sentencepiece`` ships ``sentencepiece_model_pb2`` but it needs the ``protobuf`` package, which is not a
dependency of tokenloom. The model file is a plain protobuf message, so this module walks the wire format
(varints and length-delimited fields) and returns the model type and the normalizer settings. Pieces,
scores and piece types come from ``SentencePieceProcessor`` itself. This module does not write protos.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from tokenloom.errors import TokenizerError

__all__ = ["SpmSpec", "read_spec"]

# ModelProto fields: 1 pieces, 2 trainer_spec, 3 normalizer_spec
# TrainerSpec fields used: 3 model_type (1 unigram, 2 bpe, 3 word, 4 char), 35 byte_fallback
# NormalizerSpec fields: 1 name, 2 precompiled_charsmap, 3 add_dummy_prefix, 4 remove_extra_whitespaces,
#                        5 escape_whitespaces
_MODEL_TYPES = {1: "unigram", 2: "bpe", 3: "word", 4: "char"}


@dataclass(frozen=True)
class SpmSpec:
    """The trainer and normalizer settings of a sentencepiece model (proto defaults when absent)."""

    model_type: str = "unigram"  # "unigram" | "bpe" | "word" | "char"
    byte_fallback: bool = False  # trainer_spec.byte_fallback
    normalizer_name: str = ""  # normalizer_spec.name, e.g. "identity", "nfkc", "nmt_nfkc"
    precompiled_charsmap: bytes = b""  # the compiled normalization rule (empty for identity)
    add_dummy_prefix: bool = True  # normalizer_spec.add_dummy_prefix (proto default true)
    remove_extra_whitespaces: bool = True  # normalizer_spec.remove_extra_whitespaces (proto default true)
    escape_whitespaces: bool = True  # normalizer_spec.escape_whitespaces (proto default true)


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise TokenizerError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 70:
            raise TokenizerError("varint too long")


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, value) pairs of one message; length-delimited values stay bytes."""
    out: list[tuple[int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            out.append((number, value))
        elif wire == 1:
            pos += 8
        elif wire == 2:
            length, pos = _varint(data, pos)
            if pos + length > len(data):
                raise TokenizerError("truncated length-delimited field")
            out.append((number, data[pos : pos + length]))
            pos += length
        elif wire == 5:
            out.append((number, struct.unpack_from("<I", data, pos)[0]))
            pos += 4
        else:
            raise TokenizerError(f"unsupported protobuf wire type {wire}")
    return out


def read_spec(model: bytes) -> SpmSpec:
    """Parse trainer/normalizer settings from a serialized ``ModelProto``; TokenizerError if malformed."""
    trainer: dict[int, int | bytes] = {}
    normalizer: dict[int, int | bytes] = {}
    for number, value in _fields(model):
        if number == 2 and isinstance(value, bytes):
            trainer = dict(_fields(value))
        elif number == 3 and isinstance(value, bytes):
            normalizer = dict(_fields(value))
    name = normalizer.get(1, b"")
    charsmap = normalizer.get(2, b"")
    return SpmSpec(
        model_type=_MODEL_TYPES.get(int(trainer.get(3, 1)), "unknown"),
        byte_fallback=bool(trainer.get(35, 0)),
        normalizer_name=name.decode("utf-8", "replace") if isinstance(name, bytes) else "",
        precompiled_charsmap=charsmap if isinstance(charsmap, bytes) else b"",
        add_dummy_prefix=bool(normalizer.get(3, 1)),
        remove_extra_whitespaces=bool(normalizer.get(4, 1)),
        escape_whitespaces=bool(normalizer.get(5, 1)),
    )
