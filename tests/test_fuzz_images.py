"""Fuzzing the decoder: mutated real JPEG, PNG, GIF, TIFF, WebP and BMP bytes give an image or an
ImageDecodeError, never another exception and never a hang; then every fuzzed and hostile file together goes
through ``tokenloom images preprocess`` with exit status 0 and is accounted for."""

from __future__ import annotations

import csv
import json
import os
import random
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import get_args

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hostile_images import SEED_FILES, mutate, seed_images, write_hostile
from tokenloom.errors import ImageDecodeError, ImageErrorKind
from tokenloom.vision.io import DecodeConfig, load_image

REPO_ROOT = Path(__file__).resolve().parent.parent
KINDS = set(get_args(ImageErrorKind))
LIMIT = DecodeConfig(max_pixels=1 << 22)  # mutated headers may declare huge canvases: keep each decode small
HANG_S = 30  # a decode of these small files taking this long is a hang (the bound, not a speed check)
SUFFIX = {"jpeg": ".jpg", "png": ".png", "gif": ".gif", "tiff": ".tif", "webp": ".webp", "bmp": ".bmp"}


class _Hang(BaseException):
    pass


@contextmanager
def _no_hang(seconds: int) -> Iterator[None]:
    """Fail (not wait forever) when the block runs past ``seconds``: SIGALRM interrupts it."""

    def on_alarm(signum: int, frame: object) -> None:
        raise _Hang

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(seconds)
    try:
        yield
    except _Hang:
        pytest.fail(f"the decode did not finish within {seconds} s (a hang)")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture(scope="module")
def seeds(shared_dir: Path) -> dict[str, bytes]:
    return seed_images(shared_dir / "images" / "edge")


header_position = st.integers(0, 96)  # most format damage that matters is in the first bytes
anywhere = st.integers(0, 1 << 20)  # wraps around the file length
mutation = st.tuples(
    st.sampled_from(["flip", "flip", "cut", "insert", "dup"]),
    st.one_of(header_position, anywhere),
    st.integers(0, 255),
)


def _check(data: bytes, name: str) -> str:
    """Decode and check the contract; returns ``"ok"`` or the error kind."""
    error: ImageDecodeError | None = None
    with _no_hang(HANG_S):
        try:
            image = load_image(data, name=name, config=LIMIT, warnings=[])
        except ImageDecodeError as exc:  # the only exception allowed out; anything else fails the test
            error = exc
    if error is not None:
        assert error.kind in KINDS, error.kind
        assert error.path == name and str(error).startswith(f"{name}: ") and error.detail
        return error.kind
    assert image.dtype == torch.uint8 and image.dim() == 3 and image.shape[0] == 3
    assert image.shape[1] >= 1 and image.shape[2] >= 1
    return "ok"


@pytest.mark.parametrize("fmt", sorted(SEED_FILES))
def test_mutated_files_decode_or_raise_image_decode_error(seeds: dict[str, bytes], fmt: str) -> None:
    assert _check(seeds[fmt], f"seed.{fmt}") == "ok"  # the unmutated file decodes
    seen: set[str] = set()

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(ops=st.lists(mutation, min_size=1, max_size=4))
    def run(ops: list[tuple[str, int, int]]) -> None:
        seen.add(_check(mutate(seeds[fmt], ops), f"fuzzed{SUFFIX[fmt]}"))

    run()
    print(fmt, sorted(seen))


def _mutants(seeds: dict[str, bytes], per_format: int) -> Iterator[tuple[str, bytes]]:
    """A fixed sample of mutated files (the same every run), named by format."""
    rng = random.Random(1234)
    ops = ["flip", "cut", "insert", "dup"]
    for fmt in sorted(seeds):
        for k in range(per_format):
            plan = [
                (
                    rng.choice(ops),
                    rng.randrange(96) if rng.random() < 0.6 else rng.randrange(1 << 20),
                    rng.randrange(256),
                )
                for _ in range(rng.randint(1, 4))
            ]
            yield f"{fmt}_{k:03d}{SUFFIX[fmt]}", mutate(seeds[fmt], plan)


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.slow
def test_every_fuzzed_and_hostile_file_goes_through_preprocess(
    shared_dir: Path, seeds: dict[str, bytes], tmp_path: Path
) -> None:
    src = tmp_path / "hostile"
    src.mkdir()
    edge = shared_dir / "images" / "edge"
    for path in edge.iterdir():
        if path.suffix not in (".tsv", ".txt"):
            (src / path.name).write_bytes(path.read_bytes())
    for name, data in _mutants(seeds, per_format=12):
        (src / name).write_bytes(data)
    write_hostile(src / "crafted")
    (src / "crafted" / "empty.png").write_bytes(b"")
    expected = {p.relative_to(src).as_posix() for p in src.rglob("*") if p.is_file()}
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "src")}
    args = ["images", "preprocess", str(src), "--out", str(out), "--size", "32", "--workers", "2"]
    result = subprocess.run(
        [sys.executable, "-m", "tokenloom", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr and "Corrupt JPEG" not in result.stderr + result.stdout
    manifest = _rows(out / "manifest-00000-of-00001.csv")
    rejects = _rows(out / "rejects-00000-of-00001.csv")
    seen = [r["path"] for r in manifest + rejects]
    assert sorted(seen) == sorted(expected)  # each input exactly once
    assert {r["kind"] for r in rejects} <= KINDS and all(r["reason"] for r in rejects)
    summary = json.loads((out / "summary-00000-of-00001.json").read_text())
    assert (
        summary["ignored_files"] == []
        and summary["ok"] == len(manifest)
        and summary["rejected"] == len(rejects)
    )
    assert {"crafted/png_bomb.icns", "crafted/unknown_fourcc.dds", "crafted/empty.png"} <= {
        r["path"] for r in rejects
    }
    assert any("Corrupt JPEG data" in r["warnings"] for r in manifest)  # recorded instead of printed
    print(f"{len(manifest)} ok, {len(rejects)} rejected:", summary["by_kind"])


def test_mutate_is_the_mutation_it_claims() -> None:
    data = bytes(range(10))
    assert mutate(data, [("flip", 3, 1)]) == bytes([0, 1, 2, 1, 4, 5, 6, 7, 8, 9])  # 3 ^ 0b10
    assert mutate(data, [("cut", 4, 0)]) == bytes(range(4))
    assert mutate(data, [("insert", 12, 255)]) == bytes([0, 1, 255, *range(2, 10)])  # 12 wraps to 2
    assert mutate(data, [("dup", 1, 1)]) == bytes([0, 1, 2, 1, 2, *range(3, 10)])
    with pytest.raises(ValueError, match="unknown mutation"):
        mutate(data, [("rot", 0, 0)])
