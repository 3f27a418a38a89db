"""Retention (STRR), UTF-8 integrity, numbers and vocabulary use: the fast counts against the per-text
definitions (hypothesis), and the report against an independent computation on FLORES-200 text in six
scripts — token byte spans from the raw engines' pieces, words from PyICU's own break iterator, id sets
as Python sets."""

from __future__ import annotations

import io
import itertools
import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenloom.fertility import metrics as M
from tokenloom.fertility import reference as R
from tokenloom.fertility.report import ReportConfig, fertility_report
from tokenloom.text.backends.base import flat_ids
from tokenloom.unicode.flat import flat_spans, text_bases

LANGS = ("eng_Latn", "hin_Deva", "zho_Hans", "tha_Thai", "rus_Cyrl", "arb_Arab")
LINES = 150  # FLORES devtest sentences per language


@st.composite
def tokenized(draw: st.DrawFn) -> tuple[str, list[int], list[tuple[int, int]], list[tuple[int, int]]]:
    n = draw(st.integers(0, 30))
    text = "".join(draw(st.lists(st.sampled_from("12345x,"), min_size=n, max_size=n)))
    # token spans: a partition of [0, n), some pieces repeated (byte pieces of one character) or empty
    cuts = sorted(set(draw(st.lists(st.integers(0, n), max_size=14))) | {0, n})
    offsets: list[tuple[int, int]] = []
    for a, b in itertools.pairwise(cuts):
        offsets += [(a, b)] * draw(st.integers(1, 3))
        if draw(st.booleans()):
            offsets.append((b, b))
    ids = draw(st.lists(st.integers(0, 5), min_size=len(offsets), max_size=len(offsets)))
    wcuts = sorted(set(draw(st.lists(st.integers(0, n), max_size=10))))
    words = [(a, b) for a, b in zip(wcuts[::2], wcuts[1::2], strict=False) if a < b]
    return text, ids, offsets, words


def _counted(batch: list) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, M.BatchCounts]:
    """``count_flat`` of a drawn batch: (texts, tokens per text, flat ids, token spans, the counts)."""
    texts, ids, offsets, words = (list(x) for x in zip(*batch, strict=True))
    bases = text_bases(texts)
    tok_len, flat = flat_ids(ids)
    tok = flat_spans(offsets, bases)[1]
    word_len, flat_words = flat_spans(words, bases)
    return (
        texts,
        tok_len,
        flat,
        tok,
        M.count_flat(tok_len, flat, tok, word_len, flat_words, vocab_size=6, unk_id=0),
    )


@settings(max_examples=200, deadline=None)
@given(st.lists(tokenized(), min_size=1, max_size=5))
def test_counts_equal_the_per_text_definitions(batch: list) -> None:
    texts, _, _, tok, fast = _counted(batch)
    nums = M.count_numbers(tok, *M.digit_runs(texts))
    for j, (text, i, o, w) in enumerate(batch):
        ref = R.text_integrity(text, i, o, w, unk_id=0)
        assert (fast.single[j], fast.partial[j], fast.split_chars[j], fast.unk_chars[j]) == (
            ref.single, ref.partial, ref.split_chars, ref.unk_chars,
        )  # fmt: skip
        rn = R.text_numbers(text, o)
        assert (nums.numbers[j], nums.place_value[j], nums.multi_digit[j], nums.single_digits[j]) == (
            rn.numbers, rn.place_value, rn.multi_digit, rn.single_digits,
        )  # fmt: skip
        assert (nums.placed[j], nums.expected[j], nums.hits[j]) == (rn.placed, rn.expected, rn.hits)


@st.composite
def any_spans(draw: st.DrawFn) -> tuple[str, list[int], list[tuple[int, int]], list[tuple[int, int]]]:
    """Token spans in any order, overlapping anyhow (what an engine with non-monotone offsets gives)."""
    n = draw(st.integers(1, 30))
    span = st.tuples(st.integers(0, n), st.integers(0, n)).map(sorted).map(tuple)
    offsets = draw(st.lists(span, max_size=12))
    ids = draw(st.lists(st.integers(0, 5), min_size=len(offsets), max_size=len(offsets)))
    return "x" * n, ids, offsets, []


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(tokenized(), any_spans()), min_size=1, max_size=5))
def test_integrity_equals_the_definition_for_spans_in_any_order(batch: list) -> None:
    """Spans out of order take the by-position path, spans in order the by-token path: both equal the
    per-text definition, and the by-position path gives the same counts on every batch."""
    texts, tok_len, flat, tok, fast = _counted(batch)
    for j, (text, i, o, w) in enumerate(batch):
        ref = R.text_integrity(text, i, o, w, unk_id=0)
        assert (fast.partial[j], fast.split_chars[j], fast.unk_chars[j]) == (
            ref.partial, ref.split_chars, ref.unk_chars,
        )  # fmt: skip
    tok_text = np.repeat(np.arange(len(texts)), tok_len)
    by_position = M._integrity_by_position(tok, tok_text, len(texts), flat == 0)
    assert all(
        np.array_equal(a, b)
        for a, b in zip(by_position, (fast.partial, fast.split_chars, fast.unk_chars), strict=True)
    )


DIGITS = "0123456789٠١٢٣३४५๑๒߀០፩𝟎𝟙"  # ASCII, Arabic-Indic, Devanagari, Thai, NKo, Khmer, math; ፩ is no Nd


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(st.one_of(st.sampled_from(DIGITS), st.characters(), st.just("\ud800"))), max_size=6))
def test_digit_runs_are_the_runs_the_pattern_finds(texts: list[str]) -> None:
    """The table lookup finds exactly the runs of ``\\d+`` (lone surrogates and line feeds included)."""
    counts, spans = M.digit_runs(texts)
    joined = "\n".join(texts)
    assert spans.tolist() == [list(m.span()) for m in re.finditer(r"\d+", joined)]
    assert counts.tolist() == [len(re.findall(r"\d+", t)) for t in texts]


def test_known_answers() -> None:
    # "ab 12345": tokens ab | ␣ | 12 | 345 -> 12345 on its place-value groups; é split over two byte pieces
    spans = [(0, 2), (2, 3), (3, 5), (5, 8)]
    assert R.text_numbers("ab 12345", spans) == R.TextNumbers(1, 1, 1, 0, 1, 1, 1)
    assert R.text_numbers("ab 12345", [(0, 3), (3, 4), (4, 5), (5, 8)]) == R.TextNumbers(1, 0, 1, 0, 2, 1, 1)
    assert R.text_numbers("1234", [(0, 1), (1, 2), (2, 3), (3, 4)]) == R.TextNumbers(1, 0, 1, 1, 3, 1, 1)
    # one-digit numbers can be split no further: they count neither way
    assert R.text_numbers("7 12", [(0, 1), (1, 2), (2, 3), (3, 4)]) == R.TextNumbers(2, 1, 1, 1, 1, 0, 0)
    assert M.boundary_f1(1, 2, 1) == pytest.approx(2 / 3) and M.boundary_f1(0, 0, 0) == 1.0
    got = R.text_integrity("xé", [5, 1, 2], [(0, 1), (1, 2), (1, 2)], [(0, 2)], unk_id=5)
    assert got == R.TextIntegrity(single=0, partial=2, split_chars=1, unk_chars=1)


def test_id_sets_equal_python_sets() -> None:
    rng = np.random.default_rng(0)
    langs = {k: rng.integers(0, 50, rng.integers(0, 40)).tolist() for k in "abcd"}
    sets = {k: M.id_set(np.bincount(np.array(v, dtype=np.int64), minlength=50), 50) for k, v in langs.items()}
    distinct, only, pairs = R.vocabulary_use(langs)
    assert {k: int(np.unpackbits(v).sum()) for k, v in sets.items()} == distinct
    assert M.unique_ids(sets) == only
    got = M.id_overlaps(sets)
    assert sorted(got) == sorted(pairs)
    for (a, b), (shared, jaccard) in pairs.items():
        assert got[(a, b)][0] == shared
        assert got[(a, b)][1] == jaccard or (math.isnan(jaccard) and math.isnan(got[(a, b)][1]))
    wide = {
        k: M.id_set(np.bincount(np.array(v) * 3000, minlength=150_000), 150_000) for k, v in langs.items()
    }
    assert M.id_overlaps(wide) == M.id_overlaps(sets)  # ids past the first block of unpacked ids


# ---------------------------------------------------------------- FLORES-200, against an independent walk

BYTES = [f"<0x{i:02X}>" for i in range(256)]


@pytest.fixture(scope="module")
def flores(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The first LINES sentences of six languages, a byte-level BPE (raw ``tokenizers``) and a byte-fallback
    unigram (raw ``sentencepiece``, identity normalization: pieces spell the text's bytes exactly)."""
    import sentencepiece as spm
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    src = shared_dir / "corpora" / "flores200" / "devtest"
    folder = tmp_path_factory.mktemp("flores6")
    texts = {}
    for code in LANGS:
        texts[code] = (src / f"{code}.txt").read_text("utf-8").splitlines()[:LINES]
        (folder / f"{code}.txt").write_text("\n".join(texts[code]) + "\n", encoding="utf-8")
    lines = [t for ts in texts.values() for t in ts]
    byte = Tokenizer(models.BPE())
    byte.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    byte.decoder = decoders.ByteLevel()
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    byte.train_from_iterator(lines, trainers.BpeTrainer(vocab_size=1500, initial_alphabet=alphabet))
    byte.save(str(folder / "byte.json"))
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=model, vocab_size=1500, model_type="unigram",
        byte_fallback=True, character_coverage=0.99, hard_vocab_limit=False, minloglevel=2,
        normalization_rule_name="identity", add_dummy_prefix=False, remove_extra_whitespaces=False,
    )  # fmt: skip
    (folder / "uni.model").write_bytes(model.getvalue())
    return {"folder": folder, "texts": texts, "byte": folder / "byte.json", "uni": folder / "uni.model"}


def _pieces(path: Path, texts: list[str]) -> list[tuple[list[int], list[bytes]]]:
    """(ids, the bytes of each token) of every text, from the raw engine and its vocabulary."""
    if path.suffix == ".model":
        import sentencepiece as spm

        sp = spm.SentencePieceProcessor(model_file=str(path))
        out = []
        for ids in sp.encode(texts):
            pieces = [sp.id_to_piece(i) for i in ids]
            out.append(
                (
                    ids,
                    [
                        bytes([int(p[3:5], 16)]) if p in BYTES else p.replace("▁", " ").encode()
                        for p in pieces
                    ],
                )
            )
        return out
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(path))
    vocab = json.loads(tok.to_str())["model"]["vocab"]
    inverse = {i: p for p, i in vocab.items()}
    table = _bytelevel_inverse()
    return [(e.ids, [bytes(table[c] for c in inverse[i]) for i in e.ids]) for e in tok.encode_batch(texts)]


def _bytelevel_inverse() -> dict[str, int]:
    """GPT-2's byte-to-character table, inverted: the character a byte-level vocabulary spells byte b with."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars, extra = list(keep), 0
    for b in range(256):
        if b not in keep:
            keep.append(b)
            chars.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(keep, chars, strict=True)}


def _icu_words(text: str, lang: str) -> list[tuple[int, int]]:
    """Word-like segments (rule status >= 100: numbers, letters, kana, ideographs) from PyICU directly."""
    import icu

    it = icu.BreakIterator.createWordInstance(icu.Locale(lang))
    it.setText(text)
    out, prev = [], 0
    for boundary in it:
        if it.getRuleStatus() >= 100:
            out.append((prev, boundary))
        prev = boundary
    assert all(ord(c) <= 0xFFFF for c in text)  # UTF-16 units are code points here
    return out


def _walk(text: str, lang: str, ids: list[int], pieces: list[bytes]) -> dict[str, int]:
    """The metrics of one text from token byte spans: a token is partial when a byte span edge falls
    inside a character; a character is split when two token byte spans meet its bytes."""
    assert b"".join(pieces) == text.encode("utf-8")  # the pieces spell the text
    char_start = np.cumsum([0] + [len(c.encode()) for c in text])  # [C + 1] byte start of each character
    edges = np.cumsum([0] + [len(p) for p in pieces])  # [T + 1]
    tok_spans = list(itertools.pairwise(edges.tolist()))
    on_char = set(char_start.tolist())
    partial = sum(1 for s, e in tok_spans if s not in on_char or e not in on_char)
    chars = list(itertools.pairwise(char_start.tolist()))
    split = sum(1 for cs, ce in chars if sum(1 for s, e in tok_spans if s < ce and e > cs) >= 2)
    words = [(char_start[a], char_start[b]) for a, b in _icu_words(text, lang)]
    single = sum(1 for ws, we in words if sum(1 for s, e in tok_spans if s < we and e > ws) == 1)
    place = multi = digits1 = 0
    runs = [m.span() for m in re.finditer(r"\d+", text)]
    for a, b in runs:
        owner = np.searchsorted(char_start, edges[1:-1], side="right") - 1  # character holding each boundary
        inner = {int(p) for p in owner if a < p < b}
        place += inner == {p for p in range(a + 1, b) if (b - p) % 3 == 0}
        multi += b - a >= 2
        digits1 += b - a >= 2 and inner == set(range(a + 1, b))
    return {"single": single, "words": len(words), "partial": partial, "split": split, "chars": len(text),
            "tokens": len(ids), "numbers": len(runs), "place": place, "multi": multi,
            "digits1": digits1}  # fmt: skip


def test_report_equals_an_independent_walk_on_flores(flores: dict[str, Any]) -> None:
    toks = {"byte": flores["byte"], "uni": flores["uni"]}
    df = fertility_report(toks, flores["folder"], translit=False, config=ReportConfig(n_boot=0))
    for name, path in toks.items():
        id_lists = {}
        for code in LANGS:
            texts = flores["texts"][code]
            encoded = _pieces(path, texts)
            id_lists[code] = [i for ids, _ in encoded for i in ids]
            walks = [_walk(t, code.split("_")[0], ids, p) for t, (ids, p) in zip(texts, encoded, strict=True)]
            total = {k: sum(w[k] for w in walks) for k in walks[0]}
            r = df[(df.tokenizer == name) & (df.slice_kind == "language") & (df.slice == code)].iloc[0]
            assert r.tokens == total["tokens"] and r.words == total["words"], (name, code)
            assert r.strr == total["single"] / total["words"], (name, code)
            assert r.partial_token_rate == total["partial"] / total["tokens"], (name, code)
            assert r.split_char_rate == total["split"] / total["chars"], (name, code)
            assert (
                r.numbers == total["numbers"]
                and r.number_place_value_rate == total["place"] / total["numbers"]
            )
            # the share of numbers of two or more digits split into single digits
            assert r.number_single_digit_rate == total["digits1"] / total["multi"]
        distinct, only, pairs = R.vocabulary_use(dict(sorted(id_lists.items())))
        rows = df[(df.tokenizer == name) & (df.slice_kind == "language")].set_index("slice")
        assert rows["distinct_ids"].to_dict() == distinct
        assert rows["unique_ids"].astype(int).to_dict() == only
        overlap = df.attrs["vocab_overlap"]
        got = overlap[overlap.tokenizer == name].set_index(["lang_a", "lang_b"])
        assert {k: int(v) for k, v in got["shared_ids"].items()} == {k: v[0] for k, v in pairs.items()}
        assert got["jaccard"].to_dict() == pytest.approx({k: v[1] for k, v in pairs.items()})
    # byte-level BPE splits Thai and Chinese characters (3 UTF-8 bytes each) far more than English ones
    byte = df[(df.tokenizer == "byte") & (df.slice_kind == "language")].set_index("slice")
    assert byte.loc["eng_Latn", "split_char_rate"] < byte.loc["tha_Thai", "split_char_rate"]
    assert isinstance(df.attrs["vocab_overlap"], pd.DataFrame)
