"""Lazy public names for package ``__init__`` modules: imported on first access, then cached.

``__getattr__, __dir__ = lazy_exports(globals(), {"name": "tokenloom.module", ...})`` gives a package the
PEP 562 hooks, so ``import tokenloom`` (and its subpackages) stays cheap: torch, pandas and the engines load
only when a name that needs them is used. This module imports nothing heavy itself.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    namespace: dict[str, Any], names: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """PEP 562 ``__getattr__`` and ``__dir__`` for the module whose ``globals()`` is ``namespace``."""
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value  # cache: later lookups skip __getattr__
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace.get("__all__", ())) | set(names))

    return __getattr__, __dir__
