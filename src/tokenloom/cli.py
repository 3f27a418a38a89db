"""The ``tokenloom`` command line: subcommands, thin over the Python API.

Each subcommand lives in its own module under ``tokenloom._commands``, listed in ``COMMANDS``.
A command module defines::

    NAME: str                                   # the subcommand, e.g. "train"
    HELP: str                                   # one line for ``tokenloom --help``
    def add_arguments(parser) -> None           # its options (cheap: no heavy imports here)
    def run(args) -> int                        # does the work; heavy imports happen inside

Every subcommand also gets ``--quiet`` (no progress bars) and ``--verbose`` (debug logging).
Errors that tokenloom raises on purpose (:class:`tokenloom.errors.TokenloomError`) and file-system errors
(``OSError``: a missing folder, a file where a folder was asked for) are printed as one line,
``tokenloom: error: ...``, with exit status 2; anything else is a bug and keeps its traceback.
``tokenloom --help`` and ``--version`` import neither torch, pandas nor matplotlib.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence
from types import ModuleType

from tokenloom import __version__

__all__ = ["build_parser", "main"]

# the subcommand modules under tokenloom._commands, in the order ``tokenloom --help`` lists them
COMMANDS: tuple[str, ...] = ("costs", "demo", "explain", "fertility", "images", "train")


def _command_modules() -> list[ModuleType]:
    return [importlib.import_module(f"tokenloom._commands.{name}") for name in COMMANDS]


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser, one subparser per command module."""
    parser = argparse.ArgumentParser(
        prog="tokenloom",
        description="Train and evaluate tokenizers, measure multilingual token-length slices, "
        "preprocess images into ViT patch tokens, and size the encoder that reads both.",
    )
    parser.add_argument("--version", action="version", version=f"tokenloom {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    common.add_argument("-v", "--verbose", action="store_true", help="debug logging on stderr")
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")
    for module in _command_modules():
        p = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP, parents=[common])
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    run = getattr(args, "_run", None)
    if run is None:
        parser.print_help()
        return 2
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    from tokenloom.errors import TokenloomError

    try:
        return int(run(args) or 0)
    except (TokenloomError, OSError) as exc:  # OSError: a path that cannot be read or written as asked
        print(f"tokenloom: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("tokenloom: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head` and the like: stop quietly, as Unix tools do
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
