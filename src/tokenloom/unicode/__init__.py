"""Unicode analysis of text, shared by corpus reading, tokenizers and reports.

- ``scripts``: the Unicode Script property of each character (ICU), resolved for Common and Inherited
  characters; the dominant script of a text; the scripts its letters come from; the script a language is
  usually written in (CLDR likely subtags).
- ``words``: word-like segments by ICU word boundaries (with the library's word rule on top), a pluggable
  :class:`Segmenter`, and whole-batch segmentation into the flat arrays of ``flat``.
- ``flat``: the whole-batch coordinates of many texts (``"\\n".join(texts)``), where token offsets and word
  spans of a batch meet.
- ``translit``: transliteration to Latin with ICU ``Any-Latin`` (then optionally ``Latin-ASCII``).

What it does not do: tokenization, corpus reading, normalization policy (the tokenizer owns that). ``icu`` is
imported on first use, not at import time; nothing here imports torch or pandas.
"""

from __future__ import annotations

from tokenloom.unicode.scripts import (
    char_scripts,
    code_mixed_scripts,
    code_points,
    dominant_script,
    letter_script_variety,
    letter_scripts,
    script_of,
    usual_script,
    utf16_to_codepoints,
)
from tokenloom.unicode.translit import transliterate
from tokenloom.unicode.words import (
    BatchSegmenter,
    IcuWordSegmenter,
    PerTextSegmenter,
    Segmenter,
    SegmenterName,
    WhitespaceSegmenter,
    batch_segmenter,
    count_words,
    get_segmenter,
    word_spans,
)

__all__ = [
    "BatchSegmenter",
    "IcuWordSegmenter",
    "PerTextSegmenter",
    "Segmenter",
    "SegmenterName",
    "WhitespaceSegmenter",
    "batch_segmenter",
    "char_scripts",
    "code_mixed_scripts",
    "code_points",
    "count_words",
    "dominant_script",
    "get_segmenter",
    "letter_script_variety",
    "letter_scripts",
    "script_of",
    "transliterate",
    "usual_script",
    "utf16_to_codepoints",
    "word_spans",
]
