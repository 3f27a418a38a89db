"""``tokenloom images``: image collections into ViT-ready uint8 shards (sub-command ``preprocess``)."""

from __future__ import annotations

import argparse
from pathlib import Path

NAME = "images"
HELP = "preprocess image collections into uint8 shards for ViT training (images preprocess SRC --out DIR)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(
        title="images commands", metavar="ACTION", dest="images_action", required=True
    )
    p = sub.add_parser(
        "preprocess",
        help="decode, resize/crop (eval transform) and store uint8 shards + manifest + rejects; resumable",
        description="Decode every image of SRC (a folder with class subfolders, a .csv path,label or a text "
        "file with one path per line), apply the eval transform (resize shorter side, center crop SIZE) and "
        "store uint8 shards with a manifest and a rejects file. Rerunning resumes an interrupted run.",
    )
    p.add_argument("src", type=Path, metavar="SRC", help="image folder, .csv (path,label) or list file")
    p.add_argument("--out", type=Path, required=True, help="output folder (created; reused to resume)")
    p.add_argument("--size", type=int, default=224, help="output side in pixels (default 224)")
    p.add_argument("--shard-size", type=int, default=1000, help="input images per shard (default 1000)")
    p.add_argument("--num-shards", type=int, default=1, help="split the work into K parts (default 1)")
    p.add_argument("--shard-index", type=int, default=0, help="which part this run does, 0..K-1 (default 0)")
    p.add_argument("--workers", type=int, default=0, help="decoding processes (default 0: in this process)")
    # --quiet / --verbose come from the common parent parser; sub-sub-parsers need them too
    p.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS, help="no progress bar")
    p.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=argparse.SUPPRESS,
        help="tokenloom's debug logging on stderr",
    )


def run(args: argparse.Namespace) -> int:
    from tokenloom.vision.shards import PreprocessConfig, preprocess_images

    config = PreprocessConfig(
        size=args.size,
        shard_size=args.shard_size,
        num_shards=args.num_shards,
        shard_index=args.shard_index,
        workers=args.workers,
    )
    from tokenloom._tables import plural

    summary = preprocess_images(args.src, args.out, config=config, quiet=args.quiet)
    kinds = f" ({', '.join(f'{k} {v}' for k, v in summary.by_kind.items())})" if summary.by_kind else ""
    print(
        f"preprocessed {plural(summary.items, 'image')} from {args.src} into {args.out} (part {config.tag})"
    )
    print(f"  ok {summary.ok}, rejected {summary.rejected}{kinds}, ignored non-image files {summary.ignored}")
    done = summary.shards - summary.resumed_shards
    shards = plural(summary.shards, "shard")
    if summary.resumed_shards:
        shards += f" ({summary.resumed_shards} done by an earlier run, {done} now)"
    speed = f"; {summary.images_per_s:.1f} images/s over {summary.elapsed_s:.1f} s" if done else ""
    print(f"  {shards}{speed}")
    if summary.rejects:
        print(f"  rejects listed in {Path(args.out) / f'rejects-{config.tag}.csv'}:")
        for r in summary.rejects[:20]:
            print(f"    {r['path']}: {r['kind']}: {r['reason']}")
        if len(summary.rejects) > 20:
            print(f"    ... and {len(summary.rejects) - 20} more")
    return 0
