"""Byte-level BPE ranks tables (token bytes → rank): their merges, and the ``tokenizer.json`` of a tiktoken encoding.

- :func:`recover_merges`: the merge list of a ranks table (token bytes → rank): token ``t`` of rank ``r`` is
  the merge of the two parts BPE leaves when it runs on ``t``'s bytes with the ranks below ``r`` only (the
  rule tiktoken applies, so the merges reproduce its encoding).
- :func:`tiktoken_json`: the ``tokenizer.json`` of a tiktoken encoding (ids = ranks, special tokens as added
  tokens, the encoding's own split pattern), for engines that read that format.

What it does not do: train, or check that a pipeline encodes like its source (the callers verify).
"""

from __future__ import annotations

import json
from typing import Any

from tokenloom.errors import TokenizerError
from tokenloom.text.backends.base import byte_level_bytes

__all__ = ["BYTE_CHARS", "recover_merges", "spell", "tiktoken_json"]


def _byte_chars() -> dict[int, str]:
    spelled = ((chr(c), byte_level_bytes(chr(c))) for c in range(0x200))
    return {raw[0]: ch for ch, raw in spelled if raw is not None}


BYTE_CHARS: dict[int, str] = _byte_chars()  # byte -> its character in GPT-2's byte alphabet


def spell(raw: bytes) -> str:
    """The byte-level piece (``"Ġthe"``) of some bytes."""
    return "".join(BYTE_CHARS[b] for b in raw)


def _split(ranks: dict[bytes, int], token: bytes, below: int) -> list[bytes]:
    """BPE on ``token``'s bytes with the ranks below ``below``: the lowest-ranked adjacent pair first."""
    parts = [token[i : i + 1] for i in range(len(token))]
    while len(parts) > 1:
        best, at = below, -1
        for i in range(len(parts) - 1):
            rank = ranks.get(parts[i] + parts[i + 1])
            if rank is not None and rank < best:
                best, at = rank, i
        if at < 0:
            break
        parts[at : at + 2] = [parts[at] + parts[at + 1]]
    return parts


def recover_merges(ranks: dict[bytes, int]) -> list[tuple[bytes, bytes]]:
    """The merges (rank order) that build every multi-byte token of ``ranks``; TokenizerError when a token
    is not the merge of two lower-ranked tokens (not a BPE ranks table)."""
    merges = []
    for token, rank in sorted(ranks.items(), key=lambda item: item[1]):
        if len(token) < 2:
            continue
        parts = _split(ranks, token, rank)
        if len(parts) != 2:
            raise TokenizerError(
                f"token {token!r} (rank {rank}) is not the merge of two lower-ranked tokens (BPE on its bytes "
                f"leaves {len(parts)} parts); this ranks table is not byte-level BPE"
            )
        merges.append((parts[0], parts[1]))
    return merges


def tiktoken_json(encoding: Any) -> dict[str, Any]:
    """The ``tokenizer.json`` (parsed) of a ``tiktoken.Encoding`` as the tiktoken backend encodes
    (``encode_ordinary``: a special token's text is text, so special tokens are left out): read from its
    ranks and split pattern (the Encoding's ``_mergeable_ranks`` and ``_pat_str``, which every tiktoken
    release has kept); TokenizerError when the object has neither (an object shaped like an Encoding) or its
    ranks are not byte-level BPE."""
    from tokenizers import Regex, decoders, models, pre_tokenizers
    from tokenizers import Tokenizer as HFTokenizer

    ranks, pattern = getattr(encoding, "_mergeable_ranks", None), getattr(encoding, "_pat_str", None)
    if not isinstance(ranks, dict) or not isinstance(pattern, str):
        raise TokenizerError(f"{type(encoding).__name__} exposes no tiktoken ranks and pattern")
    vocab = {spell(token): rank for token, rank in ranks.items()}
    merges = [(spell(a), spell(b)) for a, b in recover_merges(ranks)]
    hf = HFTokenizer(models.BPE(vocab, merges, ignore_merges=True))
    hf.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(pattern), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    hf.decoder = decoders.ByteLevel()
    loaded: dict[str, Any] = json.loads(hf.to_str())
    return loaded
