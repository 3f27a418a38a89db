"""Tokenizer engines behind one protocol: :class:`EngineBackend` (``base``), one module per engine.

``hf`` (Hugging Face ``tokenizers``) and ``sentencepiece`` today; a new kind (tiktoken encodings,
``transformers`` tokenizers, plain callables) is one more module implementing the protocol — nothing in
:class:`~tokenloom.text.tokenizer.Tokenizer` changes. Engines are imported by their modules only when used.
"""

from __future__ import annotations

from tokenloom.text.backends.base import ByteFallback, EngineBackend

__all__ = ["ByteFallback", "EngineBackend"]
