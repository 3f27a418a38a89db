"""The ``tokenloom`` command line: subcommands, thin over the Python API.

Each subcommand lives in its own module under ``tokenloom._commands``, listed in ``COMMANDS``.
A command module defines::

    NAME: str                                   # the subcommand, e.g. "train"
    HELP: str                                   # one line for ``tokenloom --help``
    def add_arguments(parser) -> None           # its options (cheap: no heavy imports here)
    def run(args) -> int                        # does the work; heavy imports happen inside

Every subcommand also gets ``--quiet`` (no progress bars) and ``--verbose`` (tokenloom's own debug
logging; other libraries' loggers stay at WARNING). Every ``--help`` shows each option's default.
Errors that tokenloom raises on purpose (:class:`tokenloom.errors.TokenloomError`), file-system errors
(``OSError``: a missing folder, a file where a folder was asked for) and bad arguments are printed as one
line, ``tokenloom: error: ...``, with exit status 2 (``--help`` has the usage); anything else is a bug and
keeps its traceback. Output piped into a reader that stops early (``| head``) ends the command quietly.
``tokenloom --help`` and ``--version`` import neither torch, pandas nor matplotlib.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any, NoReturn

from tokenloom import __version__

__all__ = ["build_parser", "main"]

# the subcommand modules under tokenloom._commands, in the order ``tokenloom --help`` lists them
# (a module's NAME is the subcommand: train_vit.py is ``train-vit``)
COMMANDS: tuple[str, ...] = (
    "costs", "demo", "evaluate", "explain", "fertility", "images", "sweep", "tokenize", "train", "train_vit",
    "train_lm", "eval_lm", "compare_lm",
)  # fmt: skip


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, adding ``(default: X)`` to options whose help does not state its default.

    Flags (default False) and options without a default (None) get nothing: there is nothing to show.
    """

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (
            "default" in text
            or default in (None, False, argparse.SUPPRESS)
            or not action.option_strings
            or text == argparse.SUPPRESS
        ):
            return action.help
        shown = ",".join(map(str, default)) if isinstance(default, list | tuple) else "%(default)s"
        return f"{text} (default: {shown})"


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line, ``tokenloom: error: ...`` (no usage dump), exit 2.

    Sub-parsers are of this class too (argparse creates them with ``type(parent)``), and use
    :class:`HelpFormatter` unless told otherwise.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"tokenloom: error: {message} (see `{self.prog} --help`)\n")


def _command_modules() -> list[ModuleType]:
    return [importlib.import_module(f"tokenloom._commands.{name}") for name in COMMANDS]


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser, one subparser per command module."""
    parser = Parser(
        prog="tokenloom",
        description="Train and evaluate tokenizers, measure multilingual token-length slices, "
        "preprocess images into ViT patch tokens, and size the encoder that reads both.",
    )
    parser.add_argument("--version", action="version", version=f"tokenloom {__version__}")
    common = Parser(add_help=False)
    common.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    common.add_argument("-v", "--verbose", action="store_true", help="tokenloom's debug logging on stderr")
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")
    for module in _command_modules():
        p = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP, parents=[common])
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit status."""
    try:
        return _main(argv)
    except BrokenPipeError:  # output piped into `head` and the like: stop quietly, as Unix tools do
        # the reader is gone: send what is still buffered for stdout nowhere, so the flush at exit is silent
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, what a shell reports for a tool stopped by a closed pipe


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    run = getattr(args, "_run", None)
    if run is None:
        parser.print_help()
        return 2
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    # --verbose: tokenloom's own loggers only; matplotlib, PIL and the engines stay at WARNING
    logging.getLogger("tokenloom").setLevel(logging.DEBUG if args.verbose else logging.NOTSET)
    from tokenloom.errors import TokenloomError

    try:
        return int(run(args) or 0)
    except BrokenPipeError:
        raise  # handled in main(): not an error of the command
    except (TokenloomError, OSError) as exc:  # OSError: a path that cannot be read or written as asked
        print(f"tokenloom: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("tokenloom: interrupted", file=sys.stderr)
        return 130
