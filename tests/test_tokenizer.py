"""Tokenizer behaviour over both engines: lossless round trips, offsets, artifacts both ecosystems load.

Each of the four combinations (bpe/unigram × hf/sentencepiece) is trained once per module on the embedded
default corpus (12 languages, 9 scripts) with a small vocabulary.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokenloom.corpus.sources import iter_lines, resolve_inputs
from tokenloom.errors import TokenizerError
from tokenloom.fertility import reference
from tokenloom.text.backends.base import Offsets
from tokenloom.text.tokenizer import PROBES, Tokenizer, load_tokenizer
from tokenloom.text.train import train_tokenizer

COMBOS = [("bpe", "hf"), ("unigram", "hf"), ("bpe", "sentencepiece"), ("unigram", "sentencepiece")]
VOCAB = 1200
META = "\u2581"

EDGE_CASES = [
    "",
    " ",
    "   leading and trailing   ",
    "repeated     spaces",
    "tabs\tand\t\ttabs",
    "windows\r\nline\rends\n",
    "NUL\x00inside and \x01\x1f\x7f controls",
    "\u0301 unpaired combining mark, e\u0301\u0302 stacked",
    "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466 ZWJ family, \U0001f3f3\ufe0f\u200d\U0001f308 flag",
    "unseen scripts: \u13a3\u13b3\u13a9 \ua549\ua54c \U0001e900\U0001e922 \U00010330\U00010331",
    "<s> </s> <unk> <pad> <0x41> <0xFF> literal special spellings",
    "\ufeffBOM and \ufffd replacement and \U0010ffff last code point",
]


@pytest.fixture(scope="module")
def corpus_lines(default_corpus: Path) -> list[str]:
    return [line for path in resolve_inputs(default_corpus) for line in iter_lines(path)]


@pytest.fixture(scope="module", params=COMBOS, ids=[f"{a}-{e}" for a, e in COMBOS])
def trained(request: pytest.FixtureRequest, default_corpus: Path) -> Tokenizer:
    algorithm, engine = request.param
    return train_tokenizer(default_corpus, algorithm=algorithm, engine=engine, vocab_size=VOCAB, heldout=0)


@pytest.fixture(scope="module")
def saved(trained: Tokenizer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return trained.save(tmp_path_factory.mktemp("saved") / f"{trained.algorithm}-{trained.engine}")


def test_layout_specials_then_bytes_as_ordinary_pieces(trained: Tokenizer) -> None:
    assert trained.vocab_size == VOCAB
    assert trained.unk_id == 0
    assert trained.byte_fallback_ids == frozenset(range(4, 4 + 256))
    hf = trained.hf_export()
    assert [hf.id_to_token(i) for i in range(4)] == ["<unk>", "<s>", "</s>", "<pad>"]
    assert [hf.id_to_token(4 + b) for b in (0, 0x41, 0xFF)] == ["<0x00>", "<0x41>", "<0xFF>"]
    # ordinary vocabulary entries, not added tokens (decode would skip special added tokens)
    assert hf.get_added_tokens_decoder() == {}
    assert json.loads(hf.to_str())["model"]["byte_fallback"] is True


@pytest.mark.parametrize("text", EDGE_CASES)
def test_edge_cases_round_trip_without_unk(trained: Tokenizer, text: str) -> None:
    ids = trained.encode(text)
    assert trained.decode(ids) == text
    assert trained.unk_id not in ids
    assert trained.is_lossless(text)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    text=st.text(alphabet=st.characters(blacklist_characters=META, blacklist_categories=("Cs",)), max_size=60)
)
def test_round_trip_property(trained: Tokenizer, text: str) -> None:
    ids = trained.encode(text)
    assert trained.decode(ids) == text
    assert trained.unk_id not in ids
    ids2, offsets = trained.encode_with_offsets(text)
    assert ids2 == ids
    assert len(offsets) == len(ids)
    assert all(0 <= s <= e <= len(text) for s, e in offsets)


def test_meta_symbol_is_the_documented_exception(trained: Tokenizer) -> None:
    text = f"a{META}b"
    assert trained.decode(trained.encode(text)) == "a b"
    assert not trained.is_lossless(text)
    assert trained.normalize(text) == "a b"


def test_offsets_cover_text_and_byte_pieces_share_their_character(trained: Tokenizer) -> None:
    text = "Hi \U0001f468\u200d\U0001f469 x\u0301 \u13a3 ok"
    ids, offsets = trained.encode_with_offsets(text)
    tokens = trained.tokens(text)
    for token_id, token, (start, end) in zip(ids, tokens, offsets, strict=True):
        if token_id in trained.byte_fallback_ids:
            assert end == start + 1, (token, start, end)  # one code point: the character the byte belongs to
            assert int(token[3:5], 16) in text[start].encode("utf-8")
        else:
            assert text[start:end] == token.replace(META, " ") or (token == META and start == end)
    # every byte piece of a character carries its span: the bytes of each span rebuild the character
    spans: dict[tuple[int, int], bytes] = {}
    for token_id, token, span in zip(ids, tokens, offsets, strict=True):
        if token_id in trained.byte_fallback_ids:
            spans[span] = spans.get(span, b"") + bytes([int(token[3:5], 16)])
    assert spans and all(data.decode("utf-8") == text[s:e] for (s, e), data in spans.items())


def test_batch_matches_single(trained: Tokenizer, corpus_lines: list[str]) -> None:
    texts = corpus_lines[:40] + EDGE_CASES
    assert trained.encode_batch(texts) == [trained.encode(t) for t in texts]
    assert trained.encode_batch_with_offsets(texts) == [trained.encode_with_offsets(t) for t in texts]
    assert trained.encode_batch([]) == []


def test_count_tokens_is_the_length_of_each_id_list(trained: Tokenizer, corpus_lines: list[str]) -> None:
    texts = [*corpus_lines[:300], "", "a\u0307\u0323 ☃ 😀"]
    want = [len(ids) for ids in trained.encode_batch(texts)]
    for batch_size in (None, 1, 7):
        assert trained.count_tokens(texts, batch_size=batch_size).tolist() == want
    assert trained.count_tokens([]).tolist() == []


def test_encode_ids_flat_is_each_id_list_end_to_end(trained: Tokenizer, corpus_lines: list[str]) -> None:
    texts = [*corpus_lines[:300], "", "a\u0307\u0323 ☃ 😀", *EDGE_CASES]
    want = trained.encode_batch(texts)
    for batch_size in (None, 1, 7):
        lengths, ids = trained.encode_ids_flat(texts, batch_size=batch_size)
        assert lengths.tolist() == [len(w) for w in want]
        assert ids.tolist() == [i for w in want for i in w]
    assert [a.tolist() for a in trained.encode_ids_flat([])] == [[], []]


def _byte_runs_fix_per_token(ids: list[int], offsets: list, text: str, byte_ids: frozenset[int]) -> list:
    """The original per-token loop (an independent oracle for the run-by-run ``_byte_runs_fix``)."""
    out = list(offsets)
    i = 0
    while i < len(ids):
        if ids[i] not in byte_ids:
            i += 1
            continue
        j = i
        while j < len(ids) and ids[j] in byte_ids:
            j += 1
        start, end = min(s for s, _ in offsets[i:j]), max(e for _, e in offsets[i:j])
        lengths = [len(ch.encode("utf-8")) for ch in text[start:end]]
        if sum(lengths) == j - i:
            out[i:j] = [(p, p + 1) for p, n in enumerate(lengths, start=start) for _ in range(n)]
        else:
            out[i:j] = [(start, end)] * (j - i)
        i = j
    return out


def _fast(tok: Tokenizer, texts: list[str]) -> list[tuple[list[int], Offsets]]:
    return tok.encode_batch_with_offsets(texts)


@pytest.mark.parametrize("encode", [_fast, reference.encode_with_offsets], ids=["fast", "reference"])
def test_batch_offsets_equal_per_text_engine_calls(
    trained: Tokenizer, corpus_lines: list[str], encode: Callable[[Tokenizer, list[str]], list[Any]]
) -> None:
    """The batch engine call (sentencepiece: one ``encode(list)``) and the run-by-run byte fix (the
    definition), or the running sums of piece widths (the flat batch of these unnormalized tokenizers), give
    what the engine gives text by text, fixed token by token."""
    assert trained.piece_widths() is not None  # the flat batch takes the piece-width route here
    texts = corpus_lines[:60] + EDGE_CASES + ["\u13a3\u13b3 \U0001e900 mixed \u13a9x", "é\u0301\u13a3\u13a3"]
    got = encode(trained, texts)
    handle = trained.engine_handle()
    for text, (ids, offsets) in zip(texts, got, strict=True):
        if trained.engine == "sentencepiece":
            raw = handle.encode(text, out_type="offset_mapping")
            want_ids, want_offsets = list(raw["ids"]), [tuple(o) for o in raw["offsets"]]
        else:
            enc = handle.encode(text, add_special_tokens=False)
            want_ids, want_offsets = list(enc.ids), [tuple(o) for o in enc.offsets]
        want = _byte_runs_fix_per_token(want_ids, want_offsets, text, trained.byte_fallback_ids)
        assert (ids, offsets) == (want_ids, want), text
    assert any(set(ids) & trained.byte_fallback_ids for ids, _ in got)  # byte runs were exercised


def test_decode_batch_matches_decode(trained: Tokenizer, corpus_lines: list[str]) -> None:
    texts = corpus_lines[:40] + EDGE_CASES
    batch = trained.encode_batch(texts)
    assert trained.decode_batch(batch) == [trained.decode(ids) for ids in batch]
    assert trained.decode_batch([]) == []
    assert trained.decode_batch([[]]) == [""]
    with pytest.raises(TokenizerError, match=f"token id {VOCAB} is out of range"):
        trained.decode_batch([[5], [5, VOCAB]])


def test_normalize_batch_matches_normalize(trained: Tokenizer, corpus_lines: list[str]) -> None:
    texts = corpus_lines[:40] + EDGE_CASES + ["a\u2581b", "ﬁne Ｆｕｌｌ ①"]
    assert trained.normalize_batch(texts) == [trained.normalize(t) for t in texts]
    assert trained.normalize_batch([]) == []


def test_merges_stay_inside_words(trained: Tokenizer, corpus_lines: list[str]) -> None:
    for line in corpus_lines[:50]:
        for token in trained.tokens(line):
            assert META not in token.lstrip(META), token  # the meta-symbol only leads a piece


def test_saved_folder_loads_in_plain_engines_and_encodes_identically(
    trained: Tokenizer, saved: Path, corpus_lines: list[str]
) -> None:
    import sentencepiece as spm
    from tokenizers import Tokenizer as HFTokenizer

    texts = corpus_lines + EDGE_CASES + list(PROBES)
    plain_hf = HFTokenizer.from_file(str(saved / "tokenizer.json"))
    expected = [trained.encode(t) for t in texts]
    assert [e.ids for e in plain_hf.encode_batch(texts, add_special_tokens=False)] == expected
    assert [plain_hf.decode(ids) for ids in expected[-20:]] == [trained.decode(ids) for ids in expected[-20:]]
    if trained.engine == "sentencepiece":
        plain_sp = spm.SentencePieceProcessor(model_file=str(saved / "tokenizer.model"))
        assert [plain_sp.encode(t) for t in texts] == expected
    else:
        assert not (saved / "tokenizer.model").exists()
    again = load_tokenizer(saved)
    assert (again.name, again.engine, again.algorithm) == (saved.name, trained.engine, trained.algorithm)
    assert [again.encode(t) for t in texts] == expected
    assert again.byte_fallback_ids == trained.byte_fallback_ids
    record = json.loads((saved / "tokenloom.json").read_text(encoding="utf-8"))
    assert record["engine"] == trained.engine and record["vocab_size"] == VOCAB
    assert record["corpus"]["files"] == 12
    if trained.engine == "sentencepiece":
        assert record["export"]["identical"] is True and record["export"]["verified_texts"] > len(PROBES)


def test_export_verified_on_the_whole_training_corpus(trained: Tokenizer, corpus_lines: list[str]) -> None:
    if trained.engine != "sentencepiece":
        assert trained.verify_export(corpus_lines) == 0  # its tokenizer.json is the model itself
        return
    assert trained.verify_export(corpus_lines) == len(corpus_lines) + len(PROBES)


def test_load_single_files(saved: Path, trained: Tokenizer) -> None:
    tok = load_tokenizer(saved / "tokenizer.json")
    assert tok.engine == "hf" and tok.name == "tokenizer" and tok.algorithm == trained.algorithm
    assert tok.encode(EDGE_CASES[8]) == trained.encode(EDGE_CASES[8])
    if trained.engine == "sentencepiece":
        tok = load_tokenizer(saved / "tokenizer.model")
        assert tok.engine == "sentencepiece" and tok.byte_fallback_ids == trained.byte_fallback_ids


def test_save_refuses_existing_folder(trained: Tokenizer, saved: Path) -> None:
    from tokenloom.errors import ConfigError

    with pytest.raises(ConfigError, match="already exists"):
        trained.save(saved)
    assert trained.save(saved, overwrite=True) == saved


def test_export_that_differs_is_never_written(default_corpus: Path, tmp_path: Path) -> None:
    tok = train_tokenizer(
        default_corpus, algorithm="bpe", engine="sentencepiece", vocab_size=VOCAB, heldout=0
    )
    other = train_tokenizer(
        default_corpus, algorithm="unigram", engine="sentencepiece", vocab_size=VOCAB, heldout=0
    )
    from tokenloom.text.backends.sentencepiece import SentencePieceBackend

    model = tok.backend.model  # type: ignore[attr-defined]
    wrong = SentencePieceBackend(tok.engine_handle(), model, hf=other.hf_export())
    tok = Tokenizer(name=tok.name, backend=wrong, record=tok.record)  # an export that must be caught
    with pytest.raises(TokenizerError, match="differs from sentencepiece"):
        tok.save(tmp_path / "out", strict=True)
    assert list(tmp_path.iterdir()) == []
    tok.save(tmp_path / "out")  # by default the model is saved and the export left out, with the reason
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["tokenizer.model", "tokenloom.json"]
    assert "differs from sentencepiece" in tok.record["skipped_formats"]["tokenizer.json"]


def test_foreign_sentencepiece_model_with_default_normalization(default_corpus: Path, tmp_path: Path) -> None:
    import sentencepiece as spm

    files = ",".join(str(p) for p in resolve_inputs(default_corpus))
    spm.SentencePieceTrainer.train(
        input=files,
        model_prefix=str(tmp_path / "foreign"),
        vocab_size=900,
        minloglevel=2,
        model_type="unigram",
    )
    raw = spm.SentencePieceProcessor(model_file=str(tmp_path / "foreign.model"))
    tok = load_tokenizer(tmp_path / "foreign.model")
    assert (tok.engine, tok.algorithm, tok.name, tok.byte_fallback_ids) == (
        "sentencepiece",
        "unigram",
        "foreign",
        frozenset(),
    )
    text = "  Ｈｅｌｌｏ   world ﬁ "
    assert tok.encode(text) == raw.encode(text)
    assert tok.normalize(text) == raw.normalize(text).replace(META, " ")
    assert not tok.is_lossless(text)  # nmt_nfkc and whitespace clean-up change the text


def test_foreign_byte_level_bpe_json(tmp_path: Path) -> None:
    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers import decoders, models, pre_tokenizers, trainers

    hf = HFTokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    hf.train_from_iterator(
        ["hello world"] * 10,
        trainers.BpeTrainer(
            vocab_size=300, show_progress=False, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
        ),
    )
    hf.save(str(tmp_path / "gpt2ish.json"))
    tok = load_tokenizer(tmp_path / "gpt2ish.json")
    assert (tok.engine, tok.algorithm, tok.byte_fallback_ids, tok.unk_id) == (
        "hf",
        "bytelevel-bpe",
        frozenset(),
        None,
    )
    assert tok.backend.byte_fallback == "byte_level"  # every piece spells bytes: nothing falls back
    assert (
        len(tok.encode("ö")) == 2 and set(tok.encode("ö")) <= tok.fallback_ids
    )  # two partial-character tokens
    assert not set(tok.encode("hello")) & tok.fallback_ids
    assert tok.decode(tok.encode("hello wörld")) == "hello wörld"


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("broken.json", b'{"model": {"type": "BPE", "vocab": 3}}'),
        ("notjson.json", b"{ this is not json"),
        ("latin1.json", b'{"a": "\xff"}'),
        ("garbage.model", b"\x00\x01garbage\xff" * 20),
        ("empty.model", b""),
        ("text.model", b"just some text, not a protobuf\n"),
        ("plain.json", b"not json at all"),
    ],
)
def test_load_corrupt_files_raise_tokenizer_error(tmp_path: Path, name: str, content: bytes) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(TokenizerError) as exc:
        load_tokenizer(path)
    assert str(path) in str(exc.value)
    if name.endswith(".json"):  # a .json file is judged as a tokenizer.json, whatever its first bytes
        assert "tokenizer.json" in str(exc.value)
        assert "sentencepiece" not in str(exc.value)


@pytest.mark.parametrize(
    ("content", "found"),
    [
        (b'{"tokenizer_class": "LlamaTokenizer", "model_max_length": 4096}', "keys ['model_max_length', "),
        (b"[1, 2, 3]", "a JSON list"),
        (b'"tokenizer"', "a JSON str"),
        (b'{"model": "bpe"}', "keys ['model']"),
    ],
)
def test_load_valid_json_that_is_not_a_tokenizer(tmp_path: Path, content: bytes, found: str) -> None:
    """Valid JSON of another kind (e.g. a tokenizer_config.json) is named as such, not as a syntax error."""
    path = tmp_path / "tokenizer_config.json"
    path.write_bytes(content)
    with pytest.raises(TokenizerError) as exc:
        load_tokenizer(path)
    message = str(exc.value)
    assert f"{path}: valid JSON but not a tokenizer.json (no 'model' object; found {found}" in message
    assert "not valid UTF-8 JSON" not in message and "line 1 column" not in message


def test_load_truncated_model_and_bad_folders(saved: Path, trained: Tokenizer, tmp_path: Path) -> None:
    if trained.engine == "sentencepiece":
        cut = tmp_path / "cut.model"
        cut.write_bytes((saved / "tokenizer.model").read_bytes()[:777])
        with pytest.raises(TokenizerError, match=r"cut\.model"):
            load_tokenizer(cut)
    with pytest.raises(TokenizerError, match="does not exist"):
        load_tokenizer(tmp_path / "nothing")
    (tmp_path / "empty_dir").mkdir()
    with pytest.raises(TokenizerError, match=r"no tokenizer\.json or tokenizer\.model"):
        load_tokenizer(tmp_path / "empty_dir")


def test_decode_rejects_out_of_range_ids(trained: Tokenizer) -> None:
    with pytest.raises(TokenizerError, match=f"token id {VOCAB} is out of range"):
        trained.decode([5, VOCAB])


@pytest.mark.parametrize("engine", ["hf", "sentencepiece"])
@pytest.mark.parametrize("normalization", ["nfc", "nfkc"])
def test_normalization_is_visible(
    default_corpus: Path, engine: str, normalization: str, tmp_path: Path
) -> None:
    import unicodedata

    tok = train_tokenizer(
        default_corpus,
        engine=engine,
        vocab_size=VOCAB,
        normalization=normalization,
        heldout=0,  # type: ignore[arg-type]
    )
    for text in ["Cafe\u0301 \u212b", "ﬁne Ｆｕｌｌ ①", "plain text"]:
        expected = unicodedata.normalize(normalization.upper(), text)
        assert tok.normalize(text) == expected
        assert tok.normalize_batch([text, text]) == [expected, expected]
        assert tok.decode(tok.encode(text)) == expected
        assert tok.is_lossless(text) == (expected == text)
    assert tok.piece_widths() is None  # normalization moves offsets: no running-sum fast path
    saved = tok.save(tmp_path / "n")  # the export (Precompiled charsmap or NFC/NFKC) verifies on the sample
    assert load_tokenizer(saved).encode("ﬁne e\u0301") == tok.encode("ﬁne e\u0301")


@pytest.mark.parametrize("normalization", ["nfc", "nfkc"])
def test_engines_part_on_marks_out_of_canonical_order_as_documented(
    default_corpus: Path, corpus_lines: list[str], normalization: str
) -> None:
    """docs/tokenizers.md: the tokenizers engine normalizes as Unicode does; sentencepiece's rules compose but
    never reorder combining marks, so text whose marks are out of canonical order normalizes differently."""
    import unicodedata

    form = normalization.upper()
    hf, sp = (
        train_tokenizer(default_corpus, engine=e, vocab_size=VOCAB, normalization=normalization, heldout=0)  # type: ignore[arg-type]
        for e in ("hf", "sentencepiece")
    )
    unordered = {  # text -> what sentencepiece gives (Unicode reorders the marks first)
        "a\u0307\u0323": "\u0227\u0323",  # a + dot above + dot below
        "\u0633\u0651\u064f": "\u0633\u0651\u064f",  # Arabic seen, shadda, damma
        "e\u0301\u0323 o\u0300\u0323": "\u00e9\u0323 \u00f2\u0323",  # Yoruba: tone mark before dot below
    }
    for text, spm_form in unordered.items():
        unicode_form = unicodedata.normalize(form, text)
        assert unicode_form != spm_form
        assert hf.normalize(text) == unicode_form and hf.decode(hf.encode(text)) == unicode_form
        assert sp.normalize(text) == spm_form and sp.decode(sp.encode(text)) == spm_form
        ordered = unicodedata.normalize("NFD", text)  # the same marks in canonical order: the engines agree
        assert sp.normalize(ordered) == hf.normalize(ordered) == unicodedata.normalize(form, ordered)
    assert sp.normalize_batch(corpus_lines) == [unicodedata.normalize(form, t) for t in corpus_lines]


def test_lone_surrogate_gets_a_clear_error(trained: Tokenizer) -> None:
    for call in (
        trained.encode,
        trained.tokens,
        trained.encode_with_offsets,
        lambda t: trained.encode_batch(["ok", t]),
    ):
        with pytest.raises(TokenizerError, match="lone surrogate U\\+D800 at index 1"):
            call("a\ud800b")


def test_piece_widths_give_the_engine_offsets(trained: Tokenizer, corpus_lines: list[str]) -> None:
    """Where the running sum of piece widths applies (no normalization, no prefix space), it gives exactly
    the offsets of ``encode_batch_with_offsets``; texts where it cannot hold are flagged, never wrong."""
    import numpy as np

    widths = trained.piece_widths()
    assert widths is not None  # normalization "none": every trained combination qualifies
    texts = corpus_lines[:80] + EDGE_CASES + ["a\u2581b \u2581", "\U0001e900\U0001e922x\u13a3"]
    ref = reference.encode_with_offsets(trained, texts)  # the engine's offsets
    flat = reference.encode_flat(trained, texts)  # the same, in whole-batch coordinates
    out, ok = widths.offsets(flat.ids, flat.lengths, np.array([len(t) for t in texts]), flat.bases)
    assert ok.all()
    assert np.array_equal(out, flat.offsets)
    # the round-trip rule (the pieces spell the text) agrees with decoding
    rule = widths.roundtrip_exact(texts)
    assert rule is not None
    assert rule.tolist() == [trained.decode(got) == t for (got, _), t in zip(ref, texts, strict=True)]
    assert not rule.all()  # "▁" in the input decodes as a space


def test_piece_widths_known_answer() -> None:
    import numpy as np

    from tokenloom.text.offsets import piece_widths

    vocab = ["<unk>", "▁a", "b", "<0xC3>", "<0xA9>", "▁c"]
    widths = piece_widths(vocab, byte_ids={3, 4}, unsafe_ids={0})
    # " abé c" | "" | "x" as <unk> | a continuation byte with no lead | "b" after them
    ids = np.array([1, 2, 3, 4, 5, 0, 4, 2])
    lengths = np.array([5, 0, 1, 1, 1])
    bases = np.array([0, 7, 8, 10, 12])  # where each text starts in "\n".join(texts)
    out, ok = widths.offsets(ids, lengths, np.array([6, 0, 1, 1, 1]), bases)
    assert ok.tolist() == [True, True, False, False, True]
    assert out[:5].tolist() == [[0, 2], [2, 3], [3, 4], [3, 4], [4, 6]]
    assert out[7].tolist() == [12, 13]  # whole-batch coordinates: its text starts at 12
    out, ok = widths.offsets(
        np.array([9]), np.array([1]), np.array([1]), np.array([0])
    )  # not in the vocabulary
    assert ok.tolist() == [False]
    # byte runs checked against the characters' UTF-8 lengths: "é" has 2 bytes, "x" 1
    for text, good in (("é", True), ("x", False)):
        cps = np.array([ord(ch) for ch in text])
        _, ok = widths.offsets(np.array([3, 4]), np.array([2]), np.array([1]), np.array([0]), cps=cps)
        assert ok.tolist() == [good], text


def test_first_difference_names_the_position() -> None:
    from tokenloom.text.backends.base import first_difference

    assert first_difference([5, 6, 7, 8], [5, 6, 9, 8]).startswith("first difference at token 2 of 4 vs 4")
    assert "at token 2 of 2 vs 3" in first_difference([1, 2], [1, 2, 3])  # one is a prefix of the other
