"""What a tokenizer does to a model, on FLORES-200: ``tokenloom compare-lm`` with three tokenizers.

Run alone on the machine (it trains one small model per tokenizer on the CPU)::

    python scripts/compare_flores.py --out /tmp/compare-flores

The data is FLORES-200 from ``$TOKENLOOM_SHARED`` or ``../shared`` (see DATA.md): ``--languages`` of
different scripts; each language's ``dev`` file is the training text (of the tokenizers and of the
models), its ``devtest`` file the held-out text. Three tokenizers are trained on the dev files (not
timed): byte-level BPE (o200k split) of ``--small`` and ``--large`` entries and a byte-fallback unigram
of ``--large``. Then ``compare-lm`` trains one model per tokenizer on the same number of bytes of text
(``--amount``) and scores bits per byte per language on devtest, beside fertility, premium and STRR and
their rank correlations with bits per byte. The script prints the comparison's Markdown (``compare.md``)
under a line naming the machine, the date and the load.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import tokenloom
from tokenloom import cli

LANGUAGES = "eng_Latn,fra_Latn,rus_Cyrl,arb_Arab,hin_Deva,tam_Taml,tha_Thai,zho_Hans"


def _shared() -> Path:
    root = Path(os.environ.get("TOKENLOOM_SHARED", Path(__file__).resolve().parents[2] / "shared"))
    flores = root / "corpora" / "flores200"
    if not (flores / "dev").is_dir():
        sys.exit(
            f"compare_flores: no FLORES-200 under {flores}; set TOKENLOOM_SHARED to the shared data folder"
        )
    return flores


def _split(flores: Path, split: str, languages: list[str], out: Path) -> Path:
    """``out/split/``: one symbolic link per language file (the file names carry the language)."""
    folder = out / "data" / split
    folder.mkdir(parents=True, exist_ok=True)
    for lang in languages:
        source = flores / split / f"{lang}.txt"
        if not source.is_file():
            sys.exit(f"compare_flores: {source} is missing; choose --languages from {flores / split}")
        link = folder / source.name
        if not link.exists():
            link.symlink_to(source)
    return folder


def _tokenizers(train: Path, out: Path, small: int, large: int) -> list[str]:
    """Train the three tokenizers once (kept in ``out/tokenizers``); ``NAME=PATH`` for compare-lm."""
    recipes = {
        f"bbpe-{small // 1000}k": {"algorithm": "bytelevel-bpe", "vocab_size": small},
        f"bbpe-{large // 1000}k": {"algorithm": "bytelevel-bpe", "vocab_size": large},
        f"unigram-{large // 1000}k": {"algorithm": "unigram", "vocab_size": large},
    }
    named = []
    for name, settings in recipes.items():
        folder = out / "tokenizers" / name
        if not (folder / "tokenloom.json").is_file():
            tokenloom.train_tokenizer(str(train), quiet=True, **settings).save(folder)  # type: ignore[arg-type]
        named.append(f"{name}={folder}")
    return named


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("/tmp/compare-flores"))
    parser.add_argument("--languages", default=LANGUAGES, help="comma-separated FLORES file names")
    parser.add_argument("--small", type=int, default=2000, help="the smaller byte-level BPE vocabulary")
    parser.add_argument("--large", type=int, default=8000, help="the larger vocabularies")
    parser.add_argument("--amount", type=float, default=2e6, help="bytes of training text per model")
    parser.add_argument("--n-boot", type=int, default=1000)
    args = parser.parse_args(argv)
    languages = args.languages.split(",")
    flores = _shared()
    train, held = (_split(flores, split, languages, args.out) for split in ("dev", "devtest"))
    named = _tokenizers(train, args.out, args.small, args.large)
    start = time.perf_counter()
    code = cli.main([
        "compare-lm", "--tokenizers", ",".join(named), "--corpus", str(train), "--eval", str(held),
        "--out", str(args.out / "compare"), "--budget", "bytes", "--amount", f"{args.amount:g}",
        "--n-boot", str(args.n_boot), "--quiet",
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
    print((args.out / "compare" / "compare.md").read_text(encoding="utf-8"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
