"""Text side of tokenloom: corpus line sources, tokenizer trainers, the Tokenizer wrapper, Unicode helpers.

Names are imported lazily (like the top-level package), so ``import tokenloom.text`` pulls in neither
``tokenizers``, ``sentencepiece`` nor pandas. Submodules: ``sources`` (files/folders/globs → lines),
``train`` (TrainerConfig, train_tokenizer), ``tokenizer`` (Tokenizer, load_tokenizer), ``bytelevel``
(byte-level BPE split patterns), ``tiktoken_export`` (tiktoken's format), ``unicode``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tokenloom._lazy import lazy_exports

# public name -> module that defines it (imported on first access)
_LAZY: dict[str, str] = {
    # tokenizers
    "resolve_inputs": "tokenloom.text.sources",
    "iter_lines": "tokenloom.text.sources",
    "SourceStats": "tokenloom.text.sources",
    "Tokenizer": "tokenloom.text.tokenizer",
    "load_tokenizer": "tokenloom.text.tokenizer",
    "as_tokenizer": "tokenloom.text.adapt",
    "TrainerConfig": "tokenloom.text.train",
    "train_tokenizer": "tokenloom.text.train",
    "tiktoken_encoding_kwargs": "tokenloom.text.tiktoken_export",
    # corpus reading and Unicode analysis
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

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time _LAZY imports each name on first use
    from tokenloom.text.adapt import as_tokenizer
    from tokenloom.text.corpus import Corpus, CorpusPart, load_corpus
    from tokenloom.text.sources import SourceStats, iter_lines, resolve_inputs
    from tokenloom.text.tiktoken_export import tiktoken_encoding_kwargs
    from tokenloom.text.tokenizer import Tokenizer, load_tokenizer
    from tokenloom.text.train import TrainerConfig, train_tokenizer
    from tokenloom.text.unicode import (
        char_scripts,
        count_words,
        dominant_script,
        get_segmenter,
        transliterate,
        word_spans,
    )

__all__ = [
    "Corpus",
    "CorpusPart",
    "SourceStats",
    "Tokenizer",
    "TrainerConfig",
    "as_tokenizer",
    "char_scripts",
    "count_words",
    "dominant_script",
    "get_segmenter",
    "iter_lines",
    "load_corpus",
    "load_tokenizer",
    "resolve_inputs",
    "tiktoken_encoding_kwargs",
    "train_tokenizer",
    "transliterate",
    "word_spans",
]


__getattr__, __dir__ = lazy_exports(globals(), _LAZY)
