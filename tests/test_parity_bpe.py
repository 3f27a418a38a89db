"""Parity-aware byte-level BPE: the raw ``ParityBpeTrainer`` is the oracle of its merges; the tokenizer is
lossless, deterministic, recorded and exported to tiktoken id for id like ``bytelevel-bpe``; on a parallel
held-out set its premiums are closer to 1 than plain byte-level BPE's at the same size; bad dev sets,
ratios and corpora are refused with the fix."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from test_bytelevel_bpe import _TEXTS, EVAL_LANGS, SPECIALS
from test_tokenizer import EDGE_CASES
from tokenloom import cli
from tokenloom.errors import ConfigError, CorpusError
from tokenloom.fertility.summary import gini
from tokenloom.text import tiktoken_encoding_kwargs
from tokenloom.text.bytelevel import PATTERNS
from tokenloom.text.tiktoken_export import TIKTOKEN_FILE
from tokenloom.text.tokenizer import Tokenizer
from tokenloom.text.train import TrainerConfig, train_tokenizer

tiktoken = pytest.importorskip("tiktoken")

LANGS = ("eng_Latn", "hin_Deva", "tha_Thai", "rus_Cyrl", "amh_Ethi")
VOCAB = 1200


def _write(folder: Path, lines: dict[str, list[str]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for lang, texts in lines.items():
        (folder / f"{lang}.txt").write_text("\n".join(texts) + "\n", "utf-8")
    return folder


@pytest.fixture(scope="module")
def flores(
    shared_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path, dict[str, list[str]]]:
    """Training: the first 300 dev lines of five languages in five scripts; dev set: the last 300 lines;
    held out: 200 devtest lines of each (parallel)."""
    root = tmp_path_factory.mktemp("parity")
    full = {
        lang: (shared_dir / "corpora" / "flores200" / "dev" / f"{lang}.txt").read_text("utf-8").splitlines()
        for lang in LANGS
    }
    test = {
        lang: (shared_dir / "corpora" / "flores200" / "devtest" / f"{lang}.txt")
        .read_text("utf-8")
        .splitlines()[:200]
        for lang in LANGS
    }
    train = _write(root / "train", {lang: lines[:300] for lang, lines in full.items()})
    dev = _write(root / "dev", {lang: lines[697:] for lang, lines in full.items()})
    return train, dev, test


@pytest.fixture(scope="module")
def parity(flores: tuple[Path, Path, dict[str, list[str]]]) -> Tokenizer:
    train, dev, _ = flores
    return train_tokenizer(
        train, algorithm="parity-bpe", dev=str(dev), vocab_size=VOCAB, heldout=0, quiet=True
    )


@pytest.fixture(scope="module")
def parity_encoding(parity: Tokenizer, tmp_path_factory: pytest.TempPathFactory) -> Any:
    folder = parity.save(tmp_path_factory.mktemp("pt") / "tok", formats=("tokenizer.json", "tiktoken"))
    return tiktoken.Encoding(**tiktoken_encoding_kwargs(folder))


def test_merges_are_the_raw_engines(
    parity: Tokenizer, flores: tuple[Path, Path, dict[str, list[str]]]
) -> None:
    from tokenizers import Regex, decoders, models, pre_tokenizers, trainers
    from tokenizers import Tokenizer as HFTokenizer

    train, dev, _ = flores
    raw = HFTokenizer(models.BPE(ignore_merges=True))
    raw.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(PATTERNS["o200k"]), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    raw.decoder = decoders.ByteLevel()
    langs = sorted(LANGS)
    trainer = trainers.ParityBpeTrainer(
        num_merges=VOCAB - 4 - 256, special_tokens=list(SPECIALS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )  # fmt: skip
    read = {
        lang: [ln for ln in (train / f"{lang}.txt").read_text("utf-8").split("\n") if ln] for lang in langs
    }
    held = {lang: (dev / f"{lang}.txt").read_text("utf-8").splitlines() for lang in langs}
    trainer.train_from_iterator(
        raw,
        train_iterators=[iter(read[lang]) for lang in langs],
        dev_iterators=[iter(held[lang]) for lang in langs],
    )
    ours = json.loads(parity.hf_export().to_str())["model"]
    assert ours["merges"] == json.loads(raw.to_str())["model"]["merges"]
    hf = parity.hf_export()
    assert [hf.id_to_token(i) for i in range(4)] == list(SPECIALS)
    assert {hf.id_to_token(i) for i in range(4, 260)} == set(pre_tokenizers.ByteLevel.alphabet())
    assert all(ours["vocab"]["".join(m)] == 260 + i for i, m in enumerate(ours["merges"]))
    assert parity.vocab_size == VOCAB and parity.unk_id is None


def test_record_lists_languages_bytes_and_dev(parity: Tokenizer, flores: tuple[Path, Path, Any]) -> None:
    train, _, _ = flores
    corpus = parity.record["corpus"]
    assert sorted(corpus["languages"]) == sorted(LANGS)
    for lang in LANGS:
        size = len((train / f"{lang}.txt").read_bytes()) - 300  # less the newlines
        assert corpus["languages"][lang] == {"bytes_available": size, "bytes_used": size}
    assert corpus["train_bytes"] == sum(v["bytes_used"] for v in corpus["languages"].values())
    assert corpus["dev"]["languages"] == sorted(LANGS) and corpus["dev"]["lines_per_language"] == 300
    assert corpus["dev"]["fingerprint"].startswith("sha256:")
    assert parity.record["config"]["variant"] == "base" and parity.record["config"]["global_merges"] == 0
    assert parity.record["resolved"]["pretokenizer"]["name"] == "o200k"


@pytest.mark.slow
def test_same_corpus_and_config_give_identical_files(flores: tuple[Path, Path, Any], tmp_path: Path) -> None:
    train, dev, _ = flores
    files = []
    for run in range(2):
        tok = train_tokenizer(train, algorithm="parity-bpe", dev=str(dev), vocab_size=700, variant="window")
        folder = tok.save(tmp_path / str(run), formats=("tokenizer.json", "tiktoken"))
        files.append([(folder / n).read_bytes() for n in ("tokenizer.json", TIKTOKEN_FILE)])
    assert files[0] == files[1]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_TEXTS)
def test_round_trip_and_tiktoken_agree_on_any_text(
    parity: Tokenizer, parity_encoding: Any, text: str
) -> None:
    ids = parity.encode(text)
    assert parity.decode(ids) == text and parity.is_lossless(text)
    assert parity_encoding.encode(text, allowed_special="all") == ids
    assert parity_encoding.decode(ids) == text


@pytest.mark.parametrize("text", EDGE_CASES)
def test_edge_cases_round_trip(parity: Tokenizer, parity_encoding: Any, text: str) -> None:
    ids = parity.encode(text)
    assert parity.decode(ids) == text and parity_encoding.encode(text, allowed_special="all") == ids


def test_tiktoken_export_is_id_for_id_on_flores(
    parity: Tokenizer, parity_encoding: Any, shared_dir: Path
) -> None:
    folder = shared_dir / "corpora" / "flores200" / "devtest"
    texts = [
        ln for lang in EVAL_LANGS for ln in (folder / f"{lang}.txt").read_text("utf-8").splitlines()[:40]
    ]
    ours = parity.encode_batch(texts)
    assert (
        parity_encoding.encode_ordinary_batch(texts) == ours and parity_encoding.decode_batch(ours) == texts
    )


def _premiums(tok: Tokenizer, test: dict[str, list[str]]) -> dict[str, float]:
    counts = {lang: sum(len(ids) for ids in tok.encode_batch(lines)) for lang, lines in test.items()}
    return {lang: n / counts["eng_Latn"] for lang, n in counts.items()}


def test_premiums_are_closer_to_one_than_bytelevel_bpe(
    parity: Tokenizer, flores: tuple[Path, Path, dict[str, list[str]]]
) -> None:
    train, _, test = flores
    plain = train_tokenizer(train, algorithm="bytelevel-bpe", vocab_size=VOCAB, heldout=0, quiet=True)
    ours, theirs = _premiums(parity, test), _premiums(plain, test)
    worst = max(abs(p - 1) for p in ours.values())
    assert worst < max(abs(p - 1) for p in theirs.values())
    assert gini(list(ours.values())) < gini(list(theirs.values()))


def test_ratios_balance_without_a_dev_set(flores: tuple[Path, Path, Any]) -> None:
    train, dev, test = flores
    ratios = dict.fromkeys(LANGS, 1.0)
    even = train_tokenizer(train, algorithm="parity-bpe", ratios=ratios, vocab_size=700, heldout=0)  # type: ignore[arg-type]
    assert even.record["config"]["ratios"] == list(sorted(f"{k}=1.0" for k in LANGS))
    assert "dev" not in even.record["corpus"] and even.vocab_size == 700
    hindi = train_tokenizer(train, algorithm="parity-bpe", ratios=dict(ratios, hin_Deva=4.0), vocab_size=700)  # type: ignore[arg-type]
    assert _premiums(hindi, test)["hin_Deva"] < _premiums(even, test)["hin_Deva"]  # more merges for Hindi
    with pytest.raises(ConfigError, match="lack amh_Ethi of the training languages"):
        train_tokenizer(
            train, algorithm="parity-bpe", ratios={k: v for k, v in ratios.items() if k != "amh_Ethi"}
        )  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"needs dev= .* or ratios="):
        train_tokenizer(train, algorithm="parity-bpe", vocab_size=700)
    with pytest.raises(ConfigError, match="not both"):
        TrainerConfig(algorithm="parity-bpe", dev=str(dev), ratios=("eng_Latn=1",))
    with pytest.raises(ConfigError, match="ratios entry 'hin_Deva=-1' is not LANG=R"):
        TrainerConfig(algorithm="parity-bpe", ratios=("hin_Deva=-1",))


def test_bad_dev_sets_are_refused_naming_the_fix(flores: tuple[Path, Path, Any], tmp_path: Path) -> None:
    train, dev, _ = flores
    lines = {lang: (dev / f"{lang}.txt").read_text("utf-8").splitlines() for lang in LANGS}

    def fails(folder: Path, pattern: str) -> None:
        with pytest.raises((ConfigError, CorpusError), match=pattern):
            train_tokenizer(train, algorithm="parity-bpe", dev=str(folder), vocab_size=700)

    short = dict(lines, hin_Deva=lines["hin_Deva"][:-1])
    fails(
        _write(tmp_path / "short", short), r"is not parallel: \w+ has 300 lines, hin_Deva 299; line i must be"
    )
    fewer = {k: v for k, v in lines.items() if k != "tha_Thai"}
    fails(_write(tmp_path / "fewer", fewer), r"lacks tha_Thai of the training languages; give the dev set")
    more = dict(lines, fra_Latn=lines["eng_Latn"])
    fails(_write(tmp_path / "more", more), r"has fra_Latn, not in training")
    unlabelled = _write(tmp_path / "plain", {"sentences": lines["eng_Latn"]})
    fails(unlabelled, r"sentences.txt has lines with no language; name files <lang>_<Script>.txt")
    fails(  # the dev set is named as such, not as "corpus path", with the fix
        tmp_path / "no-dev",
        rf"^dev folder '{tmp_path / 'no-dev'}' does not exist \(dev=, --dev\); give the parallel development "
        r"set — a folder of <lang>_<Script>.txt files",
    )
    with pytest.raises(ConfigError, match="apply to algorithm='parity-bpe' only"):
        TrainerConfig(dev=str(dev))


def test_bad_training_corpora_are_refused(flores: tuple[Path, Path, Any], tmp_path: Path) -> None:
    _, dev, _ = flores
    plain = _write(tmp_path / "plain", {"notes": ["some text", "more text"]})
    with pytest.raises(CorpusError, match=r"notes\.txt has lines with no language"):
        train_tokenizer(plain, algorithm="parity-bpe", dev=str(dev), vocab_size=700)
    empty = _write(tmp_path / "empty", {"eng_Latn": ["text here"] * 5, "fra_Latn": [""]})
    with pytest.raises(CorpusError, match=r"language fra_Latn \(fra_Latn.txt\) has no text to train on"):
        train_tokenizer(empty, algorithm="parity-bpe", ratios=("eng_Latn=1", "fra_Latn=1"), heldout=0)


def test_cli_trains_parity_with_tiktoken_file(
    flores: tuple[Path, Path, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    train, dev, _ = flores
    out = tmp_path / "tok"
    argv = ["train", str(train), "--algorithm", "parity-bpe", "--dev", str(dev), "--variant", "window"]
    assert (
        cli.main([*argv, "--vocab-size", "600", "--global-merges", "50", "--out", str(out), "--quiet"]) == 0
    )
    assert "tokenizer.tiktoken identical" in capsys.readouterr().out and (out / TIKTOKEN_FILE).is_file()
    record = json.loads((out / "tokenloom.json").read_text("utf-8"))
    assert record["config"]["algorithm"] == "parity-bpe" and record["config"]["global_merges"] == 50
