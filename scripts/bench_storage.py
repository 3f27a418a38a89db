"""Stored encodings side by side: bytes per image, PSNR against the raw view, read + crop speed per core.

For each ``--max-side`` and each encoding (raw, jpeg q90, jpeg q75, webp q90, png) the sample photos are
preprocessed into full-view shards (one process), then measured:

* bytes per image: the shard files on disk (``.npy``, header included) over the images stored;
* PSNR (dB) of every decoded view against the raw view of the same run settings: mean and minimum;
* images/s of ``ShardDataset[i]`` with RandomResizedCrop(224) + flip + normalize, in this process with one
  torch thread (a loader worker's share of one core), best of ``--repeats`` passes; and the same against
  decoding the original JPEG (draft decode allowed, as ``ImageDataset`` does) + the same crop, the two
  alternating pass by pass (the original's rate is measured again beside each encoding).

Targets: JPEG q90 at max side 256 stores <= 15% of raw's bytes and reads >= 2x the original-JPEG path.

    python scripts/bench_storage.py [--src ../shared/images/imagenet-sample] [--max-sides 256 320] [--markdown]

Timings on a shared machine are noisy; the ratios, measured in one process, are what to read.
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import platform
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from tokenloom.vision.data import ImageDataset, ShardDataset
from tokenloom.vision.encoding import psnr
from tokenloom.vision.shards import PreprocessConfig, preprocess_images
from tokenloom.vision.transforms import TransformConfig, train_transform

HERE = Path(__file__).resolve().parent
ENCODINGS: list[tuple[str, int | None]] = [
    ("raw", None),
    ("jpeg", 90),
    ("jpeg", 75),
    ("webp", 90),
    ("png", None),
]


def _rates(jobs: list[Callable[[int], object]], n: int, repeats: int) -> list[float]:
    """Best images/s of each job over ``repeats`` rounds, the jobs alternating within each round (so a
    burst of load on the shared machine hits both sides of a ratio alike)."""
    best = [0.0] * len(jobs)
    for _ in range(repeats):
        for k, job in enumerate(jobs):
            start = time.perf_counter()
            for i in range(n):
                job(i)
            best[k] = max(best[k], n / (time.perf_counter() - start))
    return best


def _name(encoding: str, quality: int | None) -> str:
    return encoding if quality is None else f"{encoding} q{quality}"


def measure(
    listing: Path, items: list[tuple[Path, int]], tmp: Path, max_side: int, repeats: int
) -> list[dict]:
    """One row per encoding at ``max_side`` (raw first), plus the original-JPEG reference rate."""
    transform = train_transform(TransformConfig(size=224))
    rows: list[dict] = []
    raw: ShardDataset | None = None
    jpeg_ds = ImageDataset(items, transform=transform, on_error="raise")
    for encoding, quality in ENCODINGS:
        out = tmp / f"{max_side}-{encoding}-{quality}"
        config = PreprocessConfig(max_side=max_side, encoding=encoding, quality=quality)  # type: ignore[arg-type]
        summary = preprocess_images(listing, out, config=config, quiet=True)
        ds = ShardDataset(out, transform=transform)
        if raw is None:
            raw = ds
        scores = [psnr(raw.uint8(i).numpy(), ds.uint8(i).numpy()) for i in range(len(ds))]
        stored = sum(p.stat().st_size for p in (out / "shards").glob("*.npy"))
        rows.append({
            "encoding": _name(encoding, quality), "max_side": max_side, "ok": summary.ok,
            "bytes": stored / summary.ok, "psnr_mean": float(np.mean(scores)), "psnr_min": min(scores),
        })  # fmt: skip
        jobs = [lambda i, d=ds: d[(i, i)], lambda i: jpeg_ds[(i, i)]]
        rows[-1]["read"], rows[-1]["original"] = _rates(jobs, len(ds), repeats)
    for row in rows:
        row["raw_bytes"] = rows[0]["bytes"]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--src", type=Path, default=HERE.parent.parent / "shared/images/imagenet-sample")
    parser.add_argument("--max-sides", type=int, nargs="+", default=[256, 320])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    jpegs = sorted(p for p in args.src.iterdir() if p.suffix.lower() in (".jpeg", ".jpg"))
    items = [(p, 0) for p in jpegs]
    original_bytes = sum(p.stat().st_size for p in jpegs) / len(jpegs)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as in a loader worker: one core's worth
    try:
        with tempfile.TemporaryDirectory() as tmp:
            listing = Path(tmp) / "items.csv"
            listing.write_text("path,label\n" + "".join(f"{p},0\n" for p in jpegs))
            rows = [
                r for side in args.max_sides for r in measure(listing, items, Path(tmp), side, args.repeats)
            ]
    finally:
        torch.set_num_threads(threads)
    cpu = f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}"
    when = datetime.date.today().isoformat()
    head = (f"Machine: {cpu} (shared VM; timings noisy), {when}. {len(jpegs)} ImageNet sample JPEGs "
            f"(originals: {original_bytes / 1000:.1f} KB per image); read = ShardDataset[i] with "
            "RandomResizedCrop(224) + flip + normalize, one torch thread.")  # fmt: skip
    if args.markdown:
        print(head + "\n")
        print("| encoding | max side | bytes / image | of raw | PSNR mean (min) dB | read img/s per core "
              "| JPEG decode + same crop img/s | ratio |")  # fmt: skip
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
    else:
        print(head)
    for r in rows:
        quality = "exact" if math.isinf(r["psnr_min"]) else f"{r['psnr_mean']:.1f} ({r['psnr_min']:.1f})"
        cells = [r["encoding"], str(r["max_side"]), f"{r['bytes'] / 1000:.1f} KB", f"{r['bytes'] / r['raw_bytes']:.1%}",
                 quality, f"{r['read']:.0f}", f"{r['original']:.0f}", f"{r['read'] / r['original']:.2f}x"]  # fmt: skip
        if args.markdown:
            print("| " + " | ".join(cells) + " |")
        else:
            print("  ".join(f"{c:>12s}" for c in cells))


if __name__ == "__main__":
    main()
