"""Reading a task column-wise gives exactly what reading it record by record gives.

The oracle is the per-record path: ``tasks.read_task`` (texts, labels, line / row numbers, rejects with
file and line, counts) and, for the corpus plan, the records grouped one by one by ``TableGroups.add``.
Inputs: the FLORES mix of ``scripts/make_mix.py`` in every format and codec (and its broken files), and
generated JSON Lines files with bad lines of every kind (hypothesis).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import sys
from dataclasses import astuple
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokenloom.corpus.columnar import Piece, read_corpus_task, read_task_batches
from tokenloom.corpus.parts import TableGroups
from tokenloom.corpus.plan import CorpusTask, plan_corpus_tasks
from tokenloom.corpus.records import Columns, Errors, Record, SourceStats
from tokenloom.corpus.tasks import Task, plan_files, read_task
from tokenloom.errors import CorpusError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
try:
    import make_mix
finally:
    sys.path.pop(0)


@pytest.fixture(scope="module")
def mix_dirs(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    out = tmp_path_factory.mktemp("columnar-mix")
    good = make_mix.write_mix(out / "good", shared_dir, lines=30)
    broken = make_mix.write_mix(out / "broken", shared_dir, lines=30, formats=[("jsonl", "gz")], broken=True)
    return good.out_dir, broken.out_dir


def _stats(stats: SourceStats) -> tuple[Any, ...]:
    return (*astuple(stats)[:-1], [astuple(r) for r in stats.rejects])


def _by_records(task: Task, errors: Errors, columns: Columns) -> tuple[list[tuple[Any, ...]], Any]:
    stats = SourceStats()
    rows = [
        (r.source, r.text, r.lang, r.script, r.slice, r.number)
        for r in read_task(task, columns=columns, errors=errors, stats=stats)
    ]
    return rows, _stats(stats)


def _by_batches(
    task: Task, errors: Errors, columns: Columns, batch_rows: int
) -> tuple[list[tuple[Any, ...]], Any]:
    stats = SourceStats()
    rows = []
    for b in read_task_batches(task, columns=columns, errors=errors, stats=stats, batch_rows=batch_rows):
        assert 0 < len(b) <= max(batch_rows, 64)  # a Parquet batch is a row group (64 rows in the mix)
        rows += [
            (b.source, *row) for row in zip(b.texts, b.langs, b.scripts, b.slices, b.numbers, strict=True)
        ]
    return rows, _stats(stats)


def _outcome(read: Any, *args: Any) -> Any:
    try:
        return read(*args)
    except CorpusError as exc:  # strict: the same first error
        return str(exc)


@pytest.mark.parametrize("errors", ["skip", "strict", "replace"])
def test_batches_equal_records_on_every_format_codec_and_broken_file(
    mix_dirs: tuple[Path, Path], errors: Errors
) -> None:
    tasks = [t for d in mix_dirs for t in plan_files(d).tasks]
    tasks += list(plan_files(mix_dirs[0], chunk_bytes=3000).tasks)  # byte ranges and row group ranges
    assert {t.kind for t in tasks} == {"file", "bytes", "row_groups"}
    assert {t.path.name for t in tasks} >= {"mix.jsonl.zst", "mix.parquet", "mix.txt.gz", "broken-rows.jsonl"}
    for task in tasks:
        for batch_rows in (1, 7, 4096):
            expected = _outcome(_by_records, task, errors, Columns())
            assert _outcome(_by_batches, task, errors, Columns(), batch_rows) == expected, (task, batch_rows)
    rows, _ = _by_batches(Task(mix_dirs[1] / "broken-rows.jsonl"), "skip", Columns(), 2)
    assert [r[-1] for r in rows] == [1, 4, 7]  # the bad lines 2, 3, 5, 6 are rejects
    for name in ("mix.jsonl.zst", "mix.parquet"):  # read column-wise, not record by record
        batches = list(read_task_batches(Task(mix_dirs[0] / name), batch_rows=50))
        assert sum(len(b) for b in batches if b.records is None) >= len(batches[0]) * (len(batches) - 1)


def _record_pieces(task: CorpusTask, chunk_size: int) -> tuple[list[Piece], Any]:
    """The corpus plan's pieces of a table task, its records grouped one by one (the oracle)."""
    stats = SourceStats()
    assert task.piece is not None
    groups = TableGroups(task.table, align=None, errors="skip", stats=stats)
    out = []
    for record in read_task(task.piece, errors="skip", stats=stats, max_line_bytes=1 << 24):
        key = groups.add(record)
        if key is not None and groups.size(key) == chunk_size:
            out.append(Piece(*groups.take(key), whole=False))
    out += [Piece(*groups.take(k), whole=False) for k in list(groups.parts) if groups.size(k)]
    return out, _stats(stats)


def test_the_plan_reads_tables_into_the_pieces_of_records(mix_dirs: tuple[Path, Path]) -> None:
    for folder in mix_dirs:
        tasks = plan_corpus_tasks(folder, errors="skip", chunk_bytes=5000)
        tables = [t for t in tasks if t.piece is not None and t.part is None]
        assert len(tables) >= 6
        for task in tables:
            for chunk_size in (3, 1024):
                stats = SourceStats()
                got = list(read_corpus_task(task, errors="skip", stats=stats, chunk_size=chunk_size))
                assert (got, _stats(stats)) == _record_pieces(task, chunk_size), task.id
                held = list(read_corpus_task(task, errors="skip", chunk_size=chunk_size, held_rows=5))
                assert _per_part(held) == _per_part(got) and all(len(p.texts) <= chunk_size for p in held)
                assert len(held) >= len(got)


def _per_part(pieces: list[Piece]) -> dict[Any, tuple[list[str], list[Any]]]:
    out: dict[Any, tuple[list[str], list[Any]]] = {}
    for p in pieces:
        texts, ids = out.setdefault(p.part, ([], []))
        texts += p.texts
        ids += p.ids
    return out


def test_a_text_file_part_read_in_byte_ranges_gives_its_lines(shared_dir: Path, tmp_path: Path) -> None:
    flores = shared_dir / "corpora" / "flores200" / "devtest" / "fra_Latn.txt"
    (tmp_path / "fra_Latn.txt").write_bytes(flores.read_bytes())
    whole = [(p.part, p.texts, p.ids) for t in plan_corpus_tasks(tmp_path) for p in read_corpus_task(t)]
    tasks = plan_corpus_tasks(tmp_path, chunk_bytes=20_000)
    assert len(tasks) > 5 and all(t.piece is not None and t.piece.kind == "bytes" for t in tasks)
    pieces = [p for t in tasks for p in read_corpus_task(t, chunk_size=50)]
    assert all(len(p.texts) <= 50 for p in pieces)
    assert [t for p in pieces for t in p.texts] == whole[0][1] == flores.read_text("utf-8").splitlines()
    assert [i for p in pieces for i in p.ids] == whole[0][2]


_CELL = st.one_of(
    st.none(), st.just(""), st.sampled_from(["eng_Latn", "rus", "Cyrl", "hin_Deva"]), st.integers(-3, 3)
)
_ROW = st.fixed_dictionaries(
    {"text": st.one_of(st.text(max_size=12), st.none(), st.integers())},
    optional={
        "lang": _CELL,
        "script": _CELL,
        "slice": _CELL,
        "x": st.one_of(st.floats(allow_nan=False), st.booleans()),
    },
)
_LINE = st.one_of(
    _ROW.map(lambda r: json.dumps(r, ensure_ascii=False).encode()),
    _ROW.map(lambda r: json.dumps(r).encode()),
    st.sampled_from(
        [
            b"",
            b"   ",
            b"{not json",
            b"[1, 2]",
            b'"text"',
            b'{"text": "\\ud800"}',
            b'{"text": "a\xff"}',
            b'{"text": "crlf"}\r',
            b'{"text":\r"lone cr"}',
        ]
    ),
)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    lines=st.lists(_LINE, min_size=0, max_size=25),
    codec=st.sampled_from(["none", "gz"]),
    batch_rows=st.integers(1, 6),
    errors=st.sampled_from(["skip", "replace", "strict"]),
    bom=st.booleans(),
)
def test_jsonl_batches_equal_records_on_any_lines(
    tmp_path: Path, lines: list[bytes], codec: str, batch_rows: int, errors: Errors, bom: bool
) -> None:
    data = (
        (b"\xef\xbb\xbf" if bom else b"") + b"\n".join(lines) + (b"\n" if lines and len(lines) % 2 else b"")
    )
    path = tmp_path / ("t.jsonl.gz" if codec == "gz" else "t.jsonl")
    path.write_bytes(gzip.compress(data) if codec == "gz" else data)
    tasks = [Task(path), *plan_files(path, chunk_bytes=40).tasks]
    for task in tasks:
        expected = _outcome(_by_records, task, errors, Columns())
        assert _outcome(_by_batches, task, errors, Columns(), batch_rows) == expected


@pytest.mark.parametrize("suffix", [".jsonl.gz", ".txt.gz"])
def test_a_truncated_stream_gives_the_same_prefix_and_reject(tmp_path: Path, suffix: str) -> None:
    texts = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(3000)]
    rows = b"".join(
        (json.dumps({"text": t, "lang": "eng_Latn"}).encode() if suffix == ".jsonl.gz" else t.encode())
        + b"\n"
        for t in texts
    )
    packed = gzip.compress(rows)
    path = tmp_path / f"cut{suffix}"
    path.write_bytes(packed[: len(packed) // 2])
    for batch_rows in (1, 100, 4096):
        got = _by_batches(Task(path), "skip", Columns(), batch_rows)
        assert got == _by_records(Task(path), "skip", Columns())
        assert (
            0 < len(got[0]) < 3000 and got[1][-1][-1][-1] is None
        )  # a prefix, then a reject of unknown size


def _one_by_one(
    groups: TableGroups,
    rows: list[tuple[str, str | None, str | None]],
    chunk_size: int,
    held_rows: int | None,
) -> list[tuple[Any, list[str], list[Any]]]:
    """The hand-overs of ``TableGroups.add_columns`` computed a row at a time (its definition)."""
    out, held = [], 0
    for number, (text, lang, script) in enumerate(rows):
        key = groups.add(Record(text, lang, script, "t.jsonl", number))
        assert key is not None
        held += 1
        if groups.size(key) == chunk_size:
            held -= chunk_size
            out.append(groups.take(key))
        elif held_rows is not None and held >= held_rows:
            out += [groups.take(k) for k in list(groups.parts) if groups.size(k)]
            held = 0
    return out


_LABELS = st.sampled_from([("eng", "Latn"), ("fra", None), (None, None), ("rus_Cyrl", None), ("zho", "Hans")])


@settings(max_examples=200)
@given(
    batches=st.lists(
        st.tuples(st.lists(_LABELS, max_size=12), st.booleans()), min_size=1, max_size=4
    ),  # (labels of each row, whether the batch's rows share one label)
    chunk_size=st.integers(1, 5),
    held_rows=st.one_of(st.none(), st.integers(1, 7)),
)
def test_rows_added_as_columns_are_handed_over_as_one_by_one(
    batches: list[tuple[list[tuple[str | None, str | None]], bool]], chunk_size: int, held_rows: int | None
) -> None:
    """Runs of rows with one label are added many at a time; the hand-overs are those of one row at a time,
    for mixed labels, shared ones and labels whose script the text decides."""
    texts = iter(["hello", "Привет", "你好", "salut"] * 100)
    columns, rows = TableGroups("t.jsonl", align=None, errors="skip", stats=SourceStats()), []
    got = []
    for labels, shared in batches:
        labels = [labels[0]] * len(labels) if shared and labels else labels
        batch = [(next(texts), lang, script) for lang, script in labels]
        numbers = list(range(len(rows), len(rows) + len(batch)))
        cells = ([r[1] for r in batch], [r[2] for r in batch], [None] * len(batch))
        got += list(columns.add_columns([r[0] for r in batch], cells, numbers, chunk_size, held_rows))
        rows += batch
    reference = TableGroups("t.jsonl", align=None, errors="skip", stats=SourceStats())
    assert got == _one_by_one(reference, rows, chunk_size, held_rows)
