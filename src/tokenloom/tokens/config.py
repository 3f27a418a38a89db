"""The settings of one tokenize run (:class:`TokenizeConfig`): what decides the shards' bytes.

How a run is executed (worker processes, Ray, resume) is not here: the shards do not depend on it.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Literal

from tokenloom.corpus.records import Errors
from tokenloom.errors import ConfigError

__all__ = ["LongDocs", "TokenizeConfig"]

LongDocs = Literal["split", "drop"]


@dataclass(frozen=True)
class TokenizeConfig:
    """What every document becomes and where it goes (all of it is recorded in the manifest)."""

    eos: int | str | None = "auto"  # id or token appended to every document ("auto": the tokenizer's own)
    bos: int | str | None = None  # id or token put before every document (None: none)
    max_tokens_per_shard: int = 2**27  # a shard holds whole documents up to this many tokens
    max_doc_tokens: int | None = None  # a document longer than this (BOS/EOS included) is split or dropped
    long_docs: LongDocs = "split"  # what happens to a document over max_doc_tokens
    shuffle: bool = True  # shuffle documents across the whole corpus (not only within a file)
    seed: int = 0  # the shuffle's, the sampling's and the validation split's seed
    sample: tuple[tuple[str, float], ...] = ()  # (language, rate): rate < 1 keeps a share, > 1 repeats
    validation: float = 0.0  # share of documents held out as the validation split (by document)
    errors: Errors = "skip"  # a document that cannot be read or encoded: "skip" (a reject) or "strict"

    def __post_init__(self) -> None:
        for name in ("max_tokens_per_shard",):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be a positive int, got {value!r} (--max-tokens-per-shard)")
        if self.max_doc_tokens is not None and (
            not isinstance(self.max_doc_tokens, int) or self.max_doc_tokens < 1
        ):
            raise ConfigError(f"max_doc_tokens must be a positive int or None, got {self.max_doc_tokens!r}")
        if self.long_docs not in ("split", "drop"):
            raise ConfigError(f"long_docs must be 'split' or 'drop', got {self.long_docs!r} (--long-docs)")
        if not 0.0 <= self.validation < 1.0:
            raise ConfigError(f"validation must be a share in [0, 1), got {self.validation!r} (--validation)")
        if self.errors not in ("skip", "strict"):
            raise ConfigError(f"errors must be 'skip' or 'strict', got {self.errors!r} (--errors)")
        for lang, rate in self.sample:
            if not isinstance(lang, str) or not lang or not (rate >= 0 and math.isfinite(rate)):
                raise ConfigError(
                    f"--sample takes lang=rate with a rate >= 0 (e.g. fra=0.5, swh=3), got {lang}={rate}"
                )

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["sample"] = {lang: rate for lang, rate in self.sample}
        return out
