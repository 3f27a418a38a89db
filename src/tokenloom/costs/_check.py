"""Argument checks shared by the cost formulas: a count is an int (not a bool) of at least 1, or 0 where allowed.

A bad value raises :class:`~tokenloom.errors.ConfigError` naming the argument and the value.
"""

from __future__ import annotations

from tokenloom.errors import ConfigError

__all__ = ["check_count"]


def check_count(name: str, value: object, *, zero_ok: bool = False) -> int:
    """``value`` as an int count, or :class:`ConfigError` naming the argument."""
    low = 0 if zero_ok else 1
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        kind = "a non-negative" if zero_ok else "a positive"
        raise ConfigError(f"{name} must be {kind} int, got {value!r}")
    return value
