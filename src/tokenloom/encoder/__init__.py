"""The shared transformer encoder: configuration, masks, attention, positions, blocks, model."""

from __future__ import annotations

from tokenloom.encoder.config import PRESETS, EncoderConfig

__all__ = ["PRESETS", "EncoderConfig"]
