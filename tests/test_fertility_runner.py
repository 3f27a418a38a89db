"""A report counted as tasks: one process, worker processes, Ray and a resumed run give the same report.

The mix is built at test time from FLORES text (``scripts/make_mix.py``): tables in every format and
codec, a few broken files, and large files that the planner cuts into byte ranges and row-group ranges.
Oracles: the report of the same corpus read whole in this process (``load_corpus`` then the report), the
engine's own ``encode_batch`` over the texts the reader yields, and the documents the mix was written with.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import tokenloom
from tokenloom.corpus.load import load_corpus
from tokenloom.corpus.plan import plan_corpus_tasks
from tokenloom.corpus.records import SourceStats
from tokenloom.corpus.tasks import iter_records
from tokenloom.errors import ConfigError
from tokenloom.fertility import runner
from tokenloom.fertility.report import ReportConfig, RunConfig, fertility_report
from tokenloom.fertility.writers import write_report
from tokenloom.text.tokenizer import Tokenizer

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
try:
    import make_mix
finally:
    sys.path.pop(0)

LANGS = ("eng_Latn", "rus_Cyrl", "hin_Deva", "zho_Hans")
SMALL = [
    ("jsonl", "gz"),
    ("jsonl", "zst"),
    ("jsonl", "xz"),
    ("csv", "bz2"),
    ("tsv", "none"),
    ("parquet", "none"),
]
TASK_BYTES = 40_000  # cuts the large files into several tasks each


@pytest.fixture(scope="module")
def mix(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """``small``: every table format once, with the broken files; ``large``: JSON Lines, Parquet (row
    groups of 32 rows) and a FLORES-style text file, each split into several tasks."""
    root = tmp_path_factory.mktemp("runner-mix")
    small = make_mix.write_mix(root / "small", shared_dir, formats=SMALL, langs=LANGS, lines=25, broken=True)
    large = make_mix.write_mix(
        root / "large", shared_dir, formats=[("jsonl", "none"), ("parquet", "none")], langs=LANGS,
        lines=40, size_bytes=150_000, sentences_per_doc=2, row_group_rows=32,
    )  # fmt: skip
    ukr = (shared_dir / "corpora" / "flores200" / "devtest" / "ukr_Cyrl.txt").read_text("utf-8")
    (root / "large" / "ukr_Cyrl.txt").write_text(ukr, encoding="utf-8")  # ~190 KB: byte ranges
    return {"small": small, "large": large, "paths": [str(root / "small"), str(root / "large")], "root": root}


@pytest.fixture(scope="module")
def toks(shared_dir: Path) -> dict[str, Tokenizer]:
    """A byte-level BPE on the HF engine and a unigram model on sentencepiece (both must pickle)."""
    dev = shared_dir / "corpora" / "flores200" / "dev"
    train = [dev / f"{lang}.txt" for lang in LANGS if lang != "zho_Hans"]  # Chinese: byte fallback
    return {
        "bpe": tokenloom.train_tokenizer(
            train, algorithm="bytelevel-bpe", vocab_size=1200, heldout=0.0, quiet=True
        ),
        "unigram": tokenloom.train_tokenizer(
            train, algorithm="unigram", engine="sentencepiece", vocab_size=1200, heldout=0.0, quiet=True
        ),
    }


def _report(toks: dict[str, Tokenizer], corpus: Any, run: RunConfig | None = None, **kw: Any) -> pd.DataFrame:
    config = ReportConfig(n_boot=50, metrics=kw.pop("metrics", "full"))
    return fertility_report(toks, corpus, config=config, errors="skip", run=run, **kw)


def _files(df: pd.DataFrame, out: Path) -> dict[str, bytes]:
    write_report(df, out)
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


def test_tasks_cut_large_files(mix: dict[str, Any]) -> None:
    tasks = plan_corpus_tasks(mix["paths"], errors="skip", chunk_bytes=TASK_BYTES)
    kinds = Counter(t.piece.kind if t.piece is not None else "part" for t in tasks)
    assert kinds["row_groups"] >= 3 and kinds["bytes"] >= 6 and kinds["file"] >= len(SMALL)
    assert len({t.id for t in tasks}) == len(tasks)  # ids name tasks uniquely
    again = plan_corpus_tasks(mix["paths"], errors="skip", chunk_bytes=TASK_BYTES)
    assert [t.id for t in again] == [t.id for t in tasks]  # stable across runs


@pytest.mark.slow
@pytest.mark.parametrize("metrics", ["full", "lengths"])
def test_tasks_give_the_report_of_one_pass(
    mix: dict[str, Any], toks: dict[str, Tokenizer], metrics: str
) -> None:
    """Cut into tasks (pieces of parts, pivot phase first) or read whole: the same report, exactly."""
    whole = _report(toks, load_corpus(mix["paths"], errors="skip"), metrics=metrics)
    tasks = _report(toks, mix["paths"], RunConfig(task_bytes=TASK_BYTES), metrics=metrics)
    pd.testing.assert_frame_equal(whole, tasks, check_exact=True)
    assert whole.attrs["rejects"] == tasks.attrs["rejects"] and len(tasks.attrs["rejects"]) == 8
    assert whole.attrs["lengths"].equals(tasks.attrs["lengths"])
    assert tasks.attrs["tasks"]["tasks"] > 10


def test_a_parallel_table_counts_the_pivot_first(
    shared_dir: Path, toks: dict[str, Tokenizer], tmp_path: Path
) -> None:
    """Rows with ids, in two shards cut into several tasks: premiums against the pivot's rows (read in a
    first phase) equal those of the table read whole."""
    import json

    devtest = shared_dir / "corpora" / "flores200" / "devtest"
    rows = [
        {"id": i, "text": line, "lang": lang}
        for lang in LANGS
        for i, line in enumerate((devtest / f"{lang}.txt").read_text("utf-8").splitlines()[:120])
    ]
    for k in range(2):
        lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows[k::2])
        (tmp_path / f"shard-{k}.jsonl").write_text(lines, encoding="utf-8")
    whole = _report(toks, load_corpus(str(tmp_path), align_column="id"))
    tasks = _report(toks, str(tmp_path), RunConfig(task_bytes=15_000), align_column="id")
    assert tasks.attrs["tasks"]["tasks"] > 2 * 2 * 2  # several tasks per shard, each read in both phases
    pd.testing.assert_frame_equal(whole, tasks, check_exact=True)
    rus = tasks[(tasks.slice == "rus_Cyrl") & (tasks.tokenizer == "bpe")].iloc[0]
    assert rus.premium_pairs == 120 and rus.premium_mean > 1  # every row found its English counterpart
    with pytest.raises(ConfigError, match="pivot 'fra_Latn' is not in the parallel part"):
        fertility_report(
            toks, str(tmp_path), pivot="fra_Latn", run=RunConfig(task_bytes=15_000), align_column="id"
        )


def test_a_compressed_text_file_is_streamed(
    shared_dir: Path, toks: dict[str, Tokenizer], tmp_path: Path
) -> None:
    """A ``.txt.gz`` is one task read piece by piece (its size is unknown): the counts of the file read
    whole; an unlabelled part read in pieces gets no transliterated slice (no piece sees all its texts)."""
    make_mix.write_mix(tmp_path, shared_dir, formats=[("txt", "gz")], langs=LANGS, lines=300)
    (task,) = plan_corpus_tasks(str(tmp_path))
    assert task.piece is not None and task.part is not None  # streamed, with the part's labels
    config = ReportConfig(n_boot=20, chunk_size=64)
    whole = fertility_report(toks, load_corpus(str(tmp_path)), config=config, translit=False)
    pieces = fertility_report(toks, str(tmp_path), config=config)
    pd.testing.assert_frame_equal(whole, pieces, check_exact=True)
    assert not (pieces.slice_kind == "transliterated").any() and whole.texts.max() == 300 * len(LANGS)


def test_every_format_gives_the_same_counts(mix: dict[str, Any], toks: dict[str, Tokenizer]) -> None:
    """Each small file holds the same rows in another format or codec: the same report of each."""
    columns = ["tokenizer", "slice_kind", "slice", "texts", "tokens", "chars", "bytes", "tokens_per_doc_p99"]
    reports = {
        path.name: _report(toks, str(path), RunConfig(task_bytes=TASK_BYTES), metrics="lengths")[columns]
        for path in mix["small"].files
    }
    first = next(iter(reports.values()))
    assert len(reports) == len(SMALL) and len(first) == 2 * (1 + 2 * len(LANGS))  # all, language, script
    for name, df in reports.items():
        pd.testing.assert_frame_equal(df, first, check_exact=True, obj=name)


def test_the_encoding_threads_start_once_per_process(
    mix: dict[str, Any], toks: dict[str, Tokenizer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tasks share two encoding threads: starting a thread waits for the GIL, which the engines' threads
    and the counting hold in turn."""
    started: list[str] = []
    start = threading.Thread.start

    def counted(thread: threading.Thread) -> None:
        started.append(thread.name)
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", counted)
    monkeypatch.setattr(runner, "_POOLS", {})  # this process's first report: its threads start here
    runs = [
        _report(toks, str(mix["root"] / "small"), RunConfig(task_bytes=TASK_BYTES), metrics=m)
        for m in ("full", "lengths")
    ]
    assert all(df.attrs["tasks"]["tasks"] >= len(SMALL) for df in runs)
    assert 1 <= len([n for n in started if n.startswith("fertility-encode")]) <= 2


@pytest.mark.slow
def test_workers_write_the_same_report(
    mix: dict[str, Any], toks: dict[str, Tokenizer], tmp_path: Path
) -> None:
    one = _report(toks, mix["paths"], RunConfig(task_bytes=TASK_BYTES))
    two = _report(toks, mix["paths"], RunConfig(workers=2, task_bytes=TASK_BYTES))
    assert _files(one, tmp_path / "one") == _files(two, tmp_path / "two")


@pytest.mark.slow
def test_new_metrics_are_the_same_in_tasks_and_workers(
    mix: dict[str, Any], toks: dict[str, Tokenizer], tmp_path: Path
) -> None:
    """A reference tokenizer, perturbed and numbers slices: read whole, cut into tasks, or on two worker
    processes, the same report (the vocabulary overlap included)."""
    extra = {"reference": toks["unigram"], "perturbations": "case,ocr"}
    whole = _report(toks, load_corpus(mix["paths"], errors="skip"), **extra)
    tasks = _report(toks, mix["paths"], RunConfig(task_bytes=TASK_BYTES), **extra)
    two = _report(toks, mix["paths"], RunConfig(workers=2, task_bytes=TASK_BYTES), **extra)
    pd.testing.assert_frame_equal(whole, tasks, check_exact=True)
    assert {"numbers", "perturbed"} <= set(tasks.slice_kind) and (
        tasks[tasks.tokenizer == "unigram"].nsl == 1
    ).all()
    assert whole.attrs["vocab_overlap"].equals(tasks.attrs["vocab_overlap"])
    assert _files(tasks, tmp_path / "one") == _files(two, tmp_path / "two")


@pytest.mark.slow
def test_ray_writes_the_same_report(mix: dict[str, Any], toks: dict[str, Tokenizer], tmp_path: Path) -> None:
    ray = pytest.importorskip("ray")
    one = _report(toks, mix["paths"], RunConfig(task_bytes=TASK_BYTES), metrics="lengths")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        on_ray = _report(
            toks, mix["paths"], RunConfig(distributor="ray", task_bytes=TASK_BYTES), metrics="lengths"
        )
    finally:
        ray.shutdown()
    assert _files(one, tmp_path / "one") == _files(on_ray, tmp_path / "ray")


@pytest.mark.slow
def test_every_document_is_counted_or_rejected_and_tokens_match_the_engine(
    mix: dict[str, Any], toks: dict[str, Tokenizer]
) -> None:
    df = _report(toks, mix["paths"], RunConfig(task_bytes=TASK_BYTES), metrics="lengths")
    records = list(iter_records(mix["paths"], errors="skip", stats=SourceStats()))
    for name, tok in toks.items():
        row = df[(df.tokenizer == name) & (df.slice_kind == "all")].iloc[0]
        assert int(row.texts) == len(records)
        assert int(row.tokens) == sum(len(ids) for ids in tok.encode_batch([r.text for r in records]))
    read = Counter(r.source for r in records)
    written = {**mix["large"].counts, **{p: len(rows) for p, rows in mix["small"].files.items()}}
    for path, n in written.items():
        assert read[str(path)] == n, path  # every document of a good file is counted
    rejects = pd.DataFrame(df.attrs["rejects"])
    for path, rows in mix["small"].broken.items():
        mine = rejects[rejects.source == str(path)]
        known = int(mine.documents.fillna(0).sum())
        if mine.documents.isna().any():  # a truncated stream or an unreadable file: the tail is unknown
            assert read[str(path)] + known < max(len(rows), 1)
        else:  # every document read or rejected, exactly
            assert read[str(path)] + known == len(rows), path


def _cli(args: list[str], **kw: Any) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "tokenloom", *args], start_new_session=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **kw,
    )  # fmt: skip


@pytest.mark.slow
def test_a_run_killed_with_sigkill_resumes_to_the_same_report(
    shared_dir: Path, toks: dict[str, Tokenizer], tmp_path: Path
) -> None:
    corpus = tmp_path / "mix"
    make_mix.write_mix(corpus, shared_dir, formats=[("jsonl", "gz")], langs=LANGS, lines=60, shards=16,
                       size_bytes=1_600_000, sentences_per_doc=2)  # fmt: skip
    toks["bpe"].save(tmp_path / "tok")
    base = ["fertility", "--tokenizer", str(tmp_path / "tok"), "--corpus", str(corpus), "--quiet"]
    whole = _cli([*base, "--out", str(tmp_path / "whole")])
    assert whole.wait(timeout=600) == 0, whole.stdout.read() if whole.stdout else ""
    killed = _cli([*base, "--out", str(tmp_path / "killed")])
    state = tmp_path / "killed" / ".tasks"
    deadline = time.monotonic() + 300
    while len(list(state.glob("*.pkl"))) < 2 and killed.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(killed.pid, signal.SIGKILL)  # the whole process group, as a node failure would
    killed.wait()
    saved = len(list(state.glob("*.pkl")))
    assert 2 <= saved < 16, "the run must be killed between its first and last task"
    resumed = _cli([*base, "--out", str(tmp_path / "killed"), "--resume"])
    out = resumed.stdout.read().decode() if resumed.stdout else ""
    assert resumed.wait(timeout=600) == 0, out
    assert f"resumed {saved} of 16 tasks" in out
    for name in ("report.csv", "report.md", "lengths.csv", "rejects.csv", "report.html"):
        assert (tmp_path / "killed" / name).read_bytes() == (tmp_path / "whole" / name).read_bytes(), name
    assert not state.exists()  # the report is written: the state is gone


def test_resume_ignores_state_written_for_other_settings(
    mix: dict[str, Any], toks: dict[str, Tokenizer], tmp_path: Path
) -> None:
    state = tmp_path / "state"
    first = _report(toks, mix["paths"][:1], RunConfig(state_dir=state), metrics="lengths")
    assert first.attrs["tasks"]["resumed"] == 0 and list(state.glob("*.pkl"))
    again = _report(toks, mix["paths"][:1], RunConfig(state_dir=state, resume=True), metrics="lengths")
    assert again.attrs["tasks"]["resumed"] == again.attrs["tasks"]["tasks"]
    pd.testing.assert_frame_equal(first, again, check_exact=True)
    other = _report(
        {"bpe": toks["bpe"]}, mix["paths"][:1], RunConfig(state_dir=state, resume=True), metrics="lengths"
    )
    assert other.attrs["tasks"]["resumed"] == 0  # another tokenizer set: nothing reused


def test_an_unfinished_run_names_resume_before_overwrite(
    toks: dict[str, Tokenizer], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run stopped after some tasks (here by a bad file under --errors strict) left them in --out: the
    rerun without --resume names --resume and what it reuses, not only --overwrite, which discards them."""
    from tokenloom import cli

    corpus = tmp_path / "c"
    corpus.mkdir()
    for lang in ("eng_Latn", "rus_Cyrl"):
        (corpus / f"{lang}.txt").write_text(
            "\n".join(f"{lang} sentence {i}" for i in range(20)) + "\n", "utf-8"
        )
    (corpus / "z.jsonl").write_text('{"text": "gut", "lang": "deu_Latn"}\n{"text": bad\n', "utf-8")
    toks["bpe"].save(tmp_path / "tok")
    argv = ["fertility", "--tokenizer", str(tmp_path / "tok"), "--corpus", str(corpus), "--errors", "strict"]
    argv += ["--out", str(tmp_path / "r3"), "--quiet"]
    assert cli.main(argv) == 2 and "z.jsonl: line 2: invalid JSON" in capsys.readouterr().err
    saved = len(list((tmp_path / "r3" / ".tasks").glob("*.pkl")))
    assert saved >= 1
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert f"output folder {str(tmp_path / 'r3')!r} holds an unfinished run: {saved} finished task" in err
    assert "pass --resume to reuse" in err and "--overwrite to discard the saved tasks" in err
    (corpus / "z.jsonl").write_text('{"text": "gut", "lang": "deu_Latn"}\n', "utf-8")
    assert cli.main([*argv, "--resume"]) == 0
    assert f"resumed {saved} of " in capsys.readouterr().out


def test_run_config_errors(mix: dict[str, Any], toks: dict[str, Tokenizer]) -> None:
    for bad, needle in (({"workers": 0}, "workers must be"), ({"distributor": "dask"}, "distributor"),
                        ({"resume": True}, "needs a state_dir")):  # fmt: skip
        with pytest.raises(ConfigError, match=needle):
            RunConfig(**bad)
    with pytest.raises(ConfigError, match="give the corpus as paths"):
        _report(toks, load_corpus(mix["paths"][:1], errors="skip"), RunConfig(workers=2))
    with pytest.raises(ConfigError, match="cannot be sent to worker processes"):
        _report({"chars": lambda text: [ord(c) for c in text]}, mix["paths"][:1], RunConfig(workers=2))
