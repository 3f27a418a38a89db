"""Train / eval transforms: reference pipelines, timm oracle, determinism under a seed, normalize fast path."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from PIL import Image
from torchvision.transforms import v2

from tokenloom.vision.io import load_image
from tokenloom.vision.transforms import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    TransformConfig,
    eval_transform,
    normalize,
    normalize_reference,
    plain_transform,
    train_transform,
)


def _photo(h: int = 300, w: int = 400, seed: int = 0) -> torch.Tensor:
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    rng = np.random.default_rng(seed)
    channels = [
        127 + 100 * np.sin(x / 37 + seed),
        127 + 100 * np.cos(y / 23),
        127 + 90 * np.sin((x + y) / 51),
    ]
    array = np.stack(channels, axis=2) + rng.normal(0, 3, (h, w, 3))
    return (
        torch.from_numpy(np.clip(array, 0, 255).astype(np.uint8)).permute(2, 0, 1).contiguous()
    )  # [3, H, W]


def test_eval_equals_plain_torchvision_pipeline() -> None:
    image = _photo()
    ours = eval_transform()(image)
    reference = v2.Compose(
        [
            v2.Resize(256, antialias=True),
            v2.CenterCrop(224),
            v2.ToDtype(torch.float32, scale=True),
            v2.Normalize(list(IMAGENET_MEAN), list(IMAGENET_STD)),
        ]
    )(image)
    assert ours.shape == (3, 224, 224) and ours.dtype == torch.float32 and ours.is_contiguous()
    torch.testing.assert_close(ours, reference, rtol=0, atol=1e-5)


def test_eval_close_to_timm_create_transform() -> None:
    from timm.data import create_transform

    image = _photo()
    pil = Image.fromarray(image.permute(1, 2, 0).numpy())
    timm_out = create_transform(224, is_training=False)(pil)  # PIL resize 256 + crop 224 + normalize
    ours = eval_transform()(image)
    diff = (ours - timm_out).abs().mean().item()
    print("mean |ours - timm| (normalized units) =", diff)
    assert timm_out.shape == ours.shape
    assert diff < 0.03  # same geometry; PIL vs torch resize rounding only


def test_channels_last_view_gives_the_same_result() -> None:
    buf = io.BytesIO()
    Image.fromarray(_photo().permute(1, 2, 0).numpy()).save(buf, "PNG")
    decoded = load_image(buf.getvalue())  # a channels-last view
    assert not decoded.is_contiguous()
    t = eval_transform()
    assert torch.equal(t(decoded), t(decoded.contiguous()))


@pytest.mark.parametrize("auto_augment", ["none", "randaugment", "trivialaugment"])
def test_train_is_deterministic_under_a_seed(auto_augment: str) -> None:
    image = _photo()
    t = train_transform(TransformConfig(auto_augment=auto_augment))  # type: ignore[arg-type]
    a, b, c = t(image, seed=7), t(image, seed=7), t(image, seed=8)
    assert a.shape == (3, 224, 224) and a.dtype == torch.float32
    assert torch.equal(a, b)
    assert not torch.equal(a, c)
    torch.manual_seed(3)
    d = t(image)
    torch.manual_seed(3)
    assert torch.equal(d, t(image))  # global RNG path too


def test_seeded_call_leaves_the_global_rng_alone() -> None:
    torch.manual_seed(11)
    expected = torch.rand(3)
    torch.manual_seed(11)
    train_transform()(_photo(), seed=5)
    assert torch.equal(torch.rand(3), expected)


def test_train_with_full_scale_and_certain_flip_is_a_flipped_resize() -> None:
    image = _photo(256, 256)
    config = TransformConfig(scale=(1.0, 1.0), ratio=(1.0, 1.0), hflip=1.0, normalize=False)
    got = train_transform(config)(image, seed=0)
    expected = v2.functional.resize(image, [224, 224], antialias=True).flip(-1)
    assert got.dtype == torch.uint8
    assert torch.equal(got, expected)


def test_train_crops_stay_within_the_scale_range() -> None:
    # a crop of the left half only never sees the right half's colour
    image = torch.zeros(3, 200, 200, dtype=torch.uint8)
    image[:, :, 100:] = 255
    config = TransformConfig(scale=(0.08, 0.1), hflip=0.0, normalize=False, size=32)
    means = torch.stack([train_transform(config)(image, seed=s).float().mean() for s in range(40)])
    assert ((means < 1) | (means > 254)).float().mean() > 0.5  # most small crops are one colour


def test_normalize_fast_path_equals_reference() -> None:
    x = torch.randint(0, 256, (4, 3, 17, 9), dtype=torch.uint8)
    mean, std = (0.5, 0.4, 0.3), (0.2, 0.25, 0.3)
    fast, ref = normalize(x, mean, std), normalize_reference(x, mean, std)
    print("max |fast - reference| =", (fast - ref).abs().max().item())
    torch.testing.assert_close(fast, ref, rtol=0, atol=2e-6)
    with pytest.raises(TypeError, match="uint8"):
        normalize(x.float(), mean, std)


def test_configurable_mean_std_and_uint8_output() -> None:
    image = _photo()
    config = TransformConfig(mean=(0.0, 0.0, 0.0), std=(1.0, 1.0, 1.0))
    out = eval_transform(config)(image)
    assert out.min() >= 0 and out.max() <= 1
    raw = eval_transform(TransformConfig(normalize=False))(image)
    assert raw.dtype == torch.uint8
    torch.testing.assert_close(out, raw.float() / 255, rtol=0, atol=1e-6)
    plain = plain_transform()(raw)
    torch.testing.assert_close(
        plain, normalize_reference(raw, IMAGENET_MEAN, IMAGENET_STD), rtol=0, atol=1e-5
    )
    assert torch.equal(eval_transform().with_normalize(False)(image), raw)


def test_load_uses_the_draft_size_and_matches_manual_pipeline() -> None:
    buf = io.BytesIO()
    Image.fromarray(_photo(1200, 1600).permute(1, 2, 0).numpy()).save(buf, "JPEG", quality=92)
    data = buf.getvalue()
    t = eval_transform()
    assert t.decode_size == 256
    fast = t.load(data)
    manual = t(load_image(data, target_size=256))
    assert torch.equal(fast, manual)
    full = eval_transform(TransformConfig(draft=False)).load(data)
    diff = (fast - full).abs().mean().item()
    print("mean |draft - full decode| (normalized units) =", diff)
    assert diff < 0.05


def test_config_validation_and_input_checks() -> None:
    for bad in [
        {"size": 0},
        {"crop_pct": 0.0},
        {"resize_size": 100},
        {"scale": (0.5, 0.1)},
        {"ratio": (0.0, 1.0)},
        {"hflip": 2.0},
        {"auto_augment": "autoaug"},
        {"interpolation": "lanczos"},
        {"std": (0.0, 1.0, 1.0)},
    ]:
        with pytest.raises(ValueError, match=next(iter(bad)).split("_")[0]):
            TransformConfig(**bad)  # type: ignore[arg-type]
    assert TransformConfig().eval_resize == 256
    assert TransformConfig(size=384, crop_pct=1.0).eval_resize == 384
    with pytest.raises(ValueError, match=r"uint8 image \[3, H, W\]"):
        eval_transform()(torch.zeros(3, 50, 50))
