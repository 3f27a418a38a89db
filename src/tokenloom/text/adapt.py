"""Any tokenizer as a tokenloom :class:`~tokenloom.text.tokenizer.Tokenizer`: objects and command-line specs.

:func:`as_tokenizer` wraps, by what the object is: a tokenloom ``Tokenizer`` (as is); a ``tokenizers.Tokenizer``;
a ``sentencepiece.SentencePieceProcessor``; a ``transformers`` tokenizer (fast or slow); a ``tiktoken.Encoding``
or any object shaped like one (``encode`` and ``decode``); an object keeping the ``Tokenizer`` contract itself
(``encode_batch_with_offsets`` and ``decode``: a proxy, :mod:`~tokenloom.text.backends.contract`); any callable
``str -> Sequence[int]``; a path (:func:`~tokenloom.text.tokenizer.load_tokenizer`). :data:`TokenizerLike`
names everything it takes: entry points that take tokenizers type their arguments with it and call
:func:`as_tokenizer` once. Engines are recognised by their classes only when their
package is already imported (an object of a package that is not imported cannot exist), so nothing heavy is
imported to ask. :func:`load_tokenizer_spec` reads the command line's forms: ``PATH``, ``tiktoken:FILE``
with a pattern, ``transformers:FOLDER``. What it does not do: encode (the backends do).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeAlias

from tokenloom.errors import ConfigError
from tokenloom.text.backends.base import EngineBackend
from tokenloom.text.backends.contract import ContractBackend, OffsetsTokenizer
from tokenloom.text.backends.dispatch import EncodeEngine
from tokenloom.text.backends.hf import HFBackend
from tokenloom.text.backends.plain import CallableBackend
from tokenloom.text.backends.sentencepiece import SentencePieceBackend
from tokenloom.text.backends.tiktoken import TiktokenBackend, load_tiktoken_file
from tokenloom.text.backends.transformers import TransformersBackend, load_transformers_folder
from tokenloom.text.tiktoken_export import saved_tiktoken_entry
from tokenloom.text.tokenizer import Tokenizer, load_tokenizer

__all__ = ["EncodesAndDecodes", "OffsetsTokenizer", "TokenizerLike", "as_tokenizer", "load_tokenizer_spec"]


class EncodesAndDecodes(Protocol):
    """An engine object: a ``tokenizers.Tokenizer``, a ``SentencePieceProcessor``, a ``transformers``
    tokenizer, a ``tiktoken.Encoding`` or any object with ``encode(text)`` and ``decode(ids)``."""

    def encode(self, text: str, /) -> Any: ...

    def decode(self, ids: Any, /) -> Any: ...


# everything as_tokenizer takes
TokenizerLike: TypeAlias = (
    Tokenizer | str | os.PathLike[str] | EncodesAndDecodes | OffsetsTokenizer | Callable[[str], Sequence[int]]
)

SPEC_KINDS = ("tiktoken", "transformers")


def _instance(obj: Any, module: str, *path: str) -> bool:
    """``isinstance(obj, module.path)`` when ``module`` is already imported (False otherwise)."""
    target: Any = sys.modules.get(module)
    for name in path:
        target = getattr(target, name, None)
    return isinstance(target, type) and isinstance(obj, target)


def _backend(obj: Any) -> EngineBackend:
    if _instance(obj, "tokenizers", "Tokenizer"):
        return HFBackend(obj)
    if _instance(obj, "sentencepiece", "SentencePieceProcessor"):
        return SentencePieceBackend(obj, obj.serialized_model_proto())
    if _instance(obj, "transformers", "PreTrainedTokenizerBase"):
        return TransformersBackend(obj)
    if isinstance(obj, OffsetsTokenizer):  # the Tokenizer contract kept by the object itself
        return ContractBackend(obj)
    if callable(getattr(obj, "encode", None)) and callable(getattr(obj, "decode", None)):
        return TiktokenBackend(obj)
    if callable(obj):
        return CallableBackend(obj)
    raise ConfigError(
        f"{type(obj).__name__} is not a tokenizer: pass a tokenloom Tokenizer, a tokenizers.Tokenizer, a "
        "SentencePieceProcessor, a transformers tokenizer, a tiktoken Encoding (or an object with encode and "
        "decode), an object with encode_batch_with_offsets and decode, a function text -> ids, or a path"
    )


def _default_name(obj: Any) -> str:
    for attr in ("name", "name_or_path", "__name__"):  # tiktoken, transformers, functions
        value = getattr(obj, attr, None)
        if isinstance(value, str) and value:
            return os.path.basename(value.rstrip("/\\")) or value
    return type(obj).__name__


def as_tokenizer(obj: TokenizerLike, *, name: str | None = None) -> Tokenizer:
    """``obj`` as a :class:`Tokenizer` (see module docstring); ``name`` overrides the one it has."""
    if isinstance(obj, Tokenizer):
        if name is None or name == obj.name:
            return obj
        return Tokenizer(name=name, backend=obj.backend, record=obj.record, engine=obj.engine_choice)
    if isinstance(obj, str | os.PathLike):
        tok = load_tokenizer_spec(os.fspath(obj))
        return as_tokenizer(tok, name=name)
    return Tokenizer(name=name or _default_name(obj), backend=_backend(obj))


def load_tokenizer_spec(
    spec: str, *, pattern: str | None = None, name: str | None = None, engine: EncodeEngine = "auto"
) -> Tokenizer:
    """A tokenizer from a command-line spec: ``PATH`` (a tokenloom folder, ``tokenizer.json`` or ``.model``),
    ``tiktoken:FILE.tiktoken`` (with ``pattern``: a name such as ``cl100k`` or a regex; not needed for a file
    that a ``tokenloom.json`` beside it describes) or
    ``transformers:FOLDER`` (``AutoTokenizer.from_pretrained(FOLDER, local_files_only=True)``). ``engine``:
    which engine computes ids (:class:`~tokenloom.text.tokenizer.Tokenizer`)."""
    tok = _load_spec(spec, pattern=pattern, name=name)
    return tok if engine == tok.engine_choice else tok.with_engine(engine)


def _load_spec(spec: str, *, pattern: str | None, name: str | None) -> Tokenizer:
    kind, sep, rest = spec.partition(":")
    if not sep or kind not in SPEC_KINDS:
        kind, rest = "path", spec
    if pattern is not None and kind != "tiktoken":
        raise ConfigError(f"--pattern applies to tiktoken:FILE tokenizers only, not to {spec!r}")
    if kind == "path":
        return as_tokenizer(load_tokenizer(rest), name=name)
    if kind == "tiktoken":
        saved = (
            saved_tiktoken_entry(rest) if pattern is None else None
        )  # our export: tokenloom.json beside it
        if pattern is None and saved is None:
            raise ConfigError(
                f"{spec!r}: a tiktoken ranks file needs its pre-tokenizer pattern: cl100k, o200k, gpt2, llama3 or "
                "a regex (--pattern after the --tokenizer on the command line, pattern= in load_tokenizer_spec)"
            )
        if saved is not None:
            specials = dict(saved.get("special_tokens") or {})
            backend: EngineBackend = load_tiktoken_file(rest, saved["pattern"], special_tokens=specials)
        else:
            backend = load_tiktoken_file(rest, str(pattern))
        default = os.path.splitext(os.path.basename(rest))[0]
    else:
        backend = load_transformers_folder(rest)
        default = os.path.basename(rest.rstrip("/\\")) or rest
    return Tokenizer(name=name or default, backend=backend)
