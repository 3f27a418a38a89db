"""RandomResizedCrop + flip as one uint8 step: equal to torchvision v2 for the same box, crop boxes
distributed as torchvision's, seeds, normalize on the device."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
import torch
from torchvision import transforms as tv1

from tokenloom.vision.crops import crop_params, resized_crop_flip, resized_crop_flip_reference
from tokenloom.vision.io import load_image
from tokenloom.vision.transforms import TransformConfig, normalize, normalize_reference, train_transform

SCALE, RATIO = (0.08, 1.0), (3 / 4, 4 / 3)
DRAWS = 4000
# two-sample Kolmogorov-Smirnov critical value at alpha = 0.001 for DRAWS vs DRAWS: 1.95 * sqrt(2 / DRAWS)
KS_LIMIT = 1.95 * (2 / DRAWS) ** 0.5


def _ks(a: np.ndarray, b: np.ndarray) -> float:
    """The two-sample Kolmogorov-Smirnov statistic: the largest gap between the empirical CDFs."""
    grid = np.sort(np.concatenate([a, b]))
    cdf_a = np.searchsorted(np.sort(a), grid, side="right") / len(a)
    cdf_b = np.searchsorted(np.sort(b), grid, side="right") / len(b)
    return float(np.max(np.abs(cdf_a - cdf_b)))


def _area_and_aspect(
    boxes: list[tuple[int, int, int, int]], height: int, width: int
) -> tuple[np.ndarray, ...]:
    h = np.array([b[2] for b in boxes], dtype=np.float64)
    w = np.array([b[3] for b in boxes], dtype=np.float64)
    return h * w / (height * width), w / h


@pytest.mark.parametrize(("height", "width"), [(240, 320), (56, 75), (320, 90)])
def test_crop_boxes_are_distributed_as_torchvision_draws_them(height: int, width: int) -> None:
    rng = random.Random(1234)
    ours = [crop_params(height, width, SCALE, RATIO, rng) for _ in range(DRAWS)]
    torch.manual_seed(1234)
    image = torch.zeros(3, height, width, dtype=torch.uint8)
    theirs = [tuple(tv1.RandomResizedCrop.get_params(image, list(SCALE), list(RATIO))) for _ in range(DRAWS)]
    for top, left, h, w in ours:
        assert 0 <= top <= height - h and 0 <= left <= width - w and h > 0 and w > 0
    a_area, a_aspect = _area_and_aspect(ours, height, width)
    b_area, b_aspect = _area_and_aspect(theirs, height, width)  # type: ignore[arg-type]
    assert _ks(a_area, b_area) < KS_LIMIT
    assert _ks(a_aspect, b_aspect) < KS_LIMIT
    top = np.array([b[0] for b in ours]) / height
    their_top = np.array([b[0] for b in theirs]) / height
    assert _ks(top, their_top) < KS_LIMIT  # where the box lies, too
    # the test can tell: a narrower area range is far outside the limit
    narrow = [crop_params(height, width, (0.2, 1.0), RATIO, rng) for _ in range(DRAWS)]
    assert _ks(_area_and_aspect(narrow, height, width)[0], b_area) > 3 * KS_LIMIT


def test_fallback_box_matches_torchvision_for_extreme_shapes() -> None:
    # a 1000 x 10 strip: no try fits, both fall back to the centred box at the widest allowed ratio
    rng = random.Random(0)
    image = torch.zeros(3, 10, 1000, dtype=torch.uint8)
    torch.manual_seed(0)
    expected = tuple(tv1.RandomResizedCrop.get_params(image, [0.9, 1.0], list(RATIO)))
    # w = round(10 · 4/3) = 13, centred
    assert crop_params(10, 1000, (0.9, 1.0), RATIO, rng) == expected == (0, 493, 10, 13)


@pytest.fixture(scope="module")
def photos(shared_dir: Path) -> list[torch.Tensor]:
    folder = shared_dir / "images" / "imagenet-sample"
    paths = sorted(p for p in folder.iterdir() if p.suffix.lower() in (".jpeg", ".jpg"))[::20]
    return [load_image(p, target_size=224) for p in paths]  # [3, H, W], planar or channels-last views


def test_fast_crop_equals_torchvision_resized_crop_and_flip(photos: list[torch.Tensor]) -> None:
    rng = random.Random(5)
    for image in photos:
        planar = image.contiguous()  # [3, H, W] as raw shards store it
        channels_last = image.permute(1, 2, 0).contiguous().permute(2, 0, 1)  # as decoders return it
        for _ in range(4):
            box = crop_params(int(image.shape[1]), int(image.shape[2]), SCALE, RATIO, rng)
            flip = rng.random() < 0.5
            expected = resized_crop_flip_reference(planar, box, 224, flip)  # [3, 224, 224]
            for source in (planar, channels_last):
                got = resized_crop_flip(source, box, 224, flip)
                assert got.is_contiguous() and got.dtype == torch.uint8
                assert torch.equal(got, expected), (box, flip)
                assert torch.equal(resized_crop_flip(source, box, 224, flip, planar=False), expected)
        whole = (0, 0, int(image.shape[1]), int(image.shape[2]))  # a downscale: antialiasing matters
        assert torch.equal(
            resized_crop_flip(planar, whole, 64, False), resized_crop_flip_reference(planar, whole, 64, False)
        )


def test_train_transform_seeds_uint8_output_and_normalize(photos: list[torch.Tensor]) -> None:
    image = photos[0]
    train = train_transform(TransformConfig(size=64))
    raw = train_transform(TransformConfig(size=64, normalize=False))
    out = train(image, seed=3)
    assert torch.equal(out, train(image, seed=3)) and not torch.equal(out, train(image, seed=4))
    as_uint8 = raw(image, seed=3)  # what the loader yields with normalize_on_device
    assert as_uint8.dtype == torch.uint8 and as_uint8.shape == (3, 64, 64)
    assert torch.equal(normalize(as_uint8[None], train.config.mean, train.config.std)[0], out)  # bitwise
    reference = normalize_reference(as_uint8, train.config.mean, train.config.std)
    assert torch.allclose(out, reference, atol=1e-5)
    torch.manual_seed(9)
    first = train(image)
    torch.manual_seed(9)
    assert torch.equal(first, train(image))  # without a seed: the global torch RNG decides
    augmented = train_transform(TransformConfig(size=64, auto_augment="randaugment"))
    assert torch.equal(augmented(image, seed=2), augmented(image, seed=2))
    bicubic = train_transform(TransformConfig(size=64, interpolation="bicubic"))  # torchvision's own steps
    assert bicubic(image, seed=1).shape == (3, 64, 64)
