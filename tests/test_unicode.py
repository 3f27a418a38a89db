"""tokenloom.unicode: scripts, ICU word segmentation (with UTF-16 → code points), transliteration."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenloom import unicode as U


def words(text: str, lang: str | None = None, segmenter: str = "icu") -> list[str]:
    return [text[s:e] for s, e in U.word_spans(text, lang=lang, segmenter=segmenter)]


def test_script_of_characters() -> None:
    assert U.script_of("a") == "Latn"
    assert U.script_of("क") == "Deva"
    assert U.script_of("ж") == "Cyrl"
    assert U.script_of("中") == "Hani"
    assert U.script_of(" ") == "Zyyy"
    assert U.script_of("\u0301") == "Zinh"  # combining acute accent
    assert U.script_of("\U00010400") == "Dsrt"  # Deseret, a supplementary-plane script
    with pytest.raises(ValueError, match="one character"):
        U.script_of("ab")


def test_common_and_inherited_resolve_to_neighbours() -> None:
    # leading common chars take the first real script; later ones the script before them
    assert U.char_scripts("1 ab, вг") == ["Latn", "Latn", "Latn", "Latn", "Latn", "Latn", "Cyrl", "Cyrl"]
    # a combining mark after a Cyrillic letter is Cyrillic
    assert U.char_scripts("и\u0306") == ["Cyrl", "Cyrl"]
    assert U.char_scripts("!?") == ["Zyyy", "Zyyy"]
    assert U.char_scripts("") == []


def test_dominant_script_and_writing_system_families() -> None:
    assert U.dominant_script("Hello, мир мир") == "Cyrl"  # 6 Cyrillic letters vs 5 Latin
    assert U.dominant_script("日本語のテキストです") == "Jpan"  # Han + kana = Japanese
    assert U.dominant_script("한국어 漢字") == "Kore"
    assert U.dominant_script("中文") == "Hani"
    assert U.dominant_script("123 !") == "Zyyy"
    assert U.dominant_script("") == "Zyyy"


def test_letter_scripts_for_code_mixing() -> None:
    assert U.letter_scripts("I said नमस्ते to him") == ("Deva", "Latn")
    assert U.letter_scripts("日本語のテキストです") == ("Jpan",)  # not code-mixed
    # a short Latin acronym in a long Devanagari sentence is below a 10% share
    text = "नासा ने कहा कि यह मिशन बहुत सफल रहा है NASA"
    assert U.letter_scripts(text) == ("Deva", "Latn")
    assert U.letter_scripts(text, min_share=0.2) == ("Deva",)


def test_icu_segments_thai_with_its_dictionary() -> None:
    # "I love the Thai language very much": ฉัน | รัก | ภาษา | ไทย | มาก
    assert words("ฉันรักภาษาไทยมาก", "tha") == ["ฉัน", "รัก", "ภาษา", "ไทย", "มาก"]


def test_icu_segments_chinese_and_drops_punctuation() -> None:
    # "I love Beijing Tiananmen.": 我 | 爱 | 北京 | 天安门, the full stop is not a word
    assert words("我爱北京天安门。", "zho") == ["我", "爱", "北京", "天安门"]
    assert U.word_spans("我爱北京天安门。", lang="zho") == [(0, 1), (1, 2), (2, 4), (4, 7)]


def test_icu_counts_only_word_like_segments() -> None:
    assert words("Hello, world! 3.14 apples — don't", "eng") == ["Hello", "world", "3.14", "apples", "don't"]
    assert U.count_words("  ...  !!  ") == 0
    assert U.count_words("") == 0


def test_non_bmp_offsets_are_code_points() -> None:
    text = "😀 𐐀𐐁𐐂 abc 😀😀 x"  # emoji (not words) and Deseret letters, each two UTF-16 units
    spans = U.word_spans(text)
    assert [text[s:e] for s, e in spans] == ["𐐀𐐁𐐂", "abc", "x"]
    assert spans == [(2, 5), (6, 9), (13, 14)]
    assert U.utf16_to_codepoints("abc") is None
    assert U.utf16_to_codepoints("a😀b") == [0, 1, 1, 2, 3]


def test_whitespace_segmenter_and_segmenter_choice() -> None:
    assert words("Hello, world!", segmenter="whitespace") == ["Hello", "world"]
    assert words("ฉันรักภาษาไทยมาก", segmenter="whitespace") == ["ฉันรักภาษาไทยมาก"]  # no dictionary
    assert U.get_segmenter("icu").name.startswith("icu-")
    assert U.get_segmenter("whitespace").name == "whitespace"
    custom = U.WhitespaceSegmenter()
    assert U.get_segmenter(custom) is custom
    with pytest.raises(ValueError, match="unknown segmenter 'spacy'"):
        U.get_segmenter("spacy")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Segmenter"):
        U.get_segmenter(42)  # type: ignore[arg-type]


def test_transliteration_any_latin_then_ascii() -> None:
    assert U.transliterate("नमस्ते दुनिया") == "namastē duniyā"
    assert U.transliterate("नमस्ते दुनिया", ascii=True) == "namaste duniya"
    assert U.transliterate(["Привет", "мир"], ascii=True) == ["Privet", "mir"]
    assert U.transliterate("already latin") == "already latin"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("__init__", ["__init__"]),  # connector punctuation joins an identifier into one word (ICU)
        ("__", []),  # ... but a run of it alone is punctuation, as "--" is (ICU says a word here)
        ("_", []),
        ("a_b", ["a_b"]),
        ("foo__bar", ["foo__bar"]),
        ("‿", []),  # U+203F UNDERTIE, connector punctuation
        ("x‿y", ["x‿y"]),
        ("def __init__(self): _ = __", ["def", "__init__", "self"]),
        ("__\u0301 _\u200d_", []),  # marks and joiners attached to connectors do not make a word
        ("1\u202f000 Bonjour\u202f! \u202fa", ["1", "000", "Bonjour", "a"]),  # U+202F is a space
    ],
)
def test_connector_punctuation_joins_words_but_is_never_a_word_alone(text: str, expected: list[str]) -> None:
    assert words(text) == expected
    assert U.count_words(text) == len(expected)
    counts, flat = U.IcuWordSegmenter().flat_word_spans([text, text], None)
    assert counts.tolist() == [len(expected)] * 2
    assert [f"{text}\n{text}"[s:e] for s, e in flat.tolist()] == expected * 2
    assert words(text.replace("\u202f", " ")) == words(text)  # U+202F separates like a space


# text with connector punctuation, U+202F, marks and joiners, where ICU and the word rule meet
JOINER_TEXT = st.text(alphabet="_‿⁀＿ \u202fab1\u0301\u200d-.", max_size=20)


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=60) | JOINER_TEXT)
def test_word_spans_are_ordered_disjoint_and_wordlike(text: str) -> None:
    spans = U.word_spans(text)
    prev_end = 0
    for s, e in spans:
        assert prev_end <= s < e <= len(text)
        prev_end = e
        piece = text[s:e]
        # a word-like segment never holds whitespace and is never only punctuation / separators (ICU's
        # letter classes are wider than Python's categories, e.g. U+1F150 and new Unicode characters)
        assert not any(ch.isspace() for ch in piece), piece
        assert any(unicodedata.category(ch)[0] not in "PZ" for ch in piece), piece


def test_letter_script_variety_matches_a_per_text_count() -> None:
    texts = [
        "I said नमस्ते to him",
        "日本語のテキストです",
        "",
        "123 !?",
        "plain",
        "한국어 漢字",
        "Ελληνικά and English",
        "\U0001e900\U0001e922 x",
        "\u0301",
        "ab" * 50 + "中",
    ]
    want = [len({U.script_of(ch) for ch in t if ch.isalpha()} - {"Zyyy", "Zinh", "Zzzz"}) for t in texts]
    assert U.letter_script_variety(texts).tolist() == want
    assert U.letter_script_variety([]).tolist() == []
    for t in texts:  # the pre-filter never hides a code-mixed text
        assert len(U.letter_scripts(t)) <= U.letter_script_variety([t])[0]
    for share in (0.0, 0.1, 0.5):
        want_mixed = {i: U.letter_scripts(t, min_share=share) for i, t in enumerate(texts) if want[i] >= 2}
        assert U.code_mixed_scripts(texts, min_share=share) == want_mixed
    assert U.code_mixed_scripts([]) == {}


# letters of scripts that merge (Han, kana, Hangul), others, marks, digits and spaces
MIXED_TEXT = st.text(alphabet="ab日本のテ한국Ωπабनम\u0301 1\U0001e900", max_size=30)


@settings(max_examples=200, deadline=None)
@given(st.lists(MIXED_TEXT | st.text(max_size=10), max_size=8), st.sampled_from([0.0, 0.1, 0.34]))
def test_code_mixed_scripts_equal_letter_scripts_per_text(texts: list[str], share: float) -> None:
    variety = U.letter_script_variety(texts).tolist()
    assert variety == [
        len({U.script_of(c) for c in t if c.isalpha()} - {"Zyyy", "Zinh", "Zzzz"}) for t in texts
    ]
    want = {i: U.letter_scripts(t, min_share=share) for i, t in enumerate(texts) if variety[i] >= 2}
    assert U.code_mixed_scripts(texts, min_share=share) == want


def _flat_reference(seg: U.IcuWordSegmenter, texts: list[str], lang: str | None) -> tuple[list, list]:
    counts, flat, base = [], [], 0
    for t in texts:
        spans = seg.word_spans(t, lang)
        counts.append(len(spans))
        flat += [[s + base, e + base] for s, e in spans]
        base += len(t) + 1
    return counts, flat


def test_flat_word_spans_equal_per_text_segmentation() -> None:
    seg = U.IcuWordSegmenter()
    texts = [
        "",
        "Hello, world!",
        "ends with CR\r",
        "\u0301starts with a mark",
        "emoji \U0001f468\u200d\U0001f469 z",
        "\U0001e900\U0001e922 adlam \U00010330",
        "line\ninside",
        "",
        "ภาษาไทยเป็นภาษาที่",
        "我们在北京。",
        "日本語のテキストです",
        "ends with ZWJ\u200d",
        "\u200d",
        " ",
        "__init__ __ _ a_b 1\u202f000 Bonjour\u202f!",
    ]
    for lang in (None, "tha_Thai", "eng_Latn"):
        counts, flat = seg.flat_word_spans(texts, lang)
        want_counts, want_flat = _flat_reference(seg, texts, lang)
        assert counts.tolist() == want_counts
        assert flat.tolist() == want_flat
    counts, flat = seg.flat_word_spans([], None)
    assert counts.tolist() == [] and flat.shape == (0, 2)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(max_size=20) | JOINER_TEXT, max_size=6))
def test_flat_word_spans_equal_per_text_segmentation_on_any_texts(texts: list[str]) -> None:
    seg = U.IcuWordSegmenter()
    counts, flat = seg.flat_word_spans(texts, None)
    assert (counts.tolist(), flat.tolist()) == _flat_reference(seg, texts, None)


# where a segment's characters leave its word status to ICU: dictionary scripts (Thai, Lao, Khmer, Burmese,
# Han, kana, Hangul) with their marks, the iteration mark, Hebrew quotes, connector punctuation, marks,
# format characters and joiners, regional indicators, emoji, astral letters, line ends
WORD_STATUS_TEXT = st.text(
    alphabet="ภาษาไทยัิ์ ສະບາຍ ខ្មែរ မြန်မာ 中文字典々〆ひらがなカタカナー가나다ᄀ א'\"ב a1_‿.,:\u0301\u200d\u200c"
    "\u00ad\u2060\U0001f1eb\U0001f1f7\U0001f468\U0001f469©\u202f\r\n 0٣\U0001e900\U00010330-"
    "\U00016fe4\U00016ff0\u2139\U0001f170",
    max_size=25,
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(WORD_STATUS_TEXT | st.text(max_size=15), max_size=5),
    st.sampled_from([None, "tha_Thai", "jpn_Jpan", "kor_Hang", "heb_Hebr", "en-US-POSIX"]),
)
def test_flat_word_statuses_from_characters_equal_icu_statuses(texts: list[str], lang: str | None) -> None:
    seg = U.IcuWordSegmenter()
    counts, flat = seg.flat_word_spans(texts, lang)
    assert (counts.tolist(), flat.tolist()) == _flat_reference(seg, texts, lang)


@pytest.mark.parametrize(
    "text",
    ["0_\u0300", "a_\u0300", "a_\u0300b", "\u05d0'\u0300", "가\u0300", "가나", "々", "々々", "ภาษาไทย_\u0e31",
     "ภาษาไทย_\u0e31 ภาษาไทย", "1ภาษาไทย_\u0e31", "中文_\u0300", "ひらがなカタカナ_\u0300", "\u0301a", "__", "_a",
     " \U00016fe4", ". \U00016fe4", " \U00016ff0\U00016ff0", " \u200d\u2139", "!\u200d\U0001f170"],
)  # fmt: skip
def test_flat_word_spans_where_icu_status_depends_on_more_than_the_first_character(text: str) -> None:
    seg = U.IcuWordSegmenter()  # a word's status from its last letter and dictionary runs' shared status
    for lang in (None, "tha_Thai"):
        counts, flat = seg.flat_word_spans([text, "x", text], lang)
        assert (counts.tolist(), flat.tolist()) == _flat_reference(seg, [text, "x", text], lang)


def test_flat_word_spans_on_every_flores_language(shared_dir: Path) -> None:
    seg = U.IcuWordSegmenter()
    for path in sorted((shared_dir / "corpora" / "flores200" / "devtest").glob("*_*.txt")):
        texts = path.read_text("utf-8").splitlines()[:40]
        counts, flat = seg.flat_word_spans(texts, path.stem)
        assert (counts.tolist(), flat.tolist()) == _flat_reference(seg, texts, path.stem), path.stem


@pytest.mark.parametrize(
    ("lang", "script"),
    [("hin", "Deva"), ("hi", "Deva"), ("hin_Latn", "Deva"), ("rus", "Cyrl"), ("arb_Arab", "Arab"), ("jpn", "Jpan"),
     ("zho", "Hans"), ("eng", "Latn"), ("swh", "Latn"), ("und", None), ("zz", None), ("", None)],
)  # fmt: skip
def test_usual_script_from_icu_likely_subtags(lang: str, script: str | None) -> None:
    assert U.usual_script(lang) == script
