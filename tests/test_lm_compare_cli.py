"""``tokenloom eval-lm`` and ``tokenloom compare-lm`` end to end on tiny runs (a few FLORES languages, a
few training steps, two tiny tokenizers).

Oracles: ``scipy.stats.spearmanr`` on the written table's own columns; the fertility report of the same
tokenizers on the same held-out text; the evaluation of a run equal to scoring its loaded model directly.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from scipy import stats

from tokenloom.cli import main
from tokenloom.fertility.report import fertility_report
from tokenloom.lm.compare_table import COMPARE_COLUMNS, INTRINSIC
from tokenloom.lm.evaluate import COLUMNS
from tokenloom.text.train import train_tokenizer

LANGS = ("eng_Latn", "fra_Latn", "rus_Cyrl")
MODEL = ["--width", "32", "--depth", "1", "--heads", "2", "--seq-len", "64", "--batch-size", "4"]


@pytest.fixture(scope="session")
def flores(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Training text (40 dev sentences) and held-out text (6 devtest sentences) of three languages."""
    root = tmp_path_factory.mktemp("flores")
    for split, folder, n in (("dev", "train", 40), ("devtest", "heldout", 6)):
        (root / folder).mkdir()
        for lang in LANGS:
            src = shared_dir / "corpora" / "flores200" / split / f"{lang}.txt"
            lines = src.read_text(encoding="utf-8").splitlines()[:n]
            (root / folder / f"{lang}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root / "train", root / "heldout"


@pytest.fixture(scope="session")
def tokenizers(flores: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("toks")
    train, _ = flores
    byte_level = train_tokenizer(train, algorithm="bytelevel-bpe", vocab_size=300, heldout=0, quiet=True)
    bpe = train_tokenizer(train, algorithm="bpe", vocab_size=600, heldout=0, quiet=True)  # byte fallback
    return {"bl300": byte_level.save(root / "bl300"), "bpe600": bpe.save(root / "bpe600")}


def test_compare_lm_end_to_end(
    flores: tuple[Path, Path], tokenizers: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    train, heldout = flores
    out = tmp_path / "cmp"
    names = ",".join(f"{n}={p}" for n, p in tokenizers.items())
    argv = [
        "compare-lm",
        "--tokenizers",
        names,
        "--corpus",
        str(train),
        "--eval",
        str(heldout),
        "--out",
        str(out),
    ]
    code = main([*argv, "--budget", "bytes", "--amount", "4000", *MODEL, "--n-boot", "200", "--quiet"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "bpe600" in printed and "Spearman" in printed
    table = pd.read_csv(out / "compare.csv")
    assert list(table.columns) == list(COMPARE_COLUMNS)
    assert sorted(zip(table["tokenizer"], table["language"], strict=True)) == sorted(
        (n, lang) for n in tokenizers for lang in LANGS
    )
    assert (table["bpb_lo"] <= table["bpb"]).all() and (table["bpb"] <= table["bpb_hi"]).all()
    assert table["non_embedding_params"].nunique() == 1  # one model configuration
    assert sorted(table.groupby("tokenizer")["vocab_size"].first()) == [300, 600]
    assert (table["train_bytes"] >= 4000).all() and (table["train_flops"] > 0).all()
    # the intrinsic metrics are the fertility report's on the same held-out text
    fert = fertility_report(
        {n: str(p) for n, p in tokenizers.items()}, heldout, translit=False, numbers=False
    )
    fert = fert[fert["slice_kind"] == "language"].set_index(["tokenizer", "slice"])
    for r in table.itertuples(index=False):
        for col, src in INTRINSIC.items():
            assert getattr(r, col) == pytest.approx(fert.loc[(r.tokenizer, r.language), src])
    # the rank correlations are scipy's on the table's own columns
    corr = pd.read_csv(out / "correlations.csv").set_index("metric")
    assert list(corr.index) == list(INTRINSIC)
    for metric in INTRINSIC:
        keep = table[metric].notna()
        expected = stats.spearmanr(table.loc[keep, metric], table.loc[keep, "bpb"]).statistic
        if math.isnan(expected):
            assert math.isnan(corr.loc[metric, "rho"])
        else:
            assert corr.loc[metric, "rho"] == pytest.approx(expected, abs=1e-12)
    page = (out / "compare.html").read_text(encoding="utf-8")
    assert page.count("data:image/png;base64,") == 2
    for name in tokenizers:  # every run keeps a copy of its tokenizer: eval-lm finds it alone
        run = out / "runs" / name
        assert main(["eval-lm", str(run), "--corpus", str(heldout), "--n-boot", "200", "--quiet"]) == 0
        again = pd.read_csv(run / "eval" / "bpb.csv")
        assert list(again.columns) == list(COLUMNS)
        langs = again[again["slice_kind"] == "language"].set_index("slice")["bpb"]
        mine = table[table["tokenizer"] == name].set_index("language")["bpb"]
        assert langs.loc[list(LANGS)].tolist() == pytest.approx(mine.loc[list(LANGS)].tolist(), rel=1e-9)


def test_train_lm_eval_writes_the_bpb_report(
    flores: tuple[Path, Path], tokenizers: dict[str, Path], tmp_path: Path
) -> None:
    from tokenloom.tokens import TokenizeConfig, tokenize_corpus

    train, heldout = flores
    shards = tmp_path / "shards"
    tokenize_corpus(train, tokenizers["bl300"], shards, config=TokenizeConfig(bos="auto", eos="auto"))
    run = tmp_path / "run"
    argv = ["train-lm", str(shards), "--out", str(run), "--bytes", "3000", *MODEL, "--device", "cpu"]
    assert main([*argv, "--eval", str(heldout), "--tokenizer", str(tokenizers["bl300"]), "--quiet"]) == 0
    table = pd.read_csv(run / "eval" / "bpb.csv")
    assert sorted(table[table["slice_kind"] == "language"]["slice"]) == sorted(LANGS)
    assert (table["bpb"] > 0).all()
    # a different tokenizer than the one that wrote the shards is refused, in one line
    assert (
        main(["eval-lm", str(run), "--corpus", str(heldout), "--tokenizer", str(tokenizers["bpe600"])]) == 2
    )
