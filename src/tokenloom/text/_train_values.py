"""Values of training settings given as text: a byte size (``max_bytes="2GB"``) and parity-bpe's per-language
ratios (``{"hin_Deva": 2.5}`` or ``"hin_Deva=2.5"``). What it does not do: hold the settings
(``train_config.py``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from tokenloom.errors import ConfigError

__all__ = ["parse_size", "ratio_items"]

_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12, "kib": 2**10, "mib": 2**20,
          "gib": 2**30, "tib": 2**40}  # fmt: skip


def parse_size(text: str) -> int:
    """``"2GB"``, ``"500MB"``, ``"1.5GiB"``, ``"1000000"`` → bytes (decimal units; KiB, MiB, GiB binary)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    unit = m.group(2).lower() if m else ""
    if m is None or unit not in _UNITS:
        raise ConfigError(
            f"max_bytes={text!r} is not a size; give bytes or a size such as 2GB, 500MB, 1.5GiB"
        )
    return int(float(m.group(1)) * _UNITS[unit])


def ratio_items(ratios: object) -> tuple[str, ...]:
    """``ratios`` given as a mapping or as ``"LANG=R"`` strings → sorted ``"LANG=R"`` strings, checked."""
    items = [f"{k}={v}" for k, v in ratios.items()] if isinstance(ratios, Mapping) else ratios
    if isinstance(items, str) or not isinstance(items, Iterable):
        raise ConfigError(f"ratios={ratios!r}; give {{language: ratio}} or 'LANG=R' strings")
    out: dict[str, str] = {}
    for item in items:
        lang, eq, value = str(item).partition("=")
        try:
            number = float(value)
        except ValueError:
            number = -1.0
        if not eq or not lang or not number > 0 or lang in out:
            raise ConfigError(
                f"ratios entry {item!r} is not LANG=R with a positive R (each language once), e.g. hin_Deva=2.5"
            )
        out[lang] = f"{lang}={number!r}"
    return tuple(out[k] for k in sorted(out))
