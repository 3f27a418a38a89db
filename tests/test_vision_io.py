"""load_image: every decode case on images the tests generate, plus the Pillow edge set in ../shared."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from tokenloom.errors import ImageDecodeError
from tokenloom.vision.io import DecodeConfig, decode_to_array, error_kind, load_image


def _base(h: int = 24, w: int = 40) -> np.ndarray:
    """A non-symmetric RGB test card: every pixel distinct enough that flips/rotations are visible."""
    y, x = np.mgrid[0:h, 0:w]
    return np.stack([x * 255 // (w - 1), y * 255 // (h - 1), (x * 7 + y * 13) % 256], axis=2).astype(np.uint8)


def _save(image: Image.Image, tmp_path: Path, name: str, **options: object) -> Path:
    path = tmp_path / name
    image.save(path, **options)
    return path


def _hwc(t: torch.Tensor) -> np.ndarray:
    assert t.dtype == torch.uint8 and t.dim() == 3 and t.shape[0] == 3
    return t.permute(1, 2, 0).numpy()  # [3, H, W] -> [H, W, 3]


# EXIF orientation tag -> what the viewer must do to the stored pixels (independent numpy oracle)
ORIENT = {
    1: lambda a: a,
    2: lambda a: a[:, ::-1],
    3: lambda a: a[::-1, ::-1],
    4: lambda a: a[::-1],
    5: lambda a: a.transpose(1, 0, 2),
    6: lambda a: np.rot90(a, -1),  # 90° clockwise
    7: lambda a: np.rot90(a, 1)[:, ::-1],
    8: lambda a: np.rot90(a, 1),  # 90° counter-clockwise
}


@pytest.mark.parametrize("orientation", range(1, 9))
def test_exif_orientation_is_applied(tmp_path: Path, orientation: int) -> None:
    stored = _base()
    exif = Image.Exif()
    exif[0x0112] = orientation
    path = _save(Image.fromarray(stored), tmp_path, f"o{orientation}.png", exif=exif)  # lossless
    got = _hwc(load_image(path))
    expected = ORIENT[orientation](stored)
    assert got.shape == expected.shape
    assert np.array_equal(got, expected)
    unrotated = _hwc(load_image(path, config=DecodeConfig(exif_transpose=False)))
    assert np.array_equal(unrotated, stored)


def test_exif_orientation_in_jpeg_swaps_width_and_height(tmp_path: Path) -> None:
    exif = Image.Exif()
    exif[0x0112] = 6
    path = _save(Image.fromarray(_base(32, 64)), tmp_path, "o6.jpg", exif=exif, quality=95)
    got = load_image(path)
    assert tuple(got.shape) == (3, 64, 32)
    diff = np.abs(_hwc(got).astype(int) - np.rot90(_base(32, 64), -1).astype(int)).mean()
    assert diff < 6, diff


def test_grayscale_l_and_1_bit_expand_to_three_equal_channels(tmp_path: Path) -> None:
    gray = _base()[:, :, 0]
    got = _hwc(load_image(_save(Image.fromarray(gray, "L"), tmp_path, "l.png")))
    assert np.array_equal(got, np.repeat(gray[:, :, None], 3, axis=2))
    bits = gray > 127
    got1 = _hwc(load_image(_save(Image.fromarray(bits).convert("1"), tmp_path, "b.png")))
    assert np.array_equal(got1[:, :, 0], np.where(bits, 255, 0))
    assert np.array_equal(got1[:, :, 0], got1[:, :, 2])


def test_la_and_rgba_are_composited_on_the_configured_background(tmp_path: Path) -> None:
    rgb = _base()
    alpha = np.zeros(rgb.shape[:2], np.uint8)
    alpha[:, 10:20] = 255
    alpha[:, 20:30] = 128
    rgba = np.dstack([rgb, alpha])
    path = _save(Image.fromarray(rgba, "RGBA"), tmp_path, "rgba.png")
    bg = (0, 255, 0)
    got = _hwc(load_image(path, config=DecodeConfig(background=bg))).astype(int)
    assert np.array_equal(got[:, :10], np.broadcast_to(bg, got[:, :10].shape))  # transparent -> background
    assert np.array_equal(got[:, 10:20], rgb[:, 10:20])  # opaque -> unchanged
    half = (rgb[:, 20:30].astype(int) * 128 + np.array(bg) * 127) / 255
    assert np.abs(got[:, 20:30] - half).max() <= 1  # half transparent -> blend
    white = _hwc(load_image(path)).astype(int)  # default background is white
    assert np.all(white[:, :10] == 255)
    la = np.dstack([rgb[:, :, 0], alpha])
    got_la = _hwc(
        load_image(_save(Image.fromarray(la, "LA"), tmp_path, "la.png"), config=DecodeConfig(background=bg))
    )
    assert np.array_equal(got_la[:, :10].reshape(-1, 3)[0], bg)
    assert np.array_equal(got_la[:, 10:20, 1], rgb[:, 10:20, 0])


def _palette_image() -> tuple[Image.Image, np.ndarray, np.ndarray]:
    index = (np.arange(24 * 40).reshape(24, 40) % 5).astype(np.uint8)
    palette = np.array([[255, 0, 0], [0, 255, 0], [0, 0, 255], [10, 20, 30], [200, 100, 50]], np.uint8)
    image = Image.fromarray(index, "P")
    image.putpalette(palette.reshape(-1).tolist())
    return image, index, palette


def test_palette_without_and_with_transparency(tmp_path: Path) -> None:
    image, index, palette = _palette_image()
    got = _hwc(load_image(_save(image, tmp_path, "p.png")))
    assert np.array_equal(got, palette[index])
    bg = (1, 2, 3)
    for name in ("pt.png", "pt.gif"):
        path = _save(image, tmp_path, name, transparency=3)
        got_t = _hwc(load_image(path, config=DecodeConfig(background=bg)))
        expected = palette[index].copy()
        expected[index == 3] = bg
        assert np.array_equal(got_t, expected), name


def test_rgb_and_grey_colour_key_transparency(tmp_path: Path) -> None:
    rgb = _base()
    key = tuple(int(v) for v in rgb[5, 7])
    got = _hwc(
        load_image(
            _save(Image.fromarray(rgb), tmp_path, "k.png", transparency=key),
            config=DecodeConfig(background=(9, 9, 9)),
        )
    )
    mask = np.all(rgb == key, axis=2)
    assert mask.sum() >= 1
    assert np.all(got[mask] == 9)
    assert np.array_equal(got[~mask], rgb[~mask])


def test_cmyk_jpeg_and_tiff_convert_to_rgb(tmp_path: Path) -> None:
    rgb = _base(48, 64)
    cmyk = Image.fromarray(rgb).convert("CMYK")
    tiff = _hwc(load_image(_save(cmyk, tmp_path, "c.tif")))
    assert np.array_equal(tiff, np.asarray(cmyk.convert("RGB")))  # lossless: exactly Pillow's conversion
    assert np.abs(tiff.astype(int) - rgb.astype(int)).max() <= 1  # and that is the original colour
    jpeg = _hwc(load_image(_save(cmyk, tmp_path, "c.jpg", quality=95)))
    assert jpeg.shape == rgb.shape
    assert np.abs(jpeg.astype(int) - rgb.astype(int)).mean() < 8


def test_16_bit_images_are_scaled_to_8_bits(tmp_path: Path) -> None:
    values = (np.arange(24 * 40).reshape(24, 40) * 68).astype(np.uint16)  # up to 65212
    path = _save(Image.fromarray(values), tmp_path, "g16.png")
    assert Image.open(path).mode.startswith("I")
    got = _hwc(load_image(path))
    expected = np.rint(values.astype(np.float64) * 255 / 65535).astype(np.uint8)
    assert np.array_equal(got[:, :, 0], expected) and np.array_equal(got[:, :, 2], expected)


def test_32_bit_int_and_float_images(tmp_path: Path) -> None:
    small = (np.arange(24 * 40).reshape(24, 40) * 50).astype(np.int32)  # within 0..65535: 16-bit scale
    got = _hwc(load_image(_save(Image.fromarray(small), tmp_path, "i.tif")))
    assert np.array_equal(got[:, :, 0], np.rint(small * 255 / 65535).astype(np.uint8))
    wide = small * 1000 - 5000  # outside 0..65535: min-max
    got_w = _hwc(load_image(_save(Image.fromarray(wide.astype(np.int32)), tmp_path, "iw.tif")))
    assert got_w[:, :, 0].min() == 0 and got_w[:, :, 0].max() == 255
    unit = np.linspace(0, 1, 24 * 40, dtype=np.float32).reshape(24, 40)
    got_f = _hwc(load_image(_save(Image.fromarray(unit), tmp_path, "f.tif")))
    assert np.array_equal(got_f[:, :, 1], np.rint(unit.astype(np.float64) * 255).astype(np.uint8))
    got_fw = _hwc(load_image(_save(Image.fromarray(unit * 40 - 3), tmp_path, "fw.tif")))
    assert got_fw[0, 0, 0] == 0 and got_fw[-1, -1, 0] == 255


def test_animated_gif_and_multipage_tiff_give_the_first_frame(tmp_path: Path) -> None:
    frames = [Image.new("RGB", (16, 8), c) for c in [(250, 0, 0), (0, 250, 0), (0, 0, 250)]]
    gif = tmp_path / "anim.gif"
    frames[0].save(gif, save_all=True, append_images=frames[1:], duration=50, loop=0)
    assert Image.open(gif).n_frames == 3
    first = _hwc(load_image(gif))
    assert first[0, 0, 0] > 200 and first[0, 0, 1] < 50
    tif = tmp_path / "pages.tif"
    frames[1].save(tif, save_all=True, append_images=[frames[2]])
    assert np.array_equal(_hwc(load_image(tif))[0, 0], [0, 250, 0])


def _jpeg_bytes(h: int, w: int) -> bytes:
    """A smooth photo-like JPEG (low-frequency content, as in real photos)."""
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    channels = [127 + 100 * np.sin(x / 37), 127 + 100 * np.cos(y / 23), 127 + 90 * np.sin((x + y) / 51)]
    buf = io.BytesIO()
    Image.fromarray(np.stack(channels, axis=2).astype(np.uint8)).save(buf, "JPEG", quality=90)
    return buf.getvalue()


@pytest.mark.parametrize(
    ("cut", "kind"),
    [(0.5, "truncated"), (0.9, "truncated")],
)
def test_truncated_jpeg_and_png_raise_naming_the_file(tmp_path: Path, cut: float, kind: str) -> None:
    for suffix, data in [(".jpg", _jpeg_bytes(64, 64)), (".png", _png_bytes())]:
        path = tmp_path / f"cut{suffix}"
        path.write_bytes(data[: int(len(data) * cut)])
        with pytest.raises(ImageDecodeError, match=rf"cut\{suffix}: truncated") as exc:
            load_image(path)
        assert error_kind(exc.value) == kind


def _png_bytes() -> bytes:
    buf = io.BytesIO()
    Image.fromarray(np.random.default_rng(0).integers(0, 256, (64, 64, 3), dtype=np.uint8)).save(buf, "PNG")
    return buf.getvalue()


def test_empty_missing_non_image_and_corrupt_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jpg"
    empty.write_bytes(b"")
    with pytest.raises(ImageDecodeError, match=r"empty\.jpg: empty file") as exc:
        load_image(empty)
    assert error_kind(exc.value) == "empty"
    text = tmp_path / "notes.png"
    text.write_text("this is not an image\n")
    with pytest.raises(ImageDecodeError, match=r"notes\.png: not a recognised image format") as exc:
        load_image(text)
    assert error_kind(exc.value) == "not_an_image"
    with pytest.raises(ImageDecodeError, match=r"nope\.jpg: file not found") as exc:
        load_image(tmp_path / "nope.jpg")
    assert error_kind(exc.value) == "missing"
    garbage = bytearray(_png_bytes())
    garbage[60:200] = b"\x00" * 140  # inside the compressed data stream
    with pytest.raises(ImageDecodeError, match=r"photo\.png"):
        load_image(bytes(garbage), name="photo.png")
    with pytest.raises(ImageDecodeError) as exc:
        load_image(tmp_path)
    assert error_kind(exc.value) == "unreadable"
    assert isinstance(exc.value, OSError)  # ImageDecodeError refines OSError


def test_decompression_bomb_limit_is_configurable(tmp_path: Path) -> None:
    path = _save(Image.fromarray(_base(100, 100)), tmp_path, "big.png")
    with pytest.raises(
        ImageDecodeError, match=r"big\.png: 100x100 = 10000 pixels exceeds max_pixels=5000"
    ) as exc:
        load_image(path, config=DecodeConfig(max_pixels=5000))
    assert error_kind(exc.value) == "too_large"
    assert load_image(path, config=DecodeConfig(max_pixels=10000)).shape == (3, 100, 100)
    saved = Image.MAX_IMAGE_PIXELS
    assert load_image(path, config=DecodeConfig(max_pixels=None)).shape == (3, 100, 100)
    assert saved == Image.MAX_IMAGE_PIXELS  # the global limit is restored


def test_decode_config_validation() -> None:
    with pytest.raises(ValueError, match="background"):
        DecodeConfig(background=(0, 0, 256))
    with pytest.raises(ValueError, match="max_pixels"):
        DecodeConfig(max_pixels=0)
    with pytest.raises(ValueError, match="target_size"):
        load_image(_jpeg_bytes(16, 16), target_size=0)


def test_bytes_and_file_object_inputs_equal_path_input(tmp_path: Path) -> None:
    path = _save(Image.fromarray(_base()), tmp_path, "x.png")
    from_path = load_image(path)
    assert torch.equal(load_image(path.read_bytes()), from_path)
    with path.open("rb") as f:
        assert torch.equal(load_image(f), from_path)
    assert np.array_equal(decode_to_array(path), _base())


def test_draft_decodes_large_jpegs_at_reduced_scale() -> None:
    data = _jpeg_bytes(768, 1024)
    assert tuple(load_image(data).shape) == (3, 768, 1024)
    assert tuple(load_image(data, target_size=256).shape) == (3, 384, 512)  # 1/2: shorter side 384 >= 256
    assert tuple(load_image(data, target_size=100).shape) == (3, 192, 256)  # 1/4: 192 >= 100, 1/8 = 96 < 100
    assert tuple(load_image(data, target_size=768).shape) == (3, 768, 1024)
    off = DecodeConfig(draft=False)
    assert tuple(load_image(data, target_size=100, config=off).shape) == (3, 768, 1024)
    # the reduced decode is close to a full decode followed by an antialiased resize
    from torchvision.transforms.v2 import functional as F

    full = F.resize(load_image(data), [192, 256], antialias=True).float()
    diff = (load_image(data, target_size=100).float() - full).abs().mean().item()
    print("mean |draft - full+resize| =", diff)
    assert diff < 3


def test_pillow_edge_images_decode_or_fail_as_documented(shared_dir: Path) -> None:
    edge = shared_dir / "images" / "edge"
    cases = dict(line.split("\t", 1) for line in (edge / "CASES.tsv").read_text().splitlines()[1:])
    must_fail = {name for name, what in cases.items() if "raise" in what and "should still open" not in what}
    must_fail -= {"hopper_bad_exif.jpg"}  # a warning only; pixels decode
    assert "decompression_bomb.gif" in must_fail and "truncated_jpeg.jpg" in must_fail
    for name in sorted(cases):
        if name in must_fail:
            with pytest.raises(ImageDecodeError, match=name.replace(".", r"\.")):
                load_image(edge / name)
        else:
            image = load_image(edge / name)
            assert image.shape[0] == 3 and image.dtype == torch.uint8, name
    cmyk = load_image(edge / "pil_sample_cmyk.jpg").float()
    rgb = load_image(edge / "pil_sample_rgb.jpg").float()
    assert (cmyk - rgb).abs().mean() < 8
    reference = load_image(edge / "hopper.jpg").float()
    for k in range(2, 9):  # each file stores hopper so that applying its orientation shows it upright
        got = load_image(edge / f"hopper_orientation_{k}.jpg").float()
        assert (got - reference).abs().mean() < 8, k
    assert tuple(load_image(edge / "orientation_rectangle.jpg").shape) == (3, 2, 1)


PIL_ONLY = DecodeConfig(backend="pil")


@pytest.mark.parametrize("orientation", range(1, 9))
def test_fast_jpeg_path_equals_pillow_reference_with_orientation(tmp_path: Path, orientation: int) -> None:
    exif = Image.Exif()
    exif[0x0112] = orientation
    stored = np.asarray(Image.open(io.BytesIO(_jpeg_bytes(32, 48))))  # smooth content
    path = _save(Image.fromarray(stored), tmp_path, "o.jpg", exif=exif, quality=95)
    fast, reference = load_image(path), load_image(path, config=PIL_ONLY)
    assert fast.shape == reference.shape
    assert torch.equal(fast, reference)  # both are libjpeg-turbo; the orientation code must agree exactly
    oracle = ORIENT[orientation](np.asarray(Image.open(path)))
    assert np.array_equal(_hwc(fast), oracle)


def test_fast_jpeg_path_is_used_and_falls_back_to_pillow(monkeypatch: pytest.MonkeyPatch) -> None:
    import tokenloom.vision.io as vio

    data = _jpeg_bytes(40, 56)
    calls: list[bool] = []
    real = vio._decode_jpeg_torchvision

    def spy(payload: bytes) -> torch.Tensor | None:
        out = real(payload)
        calls.append(out is not None)
        return out

    monkeypatch.setattr(vio, "_decode_jpeg_torchvision", spy)
    fast = load_image(data)
    assert calls == [True]
    load_image(_jpeg_bytes(768, 1024), target_size=256)  # a 1/2 draft applies: Pillow's DCT scaling
    assert calls == [True]
    monkeypatch.setattr(vio, "_decode_jpeg_torchvision", lambda payload: None)  # declines: Pillow decodes
    assert torch.equal(load_image(data), fast)
    with pytest.raises(ValueError, match="backend"):
        DecodeConfig(backend="cv2")  # type: ignore[arg-type]


def test_fast_path_matches_pillow_on_the_imagenet_sample(shared_dir: Path) -> None:
    files = sorted((shared_dir / "images" / "imagenet-sample").glob("*.JPEG"))
    assert len(files) > 200
    for path in files[::4]:
        fast, reference = load_image(path), load_image(path, config=PIL_ONLY)
        assert torch.equal(fast, reference), path.name
