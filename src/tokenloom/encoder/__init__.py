"""The shared transformer encoder: configuration, masks, attention, positions, blocks, model.

``EncoderConfig`` is imported eagerly (it needs no torch; the cost model uses it). The torch modules
(``Encoder``, ``TextEmbed``, ``ImageEmbed``, ``from_timm``, ...) are imported on first access.
"""

from __future__ import annotations

import importlib
from typing import Any

from tokenloom.encoder.config import PRESETS, EncoderConfig

# public name -> module that defines it (imported lazily: importing this package must not import torch)
_LAZY: dict[str, str] = {
    "Encoder": "tokenloom.encoder.model",
    "TextEmbed": "tokenloom.encoder.model",
    "ImageEmbed": "tokenloom.encoder.model",
    "ImageClassifier": "tokenloom.encoder.model",
    "KVCache": "tokenloom.encoder.model",
    "from_timm": "tokenloom.encoder.timm_compat",
}

__all__ = ["PRESETS", "EncoderConfig", *_LAZY]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tokenloom.encoder' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(__all__) | set(globals()))
