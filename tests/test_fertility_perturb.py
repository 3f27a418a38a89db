"""Perturbations: deterministic, and each changes the text as defined (hypothesis properties, ICU's own
skeletons as the oracle for homoglyphs); perturbed slices in a report, premiums against the clean text."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenloom.errors import ConfigError
from tokenloom.fertility.perturb import (
    NEIGHBOURS,
    PERTURBATIONS,
    ZWSP,
    homoglyph_table,
    parse_perturbations,
    perturb,
)
from tokenloom.fertility.report import ReportConfig, fertility_report
from tokenloom.text.tokenizer import load_tokenizer

# Latin with diacritics, Cyrillic, Greek, Devanagari, digits, the OCR sites, spaces and punctuation
TEXT = st.text(
    st.sampled_from("abcdelmnorsxyzABCEHOPTéüñçåÅØß01 ,.!?-абвгдеорсхАВЕКМНОРСТαβγοικνΑΒΕΟहिंदी्"), max_size=40
)


@settings(max_examples=60, deadline=None)
@given(TEXT, st.sampled_from(PERTURBATIONS), st.integers(0, 3))
def test_deterministic(text: str, name: str, seed: int) -> None:
    assert perturb(text, name, seed=seed) == perturb(text, name, seed=seed)  # type: ignore[arg-type]
    assert perturb(text, name, seed=seed, rate=0.0) == (  # type: ignore[arg-type]
        text if name in ("zerowidth", "homoglyphs", "keyboard", "ocr") else perturb(text, name)  # type: ignore[arg-type]
    )


@settings(max_examples=100, deadline=None)
@given(TEXT)
def test_fixed_perturbations_change_the_text_as_defined(text: str) -> None:
    plain = perturb(text, "diacritics")
    assert not any(unicodedata.category(c) == "Mn" for c in unicodedata.normalize("NFD", plain))
    assert perturb(plain, "diacritics") == plain and unicodedata.is_normalized("NFC", plain)
    assert len(unicodedata.normalize("NFD", plain)) <= len(unicodedata.normalize("NFD", text))
    upper = perturb(text, "case")
    assert upper == text.upper() and perturb(upper, "case") == upper
    wide = perturb(text, "fullwidth")
    assert len(wide) == len(text) and not any(" " <= c <= "~" for c in wide)
    assert unicodedata.normalize("NFKC", wide) == unicodedata.normalize("NFKC", text)  # NFKC undoes it


@settings(max_examples=100, deadline=None)
@given(TEXT, st.integers(0, 5), st.sampled_from([0.1, 0.5, 1.0]))
def test_random_perturbations_change_the_text_as_defined(text: str, seed: int, rate: float) -> None:
    import icu

    spaced = perturb(text, "zerowidth", seed=seed, rate=rate)
    assert spaced.replace(ZWSP, "") == text
    assert ZWSP not in spaced[:1] + spaced[-1:]
    glyphs = perturb(text, "homoglyphs", seed=seed, rate=rate)
    table = homoglyph_table()
    assert len(glyphs) == len(text)
    assert all(a == b or table[a] == b for a, b in zip(text, glyphs, strict=True))
    checker = icu.SpoofChecker()
    assert checker.getSkeleton(0, glyphs) == checker.getSkeleton(0, text)  # ICU: confusable strings
    if rate == 1.0:  # every site perturbed
        assert spaced.count(ZWSP) == max(len(text) - 1, 0)
        assert all(b == table[a] for a, b in zip(text, glyphs, strict=True) if a in table)
    typo = perturb(text, "keyboard", seed=seed, rate=rate)
    assert len(typo) == len(text)
    for a, b in zip(text, typo, strict=True):
        assert a == b or (b.lower() in NEIGHBOURS[a.lower()] and a.isupper() == b.isupper())
    ocr = perturb(text, "ocr", seed=seed, rate=rate)

    def canon(s: str) -> str:
        return s.replace("rn", "m").replace("1", "l").replace("0", "O")

    assert canon(ocr) == canon(text)


def test_known_answers() -> None:
    assert perturb("Ångström café", "diacritics") == "Angstrom cafe"
    assert perturb("Straße", "case") == "STRASSE"
    assert perturb("Hi, 5!", "fullwidth") == "Ｈｉ，\u3000５！"
    assert perturb("modern", "ocr", rate=1.0) == "rnodem"
    assert perturb("l0O1", "ocr", rate=1.0) == "1O0l"
    table = homoglyph_table()
    assert table["а"] == "a" and table["a"] == "α" and table["р"] == "p"  # Cyrillic а, р
    assert perturb("paypal", "homoglyphs", rate=1.0) != "paypal"
    assert set(NEIGHBOURS["g"]) == set("fhtybv")
    assert parse_perturbations("case, ocr") == ("case", "ocr") and parse_perturbations("all") == PERTURBATIONS
    with pytest.raises(ConfigError, match="unknown perturbation 'noise'"):
        parse_perturbations("case,noise")


def test_perturbed_slices_premium_against_the_clean_text(shared_dir: Path, tmp_path: Path) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    src = shared_dir / "corpora" / "flores200" / "devtest"
    texts = {}
    for code in ("eng_Latn", "rus_Cyrl"):
        texts[code] = (src / f"{code}.txt").read_text("utf-8").splitlines()[:40]
        (tmp_path / f"{code}.txt").write_text("\n".join(texts[code]) + "\n", encoding="utf-8")
    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=600, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    raw.train_from_iterator([t for ts in texts.values() for t in ts], trainer)
    raw.save(str(tmp_path / "byte.json"))
    tok = load_tokenizer(tmp_path / "byte.json")
    df = fertility_report(
        {"byte": tok},
        tmp_path,
        translit=False,
        perturbations="case,homoglyphs",
        config=ReportConfig(n_boot=50),
    )
    perturbed = df[df.slice_kind == "perturbed"]
    assert sorted(perturbed.slice) == sorted(
        f"{c}_{p}-perturbed" for c in texts for p in ("case", "homoglyphs")
    )
    for code, ts in texts.items():
        clean = np.array([len(i) for i in tok.encode_batch(ts)])
        for name in ("case", "homoglyphs"):
            noisy = np.array([len(i) for i in tok.encode_batch([perturb(t, name) for t in ts])])  # type: ignore[arg-type]
            r = perturbed[perturbed.slice == f"{code}_{name}-perturbed"].iloc[0]
            assert r.tokens == noisy.sum() and r.premium_pairs == len(ts)
            assert r.premium_mean == pytest.approx(float(np.mean(noisy / clean)), rel=1e-12)
            assert r.premium_lo <= r.premium_mean <= r.premium_hi
    assert "perturbed" not in set(
        fertility_report({"byte": tok}, tmp_path, config=ReportConfig(n_boot=0)).slice_kind
    )
