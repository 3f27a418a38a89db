"""Argument helpers shared by the ``tokenloom`` subcommands: value parsers and option rules.

Value parsers (``type=`` of ``add_argument``) raise ``argparse.ArgumentTypeError``, so a bad value is the
parser's one-line error; :class:`DeprecatedAlias` keeps an old option spelling working;
:func:`refuse_ignored` turns an option that a command would silently ignore into an error;
:func:`add_errors_argument` is every batch job's ``--errors``. Nothing here imports more than the standard
library at module level.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")


def argument_value(parse: Callable[[str], T], text: str) -> T:
    """``parse(text)``, its ``ValueError`` turned into argparse's one-line error (for ``type=`` functions
    that import their parser lazily, so that ``--help`` stays cheap)."""
    try:
        return parse(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


__all__ = [
    "DeprecatedAlias",
    "TokenizerSpec",
    "add_errors_argument",
    "argument_value",
    "params",
    "parse_length",
    "parse_lengths",
    "positive",
    "positives",
    "refuse_ignored",
]

_SUFFIX = {"": 1, "k": 1024, "m": 1024**2}


def add_errors_argument(parser: argparse.ArgumentParser) -> None:
    """``--errors`` of a batch job over a corpus: its default, choices and help are the corpus readers'
    (``tokenloom.corpus.records``: ``BATCH_ERRORS``, ``ERRORS``, ``ERRORS_HELP``), the one rule for all."""
    from tokenloom.corpus.records import BATCH_ERRORS, ERRORS, ERRORS_HELP

    parser.add_argument(
        "--errors", choices=ERRORS, default=BATCH_ERRORS, help=f"{ERRORS_HELP} (default: {BATCH_ERRORS})"
    )


def parse_length(text: str) -> int:
    """``"4096"``, ``"4k"`` (4096), ``"1m"`` (1048576) → a positive int."""
    match = re.fullmatch(r"\s*(\d+)\s*([kKmM]?)\s*", text)
    if not match or int(match[1]) == 0:
        raise argparse.ArgumentTypeError(
            f"invalid length {text!r}: give a positive integer, optionally with k or m (4k = 4096)"
        )
    return int(match[1]) * _SUFFIX[match[2].lower()]


def parse_lengths(text: str) -> list[int]:
    """``"1k,2k,4k"`` → ``[1024, 2048, 4096]``."""
    return [parse_length(part) for part in text.split(",") if part.strip()] or [parse_length(text)]


def positive(text: str) -> int:
    """``"8"`` → 8; anything but a positive integer is an argparse error."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"invalid value {text!r}: give a positive integer")
    return value


def params(text: str) -> int:
    """A parameter count: ``"70e9"``, ``"85_056_000"``, ``"85,056,000"`` → an int."""
    try:
        value = float(text.replace("_", "").replace(",", ""))
    except ValueError:
        value = 0.0
    if not (value >= 1 and value.is_integer()):
        raise argparse.ArgumentTypeError(f"invalid parameter count {text!r}: give e.g. 70e9 or 85056000")
    return int(value)


def positives(text: str) -> list[int]:
    """``"224,384"`` → ``[224, 384]``."""
    return [positive(part) for part in text.split(",") if part.strip()] or [positive(text)]


class DeprecatedAlias(argparse.Action):
    """An old spelling of an option: it still works and warns on stderr; hide it with ``help=SUPPRESS``.

    ``metavar`` names the option to use instead: ``add_argument("--old", dest="new", action=DeprecatedAlias,
    metavar="--new", help=argparse.SUPPRESS)``.
    """

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:  # fmt: skip
        print(f"tokenloom: warning: {option_string} is deprecated; use {self.metavar}", file=sys.stderr)
        setattr(namespace, self.dest, values)


def refuse_ignored(args: argparse.Namespace, flags: Sequence[str], reason: str) -> None:
    """ConfigError when any of ``flags`` was given: it would be ignored because of ``reason``."""
    from tokenloom.errors import ConfigError

    given = [f for f in flags if getattr(args, f.lstrip("-").replace("-", "_")) not in (None, False)]
    if given:
        raise ConfigError(
            f"{', '.join(given)} would be ignored {reason}; drop {'it' if len(given) == 1 else 'them'}"
        )


class TokenizerSpec(argparse.Action):
    """``--tokenizer SPEC`` (repeatable) with per-tokenizer ``--pattern`` and ``--name`` options that apply to
    the ``--tokenizer`` given just before them; collects ``[{"spec": ..., "pattern": ..., "name": ...}]``
    in ``dest``."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option: str | None = None,
    ) -> None:
        specs: list[dict[str, str | None]] = getattr(namespace, self.dest, None) or []
        key = (option or "--tokenizer").lstrip("-")
        if key == "tokenizer":
            specs.append({"spec": values, "pattern": None, "name": None})
        elif not specs:
            parser.error(f"{option} {values!r} must follow the --tokenizer it belongs to")
        elif specs[-1][key] is not None:
            parser.error(f"{option} given twice for --tokenizer {specs[-1]['spec']!r}")
        else:
            specs[-1][key] = values
        setattr(namespace, self.dest, specs)
