"""``tokenloom images``: image collections into ViT-ready uint8 shards (sub-command ``preprocess``)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokenloom._tables import plural

if TYPE_CHECKING:
    from tokenloom.vision.shards import PreprocessSummary

NAME = "images"
HELP = "preprocess image collections into uint8 shards for ViT training (images preprocess SRC --out DIR)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(
        title="images commands", metavar="ACTION", dest="images_action", required=True
    )
    p = sub.add_parser(
        "preprocess",
        help="decode, resize (whole view or eval crop) and store uint8 shards + manifest + rejects; resumable",
        description="Decode every image of SRC (a folder with class subfolders, a .csv path,label or a text "
        "file with one path per line), keep the whole view with its longer side at most --max-side (--store "
        "full, for training) or apply the eval transform (--store eval: resize shorter side, center crop "
        "SIZE), and store uint8 shards with a manifest and a rejects file. Rerunning resumes an interrupted run.",
    )
    p.add_argument("src", type=Path, metavar="SRC", help="image folder, .csv (path,label) or list file")
    p.add_argument("--out", type=Path, required=True, help="output folder (created; reused to resume)")
    p.add_argument(
        "--store", choices=("full", "eval"), default="full",
        help="full: whole image, longer side <= --max-side, for training (default); eval: center crops --size",
    )  # fmt: skip
    p.add_argument("--max-side", type=int, default=320, help="--store full: longest side kept (default 320)")
    p.add_argument("--size", type=int, default=224, help="--store eval: output side in pixels (default 224)")
    p.add_argument(
        "--encode", default="raw", metavar="ENCODING",
        help="how each stored image is kept: raw (uint8, default), jpeg, webp (lossy, see --quality) or png "
        "(lossless); ShardDataset decodes on read",
    )  # fmt: skip
    p.add_argument(
        "--quality", type=int, default=None, metavar="Q",
        help="--encode jpeg / webp: encoder quality 1..100 (default 90)",
    )  # fmt: skip
    p.add_argument("--shard-size", type=int, default=1000, help="input images per shard (default 1000)")
    p.add_argument("--num-shards", type=int, default=1, help="split the work into K parts (default 1)")
    p.add_argument("--shard-index", type=int, default=0, help="which part this run does, 0..K-1 (default 0)")
    p.add_argument(
        "--workers",
        type=int,
        default=0,
        help="decoding processes (default 0: in this process, where --timeout is a soft limit)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="per-file time limit; a file past it is rejected as 'timeout' (default 30; 0: no limit)",
    )
    p.add_argument(
        "--max-pixels",
        type=int,
        default=89_478_485,
        metavar="N",
        help="reject images with more pixels as 'too_large' (decompression bombs; default 89478485, "
        "Pillow's limit; 0: no limit)",
    )
    p.add_argument(
        "--distributor", choices=("local", "ray"), default="local",
        help="ray: run the shards as tasks on a Ray cluster (RAY_ADDRESS or a local one); same output files",
    )  # fmt: skip
    _add_quiet_verbose(p)
    _add_export_webdataset(sub)


def _add_quiet_verbose(p: argparse.ArgumentParser) -> None:
    """--quiet / --verbose come from the common parent parser; sub-sub-parsers need them too."""
    p.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS, help="no progress bar")
    p.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=argparse.SUPPRESS,
        help="tokenloom's debug logging on stderr",
    )


def summary_lines(summary: PreprocessSummary, *, src: str, tag: str) -> list[str]:
    """The run summary as printed: counts with correct plurals, no empty clauses, no rate for no work."""
    kinds = f" ({', '.join(f'{k} {v}' for k, v in summary.by_kind.items())})" if summary.by_kind else ""
    warned = f", {summary.warned} with decoder warnings (warnings column)" if summary.warned else ""
    done = summary.shards - summary.resumed_shards
    shards = plural(summary.shards, "shard")
    if summary.resumed_shards:
        shards += f" ({summary.resumed_shards} done by an earlier run, {done} now)"
    if done and summary.images_per_s > 0:
        took = (
            f"{summary.elapsed_s:.1f} s" if summary.elapsed_s >= 1 else f"{summary.elapsed_s * 1000:.0f} ms"
        )
        shards += f"; {summary.images_per_s:.1f} images/s over {took}"
    return [
        f"preprocessed {plural(summary.items, 'image')} from {src} into {summary.out} (part {tag})",
        f"  ok {summary.ok}, rejected {summary.rejected}{kinds}, ignored non-image files {summary.ignored}{warned}",
        f"  {shards}",
    ]


def _add_export_webdataset(sub: Any) -> None:
    p = sub.add_parser(
        "export-webdataset",
        help="write a preprocessed folder as WebDataset tar shards ({key}.png|jpg, {key}.cls, {key}.json)",
        description="Export the images of a preprocessed folder (SHARDS) as WebDataset tars in OUT.",
    )
    p.add_argument("shards", type=Path, metavar="SHARDS", help="folder written by `images preprocess`")
    p.add_argument("out", type=Path, metavar="OUT", help="output folder for shard-NNNNN.tar")
    p.add_argument("--samples-per-tar", type=int, default=1000, help="samples per tar (default 1000)")
    p.add_argument("--format", choices=("png", "jpg"), default="png", help="image encoding (default png)")
    p.add_argument("--quality", type=int, default=95, help="JPEG quality with --format jpg (default 95)")
    _add_quiet_verbose(p)


def _run_export_webdataset(args: argparse.Namespace) -> int:
    from tokenloom.vision.export import export_webdataset

    tars = export_webdataset(
        args.shards, args.out, samples_per_tar=args.samples_per_tar, image_format=args.format,
        quality=args.quality,
    )  # fmt: skip
    print(f"wrote {plural(len(tars), 'WebDataset tar')} to {args.out}")
    return 0


def run(args: argparse.Namespace) -> int:
    if args.images_action == "export-webdataset":
        return _run_export_webdataset(args)
    from tokenloom.vision.shards import PreprocessConfig, preprocess_images

    config = PreprocessConfig(
        size=args.size,
        shard_size=args.shard_size,
        num_shards=args.num_shards,
        shard_index=args.shard_index,
        workers=args.workers,
        timeout_s=args.timeout if args.timeout > 0 else None,
        max_pixels=args.max_pixels if args.max_pixels > 0 else None,
        store=args.store,
        max_side=args.max_side,
        distributor=args.distributor,
        encoding=args.encode,
        quality=args.quality,
    )
    summary = preprocess_images(args.src, args.out, config=config, quiet=args.quiet)
    for line in summary_lines(summary, src=str(args.src), tag=config.tag):
        print(line)
    if summary.rejects:
        print(f"  rejects listed in {Path(args.out) / f'rejects-{config.tag}.csv'}:")
        for r in summary.rejects[:20]:
            print(f"    {r['path']}: {r['kind']}: {r['reason']}")
        if len(summary.rejects) > 20:
            print(f"    ... and {len(summary.rejects) - 20} more")
    return 0
