"""Text side of tokenloom: corpus line sources, tokenizer trainers, the Tokenizer wrapper, Unicode helpers.

Names are imported lazily (like the top-level package), so ``import tokenloom.text`` pulls in neither
``tokenizers``, ``sentencepiece`` nor pandas. Submodules: ``sources`` (files/folders/globs → lines),
``train`` (TrainerConfig, train_tokenizer), ``tokenizer`` (Tokenizer, load_tokenizer), ``unicode``.
"""

from __future__ import annotations

from tokenloom._lazy import lazy_exports

# public name -> module that defines it (imported on first access)
_LAZY: dict[str, str] = {
    # tokenizers
    "resolve_inputs": "tokenloom.text.sources",
    "iter_lines": "tokenloom.text.sources",
    "SourceStats": "tokenloom.text.sources",
    "Tokenizer": "tokenloom.text.tokenizer",
    "load_tokenizer": "tokenloom.text.tokenizer",
    "TrainerConfig": "tokenloom.text.train",
    "train_tokenizer": "tokenloom.text.train",
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

__all__ = list(_LAZY)


__getattr__, __dir__ = lazy_exports(globals(), _LAZY)
