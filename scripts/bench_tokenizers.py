"""Benchmark: tokenloom's four trainers vs the raw engines with equivalent settings, on the same corpus.

For each algorithm (bpe, unigram) and engine (hf, sentencepiece) it trains

- **ours**: ``tokenloom.train_tokenizer(corpus_file, ...)`` (streamed reading, statistics, fingerprint, export
  sample; ``heldout=0`` so the optional fertility table is not part of the timing), and
- **raw**: ``sentencepiece.SentencePieceTrainer.train(input=...)`` or ``tokenizers.Tokenizer.train([...])``
  with the same settings (identity normalization, no dummy prefix, byte fallback, Metaspace without prefix),

each case in a fresh process (a runner process starts the worker, so ``getrusage(RUSAGE_CHILDREN)`` in the
runner is that case's peak RSS). Time is the training call only (imports excluded). Then ``engine="auto"``
is compared with the fastest raw engine for each algorithm. ``parity-bpe`` against the engine's
``ParityBpeTrainer`` is timed by ``bench_parity.py --vs-raw`` (it needs a parallel dev set).

The corpus: FLORES-200 devtest (99 languages) plus ``corpora/train`` from ../shared (40.6 MB).
``--max-mb`` takes the same proportional prefix of every file (all languages stay in) into one temp file.

    flock /tmp/tokenloom-bench.lock python scripts/bench_tokenizers.py --max-mb 10
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
COMBOS = [("bpe", "hf"), ("unigram", "hf"), ("bpe", "sentencepiece"), ("unigram", "sentencepiece")]
SPECIALS = ["<unk>", "<s>", "</s>", "<pad>"]


def build_corpus(shared: Path, max_mb: float | None, out_dir: Path) -> Path:
    sys.path.insert(0, str(REPO / "src"))
    from tokenloom.corpus.sources import resolve_inputs

    files = resolve_inputs([shared / "corpora" / "flores200" / "devtest", shared / "corpora" / "train"])
    total = sum(p.stat().st_size for p in files)
    fraction = 1.0 if max_mb is None else min(1.0, max_mb * 1e6 / total)
    path = out_dir / f"corpus-{'all' if max_mb is None else max_mb}MB.txt"
    with path.open("wb") as out:
        for src in files:
            budget = src.stat().st_size * fraction
            used = 0
            with src.open("rb") as f:
                for line in f:
                    if used >= budget:
                        break
                    out.write(line if line.endswith(b"\n") else line + b"\n")
                    used += len(line)
    return path


def worker(case: str, corpus: str, vocab: int, threads: int) -> dict[str, float]:
    """Runs in the worker process: one training, timed."""
    side, algorithm, engine = case.split(":")
    if side == "ours":
        from tokenloom import TrainerConfig, train_tokenizer

        cfg = TrainerConfig(
            algorithm=algorithm,
            engine=engine,
            vocab_size=vocab,
            heldout=0,
            threads=threads,  # type: ignore[arg-type]
        )
        start = time.perf_counter()
        tok = train_tokenizer(corpus, config=cfg)
        seconds = time.perf_counter() - start
        return {"seconds": seconds, "vocab": tok.vocab_size}
    if engine == "sentencepiece":
        import sentencepiece as spm

        from tokenloom import TrainerConfig

        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            spm.SentencePieceTrainer.train(
                input=corpus,
                model_prefix=f"{tmp}/m",
                model_type=algorithm,
                vocab_size=vocab,
                byte_fallback=True,
                normalization_rule_name="identity",
                add_dummy_prefix=False,
                remove_extra_whitespaces=False,
                allow_whitespace_only_pieces=True,
                required_chars=TrainerConfig(special_tokens=tuple(SPECIALS)).required_chars,
                max_sentence_length=16384,
                input_sentence_size=0,
                shuffle_input_sentence=False,
                num_threads=threads,
                pad_id=3,
                minloglevel=2,
            )
            seconds = time.perf_counter() - start
        return {"seconds": seconds, "vocab": vocab}
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    if algorithm == "bpe":
        tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True))
        trainer = trainers.BpeTrainer(vocab_size=vocab - 256, special_tokens=SPECIALS, show_progress=False)
    else:
        tok = Tokenizer(models.Unigram())
        trainer = trainers.UnigramTrainer(
            vocab_size=vocab - 256, special_tokens=SPECIALS, unk_token="<unk>", show_progress=False
        )
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="never", split=True)
    start = time.perf_counter()
    tok.train([corpus], trainer)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "vocab": tok.get_vocab_size()}


def runner(case: str, corpus: str, vocab: int, threads: int) -> dict[str, float]:
    """Runs in a fresh runner process: starts the worker and reads its peak RSS from RUSAGE_CHILDREN."""
    cmd = [sys.executable, __file__, "--worker", case, "--corpus", corpus, "--vocab-size", str(vocab)]
    cmd += ["--threads", str(threads)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"{case} failed:\n{done.stderr[-2000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["rss_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # KiB on Linux
    return result


def measure(case: str, corpus: Path, vocab: int, threads: int, repeat: int) -> dict[str, float]:
    """Best of ``repeat`` fresh-process runs (the machine is shared: the minimum is the least disturbed)."""
    cmd = [sys.executable, __file__, "--runner", case, "--corpus", str(corpus), "--vocab-size", str(vocab)]
    cmd += ["--threads", str(threads)]
    runs = []
    for _ in range(repeat):
        done = subprocess.run(cmd, capture_output=True, text=True, check=True)
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return min(runs, key=lambda r: r["seconds"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--shared", type=Path, default=REPO.parent / "shared", help="the ../shared data folder"
    )
    parser.add_argument("--max-mb", type=float, default=None, help="corpus size in MB (default: all 40.6 MB)")
    parser.add_argument("--vocab-size", type=int, default=32000)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--only", choices=("hf", "sentencepiece"), default=None, help="one engine only")
    parser.add_argument("--algorithms", default="bpe,unigram", help="comma-separated subset of bpe,unigram")
    parser.add_argument("--repeat", type=int, default=2, help="runs per case; the fastest is reported")
    parser.add_argument(
        "--markdown", action="store_true", help="start the output with the machine and date (for docs)"
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--runner", help=argparse.SUPPRESS)
    parser.add_argument("--corpus", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.corpus, args.vocab_size, args.threads)))
        return
    if args.runner:
        print(json.dumps(runner(args.runner, args.corpus, args.vocab_size, args.threads)))
        return

    algorithms = args.algorithms.split(",")
    if args.markdown:
        import datetime
        import platform

        when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
        print(
            f"Machine: {platform.machine()} {platform.system()}, {os.cpu_count()} CPUs, Python "
            f"{platform.python_version()}; {when}; timings on a shared machine are noisy (ratios are the point)\n"
        )
    with tempfile.TemporaryDirectory(prefix="tokenloom-bench-") as tmp:
        corpus = build_corpus(args.shared, args.max_mb, Path(tmp))
        mb = corpus.stat().st_size / 1e6
        print(
            f"corpus: {mb:.1f} MB (FLORES-200 devtest + corpora/train), vocab {args.vocab_size}, "
            f"{args.threads} threads, each case in a fresh process, best of {args.repeat}"
        )
        rows = []
        for algorithm, engine in COMBOS:
            if (args.only and engine != args.only) or algorithm not in algorithms:
                continue
            raw = measure(f"raw:{algorithm}:{engine}", corpus, args.vocab_size, args.threads, args.repeat)
            ours = measure(f"ours:{algorithm}:{engine}", corpus, args.vocab_size, args.threads, args.repeat)
            rows.append((algorithm, engine, raw, ours))
            print(f"  done {algorithm}/{engine}", file=sys.stderr, flush=True)
    header = (
        "| algorithm | engine | raw s | ours s | raw MB/s | ours MB/s | time ours/raw | raw RSS MB "
        "| ours RSS MB | RSS ours/raw |"
    )
    print(header)
    print("|" + "---|" * 10)
    for algorithm, engine, raw, ours in rows:
        print(
            f"| {algorithm} | {engine} | {raw['seconds']:.2f} | {ours['seconds']:.2f} | {mb / raw['seconds']:.2f} "
            f"| {mb / ours['seconds']:.2f} | {ours['seconds'] / raw['seconds']:.2f} | {raw['rss_mb']:.0f} "
            f"| {ours['rss_mb']:.0f} | {ours['rss_mb'] / raw['rss_mb']:.2f} |"
        )
    if not args.only and all(any(r[0] == a for r in rows) for a in algorithms):
        print()
        print(
            "| algorithm | auto engine | auto (ours) s | fastest raw engine | fastest raw s | auto/fastest raw |"
        )
        print("|---|---|---|---|---|---|")
        sys.path.insert(0, str(REPO / "src"))
        from tokenloom.text.train_config import resolve_engine

        for algorithm in algorithms:
            by_engine = {e: (raw, ours) for a, e, raw, ours in rows if a == algorithm}
            fastest = min(by_engine, key=lambda e: by_engine[e][0]["seconds"])
            auto = resolve_engine(algorithm)
            auto_s, fast_s = by_engine[auto][1]["seconds"], by_engine[fastest][0]["seconds"]
            print(
                f"| {algorithm} | {auto} | {auto_s:.2f} | {fastest} | {fast_s:.2f} | {auto_s / fast_s:.2f} |"
            )


if __name__ == "__main__":
    main()
