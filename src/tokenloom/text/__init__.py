"""Tokenizers: the Tokenizer (encode / decode / batches / offsets / save / load), its engine backends, trainers.

Names are imported lazily (like the top-level package), so ``import tokenloom.text`` pulls in neither
``tokenizers``, ``sentencepiece`` nor pandas. Submodules: ``tokenizer`` (Tokenizer, load_tokenizer),
``backends/`` (one module per engine behind one protocol, with verified dispatch), ``offsets``, ``adapt``
(any tokenizer object → Tokenizer), ``train`` and ``train_config`` (TrainerConfig, train_tokenizer) with the
engines' trainers, ``bytelevel`` (byte-level BPE split patterns), ``tiktoken_export`` (tiktoken's format).
Corpora are read by :mod:`tokenloom.corpus` and Unicode is analysed by :mod:`tokenloom.unicode`; their
public names are also importable from here, where earlier versions defined them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tokenloom._lazy import lazy_exports

# public name -> module that defines it (imported on first access)
_LAZY: dict[str, str] = {
    # tokenizers
    "resolve_inputs": "tokenloom.corpus.sources",
    "iter_lines": "tokenloom.corpus.sources",
    "SourceStats": "tokenloom.corpus.records",
    "Tokenizer": "tokenloom.text.tokenizer",
    "load_tokenizer": "tokenloom.text.tokenizer",
    "as_tokenizer": "tokenloom.text.adapt",
    "TrainerConfig": "tokenloom.text.train",
    "train_tokenizer": "tokenloom.text.train",
    "tiktoken_encoding_kwargs": "tokenloom.text.tiktoken_export",
    # corpus reading and Unicode analysis
    "load_corpus": "tokenloom.corpus.load",
    "Corpus": "tokenloom.corpus.load",
    "CorpusPart": "tokenloom.corpus.load",
    "dominant_script": "tokenloom.unicode",
    "char_scripts": "tokenloom.unicode",
    "word_spans": "tokenloom.unicode",
    "count_words": "tokenloom.unicode",
    "transliterate": "tokenloom.unicode",
    "get_segmenter": "tokenloom.unicode",
}

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time _LAZY imports each name on first use
    from tokenloom.corpus.load import Corpus, CorpusPart, load_corpus
    from tokenloom.corpus.records import SourceStats
    from tokenloom.corpus.sources import iter_lines, resolve_inputs
    from tokenloom.text.adapt import as_tokenizer
    from tokenloom.text.tiktoken_export import tiktoken_encoding_kwargs
    from tokenloom.text.tokenizer import Tokenizer, load_tokenizer
    from tokenloom.text.train import TrainerConfig, train_tokenizer
    from tokenloom.unicode import (
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
