"""The fast ids engine (gigatoken) beside the reference engine: identical ids, verified at dispatch.

Oracles: the reference backends (the tokenizers engine, tiktoken) — every id the fast engine gives is
compared with theirs on FLORES-200 devtest and on random Unicode text (hypothesis); a stub engine that gets
one id wrong must be caught by the probe set and not used; reports must be byte-identical either way.
"""

from __future__ import annotations

import logging
import pickle
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tokenloom
from tokenloom.errors import ConfigError, TokenizerError
from tokenloom.fertility.report import ReportConfig, fertility_report
from tokenloom.fertility.writers import write_report
from tokenloom.text.adapt import load_tokenizer_spec
from tokenloom.text.backends.base import EngineBackend
from tokenloom.text.backends.dispatch import EngineDispatch, probe_texts
from tokenloom.text.backends.gigatoken import GigatokenBackend, gigatoken_backend
from tokenloom.text.tokenizer import Tokenizer

pytest.importorskip("gigatoken")
pytest.importorskip("tiktoken")

DEV_LANGS = ("eng_Latn", "deu_Latn", "rus_Cyrl", "ell_Grek", "arb_Arab", "hin_Deva", "tha_Thai", "zho_Hans")
KINDS = ("bytelevel-o200k", "bytelevel-gpt2", "bytelevel-cl100k", "bpe-byte-fallback", "spm-bpe", "tiktoken")


def _flores(shared_dir: Path, split: str, n: int, langs: tuple[str, ...] | None = None) -> list[str]:
    folder = shared_dir / "corpora" / "flores200" / split
    paths = [folder / f"{lang}.txt" for lang in langs] if langs else sorted(folder.glob("*.txt"))
    return [line for path in paths for line in path.read_text("utf-8").splitlines()[:n]]


@pytest.fixture(scope="module")
def toks(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Tokenizer]:
    """One tokenizer of every kind the fast engine serves, trained on 200 lines of 8 FLORES dev languages."""
    train = _flores(shared_dir, "dev", 200, DEV_LANGS)
    out: dict[str, Tokenizer] = {}
    for pre in ("o200k", "gpt2", "cl100k"):
        out[f"bytelevel-{pre}"] = tokenloom.train_tokenizer(
            iter(train), algorithm="bytelevel-bpe", pretokenizer=pre, vocab_size=3000, heldout=0, quiet=True
        )
    out["bpe-byte-fallback"] = tokenloom.train_tokenizer(
        iter(train), algorithm="bpe", engine="hf", vocab_size=3000, heldout=0, quiet=True
    )
    out["spm-bpe"] = tokenloom.train_tokenizer(
        iter(train), algorithm="bpe", vocab_size=3000, heldout=0, quiet=True
    )
    assert out["spm-bpe"].engine == "sentencepiece"
    folder = tmp_path_factory.mktemp("engines") / "bl"
    out["bytelevel-o200k"].save(folder, formats=("tokenizer.json", "tiktoken"))
    out["tiktoken"] = load_tokenizer_spec(f"tiktoken:{folder / 'tokenizer.tiktoken'}")
    assert out["tiktoken"].engine == "tiktoken"
    return out


def _fast(tok: Tokenizer) -> EngineBackend:
    return gigatoken_backend(tok.backend)


@pytest.mark.parametrize("kind", KINDS)
def test_every_supported_kind_is_served_and_verified(toks: dict[str, Tokenizer], kind: str) -> None:
    info = toks[kind].engine_info()
    assert info["ids"].engine == "gigatoken", info["ids"].reason
    assert info["ids"].reason.startswith("verified: identical ids")
    assert info["decode"].engine == toks[kind].engine  # everything but ids stays with the reference


@pytest.mark.parametrize("kind", KINDS)
def test_identical_ids_on_flores_devtest(shared_dir: Path, toks: dict[str, Tokenizer], kind: str) -> None:
    texts = _flores(shared_dir, "devtest", 40)  # 99 languages, 29 scripts
    tok = toks[kind]
    want = tok.with_engine("reference").encode_batch(texts)
    fast = tok.with_engine("gigatoken")
    assert fast.encode_batch(texts) == want
    assert fast.count_tokens(texts, batch_size=97).tolist() == [len(ids) for ids in want]
    assert fast.count_tokens(texts[:70], batch_size=7).tolist() == [len(ids) for ids in want[:70]]  # 1 by 1
    flat = fast.encode_flat(texts)
    assert flat.id_lists() == want
    print(f"{kind}: {len(texts)} devtest lines, {sum(map(len, want))} tokens, 0 differ")


def test_a_report_gives_the_fast_engine_a_chunk_in_one_call(
    shared_dir: Path, toks: dict[str, Tokenizer], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``ReportConfig.batch_size`` bounds the lists an engine builds; the fast engine gives arrays, and a
    call has a fixed cost, so a report hands it a chunk at once. Asked for a batch size, it keeps to it."""
    texts = _flores(shared_dir, "devtest", 300, ("eng_Latn",))
    (tmp_path / "eng_Latn.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    tok = toks["bpe-byte-fallback"]
    fast, ref = tok.with_engine("gigatoken"), tok.with_engine("reference")
    assert fast.ids_flat and not ref.ids_flat
    backend = fast._engines.ids_backend()
    assert isinstance(backend, GigatokenBackend)
    calls: list[int] = []
    monkeypatch.setattr(backend, "_engine", _Counting(backend.handle, calls))
    config = ReportConfig(batch_size=50, numbers=False)
    got = fertility_report({"t": fast}, tmp_path, config=config)
    assert calls == [300]
    pd.testing.assert_frame_equal(
        got, fertility_report({"t": ref}, tmp_path, config=config), check_exact=True
    )
    calls.clear()
    assert fast.count_tokens(texts, batch_size=50).tolist() == ref.count_tokens(texts).tolist()
    assert calls == [50] * 6


class _Counting:
    """A gigatoken engine that records the size of every batch call."""

    def __init__(self, engine: object, calls: list[int]) -> None:
        self._engine, self._calls = engine, calls

    def encode_batch(self, texts: list[str]) -> object:
        self._calls.append(len(texts))
        return self._engine.encode_batch(texts)  # type: ignore[attr-defined]

    def encode(self, text: str) -> object:
        return self._engine.encode(text)  # type: ignore[attr-defined]


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_identical_ids_on_all_of_flores_devtest(
    shared_dir: Path, toks: dict[str, Tokenizer], kind: str
) -> None:
    texts = _flores(shared_dir, "devtest", 10**6)
    lengths, ids = _fast(toks[kind]).encode_batch_flat(texts)
    want_lengths, want_ids = toks[kind].backend.encode_batch_flat(texts)
    assert np.array_equal(lengths, want_lengths) and np.array_equal(ids, want_ids)


_COMBINING = st.characters(min_codepoint=0x300, max_codepoint=0x36F) | st.sampled_from(
    ["\u093f", "\u094d", "\u0e31", "\u05b8", "\u200d", "\ufe0f", "\U0001f3fd", "\u0301"]
)
# any code point of any plane but lone surrogates, and base characters followed by combining sequences
_UNICODE = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
_SEQUENCES = st.lists(
    st.tuples(st.characters(blacklist_categories=("Cs",)), st.lists(_COMBINING, max_size=4)), max_size=12
).map(lambda parts: "".join(base + "".join(marks) for base, marks in parts))


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=40, deadline=None)
@given(texts=st.lists(_UNICODE | _SEQUENCES, min_size=1, max_size=8))
def test_identical_ids_on_random_unicode(toks: dict[str, Tokenizer], kind: str, texts: list[str]) -> None:
    ref = toks[kind].backend
    lengths, ids = _fast(toks[kind]).encode_batch_flat(texts)
    want_lengths, want_ids = ref.encode_batch_flat(texts)
    assert lengths.tolist() == want_lengths.tolist()
    assert ids.tolist() == want_ids.tolist()


class _OneWrongId(GigatokenBackend):
    """The fast engine with one id of one probe text changed in batch calls: must never be used."""

    def encode_batch_flat(self, texts: Any) -> tuple[np.ndarray, np.ndarray]:
        lengths, ids = super().encode_batch_flat(texts)
        if len(texts) > 7:  # a whole batch (calls of one text are right)
            ids = ids.copy()
            ids[int(lengths[:7].sum())] += 1  # the first token of the eighth text
        return lengths, ids


class _WrongAlone(GigatokenBackend):
    """Right on batches, one id off when a text is encoded alone: caught too."""

    def encode_batch_flat(self, texts: Any) -> tuple[np.ndarray, np.ndarray]:
        lengths, ids = super().encode_batch_flat(texts)
        if len(texts) == 1 and texts[0] == probe_texts()[3] and ids.size:
            ids = ids.copy()
            ids[-1] += 1
        return lengths, ids


def _stub(reference: EngineBackend) -> EngineBackend:
    real = gigatoken_backend(reference)
    return _OneWrongId(reference, real.handle)


def test_a_wrong_id_is_caught_by_the_probe_and_not_used(
    toks: dict[str, Tokenizer], caplog: pytest.LogCaptureFixture
) -> None:
    ref = toks["bytelevel-o200k"].backend
    dispatch = EngineDispatch(ref, "auto", candidate=_stub)
    with caplog.at_level(logging.WARNING, logger="tokenloom.text.backends.dispatch"):
        assert dispatch.ids_backend() is ref
    assert "differs from hf on the probe set: text #7" in caplog.text
    info = dispatch.info()["ids"]
    assert info.engine == "hf" and "differs" in info.reason
    with pytest.raises(TokenizerError, match=r"engine='gigatoken' cannot be used: .* differs"):
        EngineDispatch(ref, "gigatoken", candidate=_stub).ids_backend()
    alone = EngineDispatch(ref, "auto", candidate=lambda r: _WrongAlone(r, gigatoken_backend(r).handle))
    assert alone.ids_backend() is ref and "text #3" in alone.info()["ids"].reason


def test_probe_set_covers_what_it_promises() -> None:
    texts = probe_texts()
    assert any(len(t) == 100_000 and len(set(t)) == 1 for t in texts)
    assert any("\x00" in t for t in texts) and any("\u200d" in t for t in texts)
    scripts = {path.stem for path in tokenloom._corpora.default_corpus().glob("*.txt")}
    assert len(scripts) >= 30 and len(texts) > 3 * len(scripts) - 5


def test_unserved_kinds_and_a_missing_engine_fall_back_with_the_reason(
    toks: dict[str, Tokenizer], monkeypatch: pytest.MonkeyPatch, default_corpus: Path
) -> None:
    unigram = tokenloom.train_tokenizer(
        default_corpus, algorithm="unigram", vocab_size=1000, heldout=0, quiet=True, allow_smaller_vocab=True
    )
    assert unigram.engine_info()["ids"].engine == "sentencepiece"
    assert "this is unigram on the sentencepiece engine" in unigram.engine_info()["ids"].reason
    custom = tokenloom.train_tokenizer(
        default_corpus,
        algorithm="bytelevel-bpe",
        pretokenizer=r"\w+|\s+",
        vocab_size=400,
        heldout=0,
        quiet=True,
        allow_smaller_vocab=True,
    )
    assert "no fast pretokenizer" in custom.engine_info()["ids"].reason
    assert custom.encode_batch(["a b"]) == custom.with_engine("reference").encode_batch(["a b"])
    monkeypatch.setitem(sys.modules, "gigatoken", None)  # as if not installed
    absent = toks["bytelevel-o200k"].with_engine("auto")
    assert absent.engine_info()["ids"].engine == "hf"
    assert "gigatoken is not installed" in absent.engine_info()["ids"].reason
    assert absent.count_tokens(["hello world"]).tolist() == [len(absent.encode("hello world"))]
    with pytest.raises(TokenizerError, match="not installed"):
        toks["bytelevel-o200k"].with_engine("gigatoken").encode("x")
    with pytest.raises(ConfigError, match="engine='fastest'"):
        toks["bytelevel-o200k"].with_engine("fastest")  # type: ignore[arg-type]


def test_a_batch_the_engine_fails_on_gets_the_reference_error(toks: dict[str, Tokenizer]) -> None:
    fast = toks["bytelevel-o200k"].with_engine("gigatoken")
    with pytest.raises(TokenizerError, match="lone surrogate U\\+D800"):
        fast.count_tokens(["fine", "bad \ud800 text"])


def test_pickled_tokenizer_decides_again(toks: dict[str, Tokenizer]) -> None:
    tok = toks["bpe-byte-fallback"]
    tok.engine_info()
    copy = pickle.loads(pickle.dumps(tok))
    assert copy.engine_info()["ids"].engine == "gigatoken"
    assert copy.encode_batch(["héllo wörld"]) == tok.with_engine("reference").encode_batch(["héllo wörld"])


@pytest.mark.parametrize("metrics", ["lengths", pytest.param("full", marks=pytest.mark.slow)])
def test_reports_are_byte_identical_with_and_without_the_engine(
    toks: dict[str, Tokenizer], default_corpus: Path, tmp_path: Path, metrics: str
) -> None:
    files = {}
    for engine in ("auto", "reference"):
        chosen = {
            k: toks[k].with_engine(engine) for k in ("bytelevel-o200k", "bpe-byte-fallback", "tiktoken")
        }  # type: ignore[arg-type]
        df = fertility_report(chosen, default_corpus, config=ReportConfig(metrics=metrics, n_boot=20))  # type: ignore[arg-type]
        paths = write_report(df, tmp_path / engine)
        files[engine] = {kind: p.read_bytes() for kind, p in paths.items() if p.suffix in (".csv", ".md")}
        if engine == "auto":
            assert chosen["bpe-byte-fallback"].engine_info()["ids"].engine == "gigatoken"
    assert files["auto"] and files["auto"] == files["reference"]


def test_cli_engine_flag_gives_the_same_report(
    toks: dict[str, Tokenizer], default_corpus: Path, tmp_path: Path
) -> None:
    from tokenloom import cli

    folder = toks["bpe-byte-fallback"].save(tmp_path / "tok")
    csv = {}
    for engine in ("gigatoken", "reference"):
        out = tmp_path / engine
        argv = ["fertility", "--tokenizer", str(folder), "--corpus", str(default_corpus), "--engine", engine]
        assert cli.main([*argv, "--metrics", "lengths", "--out", str(out), "--quiet"]) == 0
        csv[engine] = (out / "report.csv").read_bytes()
    assert csv["gigatoken"] == csv["reference"]
    with pytest.raises(SystemExit):
        cli.main(
            ["fertility", "--tokenizer", str(folder), "--corpus", str(default_corpus), "--engine", "fast"]
        )


FLORES_SAMPLE = ("eng_Latn", "rus_Cyrl", "arb_Arab", "hin_Deva", "tha_Thai", "zho_Hans", "jpn_Jpan", "amh_Ethi")  # fmt: skip


def test_full_report_on_flores_devtest_is_identical_with_the_fast_engine(
    toks: dict[str, Tokenizer], shared_dir: Path, tmp_path: Path
) -> None:
    """The full report (transliterated and numbers slices included) on a FLORES-200 devtest sample: ids from
    the fast engine and offsets from piece widths give the same DataFrame and the same files as the
    reference engine doing every job."""
    corpus = tmp_path / "devtest"
    corpus.mkdir()
    folder = shared_dir / "corpora" / "flores200" / "devtest"
    for lang in FLORES_SAMPLE:  # scripts with byte pieces (Ethiopic, CJK, Thai) and without
        lines = (folder / f"{lang}.txt").read_text("utf-8").splitlines()[:120]
        (corpus / f"{lang}.txt").write_text("\n".join(lines) + "\n", "utf-8")
    frames, files = {}, {}
    for engine in ("auto", "reference"):
        chosen = {k: toks[k].with_engine(engine) for k in ("bytelevel-o200k", "bpe-byte-fallback")}  # type: ignore[arg-type]
        df = fertility_report(chosen, corpus, translit=True, config=ReportConfig(n_boot=50))  # type: ignore[arg-type]
        frames[engine] = df
        paths = write_report(df, tmp_path / engine)
        files[engine] = {kind: p.read_bytes() for kind, p in paths.items() if p.suffix in (".csv", ".md")}
        if engine == "auto":
            for tok in chosen.values():
                assert tok.engine_info()["ids"].engine == "gigatoken"
            assert chosen["bpe-byte-fallback"].engine_info()["offsets"].engine == "gigatoken"
    import pandas as pd

    pd.testing.assert_frame_equal(frames["auto"], frames["reference"], check_exact=True)
    assert set(frames["auto"].slice_kind) >= {"language", "transliterated", "numbers"}
    assert files["auto"] and files["auto"] == files["reference"]
