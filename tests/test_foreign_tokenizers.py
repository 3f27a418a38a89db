"""Tokenizers people already use, in the fertility report: one of each kind on real FLORES text, token counts
equal to each engine's own count, metrics by family, missing metrics reported as missing."""

from __future__ import annotations

import base64
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from test_bytelevel_bpe import _utf8
from tokenloom import fertility_report
from tokenloom.errors import ConfigError, TokenizerError
from tokenloom.fertility.report import ReportConfig
from tokenloom.text.adapt import as_tokenizer, load_tokenizer_spec
from tokenloom.text.backends.base import byte_level_bytes
from tokenloom.text.bytelevel import PATTERNS

LANGS = ("eng_Latn", "hin_Deva", "zho_Hans", "arb_Arab", "rus_Cyrl", "tam_Taml", "amh_Ethi", "kor_Hang")
EOT = "<|endoftext|>"


@pytest.fixture(scope="module")
def kinds(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A corpus of 8 FLORES devtest languages and one tokenizer of each kind, all trained here on FLORES dev."""
    import sentencepiece as spm
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import BertGenerationTokenizer, PreTrainedTokenizerFast

    flores = shared_dir / "corpora" / "flores200"
    root = tmp_path_factory.mktemp("foreign")
    corpus = root / "corpus"
    corpus.mkdir()
    train: list[str] = []
    for lang in LANGS:
        lines = (flores / "devtest" / f"{lang}.txt").read_text("utf-8").splitlines()[:40]
        (corpus / f"{lang}.txt").write_text("\n".join(lines) + "\n", "utf-8")
        train += (flores / "dev" / f"{lang}.txt").read_text("utf-8").splitlines()

    hf = Tokenizer(models.BPE(ignore_merges=True))  # byte-level BPE with cl100k's pre-tokenizer
    split = pre_tokenizers.Split(Regex(PATTERNS["cl100k"]), behavior="isolated")
    hf.pre_tokenizer = pre_tokenizers.Sequence(
        [split, pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]
    )
    hf.decoder = decoders.ByteLevel()
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    trainer = trainers.BpeTrainer(
        vocab_size=3000, special_tokens=[EOT], initial_alphabet=alphabet, show_progress=False
    )
    hf.train_from_iterator(train, trainer)

    ranks = root / "flores.tiktoken"  # tiktoken's ranks format: base64(bytes) rank
    vocab = sorted(hf.get_vocab(with_added_tokens=False).items(), key=lambda kv: kv[1])
    lines = [f"{base64.b64encode(byte_level_bytes(p) or b'').decode()} {i}" for p, i in vocab if p != EOT]
    ranks.write_text("\n".join(lines) + "\n", "ascii")
    enc = tiktoken.Encoding(
        "flores", pat_str=PATTERNS["cl100k"], mergeable_ranks=load_tiktoken_bpe(str(ranks)), special_tokens={}
    )

    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(train), model_prefix=str(root / "sp"), vocab_size=3000, model_type="unigram",
        byte_fallback=True, character_coverage=0.995, minloglevel=2,
    )  # fmt: skip
    sp = spm.SentencePieceProcessor(model_file=str(root / "sp.model"))

    with_bos = Tokenizer.from_str(hf.to_str())  # its post-processor adds a BOS that evaluation must not add
    with_bos.post_processor = processors.TemplateProcessing(single=f"{EOT} $A", special_tokens=[(EOT, 0)])
    PreTrainedTokenizerFast(tokenizer_object=with_bos, bos_token=EOT).save_pretrained(root / "fast")
    BertGenerationTokenizer(vocab_file=str(root / "sp.model")).save_pretrained(root / "slow")
    return {
        "corpus": corpus, "root": root, "hf": hf, "enc": enc, "ranks": ranks, "sp": sp,
        "texts": {lang: (corpus / f"{lang}.txt").read_text("utf-8").splitlines() for lang in LANGS},
    }  # fmt: skip


def _oracles(k: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """Name -> (what the report is given, the engine's own count of one text)."""
    from transformers import AutoTokenizer

    fast = AutoTokenizer.from_pretrained(k["root"] / "fast", local_files_only=True)
    slow = AutoTokenizer.from_pretrained(k["root"] / "slow", local_files_only=True)
    hf, enc, sp = k["hf"], k["enc"], k["sp"]
    return {
        "tokenizers": (hf, lambda t: len(hf.encode(t, add_special_tokens=False).ids)),
        "sentencepiece": (sp, lambda t: len(sp.encode(t))),
        "tiktoken": (enc, lambda t: len(enc.encode_ordinary(t))),
        "tiktoken-file": (f"tiktoken:{k['ranks']}", lambda t: len(enc.encode_ordinary(t))),
        "transformers-fast": (fast, lambda t: len(fast.encode(t, add_special_tokens=False))),
        "transformers-slow": (slow, lambda t: len(slow.encode(t, add_special_tokens=False))),
        "function": (enc.encode_ordinary, lambda t: len(enc.encode_ordinary(t))),
    }


@pytest.fixture(scope="module")
def report(kinds: dict[str, Any]) -> pd.DataFrame:
    oracles = _oracles(kinds)
    toks = {name: obj for name, (obj, _) in oracles.items() if not isinstance(obj, str)}
    toks["tiktoken-file"] = load_tokenizer_spec(oracles["tiktoken-file"][0], pattern="cl100k")
    df = fertility_report(toks, kinds["corpus"], translit=False, config=ReportConfig(n_boot=0))
    return df[df["slice_kind"] == "language"].set_index(["tokenizer", "slice"])


@pytest.mark.slow
def test_token_counts_equal_each_engine_own_count(kinds: dict[str, Any], report: pd.DataFrame) -> None:
    for name, (_, count) in _oracles(kinds).items():
        for lang, texts in kinds["texts"].items():
            assert report.loc[(name, lang), "tokens"] == sum(map(count, texts)), (name, lang)


@pytest.mark.slow
def test_special_tokens_are_never_added(kinds: dict[str, Any], report: pd.DataFrame) -> None:
    from transformers import AutoTokenizer

    fast = AutoTokenizer.from_pretrained(kinds["root"] / "fast", local_files_only=True)
    texts = kinds["texts"]["eng_Latn"]
    with_bos = sum(len(fast.encode(t)) for t in texts)  # the tokenizer's default adds one BOS per text
    assert report.loc[("transformers-fast", "eng_Latn"), "tokens"] == with_bos - len(texts)


@pytest.mark.slow
def test_byte_level_metrics_follow_the_family(kinds: dict[str, Any], report: pd.DataFrame) -> None:
    enc = kinds["enc"]
    for lang, texts in kinds["texts"].items():
        ids = [i for t in texts for i in enc.encode_ordinary(t)]
        partial = [i for i in ids if not _utf8(enc.decode_single_token_bytes(i))]
        for name in ("tiktoken", "tiktoken-file", "tokenizers", "transformers-fast"):
            row = report.loc[(name, lang)]
            assert row["byte_fallback_rate"] == pytest.approx(len(partial) / len(ids), abs=1e-12)
            assert row["byte_fallback_def"] == "partial-character tokens (byte-level)"
            assert row["unk_rate"] == 0 and row["unk_def"] == "0 by construction (byte-level)"
            assert row["roundtrip_exact_rate"] == 1.0  # byte-level BPE without normalization is lossless
        # offsets from tiktoken's token bytes give the same continued words as the tokenizers engine's own
        assert (
            report.loc[("tiktoken", lang), "continued_words"]
            == report.loc[("tokenizers", lang), "continued_words"]
        )
    sp_row = report.loc[("sentencepiece", "zho_Hans")]
    assert sp_row["byte_fallback_def"] == "byte pieces <0xNN>" and sp_row["unk_def"] == "unknown-token id 0"
    assert sp_row["byte_fallback_rate"] > 0


@pytest.mark.slow
def test_a_function_reports_what_it_cannot_measure_as_missing(report: pd.DataFrame) -> None:
    for lang in LANGS:
        fn, tk = report.loc[("function", lang)], report.loc[("tiktoken", lang)]
        assert fn["tokens"] == tk["tokens"] and fn["fertility"] == tk["fertility"]
        assert fn["premium_mean"] == tk["premium_mean"]
        for column in (
            "roundtrip_exact_rate",
            "byte_fallback_rate",
            "unk_rate",
            "continued_words",
            "renyi_efficiency",
        ):
            assert math.isnan(fn[column]), column
        assert fn["byte_fallback_def"].startswith("missing") and pd.isna(fn["vocab_size"])
    slow = report.loc[("transformers-slow", "eng_Latn")]
    assert math.isnan(slow["normalization_changed_rate"]) and not math.isnan(slow["roundtrip_exact_rate"])


@pytest.mark.slow
def test_offsets_from_token_bytes_equal_the_engine_offsets(kinds: dict[str, Any]) -> None:
    texts = [t for lang in LANGS for t in kinds["texts"][lang][:10]]
    engine = as_tokenizer(kinds["hf"]).encode_batch_with_offsets(texts)
    from_bytes = load_tokenizer_spec(
        f"tiktoken:{kinds['ranks']}", pattern="cl100k"
    ).encode_batch_with_offsets(texts)
    assert from_bytes == engine


@pytest.mark.slow
def test_as_tokenizer_wraps_by_kind(kinds: dict[str, Any]) -> None:
    assert as_tokenizer(kinds["hf"]).engine == "hf"
    assert as_tokenizer(kinds["sp"]).engine == "sentencepiece"
    tk = as_tokenizer(kinds["enc"], name="mine")
    assert (tk.engine, tk.name, tk.vocab_size) == ("tiktoken", "mine", kinds["enc"].n_vocab)
    fn = as_tokenizer(kinds["enc"].encode_ordinary)
    assert fn.engine == "callable" and fn.encode("héllo") == kinds["enc"].encode_ordinary("héllo")
    with pytest.raises(TokenizerError, match="no decoder"):
        fn.decode([1, 2])
    with pytest.raises(ConfigError, match="not a tokenizer"):
        as_tokenizer(42)


@pytest.mark.slow
def test_specs_fail_clearly(kinds: dict[str, Any], tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--pattern"):
        load_tokenizer_spec(f"tiktoken:{kinds['ranks']}")
    with pytest.raises(TokenizerError, match="does not exist"):
        load_tokenizer_spec(f"tiktoken:{tmp_path / 'missing.tiktoken'}", pattern="o200k")
    bad = tmp_path / "bad.tiktoken"
    bad.write_text("QUI= 0\nnot base64 at all\n", "ascii")
    with pytest.raises(TokenizerError, match=r"bad.tiktoken:2"):
        load_tokenizer_spec(f"tiktoken:{bad}", pattern="gpt2")
    with pytest.raises(TokenizerError, match=r"pattern '\(unclosed'.*Opening parenthesis"):
        load_tokenizer_spec(f"tiktoken:{kinds['ranks']}", pattern="(unclosed")
    with pytest.raises(TokenizerError, match="save_pretrained"):
        load_tokenizer_spec(f"transformers:{tmp_path / 'nothing'}")
    with pytest.raises(ConfigError, match="tiktoken:FILE tokenizers only"):
        load_tokenizer_spec(str(kinds["root"] / "sp.model"), pattern="cl100k")


@pytest.mark.slow
def test_cli_takes_tiktoken_and_transformers_specs(kinds: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "report"
    cmd = [
        sys.executable, "-m", "tokenloom", "fertility", "--quiet", "--no-translit",
        "--tokenizer", f"tiktoken:{kinds['ranks']}", "--pattern", "cl100k", "--name", "tk",
        "--tokenizer", f"transformers:{kinds['root'] / 'fast'}", "--name", "tf",
        "--tokenizer", str(kinds["root"] / "sp.model"),
        "--corpus", str(kinds["corpus"]), "--out", str(out),
    ]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    df = pd.read_csv(out / "report.csv")
    assert list(dict.fromkeys(df["tokenizer"])) == ["tk", "tf", "sp"]
    lang = df[(df["slice_kind"] == "language") & (df["slice"] == "hin_Deva")].set_index("tokenizer")
    enc = kinds["enc"]
    assert (
        lang.loc["tk", "tokens"]
        == lang.loc["tf", "tokens"]
        == sum(len(enc.encode_ordinary(t)) for t in kinds["texts"]["hin_Deva"])
    )
    assert np.isclose(lang.loc["tk", "byte_fallback_rate"], lang.loc["tf", "byte_fallback_rate"])


def _spans_by_walking(token_bytes: list[bytes], text: str) -> list[tuple[int, int]]:
    """Reference: each token covers the characters holding its first through last byte (a plain loop)."""
    owner = [k for k, ch in enumerate(text) for _ in ch.encode("utf-8")]  # character of every UTF-8 byte
    spans, at = [], 0
    for raw in token_bytes:
        spans.append((owner[at], owner[at + len(raw) - 1] + 1) if raw else (owner[at], owner[at]))
        at += len(raw)
    return spans


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    texts=st.lists(st.text(st.characters(exclude_categories=("Cs",)), max_size=40), min_size=1, max_size=4)
)
@pytest.mark.slow
def test_byte_offsets_equal_a_byte_walk(kinds: dict[str, Any], texts: list[str]) -> None:
    from tiktoken.load import load_tiktoken_bpe

    from tokenloom.text.offsets import byte_offsets
    from tokenloom.unicode.flat import text_bases

    enc = kinds["enc"]
    lists = [enc.encode_ordinary(t) for t in texts]
    lengths = np.array([len(ids) for ids in lists], dtype=np.int64)
    ids = np.array([i for ids in lists for i in ids], dtype=np.int64)
    nbytes = np.zeros(
        enc.n_vocab, dtype=np.int64
    )  # [V]; id 0 (a special token elsewhere) is not in the ranks
    for raw, rank in load_tiktoken_bpe(str(kinds["ranks"])).items():
        nbytes[rank] = len(raw)
    offsets, ok = byte_offsets(texts, lengths, ids, nbytes)  # [T, 2] whole-batch coordinates
    assert ok.all()
    k = 0
    for text, one, base in zip(texts, lists, text_bases(texts).tolist(), strict=True):
        want = _spans_by_walking([enc.decode_single_token_bytes(i) for i in one], text)
        assert [(int(s) - base, int(e) - base) for s, e in offsets[k : k + len(one)]] == want
        k += len(one)
