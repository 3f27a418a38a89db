"""Text side of tokenloom: corpus line sources, tokenizer trainers, the Tokenizer wrapper, Unicode helpers.

Names are imported lazily (like the top-level package), so ``import tokenloom.text`` pulls in neither
``tokenizers``, ``sentencepiece`` nor pandas. Submodules: ``sources`` (files/folders/globs → lines),
``train`` (TrainerConfig, train_tokenizer), ``tokenizer`` (Tokenizer, load_tokenizer), ``unicode``.
"""

from __future__ import annotations

import importlib
from typing import Any

# public name -> module that defines it (imported on first access)
_LAZY: dict[str, str] = {
    # tokenizer area (issue 3)
    "resolve_inputs": "tokenloom.text.sources",
    "iter_lines": "tokenloom.text.sources",
    "SourceStats": "tokenloom.text.sources",
    "Tokenizer": "tokenloom.text.tokenizer",
    "load_tokenizer": "tokenloom.text.tokenizer",
    "TrainerConfig": "tokenloom.text.train",
    "train_tokenizer": "tokenloom.text.train",
    # corpus reading and Unicode analysis (fertility area, issue 4)
    "load_corpus": "tokenloom.text.corpus",
    "Corpus": "tokenloom.text.corpus",
    "CorpusPart": "tokenloom.text.corpus",
    "dominant_script": "tokenloom.text.unicode",
    "char_scripts": "tokenloom.text.unicode",
    "word_spans": "tokenloom.text.unicode",
    "count_words": "tokenloom.text.unicode",
    "transliterate": "tokenloom.text.unicode",
    "get_segmenter": "tokenloom.text.unicode",
}

__all__ = list(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tokenloom.text' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
