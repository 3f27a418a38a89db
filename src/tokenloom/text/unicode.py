"""Unicode analysis of text: scripts, ICU word segmentation, transliteration to Latin.

What it does:

- **Scripts**: the Unicode Script property of each character (ICU ``icu.Script``), with Common (``Zyyy``)
  and Inherited (``Zinh``) characters resolved to their neighbours (an inherited mark takes the script of
  the character it follows; a common character the script before it, else the one after it); the
  dominant script of a text; the set of scripts its *letters* come from (for code-mixed detection).
- **Words**: word-like segments by ICU word boundaries (``BreakIterator.createWordInstance``, locale from
  the language code), keeping only segments whose rule status is a number, letter, kana or ideograph
  (spaces, punctuation and emoji are not words). Connector punctuation and U+202F (UAX #29 ExtendNumLet)
  join words in ICU, so ``__init__``, ``a_b`` and ``foo__bar`` are one word each; on top of ICU, a segment
  of only connector punctuation (``_``, ``__``, ``‿``, with any marks on it) is not a word, and U+202F
  separates words as every other space does (``_word_rule``). ICU segments Chinese, Japanese, Thai, Khmer, Lao and
  Burmese with its dictionaries. ICU reports boundaries as UTF-16 offsets; they are converted to code-point
  offsets here, so non-BMP text (emoji, supplementary-plane scripts) is counted correctly.
  The segmenter is pluggable (:class:`Segmenter`); its ``name`` is recorded in fertility reports. A
  :class:`BatchSegmenter` also segments a whole batch into the flat arrays of :mod:`tokenloom.text.flat`
  (:func:`batch_segmenter` makes any segmenter one).
- **Transliteration** with ICU ``Any-Latin``, then optionally ``Latin-ASCII``; the script a language is
  usually written in (:func:`usual_script`, ICU's likely subtags from CLDR).

What it does not do: tokenization, corpus reading, normalization policy (the tokenizer owns that).
``icu`` is imported on first use, not at import time. This module never imports torch or pandas.
"""

from __future__ import annotations

import functools
import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Sequence
from typing import Any, Literal, Protocol, overload, runtime_checkable

import numpy as np

from tokenloom.text._word_rule import JOINER_RE, apply_word_rule
from tokenloom.text.flat import flat_spans, text_bases

__all__ = [
    "BatchSegmenter",
    "IcuWordSegmenter",
    "PerTextSegmenter",
    "Segmenter",
    "WhitespaceSegmenter",
    "batch_segmenter",
    "char_scripts",
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

Span = tuple[int, int]

COMMON = "Zyyy"  # ICU short name of the Common script (spaces, digits, punctuation, emoji)
INHERITED = "Zinh"  # ICU short name of the Inherited script (combining marks)
UNKNOWN = "Zzzz"  # unassigned code points
_NEUTRAL = frozenset({COMMON, INHERITED, UNKNOWN})

# ICU word-break rule statuses: [0, 100) none (spaces, punctuation, emoji); 100.. number, 200.. letter,
# 300.. kana, 400.. ideograph (UBRK_WORD_* in ubrk.h). A segment is a word when its status is >= 100.
_WORD_STATUS_MIN = 100


def _icu() -> Any:
    import icu  # PyICU (pyicu-wheels); imported lazily

    return icu


@functools.lru_cache(maxsize=65536)
def _script_cp(cp: int) -> str:
    return _icu().Script.getScript(cp).getShortName()


def script_of(char: str) -> str:
    """ISO 15924 code of one character's Unicode Script property, e.g. ``"Deva"``, ``"Zyyy"`` (common).

    >>> script_of("क"), script_of("a"), script_of(" ")
    ('Deva', 'Latn', 'Zyyy')
    """
    if len(char) != 1:
        raise ValueError(f"script_of takes one character, got {char!r}")
    return _script_cp(ord(char))


def char_scripts(text: str) -> list[str]:
    """Script of every character of ``text`` with Common / Inherited resolved to their neighbours.

    Inherited marks take the resolved script of the preceding character; Common characters take the
    nearest real script before them, else the nearest one after them; a text with no real script keeps
    ``"Zyyy"`` (``"Zinh"`` for a lone mark).
    """
    raw = [_script_cp(ord(ch)) for ch in text]
    out = list(raw)
    last: str | None = None
    pending: list[int] = []  # leading neutral positions waiting for the first real script
    for i, sc in enumerate(raw):
        if sc in _NEUTRAL:
            if last is not None:
                out[i] = last
            else:
                pending.append(i)
        else:
            if last is None:
                for j in pending:
                    out[j] = sc
                pending.clear()
            last = sc
    return out


_LETTER_SCRIPT: dict[str, str | None] = {}  # character -> script of a letter; None for non-letters / neutral


def _letter_script(ch: str) -> str | None:
    sc = _script_cp(ord(ch)) if ch.isalpha() else None
    sc = None if sc in _NEUTRAL else sc
    if len(_LETTER_SCRIPT) < 1 << 20:
        _LETTER_SCRIPT[ch] = sc
    return sc


def _letter_counts(text: str) -> Counter[str]:
    """Letters per script, with Japanese and Korean script combinations merged into ``Jpan`` / ``Kore``.

    Counts distinct characters first (``Counter`` runs in C), then looks each one up once.
    """
    counts: Counter[str] = Counter()
    table = _LETTER_SCRIPT
    for ch, k in Counter(text).items():
        sc = table[ch] if ch in table else _letter_script(ch)
        if sc is not None:
            counts[sc] += k
    for family, members in _FAMILIES:
        present = set(counts) & members
        if len(present) >= 2 or (family == "Jpan" and present & {"Hira", "Kana"}):
            counts[family] = sum(counts.pop(sc) for sc in present)
    return counts


# Writing systems that mix scripts by design are not code-mixing: Japanese writes Han, Hiragana and
# Katakana together (any kana makes it Japanese), Korean may write Hangul with Han.
_FAMILIES: tuple[tuple[str, frozenset[str]], ...] = (
    ("Jpan", frozenset({"Hani", "Hira", "Kana"})),
    ("Kore", frozenset({"Hang", "Hani"})),
)


def dominant_script(text: str, *, default: str = COMMON) -> str:
    """The script most of the text's letters are written in; ties go to the first seen.

    Japanese (kana, with or without Han) is ``"Jpan"``, Hangul with Han ``"Kore"``, Han alone ``"Hani"``.
    A text without letters falls back to its other characters; ``default`` when none has a real script.
    """
    counts = _letter_counts(text)
    if not counts:
        counts = Counter(_script_cp(ord(ch)) for ch in text)
        for sc in _NEUTRAL:
            counts.pop(sc, None)
    if not counts:
        return default
    return max(counts, key=counts.__getitem__)  # Counter keeps first-seen order: ties go to the first


def letter_scripts(text: str, *, min_share: float = 0.0) -> tuple[str, ...]:
    """Sorted scripts of the text's letters, each holding at least ``min_share`` of its letters.

    Japanese (Han + Hiragana + Katakana) and Korean (Hangul + Han) combinations are reported as one
    writing system, ``"Jpan"`` / ``"Kore"``, so that they do not count as code-mixing.
    """
    counts = _letter_counts(text)
    total = sum(counts.values())
    if not total:
        return ()
    return tuple(sorted(sc for sc, n in counts.items() if n / total >= min_share))


_ASTRAL = re.compile("[\U00010000-\U0010ffff]")  # code points outside the BMP (two UTF-16 units)


def letter_script_variety(texts: Sequence[str]) -> Any:
    """[n] numpy int array: how many distinct scripts (raw, before merging Japanese / Korean) the letters of
    each text come from. Vectorized over all texts (one code-point array, one lookup per distinct character);
    ``len(letter_scripts(t)) <= letter_script_variety([t])[0]``, so only texts with 2 or more can be
    code-mixed. Reference: ``len({script of each letter})`` per text (``tests/test_unicode.py``)."""

    n = len(texts)
    chars = np.fromiter(map(len, texts), dtype=np.int64, count=n)
    cps = code_points("".join(texts))  # [C]
    if cps.size == 0:
        return np.zeros(n, dtype=np.int64)
    seen = np.zeros(int(cps.max()) + 1, dtype=bool)
    seen[cps] = True
    uniq = np.flatnonzero(seen)  # [U] distinct code points, sorted (no sort of all C)
    table = _LETTER_SCRIPT
    names = [table[ch] if ch in table else _letter_script(ch) for ch in map(chr, uniq.tolist())]
    codes = {name: k for k, name in enumerate(sorted({x for x in names if x is not None}))}
    if not codes:
        return np.zeros(n, dtype=np.int64)
    lookup = np.full(int(uniq[-1]) + 1, -1, dtype=np.int64)  # code point -> script code (-1: not a letter)
    lookup[uniq] = [codes[x] if x is not None else -1 for x in names]
    sid = lookup[cps]  # [C]
    text = np.repeat(np.arange(n, dtype=np.int64), chars)  # [C] text of each code point
    variety = np.zeros(n, dtype=np.int64)
    for k in range(len(codes)):  # a part's letters come from few scripts
        variety += np.bincount(text[sid == k], minlength=n) > 0
    return variety


def code_points(text: str) -> np.ndarray:
    """The code points of ``text`` as a numpy uint32 array ``[C]`` (lone surrogates kept as their values)."""

    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def utf16_to_codepoints(text: str) -> list[int] | None:
    """Map UTF-16 offsets of ``text`` to code-point offsets; ``None`` when the text is all BMP (identity).

    The list has ``len(utf16) + 1`` entries; an offset inside a surrogate pair maps to the code point that
    pair encodes.
    """
    if not text or _ASTRAL.search(text) is None:  # a regex scan in C: ~8x faster than max(text)
        return None
    table: list[int] = []
    for i, ch in enumerate(text):
        table.append(i)
        if ord(ch) > 0xFFFF:
            table.append(i)
    table.append(len(text))
    return table


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
        :mod:`tokenloom.text.flat`): the :meth:`word_spans` of each text, shifted to where it starts."""
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
        self.name = f"icu-{_icu().ICU_VERSION}"
        self._local = threading.local()

    def _iterator(self, lang: str | None) -> Any:
        cache: dict[str, Any] = self._local.__dict__.setdefault("cache", {})
        key = (lang or "").split("_")[0]
        it = cache.get(key)
        if it is None:
            icu = _icu()
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
        if _ASTRAL.search(joined) is not None:  # UTF-16 units -> code points
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


@functools.lru_cache(maxsize=4)
def _transliterator(ascii_only: bool) -> Any:
    icu = _icu()
    return icu.Transliterator.createInstance("Any-Latin; Latin-ASCII" if ascii_only else "Any-Latin")


_translit_lock = threading.Lock()  # an ICU Transliterator must not be used by two threads at once


@overload
def transliterate(texts: str, *, ascii: bool = False) -> str: ...  # type: ignore[overload-overlap]  # str is a Sequence[str]
@overload
def transliterate(texts: Sequence[str], *, ascii: bool = False) -> list[str]: ...
def transliterate(texts: str | Sequence[str], *, ascii: bool = False) -> str | list[str]:
    """Transliterate to Latin with ICU ``Any-Latin`` (then ``Latin-ASCII`` when ``ascii``).

    Takes one string (returns one string) or a sequence of strings (returns a list).
    """
    tr = _transliterator(bool(ascii))
    with _translit_lock:
        if isinstance(texts, str):
            return tr.transliterate(texts)
        return [tr.transliterate(t) for t in texts]


@functools.lru_cache(maxsize=4096)
def usual_script(lang: str) -> str | None:
    """The script ``lang`` is usually written in, by ICU's likely subtags (CLDR): ``"hin"`` / ``"hi"`` ->
    ``"Deva"``, ``"rus"`` -> ``"Cyrl"``, ``"jpn"`` -> ``"Jpan"``; a code with a script (``"hin_Latn"``)
    is looked up by its language alone. ``None`` for ``"und"`` and codes ICU does not know."""
    base = lang.replace("-", "_").split("_", 1)[0].lower()
    if not base or base == "und":
        return None
    icu = _icu()
    locale = icu.Locale(icu.Locale.createCanonical(base).getName())
    if not locale.getLanguage():
        return None
    locale.addLikelySubtags()
    return locale.getScript() or None
