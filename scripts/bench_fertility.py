"""Benchmark: the full fertility report against the raw engines' batch encoding of the same texts.

Run under the shared lock (ratios only mean something when the benchmark ran alone)::

    flock /tmp/tokenloom-bench.lock python scripts/bench_fertility.py \
        --tokenizer /tmp/tok-bpe --tokenizer /tmp/tok-unigram

Without ``--tokenizer`` it first trains two 8k tokenizers (BPE on the HF engine, unigram on sentencepiece)
on 3 MB of the FLORES-200 ``dev`` split into a temporary folder (not timed).

1. **Speed**, in this process: the raw engines' batch encoding (``tokenizers.Tokenizer.encode_batch`` /
   ``SentencePieceProcessor.encode(list)``, loaded straight from the tokenizer files, one call per language
   file) of every text of the parallel corpus; ``Tokenizer.encode_batch_with_offsets`` alone (what any
   report that aligns tokens with words through the Tokenizer contract must at least pay); then
   ``fertility_report`` on the same corpus with both tokenizers, without and with the generated
   transliterated slices. The report's token counts are checked
   against the raw engines' (an oracle) before any time is printed.
2. **Memory**, in fresh child processes: the RSS before a full report on the first 10 / 50 / all languages
   (eng_Latn always included; imports done, tokenizers loaded), the peak RSS sampled every 10 ms during it,
   and the peak of Python-allocated memory (tracemalloc): the report's own data. RSS also holds what the
   native libraries load per language (ICU dictionaries and transliteration rules, engine caches). Flat peaks show that
   the report holds one language's token ids at a time, not the corpus's.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

DEFAULT_SHARED = Path(os.environ.get("TOKENLOOM_SHARED", Path(__file__).resolve().parents[2] / "shared"))


def _rss_mb() -> float:
    """Current resident set size (Linux /proc; falls back to the peak so far elsewhere)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


class _PeakSampler(threading.Thread):
    """Samples the RSS every 10 ms; ``peak`` is the highest value seen."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak = _rss_mb()
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.01):
            self.peak = max(self.peak, _rss_mb())


def _languages(corpus: Path, count: int | None) -> list[Path]:
    files = sorted(corpus.glob("*_*.txt"))
    if count is None or count >= len(files):
        return files
    pivot = [f for f in files if f.stem == "eng_Latn"]
    return pivot + [f for f in files if f.stem != "eng_Latn"][: count - len(pivot)]


def _raw_encoder(path: Path) -> tuple[str, Callable[[list[str]], list[list[int]]]]:
    folder = path if path.is_dir() else path.parent
    model = path if path.suffix == ".model" else folder / "tokenizer.model"
    if model.is_file() and (path.is_dir() or path.suffix == ".model"):
        import sentencepiece as spm

        sp = spm.SentencePieceProcessor(model_file=str(model))
        return "sentencepiece", lambda texts: sp.encode(texts)
    from tokenizers import Tokenizer

    hf = Tokenizer.from_file(str(path / "tokenizer.json" if path.is_dir() else path))
    return "tokenizers", lambda texts: [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)]


def _train_default(out: Path, shared: Path) -> list[Path]:
    from tokenloom import train_tokenizer

    dev = shared / "corpora" / "flores200" / "dev"
    paths = []
    for algorithm, engine in (("bpe", "hf"), ("unigram", "sentencepiece")):
        tok = train_tokenizer(dev, algorithm=algorithm, engine=engine, vocab_size=8000, max_bytes=3_000_000)
        paths.append(tok.save(out / f"{algorithm}-8k"))
    return paths


def _child(args: argparse.Namespace) -> int:
    from tokenloom.fertility.report import fertility_report
    from tokenloom.text.tokenizer import load_tokenizer

    toks = {Path(p).name: load_tokenizer(p) for p in args.tokenizer}
    files = _languages(args.corpus, args.child)
    import pandas  # noqa: F401 - imported before the baseline so that it is not counted as report memory

    base = _rss_mb()
    sampler = _PeakSampler()
    sampler.start()
    tracemalloc.start()
    df = fertility_report(toks, files)
    traced = tracemalloc.get_traced_memory()[1] / 2**20  # peak of Python-allocated memory
    tracemalloc.stop()
    sampler.stop.set()
    sampler.join()
    peak = max(sampler.peak, _rss_mb())
    per_part = df[df.slice_kind.isin(["language", "transliterated"])].groupby("slice")["tokens"].sum()
    result = {
        "languages": len(files), "rows": len(df), "base_mb": base, "peak_mb": peak, "traced_mb": traced,
        "largest": f"{per_part.idxmax()} ({per_part.max():,})",
    }  # fmt: skip
    print(json.dumps(result))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tokenizer", action="append", type=Path, help="tokenizer folder / file (repeat; default: train two)"
    )
    parser.add_argument("--corpus", type=Path, default=DEFAULT_SHARED / "corpora" / "flores200" / "devtest")
    parser.add_argument(
        "--memory", default="10,50,99", help="language counts for the memory runs ('' = skip)"
    )
    parser.add_argument(
        "--repeat", type=int, default=2, help="interleaved repeats of the timed runs (best kept)"
    )
    parser.add_argument("--memory-only", action="store_true", help="skip the timed runs")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        return _child(args)
    tmp = None
    if not args.tokenizer:
        tmp = tempfile.TemporaryDirectory(prefix="bench-fertility-")
        print("training two 8k tokenizers on 3 MB of FLORES dev (not timed) ...", flush=True)
        args.tokenizer = _train_default(Path(tmp.name), DEFAULT_SHARED)

    from tokenloom.fertility.report import fertility_report
    from tokenloom.text.tokenizer import load_tokenizer

    files = _languages(args.corpus, None)
    texts = {f.stem: f.read_text(encoding="utf-8").splitlines() for f in files}
    n_texts = sum(map(len, texts.values()))
    n_chars = sum(len(t) for ts in texts.values() for t in ts)
    names = [Path(p).name for p in args.tokenizer]
    print(f"corpus: {args.corpus} ({len(files)} languages, {n_texts:,} texts, {n_chars:,} characters)")
    print(f"tokenizers: {', '.join(names)}\n")

    encoders = {name: _raw_encoder(Path(path)) for name, path in zip(names, args.tokenizer, strict=True)}
    for name, (engine, _) in encoders.items():
        print(f"raw engine of {name}: {engine}")
    toks = {name: load_tokenizer(path) for name, path in zip(names, args.tokenizer, strict=True)}
    raw_tokens: dict[str, dict[str, int]] = {}

    def raw() -> None:
        for name, (_, encode) in encoders.items():
            raw_tokens[name] = {lang: sum(map(len, encode(ts))) for lang, ts in texts.items()}

    def wrapper() -> None:  # the floor of any report that needs offsets through the Tokenizer contract
        for tok in toks.values():
            for ts in texts.values():
                tok.encode_batch_with_offsets(ts)

    def report(translit: bool) -> None:
        df = fertility_report(toks, args.corpus, translit=translit)
        for name in names:  # oracle: the report counted exactly the raw engines' tokens
            got = df[(df.tokenizer == name) & (df.slice_kind == "language")].set_index("slice")["tokens"]
            assert got.to_dict() == raw_tokens[name], (
                f"{name}: report token counts differ from the raw engine"
            )

    runs = {
        "raw engines' batch encoding": raw,
        "Tokenizer.encode_batch_with_offsets only (ids + offsets, no metrics)": wrapper,
        "report, no transliteration": lambda: report(False),
        "report, full (with transliterated slices)": lambda: report(True),
    }
    timings: dict[str, float] = {}
    for _ in range(
        args.repeat if not args.memory_only else 0
    ):  # interleaved repeats; the best of each is kept (the machine is shared)
        for label, func in runs.items():
            start = time.perf_counter()
            func()
            timings[label] = min(timings.get(label, math.inf), time.perf_counter() - start)
    texts.clear()  # free the corpus before the memory runs
    if not args.memory_only:
        raw_seconds = timings.pop("raw engines' batch encoding")
        print(f"| run (2 tokenizers, whole corpus; best of {args.repeat}) | seconds | ratio vs raw |")
        print("|---|---:|---:|")
        print(f"| raw engines' batch encoding | {raw_seconds:.2f} | 1.00 |")
        for label, seconds in timings.items():
            print(f"| {label} | {seconds:.2f} | {seconds / raw_seconds:.2f} |")
        print("\n(report token counts == raw engine token counts for every tokenizer and language: checked)")

    counts = [int(c) for c in args.memory.split(",") if c.strip()]
    if counts:
        print(
            "\n| languages | texts | rows | RSS before (MiB) | peak RSS during (MiB) | increase (MiB) "
            "| peak Python-allocated (MiB, tracemalloc) | largest part (tokens, all tokenizers) |"
        )
        print("|---:|---:|---:|---:|---:|---:|---:|---|")
        for count in counts:
            cmd = [sys.executable, __file__, "--child", str(count), "--corpus", str(args.corpus)]
            for p in args.tokenizer:
                cmd += ["--tokenizer", str(p)]
            out = (
                subprocess.run(cmd, capture_output=True, text=True, check=True)
                .stdout.strip()
                .splitlines()[-1]
            )
            r = json.loads(out)
            print(
                f"| {r['languages']} | {r['languages'] * 1012:,} | {r['rows']} | {r['base_mb']:.0f} | "
                f"{r['peak_mb']:.0f} | {r['peak_mb'] - r['base_mb']:.0f} | {r['traced_mb']:.1f} | {r['largest']} |"
            )
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
