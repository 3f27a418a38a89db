"""Is ViT training on full-view shards input-bound? Two side-by-side measurements in one process.

1. Training steps/s of a small ViT on CPU fed from full-view shards (DataLoader with ``--loader-workers``
   processes, train augmentations: RandomResizedCrop + flip, normalize) against the same model fed a
   random batch already in memory (the input-bound limit). Target: shards >= 0.9x in-memory.
2. Images/s of reading a shard image + RandomResizedCrop + flip + normalize against decoding the original
   JPEG (draft decode allowed, as ``ImageDataset`` does) + the same augmentations, in this process with
   one torch thread (as a loader worker runs). Target: >= 5x. Also the same without the normalize (the
   loader's work with ``normalize_on_device``).
3. With ``--workers N`` (N > 1): images/s of a DataLoader over the shards (RRC + flip, then normalized
   float out, or uint8 out as with ``normalize_on_device``) with N worker processes against one worker.
   Target on 2 cores: >= 1.8x with 2. Beside it, the machine's own scaling with N processes: pure
   compute, and copies of batch-sized buffers (memory bandwidth), to read the loader's figure against.

    python scripts/bench_train.py [--src ../shared/images/imagenet-sample] [--skip-train] [--workers 2]
        [--markdown]

Timings on a shared machine are noisy; the ratios are what to read. Run under the shared lock:
``flock /work/bench.lock python scripts/bench_train.py --markdown``.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from tokenloom.encoder.config import EncoderConfig
from tokenloom.vision.data import ImageDataset, ShardDataset, build_loader
from tokenloom.vision.optim import param_groups, soft_cross_entropy, soft_targets
from tokenloom.vision.shards import PreprocessConfig, preprocess_images
from tokenloom.vision.train import TrainConfig, build_classifier
from tokenloom.vision.train_data import Subset, build_loaders, to_device
from tokenloom.vision.transforms import TransformConfig, train_transform

HERE = Path(__file__).resolve().parent


def _step_fn(config: TrainConfig) -> tuple[torch.nn.Module, object]:
    torch.manual_seed(0)
    model = build_classifier(config, num_classes=2)
    opt = torch.optim.AdamW(param_groups(model, 0.05), lr=1e-3)

    def step(images: torch.Tensor, labels: torch.Tensor) -> None:
        loss = soft_cross_entropy(model(images), soft_targets(labels, 2, 0.1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    return model, step


def bench_steps(shards: Path, config: TrainConfig, steps: int, warmup: int) -> tuple[float, float, float]:
    """(steps/s from shards, steps/s in memory, data-wait fraction of the shard run)."""
    tcfg = TransformConfig(size=config.image_size)
    ds = ShardDataset(shards, transform=train_transform(tcfg))
    train = Subset(ds, range(len(ds)))
    loader, sampler, _ = build_loaders(
        train, train, batch=config.batch_size, rank=0, world=1, seed=0, workers=config.workers
    )
    _, step = _step_fn(config)
    wait = 0.0
    done = 0
    start = 0.0
    epoch = 0
    while done < warmup + steps:
        sampler.set_epoch(epoch)
        it = iter(loader)
        while done < warmup + steps:
            t0 = time.perf_counter()
            batch = next(it, None)
            if batch is None:
                break
            if done == warmup:
                start, wait = t0, 0.0
            wait += time.perf_counter() - t0
            step(*to_device(batch, torch.device("cpu")))  # type: ignore[operator]
            done += 1
        epoch += 1
    shard_rate = steps / (time.perf_counter() - start)
    wait_fraction = wait * shard_rate / steps
    _, step = _step_fn(config)
    images = torch.randn(config.batch_size, 3, config.image_size, config.image_size)  # [B, 3, S, S]
    labels = torch.randint(0, 2, (config.batch_size,))
    for i in range(warmup + steps):
        if i == warmup:
            start = time.perf_counter()
        step(images, labels)  # type: ignore[operator]
    memory_rate = steps / (time.perf_counter() - start)
    return shard_rate, memory_rate, wait_fraction


def bench_read(shards: Path, src_items: list[tuple[Path, int]], size: int, repeats: int) -> list[float]:
    """images/s: shard + RRC, JPEG decode + RRC, shard read only, JPEG decode only, shard + RRC uint8 out;
    one torch thread.

    One thread, as in a DataLoader worker process (torch sets it there): intra-op threads on per-image
    work mostly add contention, and a loaded machine turns that into a large, noisy overhead.
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _read_rates(shards, src_items, size, repeats)
    finally:
        torch.set_num_threads(threads)


def _read_rates(shards: Path, src_items: list[tuple[Path, int]], size: int, repeats: int) -> list[float]:
    from tokenloom.vision.io import load_image

    transform = train_transform(TransformConfig(size=size))
    shard_ds = ShardDataset(shards, transform=transform)
    shard_u8 = ShardDataset(shards, transform=train_transform(TransformConfig(size=size, normalize=False)))
    jpeg_ds = ImageDataset(src_items, transform=transform, on_error="raise")
    datas = [p.read_bytes() for p, _ in src_items]
    n = len(shard_ds)
    jobs = [
        lambda i: shard_ds[(i, i)],
        lambda i: jpeg_ds[(i, i)],
        lambda i: shard_ds.uint8(i),  # the stored view, copied out of the memory map
        lambda i: load_image(datas[i], target_size=size),  # decode only (draft allowed), from memory
        lambda i: shard_u8[(i, i)],  # uint8 out: the loader's share with normalize_on_device
    ]
    rates = [0.0] * len(jobs)
    for _ in range(repeats):  # the jobs alternate within a round: load bursts hit both sides of a ratio
        for k, job in enumerate(jobs):
            start = time.perf_counter()
            for i in range(n):
                job(i)
            rates[k] = max(rates[k], n / (time.perf_counter() - start))
    return rates


def bench_workers(
    shards: Path, size: int, workers: int, epochs: int, *, normalize: bool = True
) -> tuple[float, float]:
    """images/s of a DataLoader (RRC + flip, normalized float or uint8 out, batch 32) with ``workers``
    processes and with 1: both loaders persistent and warmed up, their epochs alternating (a load burst
    hits both sides), the best epoch of each."""
    ds = ShardDataset(shards, transform=train_transform(TransformConfig(size=size, normalize=normalize)))
    loaders = [
        build_loader(ds, batch_size=32, shuffle=True, num_workers=n, persistent_workers=True)
        for n in (workers, 1)
    ]
    for loader in loaders:  # warm-up epoch: worker start-up and first page touches are not counted
        for _ in loader:
            pass
    rates = [0.0, 0.0]
    for _ in range(epochs):
        for k, loader in enumerate(loaders):
            start = time.perf_counter()
            for _ in loader:
                pass
            rates[k] = max(rates[k], len(ds) / (time.perf_counter() - start))
    return rates[0], rates[1]


def _spin(n: int) -> None:
    x = 0
    for i in range(n):  # pure Python arithmetic: no memory traffic beyond the core's caches
        x += i * i % 7


def _copy(n: int) -> None:
    src = np.ones(19 * 2**20, dtype=np.uint8)  # one float32 batch of 32 images at 224 px
    dst = np.empty_like(src)
    for _ in range(n):
        np.copyto(dst, src)


def machine_scaling(workers: int) -> tuple[float, float]:
    """How this machine scales with ``workers`` processes: (compute-bound, memory-copy-bound) throughput of
    ``workers`` processes against one — what a loader's scaling is to be read against, its work being part
    compute, part moving batches through memory. Each figure is one short run: expect ±0.2 between runs."""
    import multiprocessing

    ratios = []
    for job, n in ((_spin, 3_000_000), (_copy, 60)):
        rates = []
        for procs in (1, workers):
            start = time.perf_counter()
            ps = [multiprocessing.Process(target=job, args=(n,)) for _ in range(procs)]
            for proc in ps:
                proc.start()
            for proc in ps:
                proc.join()
            rates.append(procs / (time.perf_counter() - start))
        ratios.append(rates[1] / rates[0])
    return ratios[0], ratios[1]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--src", type=Path, default=HERE.parent.parent / "shared/images/imagenet-sample")
    parser.add_argument("--max-side", type=int, default=320)
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--preset", default="vit-ti16")
    parser.add_argument("--depth", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--loader-workers", type=int, default=2)
    parser.add_argument("--read-images", type=int, default=120, help="images for the read benchmark")
    parser.add_argument("--skip-train", action="store_true", help="only the read measurements (2, 3)")
    parser.add_argument("--workers", type=int, default=1, help="> 1: loader scaling against 1 worker (3)")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    jpegs = sorted(p for p in args.src.iterdir() if p.suffix.lower() in (".jpeg", ".jpg"))[: args.read_images]
    config = TrainConfig(
        encoder=EncoderConfig.preset(args.preset, depth=args.depth), image_size=args.image_size,
        batch_size=args.batch_size, workers=args.loader_workers,
    )  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        listing = Path(tmp) / "items.csv"
        listing.write_text("path,label\n" + "".join(f"{p},{i % 2}\n" for i, p in enumerate(jpegs)))
        shards = Path(tmp) / "shards"
        preprocess_images(listing, shards, config=PreprocessConfig(max_side=args.max_side), quiet=True)
        rows = []
        wait = float("nan")
        if not args.skip_train:
            shard_rate, memory_rate, wait = bench_steps(shards, config, args.steps, args.warmup)
            rows.append(("train steps/s", f"shards ({args.loader_workers} loader workers)", shard_rate,
                         "in-memory batch", memory_rate, shard_rate / memory_rate, ">= 0.9"))  # fmt: skip
        read_shard, read_jpeg, read_only, decode_only, read_u8 = bench_read(
            shards, [(p, i % 2) for i, p in enumerate(jpegs)], args.image_size, 3
        )
        rows += [
            ("images/s", "shard + RRC + flip", read_shard, "JPEG decode + RRC + flip", read_jpeg,
             read_shard / read_jpeg, ">= 5"),
            ("images/s", "shard + RRC + flip, uint8 out", read_u8, "JPEG decode + RRC + flip", read_jpeg,
             read_u8 / read_jpeg, "-"),
            ("images/s", "shard read (uint8 copy)", read_only, "JPEG decode only", decode_only,
             read_only / decode_only, "-"),
        ]  # fmt: skip
        if args.workers > 1:
            target = ">= 1.8" if args.workers == 2 else "-"
            for normalize, out in ((True, "float out"), (False, "uint8 out")):
                many, one = bench_workers(shards, args.image_size, args.workers, 6, normalize=normalize)
                rows.append(("loader images/s", f"{args.workers} workers, {out}", many, "1 worker", one,
                             many / one, target))  # fmt: skip
            compute, copy = machine_scaling(args.workers)
            rows.append(
                ("machine", f"{args.workers} processes, compute", compute, "1 process", 1.0, compute, "-")
            )
            rows.append(
                ("machine", f"{args.workers} processes, 19 MB copies", copy, "1 process", 1.0, copy, "-")
            )
    model = f"{args.preset} depth {args.depth}, {args.image_size}px, batch {args.batch_size}"
    waited = "not measured" if args.skip_train else f"{wait:.0%}"
    cpu = f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}"
    when = datetime.date.today().isoformat()
    if args.markdown:
        print(f"Machine: {cpu} (shared VM; timings noisy), {when}. Model: {model}; "
              f"{len(jpegs)} ImageNet sample JPEGs, full-view shards max side {args.max_side}; "
              f"data wait on the shard path {waited}.\n")  # fmt: skip
        print("| measure | ours | rate | peer | rate | ratio | target |")
        print("|---|---|---:|---|---:|---:|---|")
        for what, ours, a, peer, b, ratio, target in rows:
            print(f"| {what} | {ours} | {a:.2f} | {peer} | {b:.2f} | {ratio:.2f}x | {target} |")
    else:
        print(f"{cpu}; {model}; data wait {waited}")
        for what, ours, a, peer, b, ratio, target in rows:
            print(f"{what:14s} {ours:32s} {a:9.2f}  {peer:26s} {b:9.2f}  ratio {ratio:.2f}x ({target})")


if __name__ == "__main__":
    main()
