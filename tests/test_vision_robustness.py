"""Hostile image files: every failure is an ImageDecodeError with a kind; warnings are recorded, not printed;
preprocessing survives hung and crashing decoders (the per-file time limit) and reports honestly."""

from __future__ import annotations

import csv
import io
import logging
import os
import pickle
import signal
import struct
import time
from pathlib import Path
from typing import Any, get_args

import numpy as np
import pytest
import torch
from PIL import Image, ImageFile

from hostile_images import HOSTILE, _pixels
from tokenloom import cli
from tokenloom.errors import ImageDecodeError, ImageErrorKind
from tokenloom.vision import io as vio
from tokenloom.vision.io import DecodeConfig, load_image
from tokenloom.vision.shards import PreprocessConfig, preprocess_images

KINDS = set(get_args(ImageErrorKind))


def _png() -> bytes:
    buf = io.BytesIO()
    Image.fromarray(_pixels(8, 8)).save(buf, "PNG")
    return buf.getvalue()


PNG = _png()


def _hwc(t: torch.Tensor) -> np.ndarray:
    return t.permute(1, 2, 0).numpy()  # [3, H, W] -> [H, W, 3]


def test_image_decode_error_has_real_fields_and_survives_pickling() -> None:
    exc = ImageDecodeError("cut off in the image data", kind="truncated", path="a/b.jpg")
    assert (exc.kind, exc.path, exc.detail) == ("truncated", "a/b.jpg", "cut off in the image data")
    assert str(exc) == "a/b.jpg: cut off in the image data" and isinstance(exc, OSError)
    back = pickle.loads(pickle.dumps(exc))
    assert (type(back), back.kind, back.path, back.detail, str(back)) == (
        ImageDecodeError,
        "truncated",
        "a/b.jpg",
        "cut off in the image data",
        str(exc),
    )
    plain = ImageDecodeError("message only")  # how other libraries rebuild an exception from its text
    assert (plain.kind, plain.path, str(plain)) == ("corrupt", "", "message only")
    assert {"truncated", "corrupt", "unsupported", "too_large", "timeout"} <= KINDS


def test_tiff_whose_frame_count_raises_gives_its_first_page() -> None:
    data = HOSTILE["missing_dimensions.tif"]()
    with pytest.raises(TypeError, match="Missing dimensions"):
        _ = Image.open(io.BytesIO(data)).n_frames  # the hostile behaviour, as Pillow shows it
    assert np.array_equal(_hwc(load_image(data)), _pixels(16, 24))


@pytest.mark.parametrize("name", ["two_layers.psd", "layer_block_too_short.psd"])
def test_psd_files_whose_frames_misbehave_give_the_composite(name: str) -> None:
    data = HOSTILE[name]()
    with pytest.raises((EOFError, SyntaxError)):
        image = Image.open(io.BytesIO(data))
        _ = image.n_frames
        image.seek(0)  # what "first frame" meant before: PSD frames start at 1
    assert np.array_equal(_hwc(load_image(data, name=name)), _pixels(6, 5))


def test_dds_with_an_unimplemented_pixel_format_is_unsupported() -> None:
    with pytest.raises(ImageDecodeError, match=r"x\.dds: .*Unimplemented pixel format") as exc:
        load_image(HOSTILE["unknown_fourcc.dds"](), name="x.dds")
    assert exc.value.kind == "unsupported" and isinstance(exc.value.__cause__, NotImplementedError)


def test_icns_whose_declared_size_is_a_bomb_is_too_large_with_count_and_limit() -> None:
    data = HOSTILE["png_bomb.icns"]()
    assert Image.open(io.BytesIO(data)).size == (1024, 1024)  # the header looks harmless
    with pytest.raises(ImageDecodeError) as exc:
        load_image(data, name="icon.icns")
    assert exc.value.kind == "too_large" and exc.value.path == "icon.icns"
    assert "3600000000 pixels declared inside the file exceeds max_pixels=89478485" in exc.value.detail
    with pytest.raises(ImageDecodeError, match=r"1024x1024 = 1048576 pixels exceeds max_pixels=1000"):
        load_image(data, name="icon.icns", config=DecodeConfig(max_pixels=1000))  # refused at the header


@pytest.mark.parametrize(
    ("raised", "kind"),
    [
        (KeyError("tile"), "corrupt"),
        (TypeError("Missing dimensions"), "corrupt"),
        (struct.error("unpack requires a buffer"), "corrupt"),
        (NotImplementedError("mode"), "unsupported"),
        (EOFError("no more data"), "truncated"),
        (MemoryError(), "too_large"),
        (RecursionError("deep"), "corrupt"),
    ],
)
def test_any_exception_from_the_decoder_becomes_an_image_decode_error(
    monkeypatch: pytest.MonkeyPatch, raised: BaseException, kind: str
) -> None:
    def fail(self: Image.Image) -> None:
        raise raised

    monkeypatch.setattr(ImageFile.ImageFile, "load", fail)  # the decoder of every file format
    with pytest.raises(ImageDecodeError) as exc:
        load_image(PNG, name="p.png", config=DecodeConfig(backend="pil"))
    assert exc.value.kind == kind and exc.value.path == "p.png"
    assert type(raised).__name__ in exc.value.detail or kind == "truncated"
    assert exc.value.__cause__ is raised


def test_keyboard_interrupt_is_not_turned_into_a_reject(monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupt(self: Image.Image) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(ImageFile.ImageFile, "load", interrupt)
    with pytest.raises(KeyboardInterrupt):
        load_image(PNG, config=DecodeConfig(backend="pil"))


def test_pillow_and_libjpeg_warnings_are_recorded_not_printed(
    shared_dir: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    path = shared_dir / "images" / "edge" / "hopper_bad_exif.jpg"
    said: list[str] = []
    image = load_image(path, warnings=said)
    assert image.shape == (3, 500, 500)
    assert any("Corrupt EXIF data" in m for m in said), said  # a Python warning from Pillow
    assert any(m.startswith("Corrupt JPEG data") for m in said), said  # libjpeg, written to fd 2
    out, err = capfd.readouterr()
    assert "Corrupt" not in out + err  # neither reached the terminal
    assert load_image(shared_dir / "images" / "edge" / "hopper.jpg", warnings=(clean := [])) is not None
    assert clean == []


def test_warnings_without_a_list_are_logged_at_info(
    shared_dir: Path, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    with caplog.at_level(logging.INFO, logger="tokenloom.vision.io"):
        load_image(shared_dir / "images" / "edge" / "junk_jpeg_header.jpg")
    assert any("extraneous bytes" in r.getMessage() and r.levelno == logging.INFO for r in caplog.records)
    assert "extraneous" not in capfd.readouterr().err


def test_a_failing_decode_still_reports_its_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    def noisy_then_broken(self: Image.Image) -> None:
        os.write(2, b"libfoo: bad marker\n")  # as a C library would
        raise OSError("broken data stream")

    monkeypatch.setattr(ImageFile.ImageFile, "load", noisy_then_broken)
    said: list[str] = []
    with pytest.raises(ImageDecodeError, match="broken data stream"):
        load_image(PNG, config=DecodeConfig(backend="pil"), warnings=said)
    assert said == ["libfoo: bad marker"]


# --- preprocessing: warnings column, time limit, crashes, summary wording --------------------------------


def _folder(tmp_path: Path, shared_dir: Path) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    edge = shared_dir / "images" / "edge"
    for name in ("hopper.jpg", "hopper_bad_exif.jpg", "hopper.png"):
        (src / name).write_bytes((edge / name).read_bytes())
    for name, build in HOSTILE.items():
        (src / name).write_bytes(build())
    return src


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def test_preprocess_records_warnings_and_hostile_rejects(
    tmp_path: Path, shared_dir: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    src, out = _folder(tmp_path, shared_dir), tmp_path / "out"
    summary = preprocess_images(src, out, config=PreprocessConfig(size=32, workers=1), quiet=True)
    assert (summary.items, summary.ok, summary.rejected) == (9, 7, 2)  # 3 edge + 6 hostile files
    assert summary.by_kind == {"too_large": 1, "unsupported": 1}
    manifest = {r["path"]: r for r in _csv(out / "manifest-00000-of-00001.csv")}
    rejects = {r["path"]: r for r in _csv(out / "rejects-00000-of-00001.csv")}
    assert set(manifest) | set(rejects) == {p.name for p in src.iterdir()}
    assert "Corrupt EXIF data" in manifest["hopper_bad_exif.jpg"]["warnings"]  # Python warning
    assert "Corrupt JPEG data: 5 extraneous bytes" in manifest["extraneous_bytes.jpg"]["warnings"]  # libjpeg
    assert manifest["hopper.png"]["warnings"] == ""
    assert summary.warned == sum(1 for r in [*manifest.values(), *rejects.values()] if r["warnings"])
    assert summary.warned >= 2
    assert "3600000000 pixels" in rejects["png_bomb.icns"]["reason"]
    assert "Corrupt" not in capfd.readouterr().err  # not printed, from the worker process either


def test_the_edge_images_are_rejected_as_the_images_page_says(tmp_path: Path, shared_dir: Path) -> None:
    """The Pillow edge files: what preprocessing rejects, by kind and file, is what docs/images.md lists."""
    out = tmp_path / "out"
    summary = preprocess_images(
        shared_dir / "images" / "edge", out, config=PreprocessConfig(size=32, workers=1), quiet=True
    )
    assert (summary.items, summary.ok, summary.rejected) == (56, 46, 10)
    kinds: dict[str, list[str]] = {}
    for r in _csv(out / "rejects-00000-of-00001.csv"):
        kinds.setdefault(r["kind"], []).append(r["path"])
    assert {k: sorted(v) for k, v in kinds.items()} == {
        "truncated": ["bmpsuite_shortfile.bmp", "truncated_end_chunk.png", "truncated_image.png",
                      "truncated_jpeg.jpg", "ultrahdr.jpg"],
        "not_an_image": ["broken.png", "zero_width.gif"],
        "too_large": ["decompression_bomb.gif", "png_decompression_dos.png"],
        "corrupt": ["broken_data_stream.png"],
    }  # fmt: skip
    assert summary.by_kind == {k: len(v) for k, v in kinds.items()}
    page = " ".join((Path(__file__).resolve().parents[1] / "docs" / "images.md").read_text("utf-8").split())
    for kind, names in kinds.items():
        listed = ", ".join(f"`{n}`" for n in sorted(names))
        assert f"{kind} {len(names)} ({listed}" in page, kind


def _hang_on(marker: str, how: str) -> Any:
    real = vio.load_image

    def fake(data: Any, **kwargs: Any) -> torch.Tensor:
        if marker in str(kwargs.get("name")):
            if how == "crash":
                os.kill(os.getpid(), signal.SIGKILL)  # as a segfault inside a C decoder would
            while True:  # a decoder that never returns (Python-level, so SIGALRM can stop it too)
                time.sleep(0.05)
        return real(data, **kwargs)

    return fake


@pytest.mark.parametrize("workers", [0, 1, 2])
def test_a_hung_decode_is_a_timeout_reject_and_the_run_goes_on(
    tmp_path: Path, shared_dir: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    src = _folder(tmp_path, shared_dir)
    (src / "hangs.png").write_bytes((src / "hopper.png").read_bytes())
    monkeypatch.setattr(vio, "load_image", _hang_on("hangs.png", "hang"))  # inherited by forked workers
    config = PreprocessConfig(size=32, workers=workers, timeout_s=1.0, shard_size=3)
    summary = preprocess_images(src, tmp_path / "out", config=config, quiet=True)
    assert summary.items == 10 and summary.ok == 7
    assert summary.by_kind == {"timeout": 1, "too_large": 1, "unsupported": 1}
    timeout = next(r for r in summary.rejects if r["kind"] == "timeout")
    assert timeout["path"] == "hangs.png" and "longer than 1 s" in timeout["reason"]


def test_a_crashing_decoder_is_a_crashed_reject(
    tmp_path: Path, shared_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = _folder(tmp_path, shared_dir)
    (src / "crashes.png").write_bytes((src / "hopper.png").read_bytes())
    monkeypatch.setattr(vio, "load_image", _hang_on("crashes.png", "crash"))
    config = PreprocessConfig(size=32, workers=2, timeout_s=None)
    summary = preprocess_images(src, tmp_path / "out", config=config, quiet=True)
    assert summary.ok == 7 and summary.by_kind["crashed"] == 1
    crashed = next(r for r in summary.rejects if r["kind"] == "crashed")
    assert crashed["path"] == "crashes.png" and f"exit code {-signal.SIGKILL}" in crashed["reason"]


def test_cli_limits_and_summary_wording(
    tmp_path: Path, shared_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "one"
    src.mkdir()
    (src / "a.png").write_bytes((shared_dir / "images" / "edge" / "hopper.png").read_bytes())
    argv = ["images", "preprocess", str(src), "--out", str(tmp_path / "o"), "--size", "32", "-q"]
    assert cli.main([*argv, "--max-pixels", "100", "--timeout", "5"]) == 0
    text = capsys.readouterr().out
    assert "preprocessed 1 image from" in text and "  1 shard;" in text
    assert "earlier run" not in text and "ok 0, rejected 1 (too_large 1)" in text  # no "0 ... resumed"
    assert "128x128 = 16384 pixels exceeds max_pixels=100" in text
    assert cli.main([*argv, "--max-pixels", "100", "--timeout", "5"]) == 0  # rerun: resumed
    text = capsys.readouterr().out
    assert "  1 shard (1 done by an earlier run, 0 now)\n" in text and "images/s" not in text
    with pytest.raises(ValueError, match="timeout_s"):
        PreprocessConfig(timeout_s=0)
    with pytest.raises(ValueError, match="max_pixels"):
        PreprocessConfig(max_pixels=0)


def test_every_raster_suffix_pillow_opens_is_listed() -> None:
    from tokenloom.vision.listing import IMAGE_EXTENSIONS, NOT_IMAGES

    Image.init()
    openable = {ext for ext, fmt in Image.registered_extensions().items() if fmt in Image.OPEN}
    assert openable - NOT_IMAGES <= IMAGE_EXTENSIONS, sorted(openable - NOT_IMAGES - IMAGE_EXTENSIONS)
    assert not IMAGE_EXTENSIONS & NOT_IMAGES
    assert {".icns", ".dds", ".psd", ".tif"} <= IMAGE_EXTENSIONS
