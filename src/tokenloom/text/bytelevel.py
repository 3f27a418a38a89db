"""Byte-level BPE pre-tokenization: the named split patterns, checks on a user's pattern, the HF pipeline.

A byte-level BPE tokenizer (``algorithm="bytelevel-bpe"``) first splits text with one regular expression
(the *pre-tokenizer*), then maps every UTF-8 byte of each piece to one of 256 printable characters
(GPT-2's byte alphabet) and applies BPE inside each piece. Every string is spelled by those 256 bytes, so
nothing is ever unknown and ``decode(encode(s)) == s`` for every string (no normalization).

Named patterns (:data:`PATTERNS`):

- ``"gpt2"`` — GPT-2's pattern;
- ``"cl100k"`` and ``"llama3"`` — one and the same regex: OpenAI's cl100k_base pattern, which Llama 3 uses
  verbatim. Letters are ``\\p{L}+``, which excludes combining marks (``\\p{M}``): Indic and other abugida
  words split at every vowel sign;
- ``"o200k"`` (the default) — OpenAI's o200k_base pattern; its letter classes include ``\\p{M}``, so a
  Devanagari word stays one piece, and it keeps a run of digits in groups of at most three.

The patterns are the **non-possessive** forms. The Hugging Face ``tokenizers`` engine (Oniguruma) reads a
possessive interval such as ``\\p{N}{1,3}+`` as ``(\\p{N}{1,3})+`` while tiktoken (fancy-regex) reads it as
possessive, so the two engines would split ``"2016"`` differently; without possessives both read each
pattern the same (tests compare the pieces on FLORES-200 text).

A user's pattern (any string that is not a name) is checked by :func:`resolve_pattern`: it must compile in
the ``regex`` module and in ``tokenizers.Regex``, contain no possessive quantifier, and match no empty
string in a probe text (letters, marks, digits, spaces, line breaks, punctuation, emoji); a bare word is
taken for a misspelt name. The ``tokenizers`` Split keeps text the pattern does not match while tiktoken drops it, so
the pattern actually used is ``REGEX + "|[\\s\\S]"``: unmatched characters become one-character pieces in
both engines and nothing is lost.

What it does not do: train (``_engines.py``) or export (``tiktoken_export.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tokenloom.errors import ConfigError

__all__ = ["CATCH_ALL", "PATTERNS", "Pretokenizer", "build_pre_tokenizer", "resolve_pattern"]

_CONTRACTIONS = r"'s|'t|'re|'ve|'m|'ll|'d"
_CL100K = (
    rf"(?i:{_CONTRACTIONS})|[^\r\n\p{{L}}\p{{N}}]?\p{{L}}+|\p{{N}}{{1,3}}| ?[^\s\p{{L}}\p{{N}}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_O200K = "|".join(
    [
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        r"\p{N}{1,3}",
        r" ?[^\s\p{L}\p{N}]+[\r\n/]*",
        r"\s*[\r\n]+",
        r"\s+(?!\S)",
        r"\s+",
    ]
)
PATTERNS: dict[str, str] = {
    "gpt2": rf"{_CONTRACTIONS}| ?\p{{L}}+| ?\p{{N}}+| ?[^\s\p{{L}}\p{{N}}]+|\s+(?!\S)|\s+",
    "cl100k": _CL100K,
    "llama3": _CL100K,  # Llama 3's tokenizer uses the cl100k regex verbatim
    "o200k": _O200K,
}
CATCH_ALL = r"|[\s\S]"  # appended to a user's pattern: unmatched characters become one-character pieces

# text a pattern is tried on: it must match no empty string anywhere in it
_PROBE = (
    "Hello, World! it's 2016\r\n\n  tabs\there नमस्ते 中文字 e\u0301 👋🏽 «x» a_b-c/d\x00 \u00a0 \u2028 end"
)


@dataclass(frozen=True)
class Pretokenizer:
    """A resolved pre-tokenizer: its name (a key of :data:`PATTERNS`, or ``"custom"``) and its pattern."""

    name: str
    pattern: str  # the pattern both engines use (a custom pattern already ends with CATCH_ALL)
    split_digits: bool = False  # every digit a piece of its own (the ``tokenizers`` Digits step)


def _possessive_at(pattern: str) -> int | None:
    """Index of the first possessive quantifier (``?+ *+ ++ {n,m}+``) outside character classes, or None."""
    i, depth = 0, 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if depth:
            if ch == "[":
                depth += 1
            elif ch == "]":
                depth -= 1
        elif ch == "[":
            depth = 1
            if pattern[i + 1 : i + 2] == "^":
                i += 1
            if pattern[i + 1 : i + 2] == "]":  # a leading ] is a literal
                i += 1
        elif pattern[i + 1 : i + 2] == "+" and ch in "?*+":
            if not (ch == "?" and pattern[i - 1 : i] == "("):
                return i
        elif ch == "}" and pattern[i + 1 : i + 2] == "+" and re.search(r"\{\d*,?\d*\}$", pattern[: i + 1]):
            return i
        i += 1
    return None


def _check_custom(pattern: str) -> None:
    import regex
    from tokenizers import Regex

    def fail(problem: str) -> ConfigError:
        return ConfigError(f"pretokenizer pattern {pattern!r} {problem}")

    if not pattern:
        raise fail("is empty; pass a regular expression or one of the names " + ", ".join(PATTERNS))
    try:
        compiled = regex.compile(pattern)
    except regex.error as exc:
        raise fail(f"does not compile in the `regex` module ({exc}); fix the expression") from None
    try:
        Regex(pattern)
    except Exception as exc:  # the binding raises a plain Exception for a bad Oniguruma pattern
        raise fail(
            f"does not compile in the tokenizers engine (Oniguruma: {str(exc).strip()}); use syntax both "
            "engines share"
        ) from None
    at = _possessive_at(pattern)
    if at is not None:
        raise fail(
            f"has a possessive quantifier {pattern[at : at + 2]!r} at index {at}: the tokenizers engine and "
            "tiktoken read possessives differently; drop the '+' after the quantifier"
        )
    empty = next((m.start() for m in compiled.finditer(_PROBE) if m.end() == m.start()), None)
    if empty is not None:
        raise fail(
            f"matches the empty string (at index {empty} of {_PROBE!r}); make every alternative consume at "
            "least one character (e.g. '+' instead of '*')"
        )


def resolve_pattern(pretokenizer: str, *, split_digits: bool = False) -> Pretokenizer:
    """A name of :data:`PATTERNS` or a regular expression → :class:`Pretokenizer`; ConfigError if unusable."""
    if not isinstance(pretokenizer, str):
        raise ConfigError(f"pretokenizer must be a str (a name or a regex), got {pretokenizer!r}")
    if pretokenizer in PATTERNS:
        return Pretokenizer(pretokenizer, PATTERNS[pretokenizer], split_digits)
    if re.fullmatch(r"[\w-]+", pretokenizer, flags=re.ASCII):  # as a regex, a literal word: a misspelt name
        raise ConfigError(
            f"unknown pretokenizer {pretokenizer!r}; choose one of {', '.join(PATTERNS)} or pass a regular "
            "expression (a bare word is refused: as a pattern it would match only itself)"
        )
    _check_custom(pretokenizer)
    return Pretokenizer("custom", pretokenizer + CATCH_ALL, split_digits)


def build_pre_tokenizer(pre: Pretokenizer) -> Any:
    """The ``tokenizers`` pre-tokenizer: Split (isolated) → [Digits] → ByteLevel (no prefix space, no regex)."""
    from tokenizers import Regex, pre_tokenizers

    steps: list[Any] = [pre_tokenizers.Split(Regex(pre.pattern), behavior="isolated")]
    if pre.split_digits:
        steps.append(pre_tokenizers.Digits(individual_digits=True))
    steps.append(pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False))
    return pre_tokenizers.Sequence(steps)
