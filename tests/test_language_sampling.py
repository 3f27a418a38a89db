"""Language sampling and the byte budget: each language gets ``B * n_l**alpha / sum n_k**alpha`` bytes (within
one line), deterministically for a seed; a budget bounds what the trainer is given, drawn from every file
(not the first bytes); a budget over the corpus is a note; bad values and unlabelled corpora are refused."""

from __future__ import annotations

import logging
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from tokenloom.corpus.sampling import sampled_lines
from tokenloom.corpus.stream import StreamStats, TrainingCorpus
from tokenloom.errors import ConfigError, CorpusError
from tokenloom.text import _engines
from tokenloom.text.train import TrainerConfig, train_tokenizer

SIZES = {"eng_Latn": 400, "hin_Deva": 100, "tha_Thai": 20}  # lines of each language


@pytest.fixture(scope="module")
def skewed(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("skewed")
    for lang, n in SIZES.items():
        lines = (shared_dir / "corpora" / "flores200" / "dev" / f"{lang}.txt").read_text("utf-8").splitlines()
        (out / f"{lang}.txt").write_text("\n".join(lines[:n]) + "\n", "utf-8")
    return out


def _draw(
    corpus: Path | list[dict[str, str]], **settings: object
) -> tuple[list[tuple[str, str]], StreamStats]:
    cfg = TrainerConfig(heldout=0, **settings)  # type: ignore[arg-type]
    pairs, gen = [], sampled_lines(TrainingCorpus.of(corpus), cfg)
    while True:
        try:
            pairs.append(next(gen))
        except StopIteration as stop:
            return pairs, stop.value


def _longest(folder: Path, lang: str) -> int:
    return max(len(line.encode("utf-8")) for line in (folder / f"{lang}.txt").read_text("utf-8").splitlines())


@pytest.mark.parametrize(("alpha", "budget"), [(0.3, 60_000), (0.0, 60_000), (1.0, 60_000), (0.3, None)])
def test_shares_follow_the_formula_within_a_line(skewed: Path, alpha: float, budget: int | None) -> None:
    pairs, stats = _draw(skewed, language_sampling=alpha, max_bytes=budget)
    available = {lang: len((skewed / f"{lang}.txt").read_bytes()) - n for lang, n in SIZES.items()}
    assert {lang: v["bytes_available"] for lang, v in stats.languages.items()} == available
    total_budget = budget if budget is not None else sum(available.values())
    weight = {lang: n**alpha for lang, n in available.items()}
    for lang, w in weight.items():
        expected = total_budget * w / sum(weight.values())
        used = sum(len(line.encode("utf-8")) for got, line in pairs if got == lang)
        assert used == stats.languages[lang]["bytes_used"]
        assert abs(used - expected) <= _longest(skewed, lang) / 2 + 1, (
            lang
        )  # the closest prefix of a line order
    assert stats.train_bytes == sum(len(line.encode("utf-8")) for _, line in pairs)


def test_uniform_sampling_repeats_a_small_language(skewed: Path) -> None:
    pairs, stats = _draw(skewed, language_sampling=0.0)
    tha = stats.languages["tha_Thai"]
    assert tha["bytes_used"] > 2 * tha["bytes_available"]  # whole passes, then a sample
    lines = (skewed / "tha_Thai.txt").read_text("utf-8").splitlines()
    assert all(sum(1 for lang, x in pairs if lang == "tha_Thai" and x == line) >= 2 for line in lines)


def test_draws_are_deterministic_for_a_seed(skewed: Path) -> None:
    first, _ = _draw(skewed, language_sampling=0.3, max_bytes=50_000)
    again, _ = _draw(skewed, language_sampling=0.3, max_bytes=50_000)
    other, _ = _draw(skewed, language_sampling=0.3, max_bytes=50_000, seed=7)
    assert first == again and first != other


def test_the_budget_bounds_what_the_trainer_reads_and_spans_every_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shards = tmp_path / "mix"
    shards.mkdir()
    for i in range(10):  # unlabelled shards: one group, drawn from all of them
        lines = [f"shard {i} line {j} " + "word " * (j % 7) for j in range(200)]
        (shards / f"shard{i:02d}.txt").write_text("\n".join(lines) + "\n", "utf-8")
    given: list[str] = []
    real = _engines.training_lines

    def spy(*args: Any, **kwargs: Any) -> Generator[str, None, StreamStats]:
        lines = real(*args, **kwargs)
        while True:
            try:
                line = next(lines)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]
            given.append(line)
            yield line

    monkeypatch.setattr(_engines, "training_lines", spy)
    budget = 8000  # coverage 1.0: the engine is the one reader (below 1 the characters are counted first)
    tok = train_tokenizer(
        shards,
        engine="hf",
        vocab_size=400,
        max_bytes=budget,
        character_coverage=1.0,
        heldout=0,
        allow_smaller_vocab=True,
    )
    size = sum(len(line.encode("utf-8")) for line in given)
    assert budget - 40 <= size <= budget + 40 and tok.record["corpus"]["train_bytes"] == size
    assert {line.split()[1] for line in given} == {str(i) for i in range(10)}  # every shard contributes
    assert tok.record["corpus"]["bytes"] == sum(p.stat().st_size for p in shards.iterdir())  # all was read


def test_a_budget_over_the_corpus_uses_it_all_and_says_so(
    skewed: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        _, stats = _draw(skewed, max_bytes=10**9)
    assert "max_bytes=1000000000 is more than the" in caplog.text and "training on all of it" in caplog.text
    assert all(v["bytes_used"] == v["bytes_available"] for v in stats.languages.values())


def test_a_budget_over_the_corpus_with_language_sampling_says_what_was_drawn(
    skewed: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The per-language draw resamples even a corpus smaller than the budget: the note says so, with the
    bytes each language gave and had, not "training on all of it"."""
    with caplog.at_level(logging.WARNING):
        _, stats = _draw(skewed, max_bytes=10**9, language_sampling=0.3)
    assert "training on all of it" not in caplog.text
    used = sum(v["bytes_used"] for v in stats.languages.values())
    assert f"the corpus is resampled by language_sampling=0.3, {used:,} bytes drawn" in caplog.text
    for lang, v in stats.languages.items():
        assert f"{lang} {v['bytes_used']:,} of {v['bytes_available']:,}" in caplog.text
    assert stats.languages["tha_Thai"]["bytes_used"] > stats.languages["tha_Thai"]["bytes_available"]
    assert stats.languages["eng_Latn"]["bytes_used"] < stats.languages["eng_Latn"]["bytes_available"]


def test_tables_and_in_memory_rows_are_sampled_by_their_language_column() -> None:
    rows = [{"text": f"english sentence {i}", "lang": "eng_Latn"} for i in range(300)]
    rows += [{"text": f"phrase française {i}", "lang": "fra", "script": "Latn"} for i in range(30)]
    pairs, stats = _draw(iter(rows), language_sampling=0.0, max_bytes=4000)  # type: ignore[arg-type]
    assert set(stats.languages) == {"eng_Latn", "fra_Latn"}
    used = [stats.languages[lang]["bytes_used"] for lang in ("eng_Latn", "fra_Latn")]
    assert abs(used[0] - used[1]) <= 25 and {lang for lang, _ in pairs} == {"eng_Latn", "fra_Latn"}
    tok = train_tokenizer(
        iter(rows), engine="hf", vocab_size=400, language_sampling=0.0, allow_smaller_vocab=True
    )
    assert set(tok.record["corpus"]["languages"]) == {"eng_Latn", "fra_Latn"}


def test_bad_values_and_unlabelled_corpora_are_refused(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"language_sampling=1\.5 is outside \[0, 1\]; pass 1 for the corpus"
    ):
        TrainerConfig(language_sampling=1.5)
    with pytest.raises(ConfigError, match="max_bytes='2 parsecs' is not a size"):
        TrainerConfig(max_bytes="2 parsecs")  # type: ignore[arg-type]
    assert TrainerConfig(max_bytes="2GB").max_bytes == 2 * 10**9  # type: ignore[arg-type]
    assert TrainerConfig(max_bytes="1.5KiB").max_bytes == 1536  # type: ignore[arg-type]
    (tmp_path / "notes.txt").write_text("plain text\nmore text\n", "utf-8")
    with pytest.raises(
        CorpusError, match=r"notes\.txt has lines with no language: name files <lang>_<Script>"
    ):
        train_tokenizer(tmp_path, language_sampling=0.3)
