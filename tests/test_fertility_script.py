"""scripts/fertility_report.py: the report from a TOML / JSON config; writers' terminal table."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path
from types import ModuleType

import pandas as pd
import pytest

from tokenloom.errors import ConfigError
from tokenloom.fertility.writers import report_table, to_markdown

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "fertility_report.py"
BYTES = [f"<0x{i:02X}>" for i in range(256)]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fertility_report_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def char_tokenizer(tmp_path_factory: pytest.TempPathFactory, default_corpus: Path) -> Path:
    from tokenizers import Tokenizer, decoders, models

    chars = sorted({ch for p in default_corpus.glob("*.txt") for ch in p.read_text("utf-8")} - {"\n"})
    tok = Tokenizer(
        models.BPE(vocab={p: i for i, p in enumerate(BYTES + chars)}, merges=[], byte_fallback=True)
    )
    tok.decoder = decoders.Sequence([decoders.ByteFallback(), decoders.Fuse()])
    path = tmp_path_factory.mktemp("char") / "char.json"
    tok.save(str(path))
    return path


@pytest.mark.slow
def test_config_toml_and_json(tmp_path: Path, default_corpus: Path, char_tokenizer: Path) -> None:
    script = _script()
    toml = tmp_path / "report.toml"
    toml.write_text(
        f'out = "{tmp_path / "out"}"\ncorpus = ["{default_corpus}"]\npivot = "eng_Latn"\ntranslit = false\n'
        f'[tokenizers]\nchars = "{char_tokenizer}"\n[report]\nn_boot = 50\n',
        encoding="utf-8",
    )
    assert script.main(["-q", str(toml)]) == 0
    df = pd.read_csv(tmp_path / "out" / "report.csv")
    assert set(df.tokenizer) == {"chars"} and "transliterated" not in set(df.slice_kind)
    language = df[df.slice_kind == "language"]
    assert (language.chars_per_token == 1.0).all()  # identity on characters, through the script too
    assert (tmp_path / "out" / "report.html").is_file()
    config = {
        "out": str(tmp_path / "out2"),
        "corpus": str(default_corpus),
        "tokenizers": {"c": str(char_tokenizer)},
    }
    (tmp_path / "r.json").write_text(json.dumps(config), encoding="utf-8")
    assert script.main(["-q", str(tmp_path / "r.json")]) == 0
    assert (tmp_path / "out2" / "premium.png").is_file()


def test_config_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = _script()
    bad = tmp_path / "bad.toml"
    bad.write_text('out = "x"\ncorpus = "y"\nbogus = 1\n[tokenizers]\na = "b"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"unknown key\(s\) \['bogus'\]"):
        script.read_config(bad)
    bad.write_text('out = "x"\ncorpus = "y"\n[tokenizers]\na = "b"\n[report]\nboots = 3\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"unknown \[report\] key\(s\) \['boots'\]"):
        script.read_config(bad)
    bad.write_text('corpus = "y"\n[tokenizers]\na = "b"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="missing required key 'out'"):
        script.read_config(bad)
    bad.write_text("out = [", encoding="utf-8")
    assert script.main([str(bad)]) == 2
    assert "not valid TOML" in capsys.readouterr().err


def test_terminal_table_and_markdown_show_missing_values() -> None:
    rows = []
    for name, fert in (("a", 2.5), ("b", math.nan)):
        row = dict.fromkeys(
            ["fertility_lo", "fertility_hi", "continued_words", "chars_per_token", "bytes_per_token",
             "byte_fallback_rate", "roundtrip_exact_rate", "premium_mean", "premium_median", "premium_lo",
             "premium_hi", "rel_attention_work", "renyi_efficiency"],
            math.nan,
        )  # fmt: skip
        row.update(tokenizer=name, slice_kind="language", slice="eng_Latn", texts=3, fertility=fert)
        rows.append(row)
    df = pd.DataFrame(rows)
    table = report_table(df)
    header = table.splitlines()[0].split()
    assert header[:4] == ["kind", "slice", "texts", "a"] and header.count("b") == 1  # one column group each
    line = next(x for x in table.splitlines() if "eng_Latn" in x)
    assert "2.500" in line and "–" in line
    md = to_markdown(df)
    assert "### a" in md and "### b" in md and "| language | eng_Latn | 3 | 2.500 |" in md
