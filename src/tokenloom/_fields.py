"""Type and range checks of config fields, shared by the frozen config dataclasses (``__post_init__``).

Each check names the config and field, the bad value and the fix, and raises
:class:`~tokenloom.errors.ConfigTypeError` for a value of the wrong type (``4000.0`` or ``True`` where an
int is needed: both ``TypeError`` and ``ConfigError``) before any range is checked, so a wrong type is never
reported as "too small". :func:`check_seed` is the one seed range of every tokenizer engine. This module
checks values only; it imports nothing but the errors.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import Any

from tokenloom.errors import ConfigError, ConfigTypeError

__all__ = ["SEED_LIMIT", "check_bools", "check_ints", "check_numbers", "check_seed"]

SEED_LIMIT = 2**32  # seeds are 0 <= seed < 2**32 for every engine (sentencepiece's generator takes 32 bits)


def check_ints(config: Any, examples: Mapping[str, int], *, optional: tuple[str, ...] = ()) -> None:
    """Fields of ``config`` (names: ``examples``' keys, each with an example value for the message) must be
    ints — ``None`` too for the ``optional`` ones; integers of other types (``numpy.int64``) are stored as
    ``int`` (``object.__setattr__``: the dataclass is frozen)."""
    owner = type(config).__name__
    for name, example in examples.items():
        value = getattr(config, name)
        if value is None and name in optional:
            continue
        if isinstance(value, bool) or not hasattr(type(value), "__index__"):
            whole = isinstance(value, float) and value.is_integer()
            fix = f"{name}={int(value)}" if whole else f"a whole number, e.g. {name}={example}"
            none = " (or None)" if name in optional else ""
            raise ConfigTypeError(
                f"{owner}.{name}={value!r} is of type {type(value).__name__}, not int{none}; pass {fix}"
            )
        object.__setattr__(config, name, operator.index(value))


def check_numbers(config: Any, examples: Mapping[str, float]) -> None:
    """Fields of ``config`` that must be real numbers (int or float, not bool)."""
    owner = type(config).__name__
    for name, example in examples.items():
        value = getattr(config, name)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigTypeError(
                f"{owner}.{name}={value!r} is of type {type(value).__name__}, not float; pass a number, "
                f"e.g. {name}={example}"
            )


def check_bools(config: Any, names: tuple[str, ...]) -> None:
    """Fields of ``config`` that must be ``True`` or ``False`` (not ``1``, not ``"no"``)."""
    owner = type(config).__name__
    for name in names:
        value = getattr(config, name)
        if not isinstance(value, bool):
            raise ConfigTypeError(
                f"{owner}.{name}={value!r} is of type {type(value).__name__}, not bool; pass True or False"
            )


def check_seed(seed: int, *, name: str = "seed") -> int:
    """``seed`` when ``0 <= seed < 2**32`` (:data:`SEED_LIMIT`), the one range every engine accepts;
    ``ConfigError`` naming it and the range otherwise (check the type first: :func:`check_ints`)."""
    if not 0 <= seed < SEED_LIMIT:
        raise ConfigError(
            f"{name}={seed!r} is out of range: seeds are 0 <= seed < 2**32 ({SEED_LIMIT}) for every engine; "
            "pass a seed in that range"
        )
    return seed
