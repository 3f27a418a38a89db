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

from tokenloom.unicode._word_rule import apply_word_rule
from tokenloom.unicode.flat import flat_spans, text_bases
from tokenloom.unicode.scripts import code_points, load_icu, utf16_to_codepoints

__all__ = [
    "BatchSegmenter", "IcuWordSegmenter", "PerTextSegmenter", "Segmenter", "SegmenterName", "Span",
    "WhitespaceSegmenter", "batch_segmenter", "count_words", "get_segmenter", "word_spans",
]  # fmt: skip

Span = tuple[int, int]

# ICU word-break rule statuses: [0, 100) none (spaces, punctuation, emoji); 100.. number, 200.. letter,
# 300.. kana, 400.. ideograph (UBRK_WORD_* in ubrk.h). A segment is a word when its status is >= 100.
_WORD_STATUS_MIN = 100

# A segment's rule status from its characters, for the word rules of ICU's root locale
# (``BreakIterator.getRules()``: chained rules; the one-character rules of numbers, letters, Hebrew letters,
# kana and ideographs, ``$X $ExFm* {tag}``, are tagged, every other rule that can end a segment on another
# character is tagged only where it ends on connector punctuation, a Hebrew apostrophe, a Hangul syllable or
# a Han or kana pair, and the rule that extends any other character by marks, format characters and joiners
# is not tagged). A segment is a word when it starts with a ``_STARTS`` character and its last character
# that is not a mark (``$ExFm``) is one of ``_TAILS`` (any marks after it), or one of ``_BARE_TAILS`` with
# no mark after it, and it holds no ``_CHAINS`` character. It is not a word when it starts with any other
# character but those of ``_UNSURE`` (marks at a text's start, connector punctuation: ``_`` alone is not a
# word, ``__`` is; regional indicators; dictionary characters: ``々`` alone is not a word, ``々々`` is),
# and holds no ``_CHAINS`` character either. ICU's dictionaries split a run of Thai, Lao, Khmer, Burmese,
# Han, kana or Hangul, and give every piece the status of the run's last piece; so a piece that is not sure
# also leaves the dictionary pieces before it to ICU, which answers for every segment that is not sure
# (``getRuleStatus`` after ``following``).
_EXFM = r"[\p{Word_Break=Extend}\p{Word_Break=Format}\p{Word_Break=ZWJ}]"
_KANA_KANJI_HANGUL = r"[[:Han:][:Hiragana:][:Katakana:][\uac00-\ud7a3]]"
_DICTIONARY = rf"[[:LineBreak=Complex_Context:]{_KANA_KANJI_HANGUL}]"
_TAILS = (
    r"[\p{Word_Break=Numeric}\p{Word_Break=Hebrew_Letter}\p{Word_Break=Katakana}[:Hiragana:]\p{Ideographic}"
    rf"[\p{{Word_Break=ALetter}}-{_KANA_KANJI_HANGUL}]"
    r"[[:LineBreak=Complex_Context:]-[\p{Word_Break=Extend}-[:Han:]]-[\p{Grapheme_Cluster_Break=Control}]]]"
)
_STARTS = rf"[{_TAILS}[\uac00-\ud7a3]]"
_BARE_TAILS = rf"[{_TAILS}{_KANA_KANJI_HANGUL}\p{{Word_Break=ExtendNumLet}}\p{{Word_Break=Single_Quote}}]"
_UNSURE = rf"[{_EXFM}\p{{Word_Break=ExtendNumLet}}\p{{Word_Break=Regional_Indicator}}{_DICTIONARY}]"
# marks and emoji that also start a tagged rule (U+16FE4, an Extend ideograph; U+2139, an emoji letter): a
# rule that ends on one chains into it, so " \U00016fe4" is a word; a segment that holds one is not sure
_CHAINS = (
    rf"[[{_EXFM}\p{{Extended_Pictographic}}]&[{_STARTS}{_KANA_KANJI_HANGUL}\p{{Word_Break=ExtendNumLet}}]]"
)
# bits of a code point's entry in ``_char_classes()``; ``_JOINER``: UAX #29 ExtendNumLet (``_word_rule``)
_START, _TAIL, _BARE_TAIL, _UNSURE_START, _MARK, _DICT, _JOINER, _CHAIN = 1, 2, 4, 8, 16, 32, 64, 128


@functools.cache
def _char_classes() -> np.ndarray:
    """[0x110000] uint8: the ``_START`` .. ``_CHAIN`` bits of every code point (see the sets above)."""
    icu = load_icu()
    classes = np.zeros(0x110000, dtype=np.uint8)
    sets = ((_STARTS, _START), (_TAILS, _TAIL), (_BARE_TAILS, _BARE_TAIL), (_UNSURE, _UNSURE_START),
            (_EXFM, _MARK), (_DICTIONARY, _DICT), (r"[\p{Word_Break=ExtendNumLet}]", _JOINER), (_CHAINS, _CHAIN))  # fmt: skip
    for pattern, bit in sets:
        for lo, hi in icu.UnicodeSet(pattern).ranges():
            classes[ord(lo) : ord(hi) + 1] |= bit
    return classes


def _locale_key(lang: str | None) -> str:
    """The ICU locale of a language code: its language (``"tha_Thai"`` -> ``"tha"``), ``""`` for the root."""
    return (lang or "").split("_")[0]


def _word_iterator(key: str) -> Any:
    icu = load_icu()
    return icu.BreakIterator.createWordInstance(icu.Locale(key) if key else icu.Locale.getRoot())


@functools.cache
def _root_rules(key: str) -> bool:
    """Whether the locale ``key`` breaks words by the root locale's rules (all but a few, e.g. en_US_POSIX)."""
    return bool(_word_iterator(key).getRules() == _word_iterator("").getRules())


def _word_flags(it: Any, classes: np.ndarray, spans: np.ndarray, units: np.ndarray) -> np.ndarray:
    """[S] whether each segment of ``it``'s text is a word: ``classes`` [C] of its code points, ``spans``
    [S, 2] the segments in code points, ``units`` [S] their starts in UTF-16 units; ICU answers where the
    characters leave it unsure (see ``_STARTS`` above)."""
    starts = spans[:, 0]
    first = classes[starts]  # [S]
    tail = spans[:, 1] - 1  # [S] the last character that is not a mark (below)
    bare = (classes[tail] & _MARK) == 0  # [S]
    marked = np.flatnonzero(~bare)
    while marked.size:  # step back over the marks at the segments' ends
        tail[marked] -= 1
        marked = marked[tail[marked] >= starts[marked]]
        marked = marked[(classes[tail[marked]] & _MARK) > 0]
    last = classes[np.maximum(tail, starts)]  # [S] (a segment of marks only starts with one: not sure)
    word = (first & _START) > 0
    word &= ((last & _TAIL) > 0) | (bare & ((last & _BARE_TAIL) > 0))
    unsure = np.where((first & _START) > 0, ~word, (first & _UNSURE_START) > 0)  # [S]
    chained = np.flatnonzero(classes & _CHAIN)  # [K] code points that a rule may chain into
    unsure[np.searchsorted(starts, chained, side="right") - 1] = True
    for s in np.flatnonzero(unsure).tolist()[::-1]:  # the dictionary pieces before an unsure one
        while s > 0 and first[s] & _DICT and not unsure[s - 1]:
            s -= 1
            unsure[s] = True
    for s in np.flatnonzero(unsure).tolist():  # ICU's rule status, at the segment's end
        it.following(int(units[s]))
        word[s] = it.getRuleStatus() >= _WORD_STATUS_MIN
    return word


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
        key = _locale_key(lang)
        it = cache.get(key)
        if it is None:
            it = _word_iterator(key)
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
        next. The boundaries come in one call; whether a segment is a word is read from its characters where
        they decide ICU's rule status (``_STARTS``), and asked of ICU only where they do not. The per-text
        :meth:`word_spans`, which asks ICU for every segment, is the reference (``tests/test_unicode.py``)."""

        n = len(texts)
        joined = "\n".join(texts)
        it = self._iterator(lang)
        it.setText(joined)
        ends = np.fromiter(it, dtype=np.int64)  # [S] UTF-16 offsets of the segments' ends
        starts = np.zeros_like(ends)  # [S]
        starts[1:] = ends[:-1]
        spans = np.stack([starts, ends], axis=1)  # [S, 2] UTF-16 units
        cps = code_points(joined)  # [C]
        classes = _char_classes()[cps]  # [C]
        if cps.size and cps.max() > 0xFFFF:  # UTF-16 units -> code points
            units = 1 + (cps > 0xFFFF)  # [C] UTF-16 units per code point
            table = np.append(np.repeat(np.arange(cps.size), units), cps.size)  # [U + 1]
            spans = table[spans]  # [S, 2] code points
        if _root_rules(_locale_key(lang)):
            word = _word_flags(it, classes, spans, starts)
        else:  # another locale's rules (en_US_POSIX): ICU's status of every segment
            it.first()
            status = it.getRuleStatus
            word = np.array([status() >= _WORD_STATUS_MIN for _ in it], dtype=bool)
        spans = spans[word]  # [W, 2]
        if (classes & _JOINER).any():  # the library's rule on segments with joiners
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
