"""The few exception types users catch.

Each subclasses the built-in it refines, so ``except ValueError`` / ``except OSError`` keeps working,
and all of them share :class:`TokenloomError` so one ``except`` catches everything this library raises
on purpose. Messages name the bad value (file, line, byte offset, option) and say how to fix it.
This module does not define internal errors: internal invariants use ``assert``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from tokenloom.text.tokenizer import Tokenizer

__all__ = [
    "ConfigError",
    "ConfigTypeError",
    "CorpusError",
    "ImageDecodeError",
    "ImageErrorKind",
    "TokenizerError",
    "TokenloomError",
    "VocabSizeError",
]


class TokenloomError(Exception):
    """Base class of every error tokenloom raises on purpose."""


class ConfigError(TokenloomError, ValueError):
    """A configuration value is out of range or inconsistent (e.g. ``vocab_size`` below the minimum)."""


class ConfigTypeError(ConfigError, TypeError):
    """A configuration value has the wrong type (e.g. ``vocab_size=4000.0`` or ``True`` where an int is needed);
    caught by ``except TypeError`` and by ``except ConfigError`` alike."""


class VocabSizeError(ConfigError):
    """The corpus gives fewer pieces than ``vocab_size`` asks for: there is nothing more to learn from it.

    Fields: ``vocab_size`` (asked), ``reached`` (the size the engine got to), ``where`` (the algorithm and
    engine, e.g. ``"bpe on hf"``) and ``tokenizer`` (that smaller tokenizer, named after its real size, when
    the engine produced one; ``None`` when it refused to, and after pickling). The message says what to do:
    a smaller ``vocab_size``, more text, or ``allow_smaller_vocab=True`` to keep the smaller tokenizer.
    """

    vocab_size: int
    reached: int
    where: str
    tokenizer: Tokenizer | None

    def __init__(
        self, vocab_size: int, reached: int, *, where: str, tokenizer: Tokenizer | None = None
    ) -> None:
        self.vocab_size = vocab_size
        self.reached = reached
        self.where = where
        self.tokenizer = tokenizer
        super().__init__(
            f"vocab_size={vocab_size} is too large for this corpus: {where} reached only {reached} pieces "
            f"(nothing more to learn from this text); pass vocab_size={reached} or less, train on more text, "
            f"or allow_smaller_vocab=True (--allow-smaller-vocab) to keep the {reached}-piece tokenizer"
        )

    def __reduce__(self) -> tuple[object, ...]:  # the tokenizer stays behind: engines do not pickle
        return (_rebuild_vocab_error, (self.vocab_size, self.reached, self.where))


def _rebuild_vocab_error(vocab_size: int, reached: int, where: str) -> VocabSizeError:
    return VocabSizeError(vocab_size, reached, where=where)


class CorpusError(TokenloomError, ValueError):
    """A corpus cannot be read as asked: missing or empty path, undecodable bytes, bad columns."""


class TokenizerError(TokenloomError, ValueError):
    """A tokenizer file cannot be loaded or saved (corrupt, foreign format, failed verification)."""


ImageErrorKind = Literal[
    "missing",  # the path does not exist
    "unreadable",  # a folder, no permission, an I/O error
    "empty",  # 0 bytes
    "not_an_image",  # no decoder recognises the bytes
    "corrupt_header",  # recognised, but the header cannot be parsed
    "truncated",  # the data ends early
    "corrupt",  # the pixel data or a structure inside the file is broken
    "unsupported",  # a valid variant the decoder does not implement (pixel format, compression)
    "unsupported_mode",  # decoded, but the pixel mode cannot be converted to RGB
    "too_large",  # more pixels than allowed (decompression bomb) or out of memory
    "timeout",  # decoding took longer than the per-file time limit
    "crashed",  # the decoding process died (a crash inside a C decoder)
]
"""Why an image was rejected; the ``kind`` of every :class:`ImageDecodeError` and reject row."""


class ImageDecodeError(TokenloomError, OSError):
    """An image file cannot be decoded (truncated, corrupt, empty, not an image, too many pixels, ...).

    Fields: ``kind`` (an :data:`ImageErrorKind`), ``path`` (the file or the name given for bytes; may be
    empty) and ``detail`` (the cause, with the decoder's own message). ``str(exc)`` is ``"path: detail"``.
    Constructed with the message alone (as pickling and other libraries do), the kind is ``"corrupt"``.
    """

    kind: ImageErrorKind
    path: str
    detail: str

    def __init__(self, detail: str, *, kind: ImageErrorKind = "corrupt", path: str = "") -> None:
        self.kind = kind
        self.path = path
        self.detail = detail
        super().__init__(f"{path}: {detail}" if path else detail)

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_image_error, (self.detail, self.kind, self.path))


def _rebuild_image_error(detail: str, kind: ImageErrorKind, path: str) -> ImageDecodeError:
    return ImageDecodeError(detail, kind=kind, path=path)
