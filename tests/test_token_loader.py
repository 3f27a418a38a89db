"""``TokenShardDataset``'s batched reading equals the plain per-sample reading, exactly.

Shard folders of random documents are written with the library's own shard writer; the oracle is
``tokens.reference`` (rows planned as Python lists by ``pack_rows``, samples sliced one at a time from the
memory map). Hypothesis draws document lengths, shards, languages, ``seq_len``, batch size, seeds and
DDP splits, how many token slots ``batches`` reads at once and whether rows are gathered by shard or by
row; batches, samples and the state after every batch must be equal, and a mid-epoch resume must give the
rest of the epoch.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from unittest import mock

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenloom import TokenShardDataset
from tokenloom.tokens import dataset as dataset_module
from tokenloom.tokens import gather
from tokenloom.tokens.manifest import write_manifest
from tokenloom.tokens.packing import pack_rows, plan_rows
from tokenloom.tokens.reference import reference_batches, reference_plan, reference_sample
from tokenloom.tokens.writer import DOC_DTYPE, write_shard

LANGS = ("eng", "fra", "rus")


def _write_folder(folder: Path, shards: list[list[tuple[int, int]]], seed: int) -> None:
    """One shard per list of (length, language number); ids drawn from ``seed`` (``uint16``)."""
    rng = np.random.default_rng(seed)
    listed = []
    for k, docs in enumerate(shards):
        ids = [rng.integers(1, 60000, size=n, dtype=np.int64) for n, _ in docs]
        meta = np.zeros(len(docs), dtype=DOC_DTYPE)
        meta["lang"] = [LANGS[lang] for _, lang in docs]
        flat = np.concatenate(ids) if ids else np.zeros(0, np.int64)
        files = write_shard(folder, f"train-{k:03d}", flat, [n for n, _ in docs], meta, np.dtype("<u2"))
        listed.append({
            "name": f"train-{k:03d}", "split": "train", "documents": len(docs),
            "tokens": sum(n for n, _ in docs), "files": [f.as_dict() for f in files],
        })  # fmt: skip
    write_manifest(
        folder,
        {"tokenizer": {"name": "t", "fingerprint": "-"}, "settings": {"dtype": "<u2"}, "shards": listed},
    )


documents = st.lists(st.tuples(st.integers(0, 90), st.integers(0, 2)), max_size=25)


@settings(max_examples=60)
@given(
    shards=st.lists(documents, min_size=1, max_size=3),
    seq_len=st.integers(1, 40),
    batch_size=st.integers(1, 7),
    seed=st.integers(0, 3),
    world=st.integers(1, 3),
    data=st.data(),
)
def test_batches_equal_the_per_sample_reference(
    shards: list[list[tuple[int, int]]],
    seq_len: int,
    batch_size: int,
    seed: int,
    world: int,
    data: st.DataObject,
) -> None:
    rank = data.draw(st.integers(0, world - 1))
    packing = data.draw(st.sampled_from(["windows", "documents"]))
    language = data.draw(st.sampled_from([None, "fra"])) if packing == "documents" else None
    shuffle = data.draw(st.booleans())
    read_slots = data.draw(st.sampled_from([1, 60, dataset_module.READ_SLOTS]))  # 1: a batch per read
    group_rows = data.draw(st.sampled_from([0, gather.GROUP_ROWS, 10**9]))  # 0: by shard; 10**9: by row
    with (
        tempfile.TemporaryDirectory() as tmp,
        mock.patch.object(dataset_module, "READ_SLOTS", read_slots),
        mock.patch.object(gather, "GROUP_ROWS", group_rows),
    ):
        _write_folder(Path(tmp), shards, seed)
        kw = {"seq_len": seq_len, "packing": packing, "seed": seed, "shuffle": shuffle, "rank": rank,
              "world_size": world, "language": language}  # fmt: skip
        fast, ref = TokenShardDataset(tmp, **kw), TokenShardDataset(tmp, **kw)  # type: ignore[arg-type]
        plan = reference_plan(ref)
        assert len(fast) == len(plan)
        for i in range(len(fast)):
            want = reference_sample(ref, plan, i)
            got = fast[i]
            assert got.keys() == want.keys()
            for key in want:
                assert got[key].dtype == np.int64 and np.array_equal(got[key], want[key]), (i, key)
        for epoch in (0, 1):  # two epochs: the state rolls over the same way
            fast_out = [(b, fast.state_dict()) for b in fast.batches(batch_size)]
            ref_out = [(b, ref.state_dict()) for b in reference_batches(ref, batch_size)]
            assert len(fast_out) == len(ref_out) and fast.state_dict() == ref.state_dict()
            for (fb, fs), (rb, rs) in zip(fast_out, ref_out, strict=True):
                assert fs == rs and fb.keys() == rb.keys()
                assert all(np.array_equal(fb[k], rb[k]) and fb[k].dtype == rb[k].dtype for k in rb), epoch
        stop = data.draw(st.integers(0, max(len(ref_out), 1)))
        fast.set_epoch(2)
        first = [b for _, b in zip(range(stop), fast.batches(batch_size), strict=False)]
        again = TokenShardDataset(tmp, **kw)  # type: ignore[arg-type]
        again.load_state_dict(fast.state_dict())
        ref.set_epoch(2)
        whole = list(reference_batches(ref, batch_size))
        resumed = first + list(again.batches(batch_size)) if stop < len(whole) else first
        assert len(resumed) == len(whole)
        for got_b, want_b in zip(resumed, whole, strict=True):
            assert all(np.array_equal(got_b[k], want_b[k]) for k in want_b)


@settings(max_examples=200)
@given(lengths=st.lists(st.integers(0, 70), max_size=40), seq_len=st.integers(1, 30))
def test_row_plan_arrays_equal_pack_rows(lengths: list[int], seq_len: int) -> None:
    plan = plan_rows(np.array(lengths, dtype=np.int64), seq_len)
    rows = [
        [
            (int(plan.piece_doc[p]), int(plan.piece_start[p]), int(plan.piece_start[p] + plan.piece_len[p]))
            for p in range(plan.row_pieces[r], plan.row_pieces[r + 1])
        ]
        for r in range(plan.rows)
    ]
    want = pack_rows(lengths, seq_len)
    assert rows == want
    assert plan.row_used.tolist() == [sum(b - a for _, a, b in row) for row in want]
    assert [int(plan.piece_col[p]) for p in range(len(plan.piece_col))] == [
        sum(b - a for _, a, b in row[:k]) for row in want for k in range(len(row))
    ]


def test_a_known_plan() -> None:
    """Documents of 3, 70 and 2 tokens in rows of 64: the long one cut once, the short ones whole."""
    plan = plan_rows(np.array([3, 0, 70, 2]), 64)
    assert plan.piece_doc.tolist() == [0, 2, 2, 3]
    assert plan.piece_start.tolist() == [0, 0, 61, 0]
    assert plan.piece_len.tolist() == [3, 61, 9, 2]
    assert plan.piece_col.tolist() == [0, 3, 0, 9]
    assert plan.row_pieces.tolist() == [0, 2, 4]
    assert plan.row_used.tolist() == [64, 11]


def test_a_split_without_shards_has_no_samples(tmp_path: Path) -> None:
    _write_folder(tmp_path, [[(5, 0), (9, 1)]], seed=0)
    for packing in ("windows", "documents"):
        ds = TokenShardDataset(tmp_path, seq_len=4, split="validation", packing=packing)  # type: ignore[arg-type]
        assert len(ds) == 0 and list(ds.batches(2)) == [] and ds.state_dict()["epoch"] == 1
        ds = TokenShardDataset(tmp_path, seq_len=4, packing=packing)  # type: ignore[arg-type]
        assert len(ds) == (2 if packing == "windows" else 4)  # 14 tokens: 2 windows of 5; rows 4, 1+3, 4, 2


def test_bench_loader_folder_is_the_flores_sample_repeated(tmp_path: Path) -> None:
    """``scripts/bench_loader.py`` reads what it says: the tokenized sample's documents, repeated in order."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    try:
        import bench_loader
    finally:
        sys.path.pop(0)
    folder, total, sample = bench_loader.build(tmp_path, 2, 300, tokens=250_000, shard_tokens=60_000)
    ids = np.fromfile(next((tmp_path / "flores").glob("*.ds")), dtype="<u2")
    assert len(ids) == sample and total >= 250_000
    ds = TokenShardDataset(folder, seq_len=99, packing="documents", shuffle=False)
    names = [shard["name"] for shard in ds.manifest["shards"]]
    assert len(names) == 5  # shards of at most 60,000 ids, cut at document ends
    read = np.concatenate([np.fromfile(folder / f"{name}.ds", dtype="<u2") for name in names])
    assert np.array_equal(read, np.tile(ids, total // sample + 1)[:total])
    batch = ds.batch(np.arange(len(ds)))
    assert np.array_equal(batch["input_ids"][batch["segment_ids"] >= 0], read)


def test_batch_refuses_indices_outside_the_dataset(tmp_path: Path) -> None:
    import pytest

    _write_folder(tmp_path, [[(30, 0), (9, 1)]], seed=0)
    for packing in ("windows", "documents"):
        ds = TokenShardDataset(tmp_path, seq_len=4, packing=packing)  # type: ignore[arg-type]
        for bad in (-len(ds) - 1, len(ds)):
            with pytest.raises(IndexError, match=f"sample {bad} of a dataset of {len(ds)}"):
                ds.batch(np.array([0, bad]))
        assert np.array_equal(ds.batch(np.array([-1]))["input_ids"][0], ds[len(ds) - 1]["input_ids"])


def test_a_batch_of_no_indices_is_empty(tmp_path: Path) -> None:
    _write_folder(tmp_path, [[(30, 0), (9, 1)], [(12, 2)]], seed=0)  # two shards
    for packing, language in (("windows", None), ("documents", None), ("documents", "eng")):
        ds = TokenShardDataset(tmp_path, seq_len=4, packing=packing, language=language)  # type: ignore[arg-type]
        batch = ds.batch(np.zeros(0, dtype=np.int64))
        width = 5 if packing == "windows" else 4
        assert batch.keys() == ds[0].keys()
        assert all(v.shape == (0, width) and v.dtype == np.int64 for v in batch.values())
