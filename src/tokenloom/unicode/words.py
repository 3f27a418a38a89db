"""Words: word-like segments of a text by ICU word boundaries, and the pluggable segmenter reports record.

Segments come from ``BreakIterator.createWordInstance`` (locale from the language code), keeping only
segments whose rule status is a number, letter, kana or ideograph (spaces, punctuation and emoji are not
words). Connector punctuation and U+202F (UAX #29 ExtendNumLet) join words in ICU, so ``__init__``, ``a_b``
and ``foo__bar`` are one word each; on top of ICU, a segment of only connector punctuation (``_``, ``__``,
``‿``, with any marks on it) is not a word, and U+202F separates words as every other space does
(``_word_rule.py``). ICU segments Chinese, Japanese, Thai, Khmer, Lao and Burmese with its dictionaries. ICU
reports boundaries as UTF-16 offsets; they are converted to code-point offsets here, so non-BMP text (emoji,
supplementary-plane scripts) is counted correctly. The segmenter is pluggable (:class:`Segmenter`); its
``name`` is recorded in fertility reports. A :class:`BatchSegmenter` also segments a whole batch into the
flat arrays of :mod:`tokenloom.unicode.flat` (:func:`batch_segmenter` makes any segmenter one).
"""

from __future__ import annotations

import functools
import re
import threading
import unicodedata
from collections.abc import Sequence
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from tokenloom.unicode._word_rule import JOINER_RE, apply_word_rule
from tokenloom.unicode.flat import flat_spans, text_bases
from tokenloom.unicode.scripts import ASTRAL, code_points, load_icu, utf16_to_codepoints

__all__ = [
    "BatchSegmenter", "IcuWordSegmenter", "PerTextSegmenter", "Segmenter", "SegmenterName", "Span",
    "WhitespaceSegmenter", "batch_segmenter", "count_words", "get_segmenter", "word_spans",
]  # fmt: skip

Span = tuple[int, int]

# ICU word-break rule statuses: [0, 100) none (spaces, punctuation, emoji); 100.. number, 200.. letter,
# 300.. kana, 400.. ideograph (UBRK_WORD_* in ubrk.h). A segment is a word when its status is >= 100.
_WORD_STATUS_MIN = 100


@runtime_checkable
class Segmenter(Protocol):
    """Finds the word-like segments of a text. ``name`` is recorded in reports."""

    name: str

    def word_spans(self, text: str, lang: str | None = None) -> list[Span]:
        """[start, end) code-point spans of the words of ``text``, in order."""
        ...


@runtime_checkable
class BatchSegmenter(Segmenter, Protocol):
    """A :class:`Segmenter` that also segments a whole batch at once."""

    def flat_word_spans(self, texts: Sequence[str], lang: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        """([n] words per text, [W, 2] their spans in the whole-batch coordinates of
        :mod:`tokenloom.unicode.flat`): the :meth:`word_spans` of each text, shifted to where it starts."""
        ...


class PerTextSegmenter:
    """Any :class:`Segmenter` as a :class:`BatchSegmenter`: the batch segmented text by text."""

    def __init__(self, segmenter: Segmenter) -> None:
        self.segmenter = segmenter
        self.name = segmenter.name

    def word_spans(self, text: str, lang: str | None = None) -> list[Span]:
        return self.segmenter.word_spans(text, lang)

    def flat_word_spans(self, texts: Sequence[str], lang: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        return flat_spans([self.segmenter.word_spans(t, lang) for t in texts], text_bases(texts))


class IcuWordSegmenter:
    """ICU word boundaries, keeping number / letter / kana / ideograph segments (not spaces, punctuation).

    One ``BreakIterator`` per locale and thread is cached. ``lang`` is an ISO 639 code (``"tha"``,
    ``"th"``) or a ``<lang>_<Script>`` code; ``None`` uses the root locale. Dictionary-based segmentation
    (Chinese, Japanese, Thai, Khmer, Lao, Burmese) is chosen by ICU from the characters themselves.
    """

    def __init__(self) -> None:
        self.name = f"icu-{load_icu().ICU_VERSION}"
        self._local = threading.local()

    def _iterator(self, lang: str | None) -> Any:
        cache: dict[str, Any] = self._local.__dict__.setdefault("cache", {})
        key = (lang or "").split("_")[0]
        it = cache.get(key)
        if it is None:
            icu = load_icu()
            it = icu.BreakIterator.createWordInstance(icu.Locale(key) if key else icu.Locale.getRoot())
            cache[key] = it
        return it

    def word_spans(self, text: str, lang: str | None = None) -> list[Span]:
        if not text:
            return []
        it = self._iterator(lang)
        it.setText(text)
        spans: list[Span] = []
        prev = 0
        status = it.getRuleStatus
        for boundary in it:  # UTF-16 offsets of the boundaries after position 0
            if status() >= _WORD_STATUS_MIN:
                spans.append((prev, boundary))
            prev = boundary
        table = utf16_to_codepoints(text)
        if table is not None:
            spans = [(table[s], table[e]) for s, e in spans]
        return apply_word_rule(text, spans)

    def flat_word_spans(self, texts: Sequence[str], lang: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        """All texts at once: ([n] words per text, [W, 2] spans in end-to-end code points, text j starting
        at ``sum(len(t) + 1 for t in texts[:j])``) — the :meth:`word_spans` of each text, shifted.

        One ``setText`` on the texts joined by ``"\\n"``: ICU always breaks before and after a line feed
        (UAX #29 WB3a/WB3b, and dictionary ranges stop there too), so no word crosses from one text to the
        next. The per-text :meth:`word_spans` is the reference (``tests/test_unicode.py``)."""

        n = len(texts)
        joined = "\n".join(texts)
        it = self._iterator(lang)
        it.setText(joined)
        flat: list[int] = []  # start, end, start, end, ... in UTF-16 units
        prev = 0
        status = it.getRuleStatus
        for boundary in it:
            if status() >= _WORD_STATUS_MIN:
                flat += (prev, boundary)
            prev = boundary
        spans = np.array(flat, dtype=np.int64).reshape(-1, 2)  # [W, 2]
        if ASTRAL.search(joined) is not None:  # UTF-16 units -> code points
            cps = code_points(joined)  # [C]
            units = 1 + (cps > 0xFFFF)  # [C] UTF-16 units per code point
            table = np.append(np.repeat(np.arange(cps.size), units), cps.size)  # [U + 1]
            spans = table[spans]  # [W, 2]
        if JOINER_RE.search(joined) is not None:  # the library's rule on segments with joiners
            kept = apply_word_rule(joined, [(int(a), int(b)) for a, b in spans.tolist()])
            spans = np.array(kept, dtype=np.int64).reshape(-1, 2)  # [W', 2]
        owner = np.searchsorted(text_bases(texts), spans[:, 0], side="right") - 1  # [W] text of each word
        return np.bincount(owner, minlength=n).astype(np.int64), spans


class WhitespaceSegmenter:
    """Words = whitespace-separated runs, trimmed of punctuation and symbols at both ends, that hold a letter
    or a digit: a baseline for space-delimited languages.

    It does not segment Chinese, Japanese, Thai, Khmer, Lao or Burmese (a whole run is one word).
    """

    name = "whitespace"
    _RUN = re.compile(r"\S+")

    def word_spans(self, text: str, lang: str | None = None) -> list[Span]:
        spans = []
        for m in self._RUN.finditer(text):
            s, e = m.span()
            while s < e and unicodedata.category(text[s])[0] in "PSZC":
                s += 1
            while e > s and unicodedata.category(text[e - 1])[0] in "PSZC":
                e -= 1
            if any(unicodedata.category(ch)[0] in "LN" for ch in text[s:e]):
                spans.append((s, e))
        return spans

    def flat_word_spans(self, texts: Sequence[str], lang: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        return flat_spans([self.word_spans(t, lang) for t in texts], text_bases(texts))


SegmenterName = Literal["icu", "whitespace"]


@functools.cache
def _named_segmenter(name: str) -> Segmenter:
    if name == "icu":
        return IcuWordSegmenter()
    if name == "whitespace":
        return WhitespaceSegmenter()
    raise ValueError(f"unknown segmenter {name!r}; choose 'icu' or 'whitespace', or pass a Segmenter object")


def get_segmenter(segmenter: SegmenterName | Segmenter = "icu") -> Segmenter:
    """A segmenter by name (``"icu"``, ``"whitespace"``) or the given object when it is one already."""
    if isinstance(segmenter, str):
        return _named_segmenter(segmenter)
    if not isinstance(segmenter, Segmenter):
        raise TypeError(f"segmenter must be 'icu', 'whitespace' or a Segmenter object, got {segmenter!r}")
    return segmenter


def batch_segmenter(segmenter: SegmenterName | Segmenter = "icu") -> BatchSegmenter:
    """:func:`get_segmenter`, as a :class:`BatchSegmenter` (wrapped in :class:`PerTextSegmenter` when it
    segments one text at a time only)."""
    seg = get_segmenter(segmenter)
    return seg if isinstance(seg, BatchSegmenter) else PerTextSegmenter(seg)


def word_spans(
    text: str, *, lang: str | None = None, segmenter: SegmenterName | Segmenter = "icu"
) -> list[Span]:
    """[start, end) code-point spans of the word-like segments of ``text``."""
    return get_segmenter(segmenter).word_spans(text, lang)


def count_words(text: str, *, lang: str | None = None, segmenter: SegmenterName | Segmenter = "icu") -> int:
    """Number of word-like segments of ``text`` (see :func:`word_spans`)."""
    return len(get_segmenter(segmenter).word_spans(text, lang))
