"""tokenloom.fertility.slices: which slices a text counts toward, and how detected code-mixed slices are named."""

from __future__ import annotations

from pathlib import Path

import pytest

from tokenloom.corpus.load import CorpusPart, load_corpus
from tokenloom.fertility.slices import memberships, mixed_name


def _part(texts: list[str], lang: str, script: str | None) -> CorpusPart:
    label = f"{lang}_{script}" if script else lang
    return CorpusPart(
        source="test", slice_kind="language", slice=label, lang=lang, script=script,
        load=lambda: (texts, list(range(len(texts)))),
    )  # fmt: skip


def _keys(part: CorpusPart) -> dict[str, set[str]]:
    texts, _ = part.load()
    out: dict[str, set[str]] = {}
    for m in memberships(part, texts):
        out.setdefault(m.key[0], set()).add(m.key[1])
    return out


MIXED_ZH = "我们明天开会讨论新的词表和 tokenizer 设计"  # mostly Han, Latin letters > 10%


@pytest.mark.parametrize(
    ("text", "lang", "script", "mixed", "script_slice"),
    [
        (MIXED_ZH, "zho", "Hans", "zho_Hans+Latn", "Hans"),  # Unicode says Hani; the part says Hans
        (MIXED_ZH, "zho", "Hant", "zho_Hant+Latn", "Hant"),
        ("会議の agenda を email で送ります", "jpn", "Jpan", "jpn_Jpan+Latn", "Jpan"),  # kana + Han = Jpan
        ("東京 meeting 会場 booking 確認", "jpn", "Jpan", "jpn_Jpan+Latn", "Jpan"),  # Han only, still Jpan
        (
            "내일 meeting 은 會議室 에서 email 확인",
            "kor",
            "Hang",
            "kor_Hang+Latn",
            "Hang",
        ),  # Hangul + Han = Kore
        ("आज office में बहुत काम था", "hin", "Deva", "hin_Deva+Latn", "Deva"),
        ("we met in Москве last summer", "eng", "Latn", "eng_Cyrl+Latn", "Latn"),
        (MIXED_ZH, "zho", None, "zho_Hani+Latn", "Hani"),  # unlabelled: the detected codes, both places
    ],
)
def test_code_mixed_slices_name_scripts_as_the_script_slice_does(
    text: str, lang: str, script: str | None, mixed: str, script_slice: str
) -> None:
    keys = _keys(_part([text, text], lang, script))
    assert keys["code_mixed"] == {mixed}
    assert keys["script"] == {script_slice}
    assert script_slice in mixed.removeprefix(f"{lang}_").split("+")


def test_mixed_name_maps_only_the_scripts_that_write_the_label() -> None:
    assert mixed_name(("Hani", "Latn"), "Hans") == "Hans+Latn"
    assert mixed_name(("Hani", "Latn"), None) == "Hani+Latn"
    assert mixed_name(("Cyrl", "Latn"), "Latn") == "Cyrl+Latn"
    assert mixed_name(("Kore", "Latn"), "Hang") == "Hang+Latn"
    assert mixed_name(("Hang", "Latn"), "Kore") == "Kore+Latn"
    assert mixed_name(("Hani", "Latn"), "Jpan") == "Jpan+Latn"
    assert mixed_name(("Arab", "Latn"), "Hans") == "Arab+Latn"  # a Hans part quoting Arabic: not Han


def test_every_code_mixed_slice_of_the_shipped_corpus_names_its_language_script(
    embedded_corpus: Path,
) -> None:
    """The shipped corpus: every non-Latin language's code-mixed slice carries the code of its language
    slice (zho_Hans -> zho_Hans+Latn, jpn_Jpan -> jpn_Jpan+Latn, kor_Hang -> kor_Hang+Latn)."""
    found = {}
    for part in load_corpus([embedded_corpus]):
        keys = _keys(part)
        for name in keys.get("code_mixed", set()):
            found[part.slice] = name
            assert part.script in name.removeprefix(f"{part.lang}_").split("+"), (part.slice, name)
            assert keys["script"] == {part.script}
    assert found["zho_Hans"] == "zho_Hans+Latn"
    assert found["jpn_Jpan"] == "jpn_Jpan+Latn"
    assert found["kor_Hang"] == "kor_Hang+Latn"
