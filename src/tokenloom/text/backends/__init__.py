"""Tokenizer engines behind one protocol: :class:`EngineBackend` (``base``), one module per engine.

``hf`` (Hugging Face ``tokenizers``), ``sentencepiece``, ``tiktoken`` (an ``Encoding`` or an object shaped like
one), ``transformers`` (fast or slow) and ``plain`` (a function ``text -> ids``); a new kind is one more module
implementing the protocol — nothing in :class:`~tokenloom.text.tokenizer.Tokenizer` changes.
:func:`tokenloom.text.adapt.as_tokenizer` picks the backend for an object. Engines are imported by their
modules only when used.
"""

from __future__ import annotations

from tokenloom.text.backends.base import ByteFallback, EngineBackend

__all__ = ["ByteFallback", "EngineBackend"]
