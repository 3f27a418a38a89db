"""What a language costs: one definition (``language_cost``), and the three places that use it agree."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenloom import cli
from tokenloom.costs import encoder_flops, encoder_kv_cache_bytes
from tokenloom.costs.languages import LanguageCost, language_cost
from tokenloom.encoder.config import EncoderConfig
from tokenloom.errors import ConfigError
from tokenloom.fertility.report import fertility_report
from tokenloom.fertility.sweep import SweepConfig, vocab_sweep

VIT_B16 = EncoderConfig.preset("vit-b16")


def test_known_answers_with_a_model() -> None:
    cost = language_cost(2.0, VIT_B16, context=1000, dtype="bf16")
    assert (cost.premium, cost.seq_len, cost.content_in_context) == (2.0, 2000, 0.5)
    assert (cost.rel_kv_bytes, cost.rel_attention_work) == (2.0, 4.0)
    assert cost.kv_cache_bytes == encoder_kv_cache_bytes(VIT_B16, 1, 2000, "bf16")
    assert cost.kv_cache_ratio == 2.0  # the cache grows ∝ N: exactly the premium
    at_2000, at_1000 = encoder_flops(VIT_B16, 1, 2000), encoder_flops(VIT_B16, 1, 1000)
    assert cost.attention_flops == at_2000.attention and at_2000.attention == 4 * at_1000.attention  # ∝ N²
    assert cost.encoder_flops == at_2000.total and cost.encoder_flops_ratio == at_2000.total / at_1000.total
    assert 2.0 < cost.encoder_flops_ratio < 4.0  # the linear layers ∝ p, attention ∝ p²
    batched = language_cost(1.25, VIT_B16, context=4096, batch=3, dtype="fp32")
    assert batched.seq_len == 5120
    assert batched.kv_cache_bytes == encoder_kv_cache_bytes(VIT_B16, 3, 5120, "fp32")
    with pytest.raises(dataclasses.FrozenInstanceError):
        cost.premium = 3.0  # type: ignore[misc]


def test_without_a_model_and_without_a_premium() -> None:
    plain = language_cost(1.5, context=100)
    assert (plain.seq_len, plain.rel_kv_bytes, plain.rel_attention_work) == (150, 1.5, 2.25)
    assert plain.kv_cache_bytes is None and plain.encoder_flops is None and math.isnan(plain.kv_cache_ratio)
    unknown = language_cost(math.nan, VIT_B16)  # no pivot-aligned text: nothing is guessed
    assert unknown.seq_len is None and unknown.kv_cache_bytes is None and unknown.attention_flops is None
    assert all(
        math.isnan(v) for v in (unknown.rel_kv_bytes, unknown.rel_attention_work, unknown.content_in_context)
    )
    empty = language_cost(0.0, VIT_B16)  # texts without tokens: no KV, no attention, no length to price
    assert (empty.rel_kv_bytes, empty.rel_attention_work, empty.seq_len) == (0.0, 0.0, None)
    assert language_cost(1e-9, context=10).seq_len == 1  # at least one token
    for bad, match in (("2", "premium must be a real number"), (True, "premium must be a real number")):
        with pytest.raises(ConfigError, match=match):
            language_cost(bad)  # type: ignore[arg-type]
    for kwargs in ({"context": 0}, {"context": True}, {"batch": 0}, {"context": 4096.0}):
        with pytest.raises(ConfigError, match="must be a positive int"):
            language_cost(1.0, **kwargs)  # type: ignore[arg-type]


@given(st.floats(0.01, 100.0), st.integers(1, 1 << 20))
def test_length_and_relative_costs_follow_the_premium(premium: float, context: int) -> None:
    cost = language_cost(premium, context=context)
    assert isinstance(cost, LanguageCost) and cost.context == context
    assert cost.seq_len == max(1, round(premium * context))
    assert cost.rel_kv_bytes == premium and cost.rel_attention_work == premium * premium
    assert cost.content_in_context == 1 / premium


@pytest.fixture(scope="module")
def flores4(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """200 parallel FLORES-200 devtest sentences of four languages in four scripts."""
    out = tmp_path_factory.mktemp("flores4")
    for name in ("eng_Latn", "deu_Latn", "hin_Deva", "tha_Thai"):
        lines = (shared_dir / "corpora" / "flores200" / "devtest" / f"{name}.txt").read_text("utf-8")
        (out / f"{name}.txt").write_text("\n".join(lines.splitlines()[:200]) + "\n", "utf-8")
    return out


def test_report_costs_languages_and_sweep_agree(
    flores4: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One tokenizer, one corpus: the report's rel_* columns, `tokenloom costs languages` and the sweep's
    languages table give the same premium, length, KV cache and FLOPs for every language."""
    config = SweepConfig(algorithms=("bpe",), vocab_sizes=(1500,), context=2048)
    sweep = vocab_sweep(flores4, flores4, config, quiet=True)
    ((name, tok),) = sweep.tokenizers.items()
    report = fertility_report({name: tok}, flores4, pivot="eng_Latn", translit=False, quiet=True)
    path, csv = tmp_path / "report.csv", tmp_path / "costs.csv"
    report.to_csv(path, index=False)
    argv = ["costs", "languages", str(path), "--preset", "vit-b16", "--context", "2048", "--csv", str(csv)]
    assert cli.main(argv) == 0
    assert f"tokenizer {name}" in capsys.readouterr().out
    table = pd.read_csv(csv).set_index("lang")
    swept = sweep.languages.set_index("lang")
    langs = report[report["slice_kind"] == "language"].set_index("slice")
    assert set(langs.index) == set(table.index) == set(swept.index) == {p.stem for p in flores4.glob("*.txt")}
    for lang, row in langs.iterrows():
        p = row["premium_mean"]
        assert p == sweep.report.set_index("slice").loc[lang, "premium_mean"]  # the sweep's own report
        cost = language_cost(p, VIT_B16, context=2048)
        assert cost.seq_len == max(1, round(p * 2048))  # the oracle: the definition written out
        assert cost.kv_cache_bytes == encoder_kv_cache_bytes(VIT_B16, 1, cost.seq_len, "bf16")
        # the report's columns
        assert row["rel_kv_bytes"] == p == cost.rel_kv_bytes
        assert row["rel_attention_work"] == p * p == cost.rel_attention_work
        # tokenloom costs languages
        mine = table.loc[lang]
        assert mine["premium"] == p and mine["attention_flops_ratio"] == row["rel_attention_work"]
        assert mine["seq_len"] == cost.seq_len and mine["kv_cache_bytes"] == cost.kv_cache_bytes
        assert mine["encoder_flops"] == cost.encoder_flops and mine["kv_cache_ratio"] == cost.kv_cache_ratio
        # the sweep
        theirs = swept.loc[lang]
        assert theirs["premium"] == p and theirs["seq_len"] == cost.seq_len
        assert theirs["kv_cache_bytes"] == cost.kv_cache_bytes
        assert theirs["encoder_flops"] == cost.encoder_flops
        assert theirs["attention_flops"] == cost.attention_flops
    assert langs.loc["eng_Latn", "premium_mean"] == 1.0 and table.loc["eng_Latn", "seq_len"] == 2048
    others = langs.drop(index="eng_Latn")["premium_mean"]
    assert (others > 1.05).all() and others.nunique() == 3  # real premiums: the agreement is not 1 == 1
    assert (swept.drop(index="eng_Latn")["seq_len"] > 2048).all()
