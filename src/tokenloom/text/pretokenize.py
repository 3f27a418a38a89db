"""Pre-tokenizer regexes of the byte-level BPE family (GPT-2, cl100k, Llama-3, o200k) by name.

The named patterns are written without possessive quantifiers, so they mean the same to every regex engine
the family runs on (fancy-regex in tiktoken, Oniguruma in ``tokenizers``, ``regex`` in Python): Oniguruma
reads tiktoken's possessive ``\\p{N}{1,3}+`` as "one or more groups of one to three digits".
``cl100k`` and ``llama3`` are the same regex (Llama-3 adopted cl100k's). What it does not do: split text.
"""

from __future__ import annotations

from tokenloom.errors import ConfigError

__all__ = ["PATTERNS", "resolve_pattern"]

_O200K_PARTS = (
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""",
    r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
    r"""\s*[\r\n]+""",
    r"""\s+(?!\S)""",
    r"""\s+""",
)
_CL100K = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"""
    r"""|\s+(?!\S)|\s+"""
)

PATTERNS: dict[str, str] = {
    "gpt2": r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""",
    "cl100k": _CL100K,
    "llama3": _CL100K,
    "o200k": "|".join(_O200K_PARTS),
}


def resolve_pattern(pattern: str) -> str:
    """The regex of a pattern name in :data:`PATTERNS`, or ``pattern`` itself once it compiles."""
    if pattern in PATTERNS:
        return PATTERNS[pattern]
    import regex

    try:
        regex.compile(pattern)
    except regex.error as exc:
        raise ConfigError(
            f"pattern {pattern!r} is neither a name ({', '.join(PATTERNS)}) nor a valid regex ({exc})"
        ) from None
    return pattern
