"""Benchmark the BPE shortcut of a vocabulary sweep: train once and cut, against training every size.

    python scripts/bench_sweep.py [--corpus DIR] [--vocab-sizes 8k,16k,32k,64k] [--algorithm bpe] [--markdown]

Three ways to get the BPE (or byte-level BPE: ``--algorithm bytelevel-bpe``) tokenizers of every size, on
the ``tokenizers`` engine, in one process:
(a) the largest size alone (the floor: any sweep trains it), (b) tokenloom's sweep training (largest once,
smaller sizes cut from it), (c) every size trained separately. Prints the seconds and the ratios b/a
(target ≤ 1.3) and c/a, and checks that every cut tokenizer encodes a sample exactly as its separately
trained twin. Default corpus: FLORES-200 dev (39 languages) from ../shared.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time
from pathlib import Path

from tokenloom.fertility.sweep import SweepConfig, train_sweep
from tokenloom.fertility.sweep_types import parse_vocab_sizes
from tokenloom.text.train import train_tokenizer

ROOT = Path(__file__).resolve().parent.parent


def _seconds(fn) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def _vocab_sizes(text: str) -> tuple[int, ...]:
    try:
        return parse_vocab_sizes(text)
    except ValueError as error:  # argparse's one-line error
        raise argparse.ArgumentTypeError(str(error)) from None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    shared = Path(os.environ.get("TOKENLOOM_SHARED", ROOT.parent / "shared"))
    parser.add_argument("--corpus", type=Path, default=shared / "corpora" / "flores200" / "dev")
    parser.add_argument("--vocab-sizes", type=_vocab_sizes, default=(8000, 16000, 32000, 64000))
    parser.add_argument("--algorithm", choices=("bpe", "bytelevel-bpe"), default="bpe")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    args = parser.parse_args()
    sizes = sorted(args.vocab_sizes)
    corpus = args.corpus
    mb = sum(p.stat().st_size for p in Path(corpus).glob("*.txt")) / 1e6

    def train(v: int) -> object:
        return train_tokenizer(corpus, algorithm=args.algorithm, vocab_size=v, engine="hf", quiet=True)

    largest, _ = _seconds(lambda: train(sizes[-1]))
    config = SweepConfig(algorithms=(args.algorithm,), vocab_sizes=tuple(sizes))
    shortcut, (cut, _) = _seconds(lambda: train_sweep(corpus, config, quiet=True))  # type: ignore[misc]
    separate_times, separate = {}, {}
    for v in sizes:
        separate_times[v], separate[v] = _seconds(lambda v=v: train(v))  # type: ignore[misc]
    sample = [
        line
        for p in sorted(Path(corpus).glob("*.txt"))[:20]
        for line in p.read_text("utf-8").splitlines()[:25]
    ]
    same = all(
        [cut[name].encode(t) for t in sample] == [separate[v].encode(t) for t in sample]  # type: ignore[attr-defined]
        for v, name in zip(sizes, cut, strict=True)
    )
    total = sum(separate_times.values())
    rows = [
        ("(a) largest size alone", f"{largest:.2f}", "1.00"),
        ("(b) sweep: largest once + cuts", f"{shortcut:.2f}", f"{shortcut / largest:.2f}"),
        ("(c) every size separately", f"{total:.2f}", f"{total / largest:.2f}"),
    ]
    machine = f"{platform.machine()} {os.cpu_count()} CPUs, Python {platform.python_version()}"
    print(
        f"{datetime.date.today()} · {machine} · corpus {corpus} ({mb:.1f} MB) · {args.algorithm} sizes {sizes}"
    )
    print(f"cut tokenizers encode {len(sample)} sample lines exactly as separately trained ones: {same}")
    if args.markdown:
        print("\n| training | seconds | × largest alone |\n|---|---:|---:|")
        print("\n".join(f"| {a} | {b} | {c} |" for a, b, c in rows))
    else:
        for a, b, c in rows:
            print(f"{a:<34} {b:>8} s  {c:>6}×")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
