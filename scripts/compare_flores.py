"""What a tokenizer does to a model, on FLORES-200: ``tokenloom compare-lm`` on FLORES dev and devtest.

Run alone on the machine (it trains one small model per tokenizer on the CPU)::

    python scripts/compare_flores.py --out /tmp/compare-flores              # 8 languages, 3 tokenizers
    python scripts/compare_flores.py --preset all39 --out /tmp/flores-39    # 39 languages, 1.6 M-parameter models

The data is FLORES-200 from ``$TOKENLOOM_SHARED`` or ``../shared`` (see DATA.md): each language's ``dev``
file is the training text (of the tokenizers and of the models), its ``devtest`` file the held-out text.
The tokenizers are trained on the dev files (kept in ``OUT/tokenizers`` and reused; ``parity-bpe`` measures
each language's compression on the same files, which are parallel). Then ``compare-lm`` trains one model
per tokenizer on the same number of bytes of text (``--amount``) and scores bits per byte per language on
devtest (every sentence, or the first ``--eval-lines``: 300 in the ``all39`` preset), beside fertility,
premium and STRR and their rank correlations with bits per byte.

The order-0 baseline (the entropy of each devtest file's byte distribution) is computed again here, from
byte counts with ``collections.Counter``, independently of the library; the script checks it against the
report's ``order0`` column and prints, per language, how far below it each model is. It exits 1 if a model
is not below the baseline in some language. Output: a line naming the machine, the date and the load, the
per-language summary and the comparison's Markdown (``compare.md``).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import csv
import io
import math
import os
import platform
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import tokenloom
from tokenloom import cli

EIGHT = "eng_Latn,fra_Latn,rus_Cyrl,arb_Arab,hin_Deva,tam_Taml,tha_Thai,zho_Hans"


@dataclass(frozen=True)
class Preset:
    """A run: FLORES languages ("all": every file), tokenizers (NAME=ALGORITHM:VOCAB,...), bytes of
    training text per model and compare-lm's model and optimization options."""

    languages: str
    tokenizers: str
    amount: float
    model: str = ""
    eval_lines: int | None = None  # the first lines of each devtest file (None: all 1,012)


PRESETS = {
    "eight": Preset(
        EIGHT, "bbpe-2k=bytelevel-bpe:2000,bbpe-8k=bytelevel-bpe:8000,unigram-8k=unigram:8000", 2e6
    ),
    "all39": Preset(
        "all",
        "bytelevel-bpe-16k=bytelevel-bpe:16000,parity-bpe-16k=parity-bpe:16000",
        5e6,
        "--width 128 --depth 8 --heads 4 --seq-len 128 --batch-size 16 --position rope --warmup-steps 20",
        300,
    ),
}


def _shared() -> Path:
    root = Path(os.environ.get("TOKENLOOM_SHARED", Path(__file__).resolve().parents[2] / "shared"))
    flores = root / "corpora" / "flores200"
    if not (flores / "dev").is_dir():
        sys.exit(
            f"compare_flores: no FLORES-200 under {flores}; set TOKENLOOM_SHARED to the shared data folder"
        )
    return flores


def _split(flores: Path, split: str, languages: list[str], out: Path, lines: int | None = None) -> Path:
    """``out/data/split/``: one symbolic link per language file (the file names carry the language), or,
    with ``lines``, a copy of each file's first ``lines`` lines (``out/data/split-LINES/``)."""
    folder = out / "data" / (split if lines is None else f"{split}-{lines}")
    folder.mkdir(parents=True, exist_ok=True)
    for lang in languages:
        source = flores / split / f"{lang}.txt"
        if not source.is_file():
            sys.exit(f"compare_flores: {source} is missing; choose --languages from {flores / split}")
        target = folder / source.name
        if target.exists():
            continue
        if lines is None:
            target.symlink_to(source)
        else:
            head = source.read_text(encoding="utf-8").splitlines()[:lines]
            target.write_text("\n".join(head) + "\n", encoding="utf-8")
    return folder


def _tokenizers(spec: str, train: Path, out: Path) -> list[str]:
    """Train each ``NAME=ALGORITHM:VOCAB`` once (kept in ``out/tokenizers``); ``NAME=PATH`` for compare-lm."""
    named = []
    for item in spec.split(","):
        name, _, recipe = item.partition("=")
        algorithm, _, vocab = recipe.partition(":")
        folder = out / "tokenizers" / name
        if not (folder / "tokenloom.json").is_file():
            start = time.perf_counter()
            parallel = {"dev": str(train)} if algorithm == "parity-bpe" else {}  # the dev files are parallel
            tokenloom.train_tokenizer(
                str(train), algorithm=algorithm, vocab_size=int(vocab), quiet=True, **parallel
            ).save(folder)
            print(f"trained {name} in {time.perf_counter() - start:.0f} s", file=sys.stderr)
        named.append(f"{name}={folder}")
    return named


def order0_bits(path: Path) -> float:
    """The entropy in bits of the file's byte distribution, the file read as UTF-8 lines (newlines out)."""
    counts: collections.Counter[int] = collections.Counter()
    for line in path.read_text(encoding="utf-8").splitlines():
        counts.update(line.encode("utf-8"))
    total = sum(counts.values())
    return -sum(c / total * math.log2(c / total) for c in counts.values())


def _summary(compare_csv: Path, held: Path) -> tuple[str, bool]:
    """Per language: the independent order-0 bits, each model's bits per byte and its share of order-0."""
    rows = [r for r in csv.DictReader(compare_csv.open(encoding="utf-8")) if r["language"] != "(all)"]
    names = list(dict.fromkeys(r["tokenizer"] for r in rows))
    bpb = {(r["tokenizer"], r["language"]): float(r["bpb"]) for r in rows}
    languages = sorted({r["language"] for r in rows})
    lines = ["| language | order-0 | " + " | ".join(f"{n} bits/byte | ÷ order-0" for n in names) + " |",
             "|---|---:|" + "---:|---:|" * len(names)]  # fmt: skip
    below = True
    for lang in languages:
        mine = order0_bits(held / f"{lang}.txt")
        theirs = {float(r["order0"]) for r in rows if r["language"] == lang}
        if any(
            abs(mine - t) > 5e-4 for t in theirs
        ):  # the report rounds nothing; 5e-4 allows its float32-free sum order
            sys.exit(f"compare_flores: order-0 of {lang}: {mine:.4f} here, {sorted(theirs)} in the report")
        cells = []
        for n in names:
            value = bpb[(n, lang)]
            below &= value < mine
            cells.append(f"{value:.3f} | {value / mine:.2f}")
        lines.append(f"| {lang} | {mine:.3f} | " + " | ".join(cells) + " |")
    worst = {n: max(bpb[(n, lang)] / order0_bits(held / f"{lang}.txt") for lang in languages) for n in names}
    lines.append("")
    lines.append("worst share of order-0: " + ", ".join(f"{n} {w:.2f}" for n, w in worst.items()))
    return "\n".join(lines), below


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", choices=sorted(PRESETS), default="eight")
    parser.add_argument("--out", type=Path, default=Path("/tmp/compare-flores"))
    parser.add_argument(
        "--languages", help="comma-separated FLORES file names, or 'all' (default: the preset's)"
    )
    parser.add_argument("--tokenizers", help="NAME=ALGORITHM:VOCAB,... (default: the preset's)")
    parser.add_argument(
        "--amount", type=float, help="bytes of training text per model (default: the preset's)"
    )
    parser.add_argument("--eval-lines", type=int, help="score the first N lines of each devtest file")
    parser.add_argument("--n-boot", type=int, default=1000)
    args, model = parser.parse_known_args(argv)  # the rest: compare-lm's model and optimization options
    preset = PRESETS[args.preset]
    flores = _shared()
    chosen = args.languages or preset.languages
    languages = (
        sorted(p.stem for p in (flores / "dev").glob("*.txt")) if chosen == "all" else chosen.split(",")
    )
    train = _split(flores, "dev", languages, args.out)
    held = _split(flores, "devtest", languages, args.out, args.eval_lines or preset.eval_lines)
    named = _tokenizers(args.tokenizers or preset.tokenizers, train, args.out)
    amount = args.amount or preset.amount
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):  # its tables: printed below as Markdown
        code = cli.main([
            "compare-lm", "--tokenizers", ",".join(named), "--corpus", str(train), "--eval", str(held),
            "--out", str(args.out / "compare"), "--budget", "bytes", "--amount", f"{amount:g}",
            "--n-boot", str(args.n_boot), "--quiet", *preset.model.split(), *model,
        ])  # fmt: skip
    if code != 0:
        return code
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(
        f"{platform.system()} {platform.release()}, {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, torch threads default; {stamp}; load average {load}; "
        f"compare-lm took {time.perf_counter() - start:.0f} s\n"
    )
    summary, below = _summary(args.out / "compare" / "compare.csv", held)
    print(summary + "\n")
    print((args.out / "compare" / "compare.md").read_text(encoding="utf-8"))
    if not below:
        print(
            "compare_flores: some model is not below the order-0 baseline in some language", file=sys.stderr
        )
    return 0 if below else 1


if __name__ == "__main__":
    raise SystemExit(main())
