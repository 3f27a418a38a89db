"""Capture what decoders say while one file is decoded: Python warnings and C-library messages on stderr.

:func:`capture_diagnostics` is a context manager yielding a list that, on exit, holds the distinct
messages emitted inside it, in order:

* Python warnings (Pillow's "Corrupt EXIF data", "Image appears to be a malformed MPO file", ...), caught
  with ``warnings.catch_warnings`` so none is shown;
* text written to file descriptor 2 by C libraries (libjpeg's "Corrupt JPEG data: 4 extraneous bytes
  before marker 0xd9", libtiff's warnings), captured by pointing fd 2 at a private temporary file for the
  duration (``os.dup2``) and restoring it afterwards.

Contract: both mechanisms are process-wide, so the block must not run in two threads of one process at
once (decoding worker processes each have their own fd 2 and warning filters, which is what the
preprocessing pool uses). Output that another thread writes to stderr during the block lands in the
captured text instead of the terminal. The temporary file is per process (re-created after ``fork``), so
worker processes never share it. This module does not decide what a message means.
"""

from __future__ import annotations

import atexit
import logging
import os
import sys
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import IO

__all__ = ["capture_diagnostics"]

logger = logging.getLogger(__name__)

_MAX_MESSAGES = 20  # distinct messages kept per file; more are counted in one last line
_MAX_CHARS = 300  # one message is cut to this many characters
_MAX_STDERR_BYTES = 64 * 1024  # captured stderr read back per file (a decoder may repeat itself)
_sink: tuple[int, IO[bytes]] | None = None  # (pid, temporary file) that fd 2 points at while capturing


def _sink_file() -> IO[bytes]:
    global _sink
    if _sink is None or _sink[0] != os.getpid():  # first use, or a fork child: its own file
        handle = tempfile.TemporaryFile(prefix="tokenloom-stderr-")  # noqa: SIM115 (kept for the process)
        atexit.register(handle.close)
        _sink = (os.getpid(), handle)
    return _sink[1]


def _clean(message: str) -> str:
    text = " ".join(message.split())
    return text if len(text) <= _MAX_CHARS else text[: _MAX_CHARS - 3] + "..."


def _distinct(messages: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    for message in messages:
        text = _clean(message)
        if text:
            seen[text] = seen.get(text, 0) + 1
    out = [f"{text} (x{n})" if n > 1 else text for text, n in seen.items()]
    if len(out) > _MAX_MESSAGES:
        out = [*out[:_MAX_MESSAGES], f"... {len(out) - _MAX_MESSAGES} more distinct messages"]
    return out


@contextmanager
def _stderr_to(sink: IO[bytes]) -> Iterator[None]:
    """Point fd 2 at ``sink`` for the block (flushing Python's own stderr buffer on both sides)."""
    with suppress(AttributeError, OSError, ValueError):
        sys.stderr.flush()
    sink.seek(0)
    sink.truncate()
    try:
        saved = os.dup(2)
    except OSError:  # no fd 2 (a daemon): nothing to capture, and nothing would be printed either
        yield
        return
    os.dup2(sink.fileno(), 2)
    try:
        yield
    finally:
        with suppress(AttributeError, OSError, ValueError):
            sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


@contextmanager
def capture_diagnostics() -> Iterator[list[str]]:
    """Collect the warnings and stderr output of the block into the yielded list (filled on exit)."""
    found: list[str] = []
    caught: list[warnings.WarningMessage] = []
    try:
        sink: IO[bytes] | None = _sink_file()
    except OSError as exc:  # no temporary folder: warnings are still captured, stderr passes through
        logger.debug("cannot capture stderr while decoding (%s)", exc)
        sink = None
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if sink is None:
                yield found
            else:
                with _stderr_to(sink):
                    yield found
    finally:
        python_messages = [f"{w.category.__name__}: {w.message}" for w in caught]
        c_messages: list[str] = []
        if sink is not None:
            sink.seek(0)
            c_messages = sink.read(_MAX_STDERR_BYTES).decode("utf-8", "replace").splitlines()
        found.extend(_distinct(python_messages + c_messages))
