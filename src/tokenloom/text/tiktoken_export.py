"""Export a byte-level BPE ``tokenizers`` pipeline to tiktoken's format, verified id-for-id before writing.

tiktoken describes a tokenizer by one split regex (``pat_str``), ``mergeable_ranks`` (token bytes → rank,
which is also the id; tiktoken merges the adjacent pair whose concatenation has the lowest rank) and
``special_tokens`` (text → id). A byte-level BPE ``tokenizer.json`` trained by tokenloom maps onto it
directly: the special tokens keep their ids, every other token's rank is its id — the trainer numbers
merge ``i`` as id ``base + i``, so id order is merge order (checked with ``bpe_cut.bpe_base_size``) — and
its bytes are the token spelled back through GPT-2's byte alphabet. ``ignore_merges`` in the model makes a
whole pre-token that is in the vocabulary one token, as tiktoken does.

Contract: ``tiktoken.Encoding(**tiktoken_encoding_kwargs(folder)).encode(text, allowed_special="all")``
gives the same ids as the ``tokenizer.json`` for any text (both engines match a special token's text in
the input); ``encode_ordinary`` gives the same ids on text that contains no special token's text. This is
checked on the training sample the trainer keeps plus built-in probe strings every time the format is
written (:func:`verify_tiktoken`); any difference raises ``TokenizerError`` naming the text and token
(``Tokenizer.save`` then skips the file, or with ``strict=True`` saves nothing).

What is refused, with the reason: a pipeline that normalizes (tiktoken has no normalizer), splits digits
with a separate step (tiktoken has one regex: choose a pattern that splits digits instead), is not
byte-level BPE, or whose ids are not in merge order.

Files: ``tokenizer.tiktoken`` (one ``base64(bytes) rank`` line per mergeable token, rank order — what
``tiktoken.load.load_tiktoken_bpe`` reads) and, in ``tokenloom.json`` under ``"tiktoken"``, the pattern,
the special tokens and ``n_vocab``. :func:`tiktoken_encoding_kwargs` reads both back;
:func:`saved_tiktoken_entry` finds the entry of a ranks file, so that ``load_tokenizer("bl/tokenizer.tiktoken")``
loads it with its pattern.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokenloom.errors import TokenizerError
from tokenloom.text.backends.base import byte_level_bytes, first_difference
from tokenloom.text.backends.sentencepiece import PROBES
from tokenloom.text.backends.tiktoken import read_ranks
from tokenloom.text.bpe_cut import bpe_base_size
from tokenloom.text.bytelevel import PATTERNS

__all__ = [
    "TIKTOKEN_FILE",
    "TiktokenExport",
    "can_export",
    "export_tiktoken",
    "saved_tiktoken_entry",
    "tiktoken_encoding_kwargs",
    "tiktoken_export",
    "verify_tiktoken",
    "write_tiktoken",
]

TIKTOKEN_FILE = "tokenizer.tiktoken"
# besides the caller's texts and the sentencepiece probes: contractions, digit runs, line-break runs
_PROBES: tuple[str, ...] = (
    "I'M HERE, it's 2016 and 1234567 of them'LL go.\n\n\r\n  x  \t\n",
    "<unk><s></s><pad> <s>x</s> <s <|endoftext|>",
    "naïve Ünïcödé ✓ ½ ² ٣ ๓ 𝟘 \u200b\u200d\ufeff",
)


@dataclass(frozen=True)
class TiktokenExport:
    """The arguments of ``tiktoken.Encoding`` (less its name) for one tokenizer."""

    pattern: str
    ranks: dict[bytes, int]
    special_tokens: dict[str, int]
    n_vocab: int

    def encoding_kwargs(self, name: str) -> dict[str, Any]:
        return {
            "name": name,
            "pat_str": self.pattern,
            "mergeable_ranks": self.ranks,
            "special_tokens": self.special_tokens,
            "explicit_n_vocab": self.n_vocab,
        }


def _refuse(why: str) -> TokenizerError:
    return TokenizerError(f"cannot save this tokenizer in tiktoken's format: {why}")


def _pattern(pre: Any) -> str:
    """The split regex of a byte-level pre-tokenizer (config dict); refuses anything tiktoken cannot express."""

    steps: list[Any] = [pre]
    if isinstance(pre, dict) and pre.get("type") == "Sequence":
        steps = list(pre.get("pretokenizers") or [])
    kinds = [s.get("type") if isinstance(s, dict) else None for s in steps]
    if "Digits" in kinds:
        raise _refuse(
            "it splits digits with a separate step (split_digits=True) and tiktoken has a single regex; train "
            r"with split_digits=False and a pretokenizer pattern that splits digits (e.g. one with \p{N} "
            "instead of \\p{N}{1,3})"
        )
    if kinds == ["ByteLevel"] and steps[0].get("use_regex") and not steps[0].get("add_prefix_space"):
        return PATTERNS["gpt2"]  # the ByteLevel pre-tokenizer's own regex is GPT-2's
    if kinds == ["Split", "ByteLevel"]:
        split, level = steps
        regex = (split.get("pattern") or {}).get("Regex")
        plain = not level.get("use_regex") and not level.get("add_prefix_space")
        if regex and plain and split.get("behavior") == "Isolated" and not split.get("invert"):
            return str(regex)
    raise _refuse(
        f"its pre-tokenizer {kinds} is not one split regex followed by byte-level mapping (train it with "
        "algorithm='bytelevel-bpe')"
    )


def tiktoken_export(hf: Any) -> TiktokenExport:
    """The tiktoken form of a ``tokenizers.Tokenizer`` (see module docstring); TokenizerError when it has none."""

    data = json.loads(hf.to_str())
    model = data.get("model") or {}
    if model.get("type") != "BPE":
        raise _refuse(f"tiktoken holds byte-level BPE only, this is {model.get('type')!r}")
    if data.get("normalizer") is not None:
        raise _refuse("it normalizes text (normalization='nfc'/'nfkc') and tiktoken has no normalizer")
    pattern = _pattern(data.get("pre_tokenizer"))
    if not model.get("ignore_merges") or model.get("continuing_subword_prefix") or model.get("dropout"):
        raise _refuse("its BPE model must have ignore_merges=true, no subword prefix and no dropout")
    added = data.get("added_tokens") or []
    if any(not t.get("special") for t in added):
        raise _refuse("it has added tokens that are not special; tiktoken knows special tokens only")
    special = {str(t["content"]): int(t["id"]) for t in added}
    try:
        bpe_base_size(data)
    except TokenizerError as exc:
        raise _refuse(f"its ids are not in merge order ({exc})") from None
    ranks: dict[bytes, int] = {}
    for token, rank in model["vocab"].items():
        if token in special:
            continue
        raw = byte_level_bytes(token)
        if raw is None:
            raise _refuse(f"token {token!r} (id {rank}) is not spelled in GPT-2's byte alphabet")
        ranks[raw] = int(rank)
    missing = 256 - sum(1 for b in ranks if len(b) == 1)
    if missing:
        raise _refuse(f"{missing} of the 256 single bytes are not in the vocabulary")
    return TiktokenExport(pattern, ranks, special, int(hf.get_vocab_size(with_added_tokens=True)))


def can_export(tok: Any) -> bool:
    """Whether the commands should add the tiktoken format when saving ``tok``: byte-level BPE trained without
    ``split_digits`` or normalization (what :func:`tiktoken_export` accepts), and tiktoken installed to verify
    the export (it is an optional dependency: ``tokenloom[tiktoken]``)."""

    resolved = tok.record.get("config", {})
    plain = not resolved.get("split_digits") and resolved.get("normalization", "none") == "none"
    return tok.algorithm == "bytelevel-bpe" and plain and importlib.util.find_spec("tiktoken") is not None


def _encoding(export: TiktokenExport, name: str) -> Any:
    try:
        import tiktoken
    except ImportError:
        raise TokenizerError(
            "saving in tiktoken's format verifies the export with tiktoken, which is not installed; "
            "pip install tiktoken (or tokenloom[tiktoken])"
        ) from None
    return tiktoken.Encoding(**export.encoding_kwargs(name))


def verify_tiktoken(export: TiktokenExport, hf: Any, texts: Sequence[str]) -> int:
    """Encode probes + ``texts`` with tiktoken (``allowed_special="all"``) and with ``hf``; returns how many
    texts agreed, TokenizerError naming the first text and token position that differ."""

    encoding = _encoding(export, "tokenloom-verify")
    texts = list(PROBES) + list(_PROBES) + list(texts)
    want = [list(e.ids) for e in hf.encode_batch(texts, add_special_tokens=False)]
    got = encoding.encode_batch(texts, allowed_special="all")
    for number, (text, a, b) in enumerate(zip(texts, want, got, strict=True)):
        if a != b:
            raise TokenizerError(
                f"tiktoken export differs from tokenizer.json on text #{number} {text[:80]!r}: "
                f"{first_difference(a, b)} (tokenizer.json vs tiktoken)"
            )
    return len(texts)


def export_tiktoken(hf: Any, folder: Path, texts: Sequence[str]) -> dict[str, Any]:
    """Build, verify and write ``tokenizer.tiktoken`` into ``folder``; returns the ``tokenloom.json`` entry."""
    export = tiktoken_export(hf)
    return write_tiktoken(export, folder, verify_tiktoken(export, hf, texts))


def write_tiktoken(export: TiktokenExport, folder: Path, checked: int) -> dict[str, Any]:
    """Write ``tokenizer.tiktoken`` of an export verified on ``checked`` texts; returns the ``tokenloom.json``
    entry."""
    lines = (f"{base64.b64encode(token).decode('ascii')} {rank}\n" for token, rank in _by_rank(export.ranks))
    (folder / TIKTOKEN_FILE).write_text("".join(lines), encoding="ascii")
    return {
        "tiktoken": {
            "file": TIKTOKEN_FILE,
            "pattern": export.pattern,
            "special_tokens": export.special_tokens,
            "n_vocab": export.n_vocab,
            "verified_texts": checked,
        }
    }


def _by_rank(ranks: dict[bytes, int]) -> list[tuple[bytes, int]]:
    return sorted(ranks.items(), key=lambda item: item[1])


def saved_tiktoken_entry(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The ``"tiktoken"`` entry (pattern, special tokens, ``n_vocab``) of the ``tokenloom.json`` beside a
    ranks file, when it describes that file; ``None`` otherwise (no such file, another file's entry, unreadable)."""
    path = Path(path)
    try:
        entry = json.loads((path.parent / "tokenloom.json").read_text(encoding="utf-8")).get("tiktoken")
    except (OSError, ValueError, UnicodeDecodeError, AttributeError):
        return None
    if isinstance(entry, dict) and entry.get("file") == path.name and isinstance(entry.get("pattern"), str):
        return entry
    return None


def tiktoken_encoding_kwargs(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Keyword arguments for ``tiktoken.Encoding`` from a folder saved with ``formats=(..., "tiktoken")``:
    ``name`` (the folder's name), ``pat_str``, ``mergeable_ranks``, ``special_tokens``, ``explicit_n_vocab``.

    The ranks file is read here rather than with ``tiktoken.load.load_tiktoken_bpe``, which caches files by
    path in a temporary folder (a re-saved folder would be read stale unless ``TIKTOKEN_CACHE_DIR=""``).
    """
    folder = Path(path)
    meta = folder / "tokenloom.json"
    try:
        entry = json.loads(meta.read_text(encoding="utf-8"))["tiktoken"]
    except FileNotFoundError as exc:
        raise TokenizerError(
            f"{folder}: {exc.filename} is missing; save with formats=('tiktoken',)"
        ) from None
    except KeyError:
        raise TokenizerError(
            f"{meta} has no 'tiktoken' entry: the folder was not saved with formats=(..., 'tiktoken')"
        ) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise TokenizerError(f"{folder}: corrupt tiktoken export ({exc})") from None
    ranks = read_ranks(folder / entry["file"])
    export = TiktokenExport(entry["pattern"], ranks, dict(entry["special_tokens"]), int(entry["n_vocab"]))
    return export.encoding_kwargs(folder.resolve().name)
