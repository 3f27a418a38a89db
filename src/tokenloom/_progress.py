"""Progress bars that appear on a terminal and stay quiet otherwise.

One helper for every long loop in the library, so the rule is the same everywhere: a tqdm bar on
stderr when stderr is a TTY, nothing when it is not (CI, pipes, logs) or when the caller passes
``quiet=True`` (the CLI's ``--quiet``).
"""

from __future__ import annotations

import sys
from collections.abc import Generator, Iterable
from typing import Any, TypeVar

from tqdm.auto import tqdm

T = TypeVar("T")

__all__ = ["bar", "progress", "show_progress"]


def show_progress(quiet: bool = False) -> bool:
    """True when a progress bar should be drawn: not quiet and stderr is a terminal."""
    return not quiet and sys.stderr.isatty()


def progress(
    iterable: Iterable[T],
    *,
    total: float | None = None,
    desc: str | None = None,
    unit: str = "it",
    quiet: bool = False,
    **tqdm_options: Any,
) -> Generator[T, None, None]:
    """Iterate over ``iterable``, drawing a tqdm bar on a TTY unless ``quiet``; ``close()`` closes ``iterable``'s
    generator too (a pool of worker processes stops at once)."""
    if not show_progress(quiet):
        yield from iterable
        return

    yield from tqdm(iterable, total=total, desc=desc, unit=unit, dynamic_ncols=True, **tqdm_options)


class _NoBar:
    """What :func:`bar` gives when no bar is drawn: accepts the calls, draws nothing."""

    def update(self, n: float = 1) -> None:
        pass

    def set_postfix_str(self, text: str) -> None:
        pass

    def close(self) -> None:
        pass


def bar(*, total: float | None, desc: str, unit: str = "it", quiet: bool = False, **tqdm_options: Any) -> Any:
    """A tqdm bar to ``update`` by hand (``close`` it), or one that draws nothing (see :func:`show_progress`)."""
    if not show_progress(quiet):
        return _NoBar()
    return tqdm(total=total, desc=desc, unit=unit, dynamic_ncols=True, **tqdm_options)
