"""Flip rates under normalization and transliteration: a predict function that ignores diacritics never
flips when they are removed, and flips under transliteration; examples, metric changes, errors."""

from __future__ import annotations

import unicodedata

import numpy as np
import pandas as pd
import pytest

from tokenloom.errors import ConfigError, CorpusError
from tokenloom.evaluate import EvalConfig
from tokenloom.evaluate.transforms import apply_transform, flip_rates

TEXTS = ["Привет, café!", "cafe au lait", "привет мир", "hello there", "Ça va, crème brûlée", "Добрый день"]
LANGS = ["rus", "fra", "rus", "eng", "fra", "rus"]
LABELS = [1, 1, 1, 0, 0, 0]


def _strip_marks(text: str) -> str:
    return unicodedata.normalize(
        "NFC", "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")
    )


def ignores_diacritics(texts: list[str]) -> list[int]:
    """Positive when the text mentions a café or greets in Russian, whatever its diacritics and case."""
    return [int(any(w in _strip_marks(t).casefold() for w in ("cafe", "привет"))) for t in texts]


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    return pd.DataFrame({"text": TEXTS * 10, "lang": LANGS * 10, "y": LABELS * 10})


def test_diacritics_never_flip_a_model_that_ignores_them_transliteration_does(data: pd.DataFrame) -> None:
    res = flip_rates(
        data, ignores_diacritics, text="text", label="y", lang="lang", config=EvalConfig(n_boot=100)
    )
    t = res.table.set_index(["transform", "slice_kind", "slice"])
    assert t.loc[("diacritics", "all", "all"), "changed"] == 30  # café, Ça va … brûlée, Добрый: changed ...
    assert t.loc[("diacritics", "all", "all"), "flips"] == 0  # ... and never flipped
    assert t.loc[("diacritics", "all", "all"), "flip_rate"] == 0
    assert t.loc[("casefold", "all", "all"), "flips"] == 0
    translit = t.loc[("translit", "all", "all")]
    assert translit["flips"] == 10  # "привет мир" only: "Privet, café!" still mentions a café
    assert translit["flip_rate"] == pytest.approx(10 / 60)
    assert translit["flip_rate_lo"] < translit["flip_rate"] < translit["flip_rate_hi"]
    assert t.loc[("translit", "language", "rus"), "flip_rate"] == pytest.approx(10 / 30)
    assert t.loc[("translit", "language", "fra"), "flips"] == 0
    assert translit["recall_before"] == 1 and translit["recall_after"] == pytest.approx(2 / 3)
    assert translit["f1_change"] < 0
    ex = res.examples
    assert set(ex["transform"]) == {"translit"} and len(ex) == 10
    assert set(ex["transformed"]) == {"privet mir"} and set(ex["before"]) == {1} and set(ex["after"]) == {0}


def test_examples_are_a_seeded_sample(data: pd.DataFrame) -> None:
    a = flip_rates(
        data, ignores_diacritics, text="text", transforms=["translit"], sample=5, config=EvalConfig(n_boot=0)
    )
    b = flip_rates(
        data, ignores_diacritics, text="text", transforms=["translit"], sample=5, config=EvalConfig(n_boot=0)
    )
    assert len(a.examples) == 5 and a.examples.equals(b.examples)
    assert "f1_before" not in a.table.columns  # no labels, no metric change


def test_transforms_do_what_they_say() -> None:
    assert apply_transform(["ｆｕｌｌ"], "nfkc") == ["full"]
    assert apply_transform(["Straße"], "casefold") == ["strasse"]
    assert apply_transform(["café"], "diacritics") == ["cafe"]
    assert apply_transform(["привет"], "translit") == ["privet"]
    assert apply_transform(["Ελλάδα"], "translit_ascii") == ["Ellada"]


def test_bad_transform_and_predict_function(data: pd.DataFrame) -> None:
    with pytest.raises(ConfigError, match="unknown transform 'upper'"):
        flip_rates(data, ignores_diacritics, text="text", transforms=["upper"])
    with pytest.raises(CorpusError, match="returned 1 predictions for 60 texts"):
        flip_rates(data, lambda texts: [0], text="text")
    rng = np.random.default_rng(0)
    noisy = lambda texts: rng.integers(0, 2, len(texts)).tolist()  # noqa: E731
    res = flip_rates(data, noisy, text="text", transforms=["nfkc"], config=EvalConfig(n_boot=0))
    assert res.table.loc[res.table.slice_kind == "all", "changed"].item() == 0  # nothing to re-score
