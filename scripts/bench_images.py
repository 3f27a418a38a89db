"""Benchmark the image pipeline against plain PIL + torchvision v2 and timm, in one process.

Run under the shared lock (ratios only mean something when nothing else runs)::

    flock /tmp/tokenloom-bench.lock python scripts/bench_images.py

Measures, on the real JPEGs in ../shared/images/imagenet-sample (or $TOKENLOOM_SHARED), single process,
one torch thread for every contestant:

1. eval images/s: ours (draft decode + uint8 v2 resize/crop + fused normalize) vs (a) PIL decode + v2 on the
   tensor + v2 normalize vs (b) timm ``create_transform(224)`` (PIL resize, ToTensor, Normalize);
2. train images/s: RandomResizedCrop(224, (0.08, 1)) + flip, same three contestants (timm without colour jitter);
3. patchify throughput vs a plain copy of the same tensor (memory-bandwidth bound);
4. reading preprocessed shards (memory-mapped) vs decoding the JPEGs.

Each figure is the best of ``--repeats`` interleaved passes. Prints a Markdown table with ratios.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path


def _shared() -> Path:
    for candidate in [os.environ.get("TOKENLOOM_SHARED"), Path(__file__).resolve().parents[2] / "shared"]:
        if candidate and (Path(candidate) / "DATA.md").is_file():
            return Path(candidate)
    sys.exit("external data not found: set TOKENLOOM_SHARED to the folder holding DATA.md")


def _rate(fn: Callable[[], int], repeats: int) -> float:
    """Best items/s over ``repeats`` runs of ``fn`` (which returns the number of items it processed)."""
    best = 0.0
    for _ in range(repeats):
        start = time.perf_counter()
        n = fn()
        best = max(best, n / (time.perf_counter() - start))
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--limit", type=int, default=0, help="use only the first N images (0: all)")
    args = parser.parse_args()

    import torch
    from PIL import Image
    from timm.data import create_transform
    from torchvision.transforms import v2

    from tokenloom.vision.data import ShardDataset
    from tokenloom.vision.io import load_image
    from tokenloom.vision.patches import patchify
    from tokenloom.vision.shards import PreprocessConfig, preprocess_images
    from tokenloom.vision.transforms import IMAGENET_MEAN, IMAGENET_STD, eval_transform, train_transform

    torch.set_num_threads(1)
    src = _shared() / "images" / "imagenet-sample"
    files = sorted(src.glob("*.JPEG"))
    if args.limit:
        files = files[: args.limit]
    datas = [f.read_bytes() for f in files]  # decode from memory: no disk cache effects for anyone

    def pil_rgb(data: bytes) -> Image.Image:
        with Image.open(io.BytesIO(data)) as im:
            return im.convert("RGB")

    norm = [v2.ToDtype(torch.float32, scale=True), v2.Normalize(list(IMAGENET_MEAN), list(IMAGENET_STD))]
    plain_eval = v2.Compose([v2.PILToTensor(), v2.Resize(256, antialias=True), v2.CenterCrop(224), *norm])
    plain_train = v2.Compose(
        [v2.PILToTensor(), v2.RandomResizedCrop(224, antialias=True), v2.RandomHorizontalFlip(), *norm]
    )
    timm_eval = create_transform(224, is_training=False)
    timm_train = create_transform(224, is_training=True, color_jitter=None)
    ours_eval, ours_train = eval_transform(), train_transform()
    print(f"images: {len(files)} JPEGs from {src}; torch threads 1; best of {args.repeats}")
    print(f"timm eval:  {timm_eval}".replace("\n", " "))
    print(f"timm train: {timm_train}".replace("\n", " "))

    def run(fn: Callable[[bytes, int], object]) -> Callable[[], int]:
        def go() -> int:
            for i, data in enumerate(datas):
                fn(data, i)
            return len(datas)

        return go

    contestants = {
        "eval": {
            "ours": run(lambda d, i: ours_eval.load(d)),
            "PIL + torchvision v2": run(lambda d, i: plain_eval(pil_rgb(d))),
            "timm create_transform": run(lambda d, i: timm_eval(pil_rgb(d))),
        },
        "train": {
            "ours": run(lambda d, i: ours_train.load(d, seed=i)),
            "PIL + torchvision v2": run(lambda d, i: plain_train(pil_rgb(d))),
            "timm create_transform": run(lambda d, i: timm_train(pil_rgb(d))),
        },
    }
    rows: list[tuple[str, str, str, str]] = []
    for kind, group in contestants.items():
        rates = {name: 0.0 for name in group}
        for _ in range(args.repeats):  # interleave so drift hits everyone alike
            for name, fn in group.items():
                rates[name] = max(rates[name], _rate(fn, 1))
        for name, rate in rates.items():
            rows.append(
                (
                    f"{kind}: {name}",
                    f"{rate:,.0f} img/s",
                    f"{rates['ours'] / rate:.2f}x" if name != "ours" else "-",
                    "ours / peer" if name != "ours" else "",
                )
            )

    # patchify vs a plain copy of the same bytes, both allocating their output as patchify does: torch's
    # x.clone() (the plain tensor copy) and numpy's a.copy() (a memcpy into hugepage-backed memory: faster)
    # 38.5 MB of input for both dtypes (64 float32 or 256 uint8 images): larger than the caches, so the
    # copy runs at memory bandwidth rather than from L3
    for dtype, batch in ((torch.float32, 64), (torch.uint8, 256)):
        x = (torch.rand(batch, 3, 224, 224) * 255).to(dtype)  # [B, C, H, W]
        nbytes = x.numel() * x.element_size()
        tries = args.repeats * 5
        t_patch = min(_timeit(lambda x=x: patchify(x)) for _ in range(tries))
        t_clone = min(_timeit(lambda x=x: x.clone()) for _ in range(tries))
        array = x.numpy()  # the same memory
        t_np = min(_timeit(lambda a=array: a.copy()) for _ in range(tries))
        name = str(dtype)[6:]
        rows.append(
            (
                f"patchify {tuple(x.shape)} {name}",
                f"{nbytes / t_patch / 1e9:.2f} GB/s",
                f"{t_clone / t_patch:.2f}x",
                f"of torch x.clone(); {t_np / t_patch:.2f}x of numpy a.copy()",
            )
        )
        rows.append((f"plain copy {name}: torch x.clone()", f"{nbytes / t_clone / 1e9:.2f} GB/s", "-", ""))
        rows.append((f"plain copy {name}: numpy a.copy()", f"{nbytes / t_np / 1e9:.2f} GB/s", "-", ""))

    # shards vs JPEG decoding
    with tempfile.TemporaryDirectory(prefix="bench-images-") as tmp:
        start = time.perf_counter()
        summary = preprocess_images(
            src, Path(tmp) / "out", config=PreprocessConfig(shard_size=100, store="eval"), quiet=True
        )
        prep_rate = summary.items / (time.perf_counter() - start)
        ds = ShardDataset(Path(tmp) / "out")
        n = len(ds)

        def shard_uint8() -> int:
            for i in range(n):
                ds.uint8(i)
            return n

        def shard_float() -> int:
            for i in range(n):
                ds[i]
            return n

        def decode_only() -> int:
            for data in datas:
                load_image(data)
            return len(datas)

        shard_u8 = max(_rate(shard_uint8, 1) for _ in range(args.repeats))
        shard_f = max(_rate(shard_float, 1) for _ in range(args.repeats))
        decode = max(_rate(decode_only, 1) for _ in range(args.repeats))
        ours_eval_rate = float(rows[0][1].split()[0].replace(",", ""))
        rows.append(
            (
                f"preprocess {summary.items} files -> shards (1 process)",
                f"{prep_rate:,.0f} img/s",
                "-",
                f"ok {summary.ok}, rejected {summary.rejected}",
            )
        )
        rows.append(("JPEG decode only (load_image, full size)", f"{decode:,.0f} img/s", "-", ""))
        rows.append(
            (
                "shard read, uint8 (memory-mapped)",
                f"{shard_u8:,.0f} img/s",
                f"{shard_u8 / decode:.1f}x",
                "of JPEG decode",
            )
        )
        rows.append(
            (
                "shard read + normalize (ShardDataset[i])",
                f"{shard_f:,.0f} img/s",
                f"{shard_f / ours_eval_rate:.1f}x",
                "of our decode+eval",
            )
        )
        ds._maps.clear()  # close the memory maps before the folder goes

    print()
    print("| measurement | rate | ratio | ratio meaning |")
    print("|---|---:|---:|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} |")
    return 0


def _timeit(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


if __name__ == "__main__":
    sys.exit(main())
