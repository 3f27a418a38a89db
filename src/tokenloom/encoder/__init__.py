"""The shared transformer encoder: configuration, masks, attention, positions, blocks, model.

``EncoderConfig`` is imported eagerly (it needs no torch; the cost model uses it). The torch modules
(``Encoder``, ``TextEmbed``, ``ImageEmbed``, ``from_timm``, ...) are imported on first access.
"""

from __future__ import annotations

from tokenloom._lazy import lazy_exports
from tokenloom.encoder.config import PRESETS, EncoderConfig

# public name -> module that defines it (imported lazily: importing this package must not import torch)
_LAZY: dict[str, str] = {
    "Encoder": "tokenloom.encoder.model",
    "TextEmbed": "tokenloom.encoder.embed",
    "ImageEmbed": "tokenloom.encoder.embed",
    "PatchEmbed": "tokenloom.encoder.embed",
    "ImageClassifier": "tokenloom.encoder.model",
    "KVCache": "tokenloom.encoder.model",
    "from_timm": "tokenloom.encoder.timm_compat",
}

__all__ = ["PRESETS", "EncoderConfig", *_LAZY]


__getattr__, __dir__ = lazy_exports(globals(), _LAZY)
