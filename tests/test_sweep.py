"""Vocabulary sweeps: the BPE cut against separate trainings, the tables, the CLI, the embedding costs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from tokenloom import cli
from tokenloom.costs import embedding_params, encoder_kv_cache_bytes
from tokenloom.encoder.config import EncoderConfig
from tokenloom.errors import ConfigError, TokenizerError
from tokenloom.fertility.sweep import SweepConfig, vocab_sweep
from tokenloom.fertility.sweep_types import parse_vocab_sizes
from tokenloom.text.bpe_cut import bpe_base_size, cut_bpe
from tokenloom.text.tokenizer import load_tokenizer
from tokenloom.text.train import train_tokenizer
from tokenloom.text.train_config import TrainerConfig


def _model_json(tok: object, folder: Path) -> dict:
    tok.save(folder)  # type: ignore[attr-defined]
    return json.loads((folder / "tokenizer.json").read_text("utf-8"))


@pytest.fixture(scope="module")
def flores_sample(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """300 lines of 12 FLORES dev languages in 8 scripts: enough merges to make the comparison meaningful."""
    out = tmp_path_factory.mktemp("flores-sample")
    names = ["eng_Latn", "deu_Latn", "fra_Latn", "rus_Cyrl", "ell_Grek", "arb_Arab", "hin_Deva", "tha_Thai"]
    names += ["spa_Latn", "tur_Latn", "ukr_Cyrl", "heb_Hebr"]
    dev = shared_dir / "corpora" / "flores200" / "dev"
    for name in names:
        path = dev / f"{name}.txt"
        if path.is_file():
            (out / path.name).write_text(
                "\n".join(path.read_text("utf-8").splitlines()[:300]) + "\n", "utf-8"
            )
    assert len(list(out.glob("*.txt"))) >= 8
    return out


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["bpe", "bytelevel-bpe"])
def test_cut_equals_separate_training(flores_sample: Path, tmp_path: Path, algorithm: str) -> None:
    big = train_tokenizer(flores_sample, algorithm=algorithm, vocab_size=5000, engine="hf", quiet=True)  # type: ignore[arg-type]
    source = _model_json(big, tmp_path / "big")
    base = bpe_base_size(source)
    texts = [
        line for f in sorted(flores_sample.glob("*.txt")) for line in f.read_text("utf-8").splitlines()[:40]
    ]
    for size in (base + 200, 4000):
        alone = train_tokenizer(flores_sample, algorithm=algorithm, vocab_size=size, engine="hf", quiet=True)  # type: ignore[arg-type]
        expected = _model_json(alone, tmp_path / f"alone-{size}")
        cut = cut_bpe(source, size)
        assert cut["model"]["vocab"] == expected["model"]["vocab"]
        assert cut["model"]["merges"] == expected["model"]["merges"]
        assert {k: v for k, v in cut.items() if k != "model"} == {
            k: v for k, v in expected.items() if k != "model"
        }
        folder = tmp_path / f"cut-{size}"
        folder.mkdir()
        (folder / "tokenizer.json").write_text(json.dumps(cut), "utf-8")
        loaded = load_tokenizer(folder / "tokenizer.json")
        assert [loaded.encode(t) for t in texts] == [alone.encode(t) for t in texts]


def test_cut_refuses_what_it_cannot_cut(default_corpus: Path, tmp_path: Path) -> None:
    tok = train_tokenizer(default_corpus, algorithm="bpe", vocab_size=1100, engine="hf", quiet=True)
    source = _model_json(tok, tmp_path / "t")
    base = bpe_base_size(source)
    assert base == len(source["model"]["vocab"]) - len(source["model"]["merges"])
    cut = cut_bpe(source, base)
    assert cut["model"]["merges"] == [] and len(cut["model"]["vocab"]) == base
    with pytest.raises(TokenizerError, match=f"between {base}"):
        cut_bpe(source, base - 1)
    with pytest.raises(TokenizerError, match="between"):
        cut_bpe(source, 1101)
    shuffled = json.loads(json.dumps(source))
    vocab = shuffled["model"]["vocab"]
    a, b = shuffled["model"]["merges"][0], shuffled["model"]["merges"][1]
    ia, ib = vocab["".join(a)], vocab["".join(b)]
    vocab["".join(a)], vocab["".join(b)] = ib, ia  # two merges' ids swapped: not in merge order
    with pytest.raises(TokenizerError, match="not in merge order"):
        cut_bpe(shuffled, base + 5)
    unigram = train_tokenizer(default_corpus, algorithm="unigram", vocab_size=900, engine="hf", quiet=True)
    with pytest.raises(TokenizerError, match="only BPE"):
        cut_bpe(_model_json(unigram, tmp_path / "u"), 500)


def test_embedding_params_known_answers() -> None:
    assert embedding_params(32_000, 4096) == 131_072_000
    assert embedding_params(32_000, 4096, tied=False) == 262_144_000
    with pytest.raises(ConfigError, match="vocab_size"):
        embedding_params(0, 768)


def test_sweep_tables(default_corpus: Path) -> None:
    config = SweepConfig(algorithms=("bpe", "unigram"), vocab_sizes=(1000, 1200), context=1024)
    result = vocab_sweep(default_corpus, default_corpus, config)
    table = result.table
    assert list(table["tokenizer"]) == ["bpe-1k", "bpe-1200", "unigram-1k", "unigram-1200"]
    assert list(table["made"]) == ["cut from bpe-1200", "trained", "trained", "trained"]
    assert list(table["engine"]) == ["hf", "hf", "sentencepiece", "sentencepiece"]
    assert list(table["embedding_params"]) == [v * 768 for v in (1000, 1200, 1000, 1200)]  # vit-b16: d = 768
    assert list(table["embedding_bytes"]) == [2 * v * 768 for v in (1000, 1200, 1000, 1200)]  # bf16
    everything = result.report[result.report["slice_kind"] == "all"].set_index("tokenizer")
    assert list(table["fertility"]) == [everything.at[n, "fertility"] for n in table["tokenizer"]]
    assert table.loc[0, "fertility"] > table.loc[1, "fertility"]  # a bigger vocabulary, fewer tokens per word
    for column in ("strr", "split_char_rate", "distinct_ids", "vocab_share"):
        assert list(table[column]) == [everything.at[n, column] for n in table["tokenizer"]]
    assert list(table["invalid_languages"]) == [0, 0, 0, 0]  # byte fallback: no unknown characters
    langs = result.languages
    pivot = langs[(langs["tokenizer"] == "bpe-1k") & (langs["lang"] == "eng_Latn")].iloc[0]
    assert pivot.seq_len == 1024 and pivot.premium == 1.0  # the reference: the pivot, first tokenizer
    model = EncoderConfig.preset("vit-b16")
    report = result.report[result.report["slice_kind"] == "language"].set_index(["tokenizer", "slice"])
    for r in langs.itertuples(index=False):
        # the report's premium against the pivot under the same tokenizer, times that tokenizer's pivot
        # tokens over the first tokenizer's: the premium against the pivot under the first tokenizer
        own = report.loc[(r.tokenizer, r.lang), "premium_mean"]
        scale = report.loc[(r.tokenizer, "eng_Latn"), "tokens"] / pivot.tokens
        assert r.premium == pytest.approx(own * scale, rel=1e-12)
        assert r.seq_len == max(1, round(1024 * r.premium))
        assert r.kv_cache_bytes == encoder_kv_cache_bytes(model, 1, int(r.seq_len), "bf16")  # nullable Int64
        if r.tokenizer == "bpe-1k":
            assert r.premium == own  # the first tokenizer's rows: the report's premium_mean itself
    bigger = langs[(langs["tokenizer"] == "bpe-1200") & (langs["lang"] == "eng_Latn")].iloc[0]
    assert bigger.seq_len < 1024  # a bigger vocabulary needs fewer tokens for the pivot's content
    assert len(langs) == 4 * 12 and set(langs["tokenizer"]) == set(table["tokenizer"])


def test_sweep_cuts_bytelevel_bpe_and_its_cuts_export_to_tiktoken(
    default_corpus: Path, tmp_path: Path
) -> None:
    config = SweepConfig(algorithms=("bytelevel-bpe",), vocab_sizes=(600, 700), context=1024)
    result = vocab_sweep(default_corpus, default_corpus, config)
    table = result.table
    assert list(table["tokenizer"]) == ["bytelevel-bpe-600", "bytelevel-bpe-700"]
    assert list(table["made"]) == ["cut from bytelevel-bpe-700", "trained"]
    engine = TrainerConfig(
        algorithm="bytelevel-bpe"
    ).resolved_engine  # auto: the trainer of the o200k pattern
    assert list(table["engine"]) == [engine] * 2 and list(table["algorithm"]) == ["bytelevel-bpe"] * 2
    cut, big = result.tokenizers["bytelevel-bpe-600"], result.tokenizers["bytelevel-bpe-700"]
    assert cut.vocab_size == 600 and cut.record["config"]["algorithm"] == "bytelevel-bpe"
    alone = train_tokenizer(default_corpus, algorithm="bytelevel-bpe", vocab_size=600, quiet=True)
    text = "The weaver sat by the window and watched the rain, 2016."
    assert cut.encode(text) == alone.encode(text) != big.encode(text)
    cut.save(tmp_path / "cut", formats=("tokenizer.json", "tiktoken"))  # verified against tiktoken
    assert (tmp_path / "cut" / "tokenizer.tiktoken").read_text("ascii").count("\n") == 600 - 4
    with pytest.raises(ConfigError, match="unknown algorithm 'bytelevel'"):
        SweepConfig(algorithms=("bytelevel",))


@pytest.mark.slow
def test_sweep_cli(default_corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "sweep"
    argv = ["sweep", str(default_corpus), "--algorithms", "bpe", "--vocab-sizes", "1k,1100,1200"]
    argv += ["--eval", str(default_corpus), "--out", str(out), "--quiet"]
    assert cli.main(argv) == 0
    printed = capsys.readouterr().out
    assert "bpe-1100" in printed and "cut from bpe-1200" in printed and "most expensive languages" in printed
    names = {p.name for p in out.iterdir()}
    assert {"sweep.csv", "languages.csv", "sweep.html", "sweep_fertility.png", "sweep_premium.png"} <= names
    assert {p.name for p in (out / "tokenizers").iterdir()} == {"bpe-1k", "bpe-1100", "bpe-1200"}
    assert (out / "report" / "report.html").is_file()
    table = pd.read_csv(out / "sweep.csv")
    assert list(table["vocab_size"]) == [1000, 1100, 1200]
    reloaded = load_tokenizer(out / "tokenizers" / "bpe-1100")
    assert reloaded.vocab_size == 1100
    assert cli.main(argv) == 2 and "already exists" in capsys.readouterr().err


def test_sweep_sets_bad_input_aside_by_default(
    default_corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One bad line stops neither the trainings nor the report: both count it on their summary lines;
    ``--errors strict`` stops at it."""
    corpus = tmp_path / "corpus"
    shutil.copytree(default_corpus, corpus)
    lines = (corpus / "fra_Latn.txt").read_bytes().splitlines(keepends=True)
    lines[7] = b"caf\xe9 latin-1\n"  # line 8, the line count (the alignment) unchanged
    (corpus / "fra_Latn.txt").write_bytes(b"".join(lines))
    offset = len(b"".join(lines[:7])) + 3  # the file's byte offset of \xe9
    argv = ["sweep", str(corpus), "--algorithms", "bpe", "--vocab-sizes", "1k", "--eval", str(corpus)]
    assert cli.main([*argv, "--out", str(tmp_path / "s"), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "note: training corpus bad input: 1 document and 0 files set aside (--errors strict" in printed
    assert "bad input: 1 document and 0 files set aside; rejects.csv; first: " in printed
    assert f"fra_Latn.txt: line 8: byte offset {offset}: invalid UTF-8" in printed
    assert (tmp_path / "s" / "report" / "rejects.csv").read_text(encoding="utf-8").count("fra_Latn.txt") == 1
    assert cli.main([*argv, "--errors", "strict", "--out", str(tmp_path / "strict"), "--quiet"]) == 2
    assert f"fra_Latn.txt: line 8 (byte offset {offset}): invalid UTF-8" in capsys.readouterr().err
    assert SweepConfig().errors == "skip"
    with pytest.raises(ValueError, match="errors must be 'strict', 'replace' or 'skip', got 'ignore'"):
        SweepConfig(errors="ignore")  # type: ignore[arg-type]


@pytest.mark.slow
def test_sweep_cli_three_algorithms(
    default_corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "sweep"
    argv = [
        "sweep",
        str(default_corpus),
        "--algorithms",
        "bpe,unigram,bytelevel-bpe",
        "--vocab-sizes",
        "1k,1200",
        "--pretokenizer",
        "cl100k",
    ]
    assert cli.main([*argv, "--eval", str(default_corpus), "--out", str(out), "--quiet"]) == 0
    assert "cut from bytelevel-bpe-1200" in capsys.readouterr().out
    table = pd.read_csv(out / "sweep.csv")
    assert list(table["algorithm"]) == ["bpe", "bpe", "unigram", "unigram", "bytelevel-bpe", "bytelevel-bpe"]
    assert list(table["made"])[4:] == ["cut from bytelevel-bpe-1200", "trained"]
    cut = load_tokenizer(out / "tokenizers" / "bytelevel-bpe-1k")
    assert cut.vocab_size == 1000 and cut.record["resolved"]["pretokenizer"]["name"] == "cl100k"
    assert (out / "tokenizers" / "bytelevel-bpe-1k" / "tokenizer.tiktoken").is_file()  # saved, verified
    assert not (out / "tokenizers" / "bpe-1k" / "tokenizer.tiktoken").exists()
    with pytest.raises(ConfigError, match="bytelevel-bpe and parity-bpe only"):
        SweepConfig(algorithms=("bpe",), pretokenizer="o200k")


def test_vocab_size_flag(capsys: pytest.CaptureFixture[str]) -> None:
    assert parse_vocab_sizes("8k, 16K,32000") == (8000, 16000, 32000)
    for bad in ("8x", "0", "", "-1k"):
        with pytest.raises(ConfigError, match="positive number"):
            parse_vocab_sizes(bad)
    with pytest.raises(SystemExit):  # the flag: argparse's one-line error, with the same reason
        cli.main(["sweep", "c/", "--vocab-sizes", "8k,8x", "--eval", "c/", "--out", "o/"])
    assert "vocabulary size '8x' is not a positive number like 8k or 32000" in capsys.readouterr().err


@pytest.mark.slow
def test_sweep_writes_the_rest_when_one_tokenizer_cannot_be_saved(
    default_corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tokenloom.fertility.sweep import write_sweep

    result = vocab_sweep(
        default_corpus, default_corpus, SweepConfig(algorithms=("bpe",), vocab_sizes=(1000, 1200))
    )
    bad = result.tokenizers["bpe-1k"]

    def refuse(*args: object, **kwargs: object) -> None:
        raise TokenizerError("export differs from the engine")

    monkeypatch.setattr(bad, "save", refuse)
    write_sweep(result, tmp_path / "out")
    table = pd.read_csv(tmp_path / "out" / "sweep.csv")
    assert list(table["saved"]) == ["no: export differs from the engine", "yes"]
    assert {p.name for p in (tmp_path / "out" / "tokenizers").iterdir()} == {"bpe-1200"}
    assert (tmp_path / "out" / "report" / "report.html").is_file()


@pytest.mark.slow
def test_sweep_saves_a_tokenizer_without_the_export_that_failed_its_check(
    default_corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tokenloom.text.backends.sentencepiece import SentencePieceBackend

    def differs(self: SentencePieceBackend, texts: object) -> int:
        raise TokenizerError(
            "exported tokenizer.json differs from sentencepiece on text #4 'x': first difference"
        )

    monkeypatch.setattr(SentencePieceBackend, "verify_export", differs)
    argv = ["sweep", str(default_corpus), "--algorithms", "bpe,unigram", "--vocab-sizes", "1000"]
    argv += ["--eval", str(default_corpus), "--quiet"]
    assert cli.main([*argv, "--out", str(tmp_path / "s")]) == 0
    printed = capsys.readouterr().out
    assert "note: unigram-1k saved without tokenizer.json: exported tokenizer.json differs" in printed
    table = pd.read_csv(tmp_path / "s" / "sweep.csv")
    assert list(table["saved"]) == [
        "yes",
        "without tokenizer.json: exported tokenizer.json differs from sentencepiece on text #4 'x': first difference",
    ]
    folder = tmp_path / "s" / "tokenizers" / "unigram-1k"
    assert {p.name for p in folder.iterdir()} == {"tokenizer.model", "tokenloom.json"}
    assert load_tokenizer(folder).encode("The weaver sat by the window.") == train_tokenizer(
        default_corpus, algorithm="unigram", vocab_size=1000, quiet=True
    ).encode("The weaver sat by the window.")
    assert cli.main([*argv, "--strict-export", "--out", str(tmp_path / "strict")]) == 0
    assert "note: unigram-1k was evaluated but its files were not written" in capsys.readouterr().out
    table = pd.read_csv(tmp_path / "strict" / "sweep.csv")
    assert table["saved"][0] == "yes" and table["saved"][1].endswith("nothing was saved (strict=True)")
    assert {p.name for p in (tmp_path / "strict" / "tokenizers").iterdir()} == {"bpe-1k"}


@pytest.mark.slow
def test_sizes_the_corpus_cannot_fill_are_rows_not_trained(default_corpus: Path, tmp_path: Path) -> None:
    from tokenloom.errors import VocabSizeError
    from tokenloom.fertility.sweep import write_sweep
    from tokenloom.fertility.sweep_writers import format_sweep

    config = SweepConfig(algorithms=("bpe", "unigram"), vocab_sizes=(1000, 5000, 6000), context=1024)
    result = vocab_sweep(default_corpus, default_corpus, config)
    table = result.table
    names = ["bpe-1k", "bpe-5k", "bpe-6k", "unigram-1k", "unigram-5k", "unigram-6k"]
    assert list(table["tokenizer"]) == names and list(result.tokenizers) == ["bpe-1k", "unigram-1k"]
    reasons = {}
    for algorithm, engine in (("bpe", "hf"), ("unigram", "sentencepiece")):  # the oracle: training alone
        for size in (5000, 6000):
            with pytest.raises(VocabSizeError) as exc:
                train_tokenizer(default_corpus, algorithm=algorithm, engine=engine, vocab_size=size)  # type: ignore[arg-type]
            reasons[f"{algorithm}-{size // 1000}k"] = f"not trained: {exc.value}"
    made = dict(zip(table["tokenizer"], table["made"], strict=True))
    assert made == {"bpe-1k": "cut from the bpe-6k training", "unigram-1k": "trained", **reasons}
    missing = table[table["made"].str.startswith("not trained")]
    assert list(missing["vocab_size"]) == [5000, 6000, 5000, 6000] and missing["fertility"].isna().all()
    assert set(result.languages["tokenizer"]) == {"bpe-1k", "unigram-1k"}
    alone = train_tokenizer(default_corpus, algorithm="bpe", engine="hf", vocab_size=1000, quiet=True)
    text = "The weaver sat by the window and watched the rain."
    assert result.tokenizers["bpe-1k"].encode(text) == alone.encode(text)  # still cut from what was trained
    printed = format_sweep(table)
    assert printed.count("not trained") == 4 and "too large" not in printed  # the reason is in the CSV
    write_sweep(result, tmp_path / "out")
    csv = pd.read_csv(tmp_path / "out" / "sweep.csv")
    assert list(csv["made"]) == list(table["made"]) and list(csv["saved"]).count("no: not trained") == 4
    assert {p.name for p in (tmp_path / "out" / "tokenizers").iterdir()} == {"bpe-1k", "unigram-1k"}


@pytest.mark.slow
def test_allow_smaller_vocab_keeps_each_smaller_tokenizer_once(
    default_corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "sweep"
    argv = ["sweep", str(default_corpus), "--algorithms", "bpe,unigram", "--vocab-sizes", "1k,5k,6k"]
    argv += ["--eval", str(default_corpus), "--out", str(out), "--quiet"]
    assert cli.main([*argv[:-3], "--out", str(tmp_path / "plain"), "--quiet"]) == 0
    assert "note: bpe-5k not trained: vocab_size=5000 is too large" in capsys.readouterr().out
    assert cli.main([*argv, "--allow-smaller-vocab"]) == 0
    printed = capsys.readouterr().out
    table = pd.read_csv(out / "sweep.csv")
    bpe = train_tokenizer(
        default_corpus, algorithm="bpe", engine="hf", vocab_size=6000, allow_smaller_vocab=True
    )
    uni = train_tokenizer(default_corpus, algorithm="unigram", vocab_size=6000, allow_smaller_vocab=True)
    b, u = bpe.vocab_size, uni.vocab_size
    assert list(table["tokenizer"]) == [
        "bpe-1k",
        f"bpe-{b}",
        "bpe-6k",
        "unigram-1k",
        f"unigram-{u}",
        "unigram-6k",
    ]
    assert list(table["made"]) == [
        f"cut from bpe-{b}", f"trained (asked 5000; the corpus gave {b} pieces)",
        f"not trained: the corpus gives only {b} pieces, kept as bpe-{b}",
        "trained", f"trained (asked 5000; the corpus gave {u} pieces)",
        f"not trained: the corpus gives only {u} pieces, kept as unigram-{u}",
    ]  # fmt: skip
    assert list(table["vocab_size"]) == [1000, b, 6000, 1000, u, 6000]
    assert f"note: bpe-6k not trained: the corpus gives only {b} pieces" in printed
    text = "The weaver sat by the window and watched the rain."
    for name, alone in ((f"bpe-{b}", bpe), (f"unigram-{u}", uni)):
        assert load_tokenizer(out / "tokenizers" / name).encode(text) == alone.encode(text)
    assert {p.name for p in (out / "tokenizers").iterdir()} == {
        "bpe-1k",
        f"bpe-{b}",
        "unigram-1k",
        f"unigram-{u}",
    }
    with pytest.raises(ConfigError, match=r"SweepConfig.allow_smaller_vocab='yes' is of type str"):
        SweepConfig(allow_smaller_vocab="yes")  # type: ignore[arg-type]
    with pytest.raises(
        ConfigError, match=r"no tokenizer of the sweep was trained \(bpe-6k: not trained: vocab"
    ):
        vocab_sweep(default_corpus, default_corpus, SweepConfig(algorithms=("bpe",), vocab_sizes=(6000,)))


@pytest.mark.slow
def test_sweep_trains_parity_bpe_per_size(flores_sample: Path, shared_dir: Path, tmp_path: Path) -> None:
    dev = tmp_path / "dev"
    dev.mkdir()
    for path in flores_sample.glob("*.txt"):
        lines = (shared_dir / "corpora" / "flores200" / "dev" / path.name).read_text("utf-8").splitlines()
        (dev / path.name).write_text("\n".join(lines[697:]) + "\n", "utf-8")
    config = SweepConfig(algorithms=("parity-bpe",), vocab_sizes=(600, 700), context=1024, dev=str(dev))
    result = vocab_sweep(flores_sample, flores_sample, config)
    assert list(result.table["tokenizer"]) == ["parity-bpe-600", "parity-bpe-700"]
    assert list(result.table["made"]) == ["trained", "trained"]  # no cut is claimed equal to a training
    alone = train_tokenizer(flores_sample, algorithm="parity-bpe", dev=str(dev), vocab_size=600, quiet=True)
    text = "The weaver sat by the window and watched the rain, 2016."
    assert result.tokenizers["parity-bpe-600"].encode(text) == alone.encode(text)
    with pytest.raises(ConfigError, match="parity-bpe is swept with dev="):
        SweepConfig(algorithms=("parity-bpe",))
    with pytest.raises(ConfigError, match="give both or neither"):
        SweepConfig(algorithms=("bpe",), dev=str(dev))
