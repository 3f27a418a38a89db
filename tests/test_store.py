"""Full-view shards (variable-size images in one flat buffer), their readers, WebDataset export, Ray."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

import tokenloom
from tokenloom import cli
from tokenloom.errors import ConfigError
from tokenloom.vision.data import ShardDataset, build_loader
from tokenloom.vision.io import load_image
from tokenloom.vision.shards import PreprocessConfig, preprocess_images, read_manifest
from tokenloom.vision.store import FullView, fit_within
from tokenloom.vision.transforms import TransformConfig, eval_transform, train_transform

MAX_SIDE = 48
SIZES = [(40, 90), (100, 30), (20, 24), (64, 64), (33, 71), (90, 40)]  # (h, w): wide, tall, small, square


def _image(seed: int, h: int, w: int) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """a/ and b/ with images of several shapes, one truncated JPEG (a reject)."""
    root = tmp_path / "src"
    for cls in ("a", "b"):
        (root / cls).mkdir(parents=True)
    for i, (h, w) in enumerate(SIZES):
        _image(i, h, w).save(root / ("a" if i % 2 else "b") / f"img{i}.png")
    buf = io.BytesIO()
    _image(99, 50, 50).save(buf, "JPEG")
    (root / "a" / "zz_broken.jpg").write_bytes(buf.getvalue()[:200])
    return root


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_fit_within_keeps_aspect_and_never_enlarges() -> None:
    assert fit_within(1600, 2400, 320) == (213, 320)
    assert fit_within(2400, 1600, 320) == (320, 213)
    assert fit_within(56, 75, 320) == (56, 75)
    assert fit_within(1000, 1, 10) == (10, 1)  # a side never rounds to zero
    with pytest.raises(ConfigError, match="max_side"):
        PreprocessConfig(max_side=0)
    with pytest.raises(ConfigError, match="store"):
        PreprocessConfig(store="crops")  # type: ignore[arg-type]


def test_full_store_keeps_whole_views_with_their_shapes(tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    config = PreprocessConfig(store="full", max_side=MAX_SIDE, shard_size=3)
    summary = preprocess_images(tree, out, config=config, quiet=True)
    assert (summary.items, summary.ok, summary.rejected, summary.shards) == (7, 6, 1, 3)
    assert summary.by_kind == {"truncated": 1}
    rows = read_manifest(out)
    ds = ShardDataset(out)
    assert ds.store == "full" and len(ds) == 6
    view = FullView(MAX_SIDE)
    for i, row in enumerate(rows):
        source = load_image(tree / row["path"])  # [3, H, W]
        h, w = fit_within(source.shape[1], source.shape[2], MAX_SIDE)
        assert row["shape"] == [3, h, w]
        assert max(h, w) <= MAX_SIDE and (h, w) != (0, 0)
        # aspect ratio kept up to rounding each side to a whole pixel
        assert abs((h / w) / (source.shape[1] / source.shape[2]) - 1) <= 1 / min(h, w)
        assert torch.equal(ds.uint8(i), view(source)), row["path"]
    manifest = (out / "manifest-00000-of-00001.csv").read_text().splitlines()
    assert manifest[0] == "index,path,label,sha256,shape,shard,row,warnings,offset"
    small = next(r for r in rows if r["path"].endswith("img2.png"))
    assert small["shape"] == [3, 20, 24]  # smaller than max_side: stored as it is


def test_full_store_resume_workers_and_rejects_are_byte_identical(tree: Path, tmp_path: Path) -> None:
    config = PreprocessConfig(store="full", max_side=MAX_SIDE, shard_size=2)
    clean = tmp_path / "clean"
    preprocess_images(tree, clean, config=config, quiet=True)

    class Boom(RuntimeError):
        pass

    def fault(j: int) -> None:
        if j == 1:
            raise Boom

    out = tmp_path / "resumed"
    with pytest.raises(Boom):
        preprocess_images(tree, out, config=config, quiet=True, on_shard_done=fault)
    (out / "shards" / "shard-00000-of-00001-00002.npy").write_bytes(b"half a shard without its .jsonl")
    assert preprocess_images(tree, out, config=config, quiet=True).resumed_shards == 2
    assert _files(out) == _files(clean)
    workers = tmp_path / "workers"
    preprocess_images(tree, workers, config=PreprocessConfig(store="full", max_side=MAX_SIDE, shard_size=2,
                                                             workers=2), quiet=True)  # fmt: skip
    assert _files(workers) == _files(clean)
    assert "a/zz_broken.jpg,0,truncated" in (clean / "rejects-00000-of-00001.csv").read_text()
    with pytest.raises(ConfigError, match="max_side"):  # resuming with another max side is refused
        preprocess_images(tree, out, config=PreprocessConfig(max_side=MAX_SIDE + 1, shard_size=2), quiet=True)


def test_shard_dataset_applies_train_and_eval_transforms_at_read_time(tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    preprocess_images(tree, out, config=PreprocessConfig(max_side=MAX_SIDE, shard_size=4), quiet=True)
    cfg = TransformConfig(size=16)
    evaluated = ShardDataset(out, transform=eval_transform(cfg))
    trained = ShardDataset(out, transform=train_transform(cfg))
    for i in range(len(evaluated)):
        x, y = evaluated[i]
        assert x.shape == (3, 16, 16) and y == evaluated.rows[i]["label"]
        torch.testing.assert_close(x, eval_transform(cfg)(evaluated.uint8(i)))
        a, b = trained[(i, 7)], trained[(i, 7)]
        assert a[0].shape == (3, 16, 16) and torch.equal(a[0], b[0])  # same seed, same crop
    crops = {trained[(0, s)][0].sum().item() for s in range(6)}
    assert len(crops) > 1  # different seeds crop differently
    batches = list(build_loader(trained, batch_size=4, shuffle=True, seed=1))
    assert [tuple(x.shape) for x, _ in batches] == [(4, 3, 16, 16), (2, 3, 16, 16)]
    default = ShardDataset(out)  # full views default to resize + center crop 224
    assert default[0][0].shape == (3, 224, 224)


def test_cli_store_flags(tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    full, crops = tmp_path / "full", tmp_path / "crops"
    assert cli.main(["images", "preprocess", str(tree), "--out", str(full), "--max-side", "40", "-q"]) == 0
    assert cli.main(["images", "preprocess", str(tree), "--out", str(crops), "--store", "eval", "--size",
                     "16", "-q"]) == 0  # fmt: skip
    assert "ok 6, rejected 1" in capsys.readouterr().out
    assert max(max(r["shape"][1:]) for r in read_manifest(full)) == 40
    assert {tuple(r["shape"]) for r in read_manifest(crops)} == {(3, 16, 16)}


def test_export_webdataset_reads_back(tree: Path, tmp_path: Path) -> None:
    wds = pytest.importorskip("webdataset")
    out = tmp_path / "out"
    preprocess_images(tree, out, config=PreprocessConfig(max_side=MAX_SIDE, shard_size=4), quiet=True)
    tars = tmp_path / "wds"
    assert cli.main(["images", "export-webdataset", str(out), str(tars), "--samples-per-tar", "4", "-q"]) == 0
    names = sorted(p.name for p in tars.glob("*.tar"))
    assert names == ["shard-00000.tar", "shard-00001.tar"]
    with tarfile.open(tars / names[0]) as t:
        assert t.getnames()[:3] == ["00000000.png", "00000000.cls", "00000000.json"]
    first = (tars / names[0]).read_bytes()
    assert cli.main(["images", "export-webdataset", str(out), str(tars), "--samples-per-tar", "4", "-q"]) == 0
    assert (tars / names[0]).read_bytes() == first  # byte-identical rerun
    ds = ShardDataset(out)
    urls = [str(tars / n) for n in names]
    samples = list(wds.WebDataset(urls, shardshuffle=False).decode("rgb8").to_tuple("png", "cls", "json"))
    assert len(samples) == len(ds)
    for i, (image, label, meta) in enumerate(samples):
        assert np.array_equal(image, ds.uint8(i).permute(1, 2, 0).numpy())  # [h, w, 3]
        assert label == ds.rows[i]["label"] and meta["path"] == ds.rows[i]["path"]


@pytest.mark.slow
def test_ray_distributor_writes_the_same_files_as_a_local_run(tree: Path, tmp_path: Path) -> None:
    if os.environ.get("CI", "").lower() == "true":
        import ray  # a dev dependency: under CI its absence is a failure, not a skip
    else:
        ray = pytest.importorskip("ray")
    local, remote = tmp_path / "local", tmp_path / "ray"
    preprocess_images(tree, local, config=PreprocessConfig(max_side=MAX_SIDE, shard_size=2), quiet=True)
    jpeg = PreprocessConfig(max_side=MAX_SIDE, shard_size=2, encoding="jpeg", quality=80)
    preprocess_images(tree, tmp_path / "local-jpeg", config=jpeg, quiet=True)
    src = str(Path(tokenloom.__file__).resolve().parents[1])  # the tokenloom under test, for the workers
    env = {"PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    ray.init(num_cpus=2, runtime_env={"env_vars": env}, include_dashboard=False, log_to_driver=False)
    try:
        config = PreprocessConfig(max_side=MAX_SIDE, shard_size=2, distributor="ray")
        summary = preprocess_images(tree, remote, config=config, quiet=True)
        assert (summary.ok, summary.rejected, summary.shards) == (6, 1, 4)
        again = preprocess_images(tree, remote, config=config, quiet=True)
        assert again.resumed_shards == 4
        on_ray = PreprocessConfig(
            max_side=MAX_SIDE, shard_size=2, encoding="jpeg", quality=80, distributor="ray"
        )
        preprocess_images(tree, tmp_path / "ray-jpeg", config=on_ray, quiet=True)
    finally:
        ray.shutdown()
    assert _files(remote) == _files(local)
    assert _files(tmp_path / "ray-jpeg") == _files(tmp_path / "local-jpeg")  # encoded shards too
