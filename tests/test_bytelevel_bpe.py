"""Byte-level BPE: lossless by construction, deterministic, recorded; its split patterns agree between the
``regex`` module (tiktoken-style engines) and the ``tokenizers`` engine; its tiktoken export encodes
id-for-id like the ``tokenizer.json`` (tiktoken itself is the oracle); bad patterns and options are refused."""

from __future__ import annotations

import base64
import importlib.util
import json
import unicodedata
from pathlib import Path
from typing import Any

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from test_tokenizer import EDGE_CASES
from tokenloom import cli
from tokenloom.errors import ConfigError, TokenizerError
from tokenloom.text import tiktoken_encoding_kwargs
from tokenloom.text.bytelevel import CATCH_ALL, PATTERNS, _possessive_at, resolve_pattern
from tokenloom.text.tiktoken_export import (
    TIKTOKEN_FILE,
    tiktoken_export,
    verify_tiktoken,
)
from tokenloom.text.tokenizer import Tokenizer, load_tokenizer
from tokenloom.text.train import TrainerConfig, train_tokenizer

tiktoken = pytest.importorskip("tiktoken")

SPECIALS = ("<unk>", "<s>", "</s>", "<pad>")
VOCAB = 700
# FLORES-200 devtest languages the export is compared on: 14 scripts, several never seen in training
EVAL_LANGS = (
    "eng_Latn", "fra_Latn", "vie_Latn", "rus_Cyrl", "ell_Grek", "arb_Arab", "heb_Hebr", "hin_Deva",
    "tam_Taml", "tha_Thai", "zho_Hans", "jpn_Jpan", "kor_Hang", "amh_Ethi", "kat_Geor", "khm_Khmr",
)  # fmt: skip


def _lines(shared_dir: Path, split: str, langs: tuple[str, ...] | list[str], n: int) -> list[str]:
    folder = shared_dir / "corpora" / "flores200" / split
    out = []
    for lang in langs:
        path = folder / f"{lang}.txt"
        if path.is_file():
            out += path.read_text("utf-8").splitlines()[:n]
    return out


@pytest.fixture(scope="module")
def small(default_corpus: Path) -> Tokenizer:
    """Trained on the 12-language test corpus by the tokenizers engine; small, so most text falls back to short
    byte runs (the fast trainers are compared with this engine in test_fast_trainers.py)."""
    return train_tokenizer(
        default_corpus, algorithm="bytelevel-bpe", engine="hf", vocab_size=VOCAB, heldout=0, quiet=True
    )


@pytest.fixture(scope="module")
def small_encoding(small: Tokenizer, tmp_path_factory: pytest.TempPathFactory) -> Any:
    folder = small.save(tmp_path_factory.mktemp("bl") / "tok", formats=("tokenizer.json", "tiktoken"))
    return tiktoken.Encoding(**tiktoken_encoding_kwargs(folder))


@pytest.fixture(scope="module")
def flores_train(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """300 lines of 10 FLORES-200 dev languages in 8 scripts (~500 KB)."""
    out = tmp_path_factory.mktemp("flores-bl")
    langs = ["eng_Latn", "deu_Latn", "rus_Cyrl", "ell_Grek", "arb_Arab", "hin_Deva", "tha_Thai", "zho_Hans"]
    langs += ["spa_Latn", "tam_Taml"]
    for lang in langs:
        lines = _lines(shared_dir, "dev", [lang], 300)
        if lines:
            (out / f"{lang}.txt").write_text("\n".join(lines) + "\n", "utf-8")
    assert len(list(out.glob("*.txt"))) >= 8
    return out


# ------------------------------------------------------------------ layout, record, determinism


def test_layout_specials_then_256_bytes_then_merges(small: Tokenizer) -> None:
    from tokenizers import pre_tokenizers

    hf = small.hf_export()
    data = json.loads(hf.to_str())
    assert small.vocab_size == VOCAB and small.unk_id is None and small.byte_fallback_ids == frozenset()
    assert small.backend.byte_fallback == "byte_level"
    assert [hf.id_to_token(i) for i in range(4)] == list(SPECIALS)
    assert {hf.id_to_token(i) for i in range(4, 260)} == set(pre_tokenizers.ByteLevel.alphabet())
    merges = data["model"]["merges"]
    assert len(merges) == VOCAB - 260
    assert all(data["model"]["vocab"]["".join(m)] == 260 + i for i, m in enumerate(merges))
    assert data["model"]["ignore_merges"] is True and data["normalizer"] is None


def test_trainer_equals_the_raw_engine(small: Tokenizer, default_corpus: Path) -> None:
    from tokenizers import Regex, decoders, models, pre_tokenizers, trainers
    from tokenizers import Tokenizer as HFTokenizer

    from tokenloom.corpus.sources import resolve_inputs

    raw = HFTokenizer(models.BPE(ignore_merges=True))
    raw.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(PATTERNS["o200k"]), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    raw.decoder = decoders.ByteLevel()
    lines = [ln for p in resolve_inputs(default_corpus) for ln in p.read_text("utf-8").split("\n") if ln]
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB,
        special_tokens=list(SPECIALS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    raw.train_from_iterator(lines, trainer)
    assert json.loads(raw.to_str()) == json.loads(small.hf_export().to_str())


def test_no_unk_is_added_and_specials_keep_their_order(default_corpus: Path) -> None:
    tok = train_tokenizer(
        default_corpus,
        algorithm="bytelevel-bpe",
        vocab_size=400,
        special_tokens=("<|end|>", "<s>"),
        heldout=0,
    )
    hf = tok.hf_export()
    assert [hf.id_to_token(i) for i in range(2)] == ["<|end|>", "<s>"] and hf.token_to_id("<unk>") is None
    assert TrainerConfig(algorithm="bytelevel-bpe", special_tokens=()).min_vocab_size == 257
    with pytest.raises(ConfigError, match="at least 259"):
        TrainerConfig(algorithm="bytelevel-bpe", special_tokens=("<s>", "</s>"), vocab_size=258)


def test_record_says_what_was_trained(small: Tokenizer, tmp_path: Path) -> None:
    record = small.record
    assert record["config"]["algorithm"] == "bytelevel-bpe"
    assert record["config"]["pretokenizer"] is None and record["config"]["split_digits"] is False
    assert record["resolved"]["engine"] == "hf"
    assert record["resolved"]["special_tokens"] == list(SPECIALS)
    assert record["resolved"]["max_piece_length"] is None  # no limit by default, as in GPT-2 / tiktoken
    assert record["resolved"]["byte_fallback"] == "byte_level"
    assert record["resolved"]["pretokenizer"] == {
        "name": "o200k",
        "pattern": PATTERNS["o200k"],
        "split_digits": False,
    }
    assert record["corpus"]["files"] == 12 and record["corpus"]["fingerprint"].startswith("sha256:")
    assert set(record["versions"]) >= {"tokenloom", "tokenizers"}
    small.save(tmp_path / "t", formats=("tokenizer.json", "tiktoken"))
    saved = json.loads((tmp_path / "t" / "tokenloom.json").read_text("utf-8"))
    assert saved["config"] == record["config"] and saved["resolved"] == record["resolved"]
    entry = saved["tiktoken"]
    assert (
        entry["file"] == TIKTOKEN_FILE and entry["n_vocab"] == VOCAB and entry["pattern"] == PATTERNS["o200k"]
    )
    assert entry["special_tokens"] == {t: i for i, t in enumerate(SPECIALS)} and entry["verified_texts"] > 0
    again = load_tokenizer(tmp_path / "t")  # reloads from tokenizer.json, record intact
    assert again.record["config"] == record["config"] and again.encode("hello 2016") == small.encode(
        "hello 2016"
    )
    again.save(tmp_path / "plain")  # a save without the format drops the entry: no claim about a missing file
    assert "tiktoken" not in json.loads((tmp_path / "plain" / "tokenloom.json").read_text("utf-8"))
    with pytest.raises(TokenizerError, match="no 'tiktoken' entry"):
        tiktoken_encoding_kwargs(tmp_path / "plain")


def test_same_corpus_and_config_give_identical_files(default_corpus: Path, tmp_path: Path) -> None:
    files = []
    for run in range(2):
        tok = train_tokenizer(
            default_corpus, algorithm="bytelevel-bpe", vocab_size=VOCAB, pretokenizer="cl100k", quiet=True
        )
        folder = tok.save(tmp_path / str(run), formats=("tokenizer.json", "tiktoken"))
        files.append([(folder / n).read_bytes() for n in ("tokenizer.json", TIKTOKEN_FILE)])
    assert files[0] == files[1]


# ------------------------------------------------------------------ lossless by construction

_PIECES = st.one_of(
    st.characters(blacklist_categories=("Cs",)),  # any code point but lone surrogates
    st.sampled_from(
        [*SPECIALS, "\n", "\r\n", " ", "  ", "\t", "\x00", "\u0301", "\u200d", "\U0001f44b\U0001f3fd",
         "2016", "1234567", "it's", "I'LL", "\u2581", "<s", "s>", "नमस्ते", "e\u0301"]
    ),
)  # fmt: skip
_TEXTS = st.lists(_PIECES, max_size=40).map("".join)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_TEXTS)
def test_round_trip_and_tiktoken_agree_on_any_text(small: Tokenizer, small_encoding: Any, text: str) -> None:
    ids = small.encode(text)
    assert small.decode(ids) == text and small.is_lossless(text) and small.normalize(text) == text
    assert small_encoding.encode(text, allowed_special="all") == ids
    if not any(s in text for s in SPECIALS):
        assert small_encoding.encode_ordinary(text) == ids
    assert small_encoding.decode(ids) == text


@pytest.mark.parametrize("text", EDGE_CASES)
def test_edge_cases_round_trip(small: Tokenizer, small_encoding: Any, text: str) -> None:
    ids = small.encode(text)
    assert small.decode(ids) == text
    assert small_encoding.encode(text, allowed_special="all") == ids


def test_special_token_text_is_the_special_id_in_both_engines(small: Tokenizer, small_encoding: Any) -> None:
    text = "a<s>b</s><pad>"
    ids = small.encode(text)
    assert ids.count(1) == 1 and ids.count(2) == 1 and ids[-1] == 3
    assert small.decode(ids) == text and small_encoding.encode(text, allowed_special="all") == ids
    assert 1 not in small_encoding.encode_ordinary(text)  # ordinary: "<s>" is spelled with bytes


# ------------------------------------------------------------------ split patterns


def test_named_patterns_split_alike_in_both_engines(shared_dir: Path) -> None:
    from tokenizers import Regex, pre_tokenizers

    texts = _lines(shared_dir, "devtest", EVAL_LANGS, 40)
    texts += ["it's 2016, 1234567 of them'LL\r\n\n go  \t\n", "I'M HERE's  x", "a\u0301\u0302b 12\u0663 ½"]
    assert len(texts) > 500
    for name, pattern in PATTERNS.items():
        split = pre_tokenizers.Split(Regex(pattern), behavior="isolated")
        compiled = regex.compile(pattern)
        for text in texts:
            ours = [piece for piece, _ in split.pre_tokenize_str(text)]
            assert ours == compiled.findall(text), (name, text)
            assert "".join(ours) == text  # the named patterns leave no character unmatched
    assert PATTERNS["llama3"] == PATTERNS["cl100k"]
    assert regex.findall(PATTERNS["cl100k"], "2016") == ["201", "6"]


def test_o200k_is_tiktokens_pattern_without_possessives() -> None:
    import inspect
    import re

    from tiktoken_ext import openai_public

    parts = re.findall(r'r"""(.*?)"""', inspect.getsource(openai_public.o200k_base))
    assert len(parts) == 7 and "|".join(parts) == PATTERNS["o200k"]
    assert all(_possessive_at(pattern) is None for pattern in PATTERNS.values())
    assert _possessive_at(r"\p{N}{1,3}+|\p{L}+") == 9  # tiktoken's current cl100k string has this one


def test_o200k_keeps_devanagari_words_whole_where_cl100k_splits_them(shared_dir: Path) -> None:
    line = _lines(shared_dir, "devtest", ["hin_Deva"], 1)[0]
    cl100k, o200k = regex.findall(PATTERNS["cl100k"], line), regex.findall(PATTERNS["o200k"], line)
    words = [w for w in line.split() if regex.fullmatch(r"[\p{L}\p{M}]+", w)]  # letters and marks only
    assert len(words) > 5
    marks = [p for p in cl100k if unicodedata.category(p[0]).startswith("M")]
    assert marks  # cl100k: a piece starting with a vowel sign or virama, cut off its consonant
    assert not any(unicodedata.category(p[0]).startswith("M") for p in o200k)
    assert all(w in {p.strip() for p in o200k} for w in words)  # o200k: every such word is one piece
    assert not all(w in {p.strip() for p in cl100k} for w in words)
    assert len(o200k) < len(cl100k)


@pytest.mark.parametrize(
    ("pattern", "problem"),
    [
        ("(ab", "does not compile in the `regex` module"),
        ("(?|a|b)", "does not compile in the tokenizers engine"),
        (r"\p{N}{1,3}+", "possessive quantifier '}+'"),
        (r" ?\p{L}++|\s", "possessive quantifier '++'"),
        (r"\s*|\S", "matches the empty string"),
        ("", "is empty"),
        ("o200", "unknown pretokenizer 'o200'; choose one of gpt2, cl100k, llama3, o200k"),
    ],
)
def test_bad_patterns_are_refused_with_the_fix(pattern: str, problem: str) -> None:
    with pytest.raises(ConfigError, match="pretokenizer") as info:
        TrainerConfig(algorithm="bytelevel-bpe", pretokenizer=pattern)
    assert problem in str(info.value) and repr(pattern) in str(info.value)


def test_not_possessive_lookalikes_are_accepted() -> None:
    for pattern in (r"[+*?]+", r"\++", r"a+?", r"x}+", r"(?:ab)+"):
        assert resolve_pattern(pattern).pattern == pattern + CATCH_ALL


def test_custom_pattern_loses_nothing_and_exports(default_corpus: Path, tmp_path: Path) -> None:
    pattern = r" ?\p{L}+"  # leaves digits, punctuation and most spaces unmatched
    tok = train_tokenizer(default_corpus, algorithm="bytelevel-bpe", vocab_size=500, pretokenizer=pattern)
    assert tok.record["resolved"]["pretokenizer"] == {"name": "custom", "pattern": pattern + CATCH_ALL,
                                                      "split_digits": False}  # fmt: skip
    text = "Dates: 2016-07-01, ratio 3/4!\n\tdone."
    assert tok.decode(tok.encode(text)) == text
    folder = tok.save(tmp_path / "t", formats=("tokenizer.json", "tiktoken"))
    encoding = tiktoken.Encoding(**tiktoken_encoding_kwargs(folder))
    assert encoding.encode_ordinary(text) == tok.encode(text) and encoding.decode(tok.encode(text)) == text


# ------------------------------------------------------------------ the tiktoken export


@pytest.mark.parametrize("pretokenizer", ["o200k", "cl100k", "gpt2"])
def test_tiktoken_export_matches_on_flores(
    flores_train: Path, shared_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pretokenizer: str
) -> None:
    tok = train_tokenizer(flores_train, algorithm="bytelevel-bpe", vocab_size=4000, pretokenizer=pretokenizer)
    folder = tok.save(tmp_path / "tok", formats=("tokenizer.json", "tiktoken"))
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")  # tiktoken's loader caches by path otherwise
    from tiktoken.load import load_tiktoken_bpe

    ranks = load_tiktoken_bpe(str(folder / TIKTOKEN_FILE))
    entry = json.loads((folder / "tokenloom.json").read_text("utf-8"))["tiktoken"]
    encoding = tiktoken.Encoding(
        "flores", pat_str=entry["pattern"], mergeable_ranks=ranks, special_tokens=entry["special_tokens"]
    )
    assert tiktoken_encoding_kwargs(folder)["mergeable_ranks"] == ranks
    texts = _lines(shared_dir, "devtest", EVAL_LANGS, 60)
    assert len(texts) >= 60 * 14
    ours = tok.encode_batch(texts)
    assert encoding.encode_ordinary_batch(texts) == ours
    assert encoding.decode_batch(ours) == texts
    assert max(len(b) for b in ranks) > 4  # merges were learned, not only single bytes


def test_export_difference_names_the_text_and_token(small: Tokenizer) -> None:
    hf = small.hf_export()
    export = tiktoken_export(hf)
    text = "the weaver and the window"
    ids = small.encode(text)
    merged = max(ids)
    piece = next(b for b, r in export.ranks.items() if r == merged)
    other = next(b for b, r in export.ranks.items() if r == 100)
    ranks = {**export.ranks, piece: 100, other: merged}  # two ranks swapped: a corrupt export
    bad = type(export)(export.pattern, ranks, export.special_tokens, export.n_vocab)
    with pytest.raises(TokenizerError, match=r"on text #\d+ .*: first difference at token \d+ of"):
        verify_tiktoken(bad, hf, [text])
    assert verify_tiktoken(export, hf, [text]) > 1


def test_ranks_file_is_base64_space_rank(small: Tokenizer, tmp_path: Path) -> None:
    folder = small.save(tmp_path / "t", formats=("tokenizer.json", "tiktoken"))
    lines = (folder / TIKTOKEN_FILE).read_text("ascii").splitlines()
    assert len(lines) == VOCAB - len(SPECIALS)
    ranks = [int(line.split(" ")[1]) for line in lines]
    assert ranks == list(range(len(SPECIALS), VOCAB))
    tokens = [base64.b64decode(line.split(" ")[0]) for line in lines]
    assert set(tokens[:256]) == {bytes([b]) for b in range(256)}  # the byte alphabet first
    hf = small.hf_export()
    for token, rank in zip(tokens[256:], ranks[256:], strict=True):  # then merges, spelled as their bytes
        assert small.decode([rank]).encode("utf-8") == token or not _utf8(token)
        assert hf.id_to_token(rank) is not None


def test_load_tokenizer_reads_the_saved_tiktoken_file_with_its_pattern(
    small: Tokenizer, small_encoding: Any, tmp_path: Path, default_corpus: Path
) -> None:
    import shutil

    from tokenloom.text.adapt import load_tokenizer_spec

    folder = small.save(tmp_path / "bl", formats=("tokenizer.json", "tiktoken"))
    texts = [ln for p in sorted(default_corpus.glob("*.txt")) for ln in p.read_text("utf-8").splitlines()]
    texts += [t for t in EDGE_CASES if "<" not in t]  # encode_ordinary: special-token text is plain text
    for tok in (
        load_tokenizer(folder / TIKTOKEN_FILE),
        load_tokenizer_spec(f"tiktoken:{folder / TIKTOKEN_FILE}"),
    ):
        assert tok.engine == "tiktoken" and tok.vocab_size == VOCAB and tok.name == "tokenizer"
        assert tok.encode_batch(texts) == [small_encoding.encode_ordinary(t) for t in texts]  # the oracle
        assert tok.encode_batch(texts) == small.encode_batch(texts)
    alone = tmp_path / "alone"
    alone.mkdir()
    for name in ("ranks.tiktoken", "ranks"):  # by suffix, and by its lines when the suffix is missing
        shutil.copy(folder / TIKTOKEN_FILE, alone / name)
        with pytest.raises(TokenizerError) as exc:
            load_tokenizer(alone / name)
        message = str(exc.value)
        assert (
            message.startswith(f"{alone / name}: a tiktoken ranks file needs its split pattern")
            and "\n" not in message
        )
        assert (
            f"load_tokenizer_spec('tiktoken:{alone / name}', pattern=" in message and "--pattern" in message
        )
        assert "sentencepiece" not in message
    (alone / "tokenloom.json").write_text(
        json.dumps({"tiktoken": {"file": "other.tiktoken", "pattern": "x"}})
    )
    with pytest.raises(TokenizerError, match="needs its split pattern"):  # an entry for another file
        load_tokenizer(alone / "ranks.tiktoken")
    given = load_tokenizer_spec(f"tiktoken:{alone / 'ranks.tiktoken'}", pattern=PATTERNS["o200k"] + CATCH_ALL)
    assert given.encode_batch(texts) == small.encode_batch(texts)


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def test_tiktoken_format_refuses_what_it_cannot_express(default_corpus: Path, tmp_path: Path) -> None:
    digits = train_tokenizer(default_corpus, algorithm="bytelevel-bpe", vocab_size=500, split_digits=True)
    assert digits.tokens("2016") == ["2", "0", "1", "6"]
    with pytest.raises(TokenizerError, match="single regex") as info:
        digits.save(tmp_path / "d", formats=("tiktoken",))
    assert "split_digits=False" in str(info.value) and not (tmp_path / "d").exists()
    digits.save(tmp_path / "d")  # the tokenizer.json alone is fine
    nfc = train_tokenizer(default_corpus, algorithm="bytelevel-bpe", vocab_size=500, normalization="nfc")
    assert not nfc.is_lossless("e\u0301") and nfc.decode(nfc.encode("e\u0301")) == "\u00e9"
    with pytest.raises(TokenizerError, match="no normalizer"):
        nfc.save(tmp_path / "n", formats=("tiktoken",))
    plain = train_tokenizer(default_corpus, algorithm="bpe", engine="hf", vocab_size=1000, heldout=0)
    with pytest.raises(TokenizerError, match="not one split regex"):
        plain.save(tmp_path / "p", formats=("tiktoken",))
    with pytest.raises(ConfigError, match="unknown save format 'tiktokn'"):
        plain.save(tmp_path / "p", formats=("tiktokn",))  # type: ignore[arg-type]


# ------------------------------------------------------------------ options and the CLI


def test_options_of_one_algorithm_are_refused_for_the_other() -> None:
    with pytest.raises(ConfigError, match="tokenizers engine only; pass engine='hf'"):
        TrainerConfig(algorithm="bytelevel-bpe", engine="sentencepiece")
    with pytest.raises(ConfigError, match="byte_fallback=False does not apply"):
        TrainerConfig(algorithm="bytelevel-bpe", byte_fallback=False)
    with pytest.raises(ConfigError, match="split_words=False does not apply"):
        TrainerConfig(algorithm="bytelevel-bpe", split_words=False)
    with pytest.raises(ConfigError, match="apply to algorithm='bytelevel-bpe' or 'parity-bpe' only"):
        TrainerConfig(algorithm="bpe", pretokenizer="gpt2")
    with pytest.raises(ConfigError, match="apply to algorithm='bytelevel-bpe' or 'parity-bpe' only"):
        TrainerConfig(algorithm="unigram", split_digits=True)
    fast = importlib.util.find_spec("rustbpe") is not None  # auto: rustbpe for the default o200k pattern
    assert TrainerConfig(algorithm="bytelevel-bpe").resolved_engine == ("rustbpe" if fast else "hf")
    assert TrainerConfig(algorithm="bpe").resolved_max_piece_length == 16
    assert TrainerConfig(algorithm="bytelevel-bpe", max_piece_length=24).resolved_max_piece_length == 24


def test_max_piece_length_counts_bytes(default_corpus: Path) -> None:
    tok = train_tokenizer(
        default_corpus,
        config=TrainerConfig(algorithm="bytelevel-bpe", vocab_size=500, max_piece_length=3, heldout=0),
    )
    hf = tok.hf_export()
    assert max(len(hf.id_to_token(i)) for i in range(4, 500)) == 3  # byte characters: one per byte


def test_cli_trains_bytelevel_with_tiktoken_file(
    default_corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "tok"
    argv = ["train", str(default_corpus), "--algorithm", "bytelevel-bpe", "--pretokenizer", "gpt2"]
    assert cli.main([*argv, "--vocab-size", "600", "--out", str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "trained bytelevel-bpe on hf" in printed and "tokenizer.tiktoken identical" in printed
    record = json.loads((out / "tokenloom.json").read_text("utf-8"))
    assert record["tiktoken"]["pattern"] == PATTERNS["gpt2"] and (out / TIKTOKEN_FILE).is_file()
    digits = tmp_path / "digits"
    assert cli.main([*argv, "--split-digits", "--vocab-size", "600", "--out", str(digits), "--quiet"]) == 0
    assert not (digits / TIKTOKEN_FILE).exists()  # tiktoken has one regex: not written, not an error
    assert load_tokenizer(digits).tokens("42") == ["4", "2"]
    assert cli.main([*argv[:-1], r"\s*", "--out", str(tmp_path / "bad"), "--quiet"]) == 2
    assert "matches the empty string" in capsys.readouterr().err and not (tmp_path / "bad").exists()


def test_commands_add_the_tiktoken_format_only_when_it_can_be_verified(
    small: Tokenizer, default_corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    from tokenloom.text.tiktoken_export import can_export

    assert can_export(small)
    digits = train_tokenizer(
        default_corpus, algorithm="bytelevel-bpe", vocab_size=600, split_digits=True, quiet=True
    )
    unigram = train_tokenizer(default_corpus, algorithm="unigram", vocab_size=1000, quiet=True)
    assert not can_export(digits) and not can_export(unigram)
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "tiktoken" else find_spec(name, *a)
    )
    assert not can_export(small)  # tiktoken not installed: the folder is saved without the tiktoken file
