"""Preprocess an image collection into full-view shards (resumable) and train a ViT on them.

    python scripts/train_vit.py SRC --work DIR [--max-side 320] [train-vit options ...]

SRC is a folder with class subfolders or a CSV (``path,label``). Shards go to DIR/shards (a rerun reuses
the committed ones), the training run to DIR/run; every option after the known ones is passed to
``tokenloom train-vit`` (e.g. ``--epochs 5 --width 192 --depth 4``). Under ``torchrun`` every process
runs this script: rank 0 preprocesses while the others wait for it, then all train together.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from tokenloom import cli


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("src", type=Path, help="image folder (class subfolders) or CSV path,label")
    parser.add_argument("--work", type=Path, required=True, help="folder for shards/ and run/")
    parser.add_argument("--max-side", type=int, default=320, help="longer side of the stored views (320)")
    parser.add_argument("--preprocess-workers", type=int, default=0, help="decoding processes (0)")
    args, rest = parser.parse_known_args(argv)
    shards, run = args.work / "shards", args.work / "run"
    done = args.work / ".shards-done"
    if os.environ.get("RANK", "0") == "0":
        status = cli.main([
            "images", "preprocess", str(args.src), "--out", str(shards), "--max-side", str(args.max_side),
            "--workers", str(args.preprocess_workers), "-q",
        ])  # fmt: skip
        if status:
            return status
        done.touch()
    else:  # other torchrun processes: wait for rank 0's shards
        while not done.exists():
            time.sleep(1)
    resume = ["--resume"] if (run / "checkpoint.pt").exists() and "--resume" not in rest else []
    return cli.main(["train-vit", str(shards), "--out", str(run), *resume, *rest])


if __name__ == "__main__":
    sys.exit(main())
