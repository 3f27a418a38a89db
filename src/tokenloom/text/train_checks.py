"""The checks of a :class:`~tokenloom.text.train_config.TrainerConfig` that read several of its fields.

``TrainerConfig.__post_init__`` calls them after the per-field checks (types, choices, where a setting
applies): :func:`check_parity` (language sampling and the parity-bpe settings; returns ``dev`` as a path
string and ``ratios`` as ``LANG=R`` items), :func:`check_special_tokens` (returns them as a tuple) and
:func:`check_ranges` (the vocabulary against what it must hold, and every bounded number). Each raises
``ConfigError`` naming the value and the fix. What it does not do: define the fields or their defaults
(``train_config.py``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

from tokenloom.errors import ConfigError
from tokenloom.text._hf_build import BYTE_PIECES
from tokenloom.text._train_values import ratio_items

if TYPE_CHECKING:
    from tokenloom.text.train_config import TrainerConfig

__all__ = ["check_parity", "check_ranges", "check_special_tokens"]


def check_parity(cfg: TrainerConfig) -> tuple[str | None, tuple[str, ...]]:
    """(``dev`` as a path string or None, ``ratios`` as ``LANG=R`` items) once language sampling and the
    parity-bpe settings are checked."""
    if not 0.0 <= cfg.language_sampling <= 1.0:
        raise ConfigError(
            f"language_sampling={cfg.language_sampling!r} is outside [0, 1]; pass 1 for the corpus as it "
            "is, 0 for uniform over languages, or a value between (0.3 as in XLM-R)"
        )
    if cfg.dev is not None and (not isinstance(cfg.dev, str | os.PathLike) or not os.fspath(cfg.dev)):
        raise ConfigError(f"dev={cfg.dev!r}; give the path of a parallel development corpus")
    dev = None if cfg.dev is None else os.fspath(cfg.dev)
    ratios = ratio_items(cfg.ratios)
    if dev is not None and ratios:
        raise ConfigError("parity-bpe balances on dev= or on ratios=, not both; drop one of them")
    if cfg.global_merges < 0 or cfg.window_size < 1:
        raise ConfigError(
            f"global_merges={cfg.global_merges!r} must be >= 0 and window_size={cfg.window_size!r} >= 1"
        )
    return dev, ratios


def check_special_tokens(tokens: Iterable[str]) -> tuple[str, ...]:
    """``tokens`` as a tuple: non-empty strings, no duplicates, none spelled like a byte piece."""
    tokens = tuple(tokens)
    if not all(isinstance(t, str) and t for t in tokens):
        raise ConfigError(f"special_tokens must be non-empty strings, got {tokens!r}")
    if len(set(tokens)) != len(tokens):
        raise ConfigError(f"special_tokens contains duplicates: {tokens!r}")
    clash = [t for t in tokens if t in BYTE_PIECES]
    if clash:
        raise ConfigError(f"special token {clash[0]!r} collides with a byte piece; rename it")
    return tokens


def check_ranges(cfg: TrainerConfig) -> None:
    """The vocabulary holds what it must, and every bounded number is in its range."""
    if cfg.vocab_size < cfg.min_vocab_size:
        raise ConfigError(
            f"vocab_size={cfg.vocab_size!r} is too small: at least {cfg.min_vocab_size} are needed for "
            f"{len(cfg.resolved_special_tokens)} special tokens, 256 byte characters (bytelevel-bpe) or "
            f"{256 if cfg.byte_fallback else 0} byte pieces and the {len(cfg.required_chars)} characters "
            "that spell them, plus one learned piece (the corpus alphabet may need more)"
        )
    if cfg.max_bytes is not None and cfg.max_bytes <= 0:
        raise ConfigError(f"max_bytes must be a positive int or None, got {cfg.max_bytes!r}")
    if not 0.0 <= cfg.heldout < 0.5:
        raise ConfigError(f"heldout must be in [0, 0.5), got {cfg.heldout!r}")
    if not 0.9 <= cfg.character_coverage <= 1.0:
        raise ConfigError(f"character_coverage must be in [0.9, 1], got {cfg.character_coverage!r}")
    if cfg.max_line_bytes < 256:
        raise ConfigError(f"max_line_bytes must be at least 256, got {cfg.max_line_bytes!r}")
    for name in ("max_piece_length", "verify_sample"):
        value = getattr(cfg, name)
        if value is not None and value < 1:
            raise ConfigError(f"TrainerConfig.{name} must be a positive int, got {value!r}")
    if cfg.threads < 0:
        raise ConfigError(f"threads must be >= 0 (0 = all CPUs), got {cfg.threads!r}")
