"""Reading a sentencepiece ``ModelProto``: the settings of a serialized model, shared by the sentencepiece
backend and the ``tokenizer.json`` exporter (``_hf_build.export_spm``).

What it does: parse model bytes with the ``sentencepiece_model_pb2`` module sentencepiece ships
(``protobuf``, imported on first use) and name the model type. What it does not do: load a processor,
encode or export. It imports nothing of tokenloom but the errors.
"""

from __future__ import annotations

from typing import Any

from tokenloom.errors import TokenizerError

__all__ = ["model_type", "read_model"]


def read_model(data: bytes) -> Any:
    """The ``sentencepiece_model_pb2.ModelProto`` of serialized model bytes; TokenizerError if malformed."""
    from google.protobuf.message import DecodeError
    from sentencepiece import sentencepiece_model_pb2

    proto_type: Any = sentencepiece_model_pb2.ModelProto  # type: ignore[attr-defined]  # generated, no stubs
    try:
        return proto_type.FromString(data)
    except DecodeError as exc:
        raise TokenizerError(f"cannot read the sentencepiece model: {exc}") from None


def model_type(proto: Any) -> str:
    """``"unigram"`` | ``"bpe"`` | ``"word"`` | ``"char"`` of a ``ModelProto``."""
    return str(proto.trainer_spec.ModelType.Name(proto.trainer_spec.model_type)).lower()
