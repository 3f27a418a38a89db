"""The few exception types users catch.

Each subclasses the built-in it refines, so ``except ValueError`` / ``except OSError`` keeps working,
and all of them share :class:`TokenloomError` so one ``except`` catches everything this library raises
on purpose. Messages name the bad value (file, line, byte offset, option) and say how to fix it.
This module does not define internal errors: internal invariants use ``assert``.
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "CorpusError",
    "ImageDecodeError",
    "TokenizerError",
    "TokenloomError",
]


class TokenloomError(Exception):
    """Base class of every error tokenloom raises on purpose."""


class ConfigError(TokenloomError, ValueError):
    """A configuration value is out of range or inconsistent (e.g. ``vocab_size`` below the minimum)."""


class CorpusError(TokenloomError, ValueError):
    """A corpus cannot be read as asked: missing or empty path, undecodable bytes, bad columns."""


class TokenizerError(TokenloomError, ValueError):
    """A tokenizer file cannot be loaded or saved (corrupt, foreign format, failed verification)."""


class ImageDecodeError(TokenloomError, OSError):
    """An image file cannot be decoded (truncated, corrupt, empty, not an image, too many pixels)."""
