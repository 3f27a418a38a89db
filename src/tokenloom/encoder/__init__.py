"""The shared transformer encoder: configuration, masks, attention, positions, blocks, model.

``EncoderConfig`` and ``LanguageModelConfig`` are imported eagerly (they need no torch; the cost model uses
them). The torch modules (``Encoder``, ``TextEmbed``, ``ImageEmbed``, ``LanguageModel``, ``from_timm``, ...)
are imported on first access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tokenloom._lazy import lazy_exports
from tokenloom.encoder.config import PRESETS, EncoderConfig, LanguageModelConfig

# public name -> module that defines it (imported lazily: importing this package must not import torch)
_LAZY: dict[str, str] = {
    "Encoder": "tokenloom.encoder.model",
    "TextEmbed": "tokenloom.encoder.embed",
    "ImageEmbed": "tokenloom.encoder.embed",
    "PatchEmbed": "tokenloom.encoder.embed",
    "ImageClassifier": "tokenloom.encoder.model",
    "KVCache": "tokenloom.encoder.model",
    "LanguageModel": "tokenloom.encoder.lm",
    "from_timm": "tokenloom.encoder.timm_compat",
}

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time _LAZY imports each name on first use
    from tokenloom.encoder.embed import ImageEmbed, PatchEmbed, TextEmbed
    from tokenloom.encoder.lm import LanguageModel
    from tokenloom.encoder.model import Encoder, ImageClassifier, KVCache
    from tokenloom.encoder.timm_compat import from_timm

__all__ = [
    "PRESETS",
    "Encoder",
    "EncoderConfig",
    "ImageClassifier",
    "ImageEmbed",
    "KVCache",
    "LanguageModel",
    "LanguageModelConfig",
    "PatchEmbed",
    "TextEmbed",
    "from_timm",
]


__getattr__, __dir__ = lazy_exports(globals(), _LAZY)
