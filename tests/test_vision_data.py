"""Datasets, the loader (rejects, workers, seeds), resumable sharded preprocessing, ShardDataset, the CLI."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from tokenloom import cli
from tokenloom.errors import ConfigError, ImageDecodeError
from tokenloom.vision.data import ImageDataset, ShardDataset, build_loader, collate
from tokenloom.vision.io import load_image
from tokenloom.vision.listing import list_csv, list_folder
from tokenloom.vision.shards import PreprocessConfig, preprocess_images, read_manifest
from tokenloom.vision.transforms import TransformConfig, eval_transform, plain_transform, train_transform

SIZE = 32  # small outputs keep the tests fast


def _image(seed: int, h: int = 40, w: int = 52) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """cats/ (4 PNG + 1 truncated JPEG + 1 empty), dogs/ (3 JPEG + 1 text-as-image), a README ignored."""
    root = tmp_path / "src"
    (root / "cats").mkdir(parents=True)
    (root / "dogs" / "nested").mkdir(parents=True)
    for i in range(4):
        _image(i).save(root / "cats" / f"c{i}.png")
    for i in range(3):
        _image(10 + i, 60, 45).save(root / "dogs" / ("nested" if i == 2 else "") / f"d{i}.jpg", quality=90)
    buf = io.BytesIO()
    _image(99, 80, 80).save(buf, "JPEG")
    (root / "cats" / "broken.jpg").write_bytes(buf.getvalue()[: len(buf.getvalue()) // 2])
    (root / "cats" / "empty.png").write_bytes(b"")
    (root / "dogs" / "fake.jpg").write_text("not an image")
    (root / "README.txt").write_text("ignored: no image extension")
    return root


GOOD, BAD = 7, 3


def test_list_folder_classes_labels_and_ignored(tree: Path) -> None:
    items, classes, ignored = list_folder(tree)
    assert classes == ["cats", "dogs"]
    assert len(items) == GOOD + BAD
    assert [p.name for p in ignored] == ["README.txt"]
    labels = {it.path.name: it.label for it in items}
    assert labels["c0.png"] == 0 and labels["d2.jpg"] == 1 and labels["broken.jpg"] == 0
    assert [str(it.path) for it in items] == sorted(str(it.path) for it in items)


def test_from_csv_and_from_list(tree: Path, tmp_path: Path) -> None:
    csv_path = tree / "labels.csv"
    csv_path.write_text("path,label\ncats/c0.png,cat\ndogs/d0.jpg,dog\ncats/c1.png,cat\n")
    ds = ImageDataset.from_csv(csv_path, transform=eval_transform(TransformConfig(size=SIZE)))
    assert ds.classes == ["cat", "dog"] and [it.label for it in ds.items] == [0, 1, 0]
    image, label = ds[1]
    assert image.shape == (3, SIZE, SIZE) and label == 1
    (tree / "ints.csv").write_text("path,label\ncats/c0.png,5\n")
    items, classes = list_csv(tree / "ints.csv")
    assert items[0].label == 5 and classes == []
    (tree / "bad.csv").write_text("file,label\nx.png,1\n")
    with pytest.raises(ConfigError, match="no 'path' column"):
        list_csv(tree / "bad.csv")
    listing = tree / "list.txt"
    listing.write_text("cats/c2.png\n\n# comment\ndogs/d1.jpg\n")
    ds2 = ImageDataset.from_list(listing, transform=eval_transform(TransformConfig(size=SIZE)))
    assert len(ds2) == 2 and ds2[0][1] == -1


def test_loader_skip_records_every_reject_with_reason(tree: Path) -> None:
    ds = ImageDataset.from_folder(tree, transform=eval_transform(TransformConfig(size=SIZE)))
    loader = build_loader(ds, batch_size=4)
    labels = torch.cat([lab for _, lab in loader])
    assert len(labels) == GOOD
    assert sorted(labels.tolist()) == [0] * 4 + [1] * 3
    kinds = {Path(r.path).name: r.kind for r in loader.rejects}
    assert kinds == {"broken.jpg": "truncated", "empty.png": "empty", "fake.jpg": "not_an_image"}
    assert all(r.reason for r in loader.rejects)
    assert loader.summary() == {
        "ok": GOOD,
        "rejected": BAD,
        "by_kind": {"truncated": 1, "empty": 1, "not_an_image": 1},
    }


def test_on_error_raise_propagates(tree: Path) -> None:
    ds = ImageDataset.from_folder(
        tree, transform=eval_transform(TransformConfig(size=SIZE)), on_error="raise"
    )
    with pytest.raises(ImageDecodeError, match=r"broken\.jpg: truncated"):
        list(build_loader(ds, batch_size=16))


def test_workers_give_the_same_batches_and_rejects(tree: Path) -> None:
    ds = ImageDataset.from_folder(
        tree, transform=train_transform(TransformConfig(size=SIZE)), output="patches"
    )
    runs = []
    for workers, persistent in [(0, False), (2, True)]:
        loader = build_loader(
            ds, batch_size=3, shuffle=True, seed=5, num_workers=workers, persistent_workers=persistent
        )
        epochs = [[(x.clone(), y.clone()) for x, y in loader] for _ in range(2)]
        runs.append((epochs, sorted(r.path for r in loader.rejects)))
    (single, rejects0), (multi, rejects2) = runs
    assert rejects0 == rejects2 and len(rejects0) == 2 * BAD  # two epochs
    for e in range(2):
        assert len(single[e]) == len(multi[e])
        for (x0, y0), (x2, y2) in zip(single[e], multi[e], strict=True):
            assert x0.shape[1:] == (4, 768)  # 32x32 image -> 4 patches of 16*16*3
            assert torch.equal(x0, x2) and torch.equal(y0, y2)
    first = torch.cat([x for x, _ in single[0]])
    second = torch.cat([x for x, _ in single[1]])
    assert not torch.equal(first, second)  # a new epoch: new order and augmentations


def _collate_in_worker(batch: list[object]) -> tuple[bool, torch.Tensor | None]:
    """``collate`` run where the loader runs it; says whether the stacked images are in shared memory."""
    images, _, _ = collate(batch)
    return images is not None and images.is_shared(), images


def test_collate_stacks_into_shared_memory_only_in_worker_processes(tree: Path) -> None:
    """In a worker the batch is stacked straight into shared memory (no second copy by the queue thread);
    in the main process it stays in private memory, and the values are the same either way."""
    ds = ImageDataset.from_folder(tree, transform=eval_transform(TransformConfig(size=SIZE)))
    seen = {}
    for workers in (0, 1):
        loader = torch.utils.data.DataLoader(
            ds, batch_size=4, num_workers=workers, collate_fn=_collate_in_worker
        )
        seen[workers] = list(loader)
    assert [shared for shared, _ in seen[0]] == [False] * len(seen[0])
    assert [shared for shared, _ in seen[1]] == [True] * len(seen[1])
    for (_, a), (_, b) in zip(seen[0], seen[1], strict=True):
        assert (a is None and b is None) or torch.equal(a, b)


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_preprocess_writes_shards_manifest_and_rejects(tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    summary = preprocess_images(
        tree, out, config=PreprocessConfig(size=SIZE, store="eval", shard_size=4), quiet=True
    )
    assert (summary.items, summary.ok, summary.rejected, summary.ignored, summary.shards) == (
        10,
        GOOD,
        BAD,
        1,
        3,
    )
    assert summary.by_kind == {"empty": 1, "not_an_image": 1, "truncated": 1}
    rows = read_manifest(out)
    assert len(rows) == GOOD
    transform = eval_transform(TransformConfig(size=SIZE, normalize=False))
    for row in rows:
        source = tree / row["path"]
        assert row["sha256"] == hashlib.sha256(source.read_bytes()).hexdigest()
        stored = np.load(out / "shards" / row["shard"])[row["row"]]
        expected = transform(load_image(source, target_size=transform.decode_size)).numpy()
        assert stored.dtype == np.uint8 and np.array_equal(stored, expected), row["path"]
    manifest = (out / "manifest-00000-of-00001.csv").read_text().splitlines()
    assert manifest[0] == "index,path,label,sha256,shape,shard,row,warnings" and len(manifest) == GOOD + 1
    assert f"3x{SIZE}x{SIZE}" in manifest[1]
    rejects = (out / "rejects-00000-of-00001.csv").read_text()
    for name, kind in [("broken.jpg", "truncated"), ("empty.png", "empty"), ("fake.jpg", "not_an_image")]:
        assert any(name in line and kind in line for line in rejects.splitlines()), name
    stored_summary = json.loads((out / "summary-00000-of-00001.json").read_text())
    assert stored_summary["ignored_files"] == ["README.txt"] and stored_summary["rejected"] == BAD


class _Boom(RuntimeError):
    pass


def test_resume_after_interruption_gives_identical_output(tree: Path, tmp_path: Path) -> None:
    config = PreprocessConfig(size=SIZE, store="eval", shard_size=3)  # 10 items -> 4 shards
    clean = tmp_path / "clean"
    preprocess_images(tree, clean, config=config, quiet=True)

    def fault(j: int) -> None:
        if j == 1:
            raise _Boom("injected fault after shard 1")

    out = tmp_path / "resumed"
    with pytest.raises(_Boom):
        preprocess_images(tree, out, config=config, quiet=True, on_shard_done=fault)
    committed = sorted(p.name for p in (out / "shards").glob("*.jsonl"))
    assert committed == ["shard-00000-of-00001-00000.jsonl", "shard-00000-of-00001-00001.jsonl"]
    assert not (out / "manifest-00000-of-00001.csv").exists()
    # a half-written shard from a killed process is left behind: it must not matter
    (out / "shards" / ".shard-00000-of-00001-00002.npy.abc.tmp").write_bytes(b"partial")
    (out / "shards" / "shard-00000-of-00001-00002.npy").write_bytes(b"half a shard without its .jsonl")
    summary = preprocess_images(tree, out, config=config, quiet=True)
    assert summary.resumed_shards == 2
    assert _files(out) == _files(clean)


def test_resume_refuses_different_settings(tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    preprocess_images(tree, out, config=PreprocessConfig(size=SIZE, store="eval", shard_size=4), quiet=True)
    with pytest.raises(ConfigError, match=r"different settings.*shard_size"):
        preprocess_images(
            tree, out, config=PreprocessConfig(size=SIZE, store="eval", shard_size=5), quiet=True
        )
    _image(50).save(tree / "cats" / "new.png")
    with pytest.raises(ConfigError, match="items"):
        preprocess_images(
            tree, out, config=PreprocessConfig(size=SIZE, store="eval", shard_size=4), quiet=True
        )


def test_split_parts_and_workers_reproduce_the_single_run(tree: Path, tmp_path: Path) -> None:
    single = tmp_path / "single"
    preprocess_images(
        tree, single, config=PreprocessConfig(size=SIZE, store="eval", shard_size=2), quiet=True
    )
    split = tmp_path / "split"
    elsewhere = shutil.copytree(tree, tmp_path / "mounted-elsewhere")  # another machine's mount point
    totals = [
        preprocess_images(
            elsewhere if i == 1 else tree,
            split,
            config=PreprocessConfig(size=SIZE, store="eval", shard_size=2, num_shards=3, shard_index=i),
            quiet=True,
        )
        for i in (2, 0, 1)  # any order, any machine
    ]
    assert sum(s.items for s in totals) == 10 and sum(s.ok for s in totals) == GOOD
    a, b = ShardDataset(single), ShardDataset(split)
    assert len(a) == len(b) == GOOD
    for i in range(GOOD):
        assert a.rows[i]["path"] == b.rows[i]["path"]
        assert torch.equal(a.uint8(i), b.uint8(i))
    other = tmp_path / "other-size"
    for i, size in ((0, SIZE), (1, SIZE + 8)):
        config = PreprocessConfig(size=size, store="eval", shard_size=2, num_shards=2, shard_index=i)
        preprocess_images(tree, other, config=config, quiet=True)
    with pytest.raises(ConfigError, match=r"parts of different runs \(plan-\*\.json disagree on size\)"):
        ShardDataset(other)
    parallel = tmp_path / "parallel"
    preprocess_images(
        tree, parallel, config=PreprocessConfig(size=SIZE, store="eval", shard_size=2, workers=2), quiet=True
    )
    assert _files(parallel) == _files(single)


def test_shard_dataset_is_memory_mapped_and_feeds_the_transforms(tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    preprocess_images(tree, out, config=PreprocessConfig(size=SIZE, store="eval", shard_size=4), quiet=True)
    ds = ShardDataset(out)
    image, label = ds[0]
    raw = ds.uint8(0)
    assert raw.dtype == torch.uint8 and raw.shape == (3, SIZE, SIZE)
    assert isinstance(ds._shard(ds.rows[0]["shard"]), np.memmap)
    torch.testing.assert_close(image, plain_transform()(raw))
    assert label == ds.rows[0]["label"]
    train = ShardDataset(
        out, transform=train_transform(TransformConfig(size=16)), output="patches", patch_size=8
    )
    tokens, _ = train[(0, 123)]
    assert tokens.shape == (4, 192)
    assert torch.equal(tokens, train[(0, 123)][0])
    batches = list(build_loader(ds, batch_size=5))
    assert [len(y) for _, y in batches] == [5, 2]
    assert batches[0][0].shape == (5, 3, SIZE, SIZE)
    with pytest.raises(ConfigError, match="not a preprocessed folder"):
        ShardDataset(tmp_path)


def test_cli_preprocess_reports_counts(
    tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "cli"
    argv = [
        "images",
        "preprocess",
        str(tree),
        "--out",
        str(out),
        "--size",
        str(SIZE),
        "--shard-size",
        "4",
        "-q",
    ]
    assert cli.main(argv) == 0
    text = capsys.readouterr().out
    assert f"ok {GOOD}, rejected {BAD}" in text and "ignored non-image files 1" in text
    assert "broken.jpg: truncated" in text
    assert cli.main(argv) == 0  # rerun: everything resumed
    rerun = capsys.readouterr().out
    assert "  3 shards (3 done by an earlier run, 0 now)\n" in rerun and "images/s" not in rerun
    assert cli.main([*argv[:-1], "--num-shards", "2", "--shard-index", "2"]) == 2
    assert "shard_index must be in 0..1" in capsys.readouterr().err


def test_config_errors() -> None:
    with pytest.raises(ConfigError, match="shard_size"):
        PreprocessConfig(shard_size=0)
    with pytest.raises(ConfigError, match="output"):
        ImageDataset([], output="tokens")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="persistent_workers"):
        build_loader(ImageDataset([]), persistent_workers=True)


def test_empty_source_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "notes.txt").write_text("no images here")
    with pytest.raises(ConfigError, match=r"no image files.*1 files without an image suffix"):
        preprocess_images(tmp_path / "src", tmp_path / "out", quiet=True)


def test_symlinked_class_folders_are_followed_without_loops(tree: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere" / "birds"
    elsewhere.mkdir(parents=True)
    _image(50).save(elsewhere / "b0.png")
    (elsewhere / "loop").symlink_to(tmp_path / "elsewhere", target_is_directory=True)  # back up: a cycle
    (tree / "birds").symlink_to(elsewhere, target_is_directory=True)
    items, classes, _ = list_folder(tree)
    assert classes == ["birds", "cats", "dogs"]
    birds = [it for it in items if it.label == 0]
    # birds/loop -> elsewhere is entered, but elsewhere/birds is birds itself (an ancestor): not again
    assert [it.path.relative_to(tree).as_posix() for it in birds] == ["birds/b0.png"]
    summary = preprocess_images(tree, tmp_path / "out", config=PreprocessConfig(size=SIZE), quiet=True)
    assert summary.ok == GOOD + 1


def test_shard_dataset_slices_are_views_and_bad_indices_say_why(tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    preprocess_images(tree, out, config=PreprocessConfig(size=SIZE, shard_size=4), quiet=True)
    ds = ShardDataset(out)
    assert len(ds) == GOOD
    part = ds[2:5]
    assert isinstance(part, ShardDataset) and len(part) == 3
    for k in range(3):
        assert torch.equal(part[k][0], ds[2 + k][0]) and part[k][1] == ds[2 + k][1]
    assert torch.equal(ds[::-1][0][0], ds[-1][0])
    assert len(ds[10:]) == 0
    batches = list(build_loader(part, batch_size=2))
    assert [len(labels) for _, labels in batches] == [2, 1]
    with pytest.raises(
        IndexError, match=rf"index {GOOD} is out of range for a ShardDataset of length {GOOD}"
    ):
        ds[GOOD]
    with pytest.raises(IndexError, match=r"index -8 is out of range"):
        ds[-8]
    with pytest.raises(TypeError, match="ints, \\(int, seed\\) pairs or slices"):
        ds.uint8("0")  # type: ignore[arg-type]
