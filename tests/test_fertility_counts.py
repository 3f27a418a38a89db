"""tokenloom.fertility.counts and .counting: per-slice counts merge exactly, whatever the partition.

Per-text counts come from real FLORES text (eng_Latn as pivot, hin_Deva) counted by ``ChunkCounter`` with a
real sentencepiece tokenizer; hypothesis then splits each part into chunks, deals the chunks to two
"workers" that count and merge in any order, and checks the merged, closed, finished slice equals the
one-pass result exactly.
"""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenloom.corpus.load import CorpusPart
from tokenloom.fertility.counting import ChunkCounter, CountOptions, part_id
from tokenloom.fertility.counts import ChunkCounts, SliceCounts, close_part
from tokenloom.fertility.slices import SliceConfig
from tokenloom.text.tokenizer import load_tokenizer
from tokenloom.unicode import get_segmenter

N_TEXTS = 40
LANGS = ("eng_Latn", "hin_Deva")


@pytest.fixture(scope="module")
def counted(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Per-text counts of the first N_TEXTS FLORES devtest sentences of each language, one chunk per part."""
    import sentencepiece as spm

    src = shared_dir / "corpora" / "flores200" / "devtest"
    texts = {code: (src / f"{code}.txt").read_text("utf-8").splitlines()[:N_TEXTS] for code in LANGS}
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter([t for ts in texts.values() for t in ts]), model_writer=model, vocab_size=400,
        model_type="unigram", byte_fallback=True, character_coverage=0.99, hard_vocab_limit=False, minloglevel=2,
    )  # fmt: skip
    path = tmp_path_factory.mktemp("counts") / "uni.model"
    path.write_bytes(model.getvalue())
    tok = load_tokenizer(path)
    counter = ChunkCounter(
        {"uni": tok}, pivot="eng_Latn", segmenter=get_segmenter("icu"), options=CountOptions(),
        slice_config=SliceConfig(translit=False),
    )  # fmt: skip
    parts, chunks = {}, {}
    for code in LANGS:  # the pivot first
        part = CorpusPart(code, "language", code, code[:3], code[4:], align="flores")
        (name, key, _), *_ = counter.count(part, texts[code], list(range(N_TEXTS)))
        assert (name, key) == ("uni", ("all", "all"))
        parts[code] = part
        chunks[code] = _whole(counter, part, texts[code])
    return {"tok": tok, "parts": parts, "chunks": chunks}


def _whole(counter: ChunkCounter, part: CorpusPart, texts: list[str]) -> ChunkCounts:
    """The ChunkCounts of all of a part's texts (through the counter's own per-text step)."""
    pending = counter.submit(part, texts, list(range(len(texts))), 0)
    words, flat = counter._words(part, texts)
    sizes = np.stack([np.fromiter(map(len, texts), np.int64), [len(t.encode()) for t in texts]])
    return counter._text_counts("uni", pending, words, flat, sizes)


def _slice(c: ChunkCounts, i: int, j: int) -> ChunkCounts:
    """Texts i..j of a chunk as a chunk of their own (what counting them alone gives)."""
    cum = np.concatenate([[0], np.cumsum(c.tokens)])
    ids = c.flat_ids[cum[i] : cum[j]]
    per_text = {
        name: getattr(c, name)[i:j]
        for name in ("tokens", "words", "chars", "bytes", "continued", "byte_fallback", "unk", "roundtrip",
                     "norm_changed", "premium", "aligned", "more")
    }  # fmt: skip
    return ChunkCounts(
        start=c.start + i, **per_text, flat_ids=ids, token_text=c.token_text[cum[i] : cum[j]] - i,
        id_counts=np.bincount(ids, minlength=len(c.id_counts)),
    )  # fmt: skip


def _same(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert a.keys() == b.keys()
    for k in a:
        both_nan = isinstance(a[k], float) and math.isnan(a[k]) and math.isnan(b[k])
        assert both_nan or a[k] == b[k], (k, a[k], b[k])


def _of(c: ChunkCounts, rows: np.ndarray, part: CorpusPart, vocab: int) -> SliceCounts:
    local = np.flatnonzero(rows[c.start : c.start + len(c)]).tolist()
    return SliceCounts.of(c, local, part=part_id(part), vocab_size=vocab, langs={part.lang: len(local)},
                          scripts={part.script or "": len(local)})  # fmt: skip


def _finish(s: SliceCounts, parts: dict[str, CorpusPart], vocab: int, n_boot: int) -> dict[str, Any]:
    for code in LANGS:
        s = s.close(part_id(parts[code]), N_TEXTS, n_boot=n_boot, seed=3)
    return s.finish(vocab_size=vocab, level=0.9, renyi_alpha=2.5, roundtrip=True)


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_any_partition_merges_into_the_one_pass_result(counted: dict[str, Any], data: st.DataObject) -> None:
    parts, chunks, vocab = counted["parts"], counted["chunks"], int(counted["tok"].vocab_size)
    n_boot = data.draw(st.sampled_from([0, 1, 50]))
    members = {  # the texts of each part in the slice (a script slice holds a subset)
        code: np.array(data.draw(st.lists(st.booleans(), min_size=N_TEXTS, max_size=N_TEXTS)))
        for code in LANGS
    }
    one_pass = SliceCounts()
    workers = [SliceCounts(), SliceCounts()]
    for code in LANGS:
        whole = chunks[code]
        one_pass = one_pass.merge(_of(whole, members[code], parts[code], vocab))
        cuts = sorted(set(data.draw(st.lists(st.integers(1, N_TEXTS - 1), max_size=6))))
        bounds = list(zip([0, *cuts], [*cuts, N_TEXTS], strict=True))
        order = data.draw(st.permutations(range(len(bounds))))  # chunks counted in any order
        for k in order:
            w = data.draw(st.integers(0, 1))
            workers[w] = workers[w].merge(_of(_slice(whole, *bounds[k]), members[code], parts[code], vocab))
    merged = workers[0].merge(workers[1]) if data.draw(st.booleans()) else workers[1].merge(workers[0])
    _same(_finish(merged, parts, vocab, n_boot), _finish(one_pass, parts, vocab, n_boot))


def test_counts_of_a_real_chunk(counted: dict[str, Any]) -> None:
    """Known relations on real text: the pivot's premium is 1 per text; sums equal the per-text arrays."""
    eng, hin = counted["chunks"]["eng_Latn"], counted["chunks"]["hin_Deva"]
    assert eng.aligned.all() and (eng.premium == 1.0).all()
    assert hin.aligned.all() and np.allclose(hin.premium, hin.tokens / eng.tokens)
    vocab = int(counted["tok"].vocab_size)
    s = SliceCounts.of(
        hin, None, part="p", vocab_size=vocab, langs={"hin": N_TEXTS}, scripts={"Deva": N_TEXTS}
    )
    assert (s.texts, s.tokens, s.words, s.pairs) == (N_TEXTS, hin.tokens.sum(), hin.words.sum(), N_TEXTS)
    assert s.id_counts is not None and s.id_counts.sum() == s.tokens
    with pytest.raises(ValueError, match="still open"):
        s.finish(vocab_size=vocab, level=0.95, renyi_alpha=2.5, roundtrip=True)
    empty = SliceCounts()
    done = close_part([s, empty], "p", N_TEXTS, n_boot=20, seed=0)
    assert done[1] is empty and not done[0].open  # a slice without texts of the part is left as it is
    row = done[0].finish(vocab_size=vocab, level=0.95, renyi_alpha=2.5, roundtrip=True)
    assert row["premium_mean"] == pytest.approx(float(np.mean(hin.tokens / eng.tokens)))
    assert row["premium_median"] == float(np.median(hin.tokens / eng.tokens))
    assert row["fertility_lo"] <= row["fertility"] <= row["fertility_hi"]
    assert (row["lang"], row["script"]) == ("hin", "Deva")
    with pytest.raises(ValueError, match="counted with positions"):
        s.merge(s).close("p", N_TEXTS, n_boot=0, seed=0)  # the same texts twice


@pytest.mark.parametrize("metrics", ["full", "lengths"])
def test_a_counted_chunks_encodings_are_not_kept(counted: dict[str, Any], metrics: str) -> None:
    """With an executor, an encoding the counter queued is dropped once its chunk is counted (the counter
    waits for its encodings at a task's end, not by holding their results): memory follows the chunk."""
    import gc
    import weakref
    from concurrent.futures import ThreadPoolExecutor

    part = counted["parts"]["hin_Deva"]
    texts = [f"पाठ {i} में कुछ शब्द" for i in range(50)]
    pool = ThreadPoolExecutor(2)
    counter = ChunkCounter(
        {"uni": counted["tok"]}, pivot="eng_Latn", segmenter=get_segmenter("icu"),
        options=CountOptions(metrics=metrics), slice_config=SliceConfig(translit=False), executor=pool,
    )  # fmt: skip
    pending = counter.submit(part, texts, list(range(len(texts))), 0)
    assert counter.collect(pending)
    result = weakref.ref(pending.encoded["uni"].result())
    pool.shutdown(wait=True)  # every callback of the encodings has run; the task has not ended (no settle)
    del pending
    gc.collect()
    assert result() is None
