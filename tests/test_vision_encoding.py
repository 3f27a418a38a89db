"""Stored encodings (raw, jpeg, webp, png): round trips through preprocess -> ShardDataset, quality bounds
on real photos, byte-identical reruns and resume, manifests, old folders, bad input."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from tokenloom import cli
from tokenloom.errors import ConfigError
from tokenloom.vision.data import ShardDataset
from tokenloom.vision.encoding import check_encoding, decode_view, encode_view, psnr
from tokenloom.vision.shards import PreprocessConfig, preprocess_images, read_manifest

# lowest PSNR (dB) allowed for any of the 41 sample photos against its raw view, at max side 96; measured
# minimum (mean) in brackets: jpeg q90 29.5 (35.3), jpeg q75 27.1 (32.2), webp q90 30.7 (37.0). A decoder
# that shifts, transposes or swaps channels lands far below (< 20 dB).
PSNR_FLOOR = {("jpeg", 90): 28.5, ("jpeg", 75): 26.0, ("webp", 90): 29.5}
ENCODED = [("jpeg", 90), ("jpeg", 75), ("webp", 90), ("png", None)]


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def photos(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A list of 41 ImageNet sample photos (every 7th, grayscale and the EXIF-rotated one among them)."""
    folder = shared_dir / "images" / "imagenet-sample"
    jpegs = sorted(p for p in folder.iterdir() if p.suffix.lower() in (".jpeg", ".jpg"))[::7]
    listing = tmp_path_factory.mktemp("photos") / "items.csv"
    listing.write_text("path,label\n" + "".join(f"{p},{i % 3}\n" for i, p in enumerate(jpegs)))
    return listing


@pytest.fixture(scope="module")
def raw_views(photos: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("raw") / "raw"
    preprocess_images(photos, out, config=PreprocessConfig(max_side=96, shard_size=16), quiet=True)
    return out


@pytest.mark.parametrize(("encoding", "quality"), ENCODED)
def test_each_encoding_round_trips_through_the_dataset(
    photos: Path, raw_views: Path, tmp_path: Path, encoding: str, quality: int | None
) -> None:
    config = PreprocessConfig(max_side=96, shard_size=16, encoding=encoding, quality=quality)  # type: ignore[arg-type]
    summary = preprocess_images(photos, tmp_path / "a", config=config, quiet=True)
    assert (summary.ok, summary.rejected) == (41, 0)
    raw, ds = ShardDataset(raw_views), ShardDataset(tmp_path / "a")
    assert ds.encoding == encoding and ds.store == "full" and len(ds) == len(raw)
    plan = json.loads((tmp_path / "a" / "plan-00000-of-00001.json").read_text())
    assert (plan["encoding"], plan["quality"]) == (encoding, quality)
    manifest = (tmp_path / "a" / "manifest-00000-of-00001.csv").read_text().splitlines()
    assert manifest[0].endswith(",offset,nbytes,encoding") and manifest[1].endswith(f",{encoding}")
    scores = []
    for i in range(len(ds)):
        a, b = raw.uint8(i), ds.uint8(i)
        assert b.dtype == torch.uint8 and b.shape == a.shape == tuple(ds.rows[i]["shape"])
        assert b.is_contiguous() and ds.rows[i]["label"] == raw.rows[i]["label"]
        scores.append(psnr(a.numpy(), b.numpy()))
        row = ds.rows[i]
        data = np.load(tmp_path / "a" / "shards" / row["shard"])[
            row["offset"] : row["offset"] + row["nbytes"]
        ]
        reference = decode_view(data, encoding, tuple(row["shape"]))  # Pillow, [h, w, 3]
        assert np.array_equal(b.permute(1, 2, 0).numpy(), reference)  # the fast decoder equals it
    if quality is None:
        assert scores == [float("inf")] * len(ds)  # png is lossless: the raw pixels exactly
    else:
        assert min(scores) >= PSNR_FLOOR[(encoding, quality)], (min(scores), np.argmin(scores))
    stored = sum(int(r["nbytes"]) for r in read_manifest(tmp_path / "a"))
    assert stored < sum(3 * r["shape"][1] * r["shape"][2] for r in read_manifest(raw_views))
    image, label = ds[(3, 11)]  # the default transform (eval) on the decoded view
    assert image.shape == (3, 224, 224) and image.dtype == torch.float32 and label == raw.rows[3]["label"]
    # a rerun into a new folder and an interrupted run resumed give the same bytes
    preprocess_images(photos, tmp_path / "b", config=config, quiet=True)
    assert _files(tmp_path / "a") == _files(tmp_path / "b")

    class Stop(Exception):
        pass

    def stop(j: int) -> None:
        if j == 1:
            raise Stop

    with pytest.raises(Stop):
        preprocess_images(photos, tmp_path / "c", config=config, quiet=True, on_shard_done=stop)
    again = preprocess_images(photos, tmp_path / "c", config=config, quiet=True)
    assert again.resumed_shards == 2
    assert _files(tmp_path / "c") == _files(tmp_path / "a")


def test_encoding_the_same_view_twice_gives_the_same_bytes_and_decodes_back(raw_views: Path) -> None:
    view = ShardDataset(raw_views).uint8(5).numpy()  # [3, h, w]
    for encoding, quality in ENCODED:
        first = encode_view(view, encoding, quality)  # type: ignore[arg-type]
        second = encode_view(view.copy(), encoding, quality)  # type: ignore[arg-type]
        assert first.shape == view.shape and np.array_equal(first.data, second.data), encoding
        back = decode_view(first.data, encoding, first.shape)  # [h, w, 3]
        if encoding == "png":
            assert np.array_equal(back, view.transpose(1, 2, 0))
        with Image.open(io.BytesIO(first.data.tobytes())) as image:  # no metadata written
            assert not image.info.get("exif") and not image.info.get("icc_profile")
    with pytest.raises(ConfigError, match="manifest says"):
        decode_view(encode_view(view, "png", None).data, "png", (3, 1, 1))


def test_eval_crops_can_be_encoded_too(photos: Path, tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    png = tmp_path / "png"
    preprocess_images(photos, raw, config=PreprocessConfig(store="eval", size=32), quiet=True)
    preprocess_images(photos, png, config=PreprocessConfig(store="eval", size=32, encoding="png"), quiet=True)
    a, b = ShardDataset(raw), ShardDataset(png)
    assert b.store == "eval" and b.encoding == "png"
    for i in range(len(a)):
        assert torch.equal(a.uint8(i), b.uint8(i))
        assert torch.equal(a[i][0], b[i][0])  # the default transform: normalize only


def test_folders_written_before_encodings_read_and_resume_as_raw(
    raw_views: Path, photos: Path, tmp_path: Path
) -> None:
    old = tmp_path / "old"
    old.mkdir()
    for name, data in _files(raw_views).items():
        (old / name).parent.mkdir(parents=True, exist_ok=True)
        (old / name).write_bytes(data)
    plan_path = old / "plan-00000-of-00001.json"
    plan = json.loads(plan_path.read_text())
    del plan["encoding"], plan["quality"]
    plan["format"] = 3  # as the previous version wrote it
    plan_path.write_text(json.dumps(plan, indent=2, sort_keys=True) + "\n")
    ds, raw = ShardDataset(old), ShardDataset(raw_views)
    assert ds.encoding == "raw" and all("encoding" not in r for r in ds.rows)
    assert all(torch.equal(ds.uint8(i), raw.uint8(i)) for i in range(len(ds)))
    again = preprocess_images(photos, old, config=PreprocessConfig(max_side=96, shard_size=16), quiet=True)
    assert again.resumed_shards == 3  # nothing redone
    with pytest.raises(ConfigError, match="encoding"):  # but another encoding is another run
        preprocess_images(photos, old, config=PreprocessConfig(max_side=96, shard_size=16, encoding="png"))


def test_bad_encoding_or_quality_is_one_line_naming_the_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "src"
    src.mkdir()
    Image.new("RGB", (20, 10), (200, 10, 10)).save(src / "a.png")
    cases = [
        (["--encode", "jpg"], "'jpg'", "did you mean 'jpeg'"),
        (["--encode", "avif"], "'avif'", "raw, jpeg, webp, png"),
        (["--encode", "jpeg", "--quality", "0"], "0", "1..100"),
        (["--encode", "webp", "--quality", "101"], "101", "1..100"),
        (["--encode", "png", "--quality", "90"], "90", "drop it"),
        (["--quality", "90"], "90", "lossy encodings only"),
    ]
    for extra, value, fix in cases:
        code = cli.main(["images", "preprocess", str(src), "--out", str(tmp_path / "out"), "-q", *extra])
        err = capsys.readouterr().err
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert value in err and fix in err, err
    assert not (tmp_path / "out").exists()  # refused before anything is written
    assert check_encoding("jpeg", None) == 90 and check_encoding("png", None) is None
    with pytest.raises(ConfigError, match="out of range"):
        PreprocessConfig(encoding="webp", quality=True)  # type: ignore[arg-type]


def test_every_file_is_accounted_for_with_an_encoding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "src"
    (src / "a").mkdir(parents=True)
    rng = np.random.default_rng(3)
    for i in range(5):
        Image.fromarray(rng.integers(0, 256, (30 + i, 40, 3), dtype=np.uint8)).save(src / "a" / f"{i}.png")
    buf = io.BytesIO()
    Image.new("RGB", (50, 50)).save(buf, "JPEG")
    (src / "a" / "cut.jpg").write_bytes(buf.getvalue()[:150])
    (src / "a" / "notes.txt").write_text("not an image")
    out = tmp_path / "out"
    code = cli.main(
        ["images", "preprocess", str(src), "--out", str(out), "--encode", "webp", "--quality", "80"]
    )
    printed = capsys.readouterr().out
    assert code == 0 and "ok 5, rejected 1 (truncated 1), ignored non-image files 1" in printed
    summary = json.loads((out / "summary-00000-of-00001.json").read_text())
    assert (summary["ok"], summary["rejected"], summary["ignored_files"]) == (5, 1, ["a/notes.txt"])
    rejects = (out / "rejects-00000-of-00001.csv").read_text().splitlines()
    assert len(rejects) == 2 and "a/cut.jpg" in rejects[1]
    assert len(ShardDataset(out)) == 5
