"""Cut a trained BPE tokenizer down to a smaller vocabulary without training again.

A BPE trainer learns merges greedily, most frequent pair first, so the merges of a smaller vocabulary are a
prefix of a larger one's when everything else (corpus, alphabet, special tokens, pre-tokenization) is the
same. In a Hugging Face ``tokenizer.json`` written by the ``tokenizers`` BPE trainer the ids follow that
order: special tokens and the initial alphabet (with byte fallback, the 256 ``<0xNN>`` pieces) first, then
merge ``i`` creates id ``base + i``. :func:`cut_bpe` keeps the ids below the new size and the merges that
made them; it checks that layout first and raises :class:`~tokenloom.errors.TokenizerError` when a file
does not follow it (then train the smaller size instead).

The shortcut is exact for the ``tokenizers`` engine (tests compare it with separate trainings). It is not
used for sentencepiece BPE models, whose vocabulary places characters after the merged pieces so that the
ids of a smaller model are not a prefix of a larger one's. Pure Python over the JSON; no engine is called.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from tokenloom.errors import TokenizerError

__all__ = ["bpe_base_size", "cut_bpe"]


def _merge_pair(merge: Any) -> tuple[str, str]:
    if isinstance(merge, str):  # the older "a b" form
        left, _, right = merge.partition(" ")
        return left, right
    left, right = merge
    return str(left), str(right)


def bpe_base_size(tokenizer_json: Mapping[str, Any]) -> int:
    """The ids before the first merge (special tokens + alphabet); checks the layout :func:`cut_bpe` needs."""
    model = tokenizer_json.get("model") or {}
    if model.get("type") != "BPE":
        raise TokenizerError(f"only BPE models can be cut, this tokenizer.json holds {model.get('type')!r}")
    vocab: Mapping[str, int] = model["vocab"]
    merges = model["merges"]
    ids = sorted(vocab.values())
    if ids != list(range(len(ids))):
        raise TokenizerError("the BPE vocabulary ids are not 0..n-1 without gaps; it cannot be cut by id")
    base = len(ids) - len(merges)
    for i, merge in enumerate(merges):
        left, right = _merge_pair(merge)
        if vocab.get(left + right) != base + i:
            raise TokenizerError(
                f"merge {i} ({left!r} + {right!r}) does not create id {base + i}: this vocabulary is not in "
                "merge order, so a smaller size cannot be cut from it; train that size instead"
            )
    return base


def cut_bpe(tokenizer_json: Mapping[str, Any], vocab_size: int) -> dict[str, Any]:
    """A copy of a BPE ``tokenizer.json`` with only its first ``vocab_size`` ids and the merges behind them."""
    base = bpe_base_size(tokenizer_json)
    model = tokenizer_json["model"]
    total = len(model["vocab"])
    if not base <= vocab_size <= total:
        raise TokenizerError(
            f"vocab_size={vocab_size} cannot be cut from this tokenizer: it must lie between {base} (special "
            f"tokens + alphabet) and {total} (its whole vocabulary)"
        )
    out = copy.deepcopy(dict(tokenizer_json))
    out["model"]["vocab"] = {piece: i for piece, i in model["vocab"].items() if i < vocab_size}
    out["model"]["merges"] = copy.deepcopy(model["merges"][: vocab_size - base])
    added = out.get("added_tokens") or []
    dropped = [t["content"] for t in added if t["id"] >= vocab_size]
    if dropped:
        raise TokenizerError(f"added tokens {dropped} have ids at or above vocab_size={vocab_size}")
    return out
