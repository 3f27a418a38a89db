"""tokenloom.fertility.lengths: the length sketch's percentile bound against exact percentiles, exact context
shares, exact merges, the histogram export and input validation."""

from __future__ import annotations

import dataclasses
import itertools
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tokenloom
from tokenloom.errors import ConfigError, ConfigTypeError
from tokenloom.fertility.lengths import (
    ALPHA,
    DEFAULT_CONTEXTS,
    EDGES,
    MAX_LENGTH,
    NBINS,
    LengthCounts,
    empty,
    from_lengths,
    length_columns,
)

QS = (0, 0.1, 1, 5, 10, 25, 33.3, 50, 66.7, 75, 90, 95, 99, 99.9, 100)
LANGS = ("eng_Latn", "hin_Deva", "zho_Hans", "tha_Thai", "amh_Ethi", "rus_Cyrl")
CONTEXTS = (64, 512, 2048, 4096, 8192)


def _counts(lengths: np.ndarray, contexts: tuple[int, ...] = CONTEXTS) -> LengthCounts:
    return from_lengths(lengths, lengths * 3, lengths * 2, contexts=contexts)


def _max_relative_error(counts: LengthCounts, lengths: np.ndarray, qs: tuple[float, ...] = QS) -> float:
    """The largest relative error of the sketch's percentiles against numpy's exact lower nearest-rank ones."""
    worst = 0.0
    for q in qs:
        exact = float(np.percentile(lengths, q, method="inverted_cdf"))
        got = counts.percentile(q)
        worst = max(worst, abs(got - exact) / exact if exact else abs(got))
    return worst


def _documents(lines: list[str]) -> list[str]:
    """Every line, and documents of 1..200 consecutive lines (a wide range of lengths)."""
    joined = [" ".join(lines[s : s + 1 + (s * 37) % 200]) for s in range(0, len(lines), 17)]
    return [*lines, *joined]


@pytest.fixture(scope="module")
def real(shared_dir: Path) -> dict[str, dict[str, np.ndarray]]:
    """Per FLORES-200 devtest language: tokens (a BPE tokenizer trained on FLORES dev), whitespace words,
    UTF-8 bytes and characters per document."""
    dev = shared_dir / "corpora" / "flores200" / "dev"
    train = [dev / f"{lang}.txt" for lang in ("eng_Latn", "hin_Deva", "rus_Cyrl")]
    tok = tokenloom.train_tokenizer(
        train, algorithm="bpe", engine="hf", vocab_size=2000, heldout=0.0, quiet=True
    )
    out = {}
    for lang in LANGS:
        lines = (
            (shared_dir / "corpora" / "flores200" / "devtest" / f"{lang}.txt").read_text("utf-8").splitlines()
        )
        docs = _documents(lines)
        out[lang] = {
            "tokens": np.array([len(ids) for ids in tok.encode_batch(docs)]),
            "words": np.array([len(d.split()) for d in docs]),
            "bytes": np.array([len(d.encode("utf-8")) for d in docs]),
            "chars": np.array([len(d) for d in docs]),
        }
    return out


@pytest.mark.slow  # trains a tokenizer and encodes documents of up to 200 FLORES lines
@pytest.mark.parametrize("unit", ["tokens", "words"])
def test_percentiles_within_the_bound_on_real_text(real: dict[str, dict[str, np.ndarray]], unit: str) -> None:
    worst = 0.0
    for lang, data in [*real.items(), ("all", {unit: np.concatenate([d[unit] for d in real.values()])})]:
        lengths = data[unit]
        counts = _counts(lengths)
        worst = max(worst, _max_relative_error(counts, lengths))
        assert counts.max == lengths.max() and counts.tokens == lengths.sum(), lang
        assert counts.mean() == pytest.approx(lengths.mean(), rel=1e-12)
    assert worst <= ALPHA
    print(f"max relative error of {len(QS)} percentiles over {unit}: {worst:.5f} (bound {ALPHA})")
    assert real["eng_Latn"]["tokens"].max() > 8192  # the documents span every context counted


@pytest.mark.slow  # trains a tokenizer and encodes documents of up to 200 FLORES lines
def test_context_shares_are_exact_on_real_text(real: dict[str, dict[str, np.ndarray]]) -> None:
    for lang, data in real.items():
        n = data["tokens"]
        counts = from_lengths(n, data["bytes"], data["chars"], contexts=CONTEXTS)
        assert (counts.documents, counts.bytes, counts.chars) == (
            n.size,
            data["bytes"].sum(),
            data["chars"].sum(),
        )
        for c in CONTEXTS:
            assert counts.docs_over[CONTEXTS.index(c)] == int((n > c).sum()), (lang, c)
            assert counts.tokens_over[CONTEXTS.index(c)] == int(np.maximum(n - c, 0).sum()), (lang, c)
            assert counts.share_docs_over(c) == (n > c).sum() / n.size
            assert counts.share_tokens_over(c) == np.maximum(n - c, 0).sum() / n.sum()


@pytest.mark.slow  # trains a tokenizer and encodes documents of up to 200 FLORES lines
def test_two_halves_merge_into_one_pass_on_real_text(real: dict[str, dict[str, np.ndarray]]) -> None:
    data = real["hin_Deva"]
    whole = from_lengths(data["tokens"], data["bytes"], data["chars"])
    for cut in (0, 1, 500, data["tokens"].size - 1, data["tokens"].size):
        first, second = (
            from_lengths(data["tokens"][part], data["bytes"][part], data["chars"][part])
            for part in (slice(None, cut), slice(cut, None))
        )
        assert first.merge(second) == whole == second.merge(first)
    parts = [_counts(d["tokens"]) for d in real.values()]
    together = _counts(np.concatenate([d["tokens"] for d in real.values()]))
    for order in itertools.islice(itertools.permutations(parts), 0, None, 97):
        merged = empty(CONTEXTS)
        for part in order:
            merged = merged.merge(part)
        assert merged == together


def test_bins_span_at_most_the_stated_factor() -> None:
    lo, hi = EDGES[:-1], EDGES[1:] - 1  # bin i holds the integers lo[i]..hi[i]
    assert EDGES[0] == 0 and np.all(hi >= lo) and EDGES[-1] >= MAX_LENGTH and EDGES.size - 1 == NBINS
    assert np.all(hi[1:] * 99 < lo[1:] * 101)  # hi < lo·γ, γ = 101 / 99 = (1 + α) / (1 − α)
    assert np.array_equal(EDGES[:51], np.arange(51))  # one bin per length below 50
    assert NBINS < 2000


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, MAX_LENGTH - 1) | st.integers(0, 300), min_size=1, max_size=300),
    st.lists(st.floats(0, 100), max_size=5),
)
def test_percentiles_within_the_bound(values: list[int], qs: list[float]) -> None:
    lengths = np.array(values, dtype=np.int64)
    counts = _counts(lengths, DEFAULT_CONTEXTS)
    assert _max_relative_error(counts, lengths, (*QS, *qs)) <= ALPHA
    small = lengths[lengths < 50]  # one bin per length: exact
    if small.size:
        assert _max_relative_error(_counts(small, DEFAULT_CONTEXTS), small, (*QS, *qs)) == 0


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 40_000), max_size=60), st.integers(0, 60), st.integers(0, 60))
def test_merge_is_exact_associative_and_commutative(values: list[int], i: int, j: int) -> None:
    lengths = np.array(values, dtype=np.int64)
    i, j = sorted((min(i, len(values)), min(j, len(values))))
    a, b, c = (_counts(lengths[s]) for s in (slice(0, i), slice(i, j), slice(j, None)))
    whole = _counts(lengths)
    assert a.merge(b).merge(c) == a.merge(b.merge(c)) == c.merge(a).merge(b) == whole
    assert whole.merge(empty(CONTEXTS)) == whole


def test_known_answer_row() -> None:
    counts = from_lengths([0, 3, 10, 5000], [1, 9, 30, 20000], [1, 3, 10, 5000], contexts=(8, 4096))
    row = counts.row()
    assert tuple(row) == length_columns((8, 4096))
    i = (
        int(np.searchsorted(EDGES, 5000, side="right")) - 1
    )  # 5000 lies in [lo, b], answered by 2·lo·b / (lo + b)
    lo, b = int(EDGES[i]), int(EDGES[i + 1]) - 1
    value = 2 * lo * b / (lo + b)
    assert lo < 5000 <= b and value == pytest.approx(5000, rel=ALPHA)
    assert row == {
        "docs": 4, "tokens": 5013, "bytes": 20040, "chars": 5014,
        "tokens_per_doc_mean": 5013 / 4, "tokens_per_doc_p50": 3.0, "tokens_per_doc_p90": value,
        "tokens_per_doc_p99": value, "tokens_per_doc_max": 5000,
        "share_docs_over_8": 0.5, "share_tokens_over_8": (2 + 4992) / 5013,
        "share_docs_over_4096": 0.25, "share_tokens_over_4096": 904 / 5013,
    }  # fmt: skip
    assert length_columns()[-2:] == ("share_docs_over_32768", "share_tokens_over_32768")


def test_empty_counts_give_nan_and_are_the_merge_identity() -> None:
    nothing = from_lengths(np.array([], dtype=np.int64), [], [])
    assert nothing == empty() and nothing.contexts == DEFAULT_CONTEXTS
    row = nothing.row()
    assert row["docs"] == row["tokens"] == row["tokens_per_doc_max"] == 0
    assert all(
        np.isnan(row[k]) for k in ("tokens_per_doc_mean", "tokens_per_doc_p50", "share_docs_over_2048")
    )
    edges, counts = nothing.histogram()
    assert edges.tolist() == [0, 1] and counts.tolist() == [0]


@pytest.mark.parametrize("bins_per_decade", [1, 5, 10, 20])
def test_histogram_counts_are_exact_on_log_spaced_edges(bins_per_decade: int) -> None:
    lengths = np.array([0, 0, 1, 2, 7, 49, 50, 51, 99, 100, 101, 999, 1000, 123_456, 2**39], dtype=np.int64)
    edges, counts = _counts(lengths).histogram(bins_per_decade)
    assert edges[0] == 0 and edges[1] == 1 and edges[-1] > lengths.max() and np.all(np.diff(edges) > 0)
    assert np.isin(edges, EDGES).all()  # histogram edges: the counts are exact
    assert np.array_equal(counts, np.histogram(lengths, edges)[0])
    assert np.array_equal(
        counts, [((lengths >= a) & (lengths < b)).sum() for a, b in itertools.pairwise(edges)]
    )
    ratios = edges[2:] / edges[1:-1]  # about 10 ** (1 / bins_per_decade) between consecutive edges
    assert ratios.max() <= 10 ** (1 / bins_per_decade) * (1 + 2 * ALPHA) + 1


def test_counts_are_frozen() -> None:
    counts = _counts(np.array([1, 2, 3]))
    with pytest.raises(dataclasses.FrozenInstanceError):
        counts.documents = 4  # type: ignore[misc]
    with pytest.raises(ValueError, match="read-only"):
        counts.bins[0] = 1
    assert counts != _counts(np.array([1, 2, 4])) and counts != "counts"
    assert pickle.loads(pickle.dumps(counts)) == counts  # counts travel between processes


@pytest.mark.parametrize(
    ("contexts", "error", "match"),
    [
        ((4096, 2048), ConfigError, r"not sorted and unique; give e.g. \(2048, 4096\)"),
        ((2048, 2048), ConfigError, "not sorted and unique"),
        ((0, 2048), ConfigError, "0 is not positive"),
        ((-5,), ConfigError, "-5 is not positive"),
        ((2048.0,), ConfigTypeError, "2048.0 is not an int"),
        ((True,), ConfigTypeError, "True is not an int"),
        (4096, ConfigTypeError, r"give a sequence of token counts, e.g. \(4096,\)"),
    ],
)
def test_bad_contexts_are_named(contexts: object, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        from_lengths([1], [1], [1], contexts=contexts)  # type: ignore[arg-type]
    with pytest.raises(error, match=match):
        length_columns(contexts)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("lengths", "nbytes", "error", "match"),
    [
        ([1, -2], [1, 1], ConfigError, "lengths: -2 is negative"),
        ([1.5], [1], ConfigTypeError, "lengths: got float64 of shape"),
        ([[1]], [[1]], ConfigTypeError, "1-D integer array"),
        ([1, 2], [1], ConfigError, "sizes 2, 1, 2; give one per document"),
        ([MAX_LENGTH], [1], ConfigError, f"{MAX_LENGTH} tokens in one document"),
        ([1], [-1], ConfigError, "nbytes: -1 is negative"),
    ],
)
def test_bad_lengths_are_named(
    lengths: list[int], nbytes: list[int], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        from_lengths(lengths, nbytes, [1, 1] if len(lengths) == 2 else lengths)


def test_mismatched_contexts_and_questions_are_errors() -> None:
    a = _counts(np.array([1, 2]))
    with pytest.raises(
        ConfigError, match=r"contexts \(64, 512, 2048, 4096, 8192\) and \(2048, 4096, 8192, 32768\)"
    ):
        a.merge(empty())
    with pytest.raises(ConfigError, match="context=100 was not counted"):
        a.share_docs_over(100)
    with pytest.raises(ConfigError, match="q=101"):
        a.percentile(101)
    with pytest.raises(ConfigError, match="bins_per_decade=0"):
        a.histogram(0)


def test_import_pulls_in_no_heavy_module() -> None:
    code = "import sys, tokenloom.fertility.lengths; print(sorted({'pandas', 'torch', 'matplotlib'} & set(sys.modules)))"
    assert (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        == "[]\n"
    )
