"""Benchmark: ``tokenize_corpus`` against datatrove's ``DocumentTokenizer`` and the bare engine, one process.

Run alone on the machine (ratios only mean something then)::

    python scripts/bench_tokenize.py --size-mb 8 --markdown

The input is FLORES-200 devtest (``$TOKENLOOM_SHARED`` or ``../shared``): whole language files, in name
order, until ``--size-mb`` of UTF-8 text; every line is a document. The tokenizer (``--tokenizer``, a
``tokenizer.json`` or tokenloom folder on the HF engine; default: a byte-level BPE of ``--vocab-size``
trained on FLORES dev, not timed) ends every document with ``<|endoftext|>``. Three timings, one pass
each, the best of ``--repeat``:

1. **bare engine**: ``Tokenizer.encode_flat`` over every text held in memory (no reading, no writing);
2. **tokenloom**: ``tokenize_corpus(..., workers=1)`` with the shuffle off: planning, reading the files,
   encoding, writing ``.ds`` / ``.ds.index`` / sidecar / manifest;
3. **datatrove**: ``DocumentTokenizer(shuffle_documents=False)`` on the same texts, given from memory as
   ``Document`` s (its reading is not timed), writing its ``.ds`` / ``.ds.index``.

The token totals of 2 and 3 must be equal. ``--markdown`` prints the table under a line naming the
machine and the date.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

import tokenloom

EOS = "<|endoftext|>"


def machine() -> str:
    cpu = platform.machine()
    for line in Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").exists() else []:
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    date = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"{platform.system()} {platform.release()}, {cpu}, {os.cpu_count()} cores, Python {platform.python_version()}; {date}"


def shared() -> Path:
    for candidate in (os.environ.get("TOKENLOOM_SHARED"), Path(__file__).resolve().parents[2] / "shared"):
        if candidate and (Path(candidate) / "DATA.md").is_file():
            return Path(candidate)
    raise SystemExit("FLORES not found: set TOKENLOOM_SHARED to the shared data folder")


def best(func: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = func()
        times.append(time.perf_counter() - start)
    return min(times), result


def train_default(out: Path, vocab_size: int) -> Path:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    hf = Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    dev = sorted((shared() / "corpora" / "flores200" / "dev").glob("*.txt"))
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=[EOS], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    hf.train([str(p) for p in dev], trainer)
    hf.save(str(out))
    return out


def datatrove_tokens(texts: list[str], tokenizer_json: Path, out: Path) -> int:
    from datatrove.data import Document
    from datatrove.pipeline.tokens.tokenizer import DocumentTokenizer

    step = DocumentTokenizer(
        str(out), tokenizer_name_or_path=str(tokenizer_json), eos_token=EOS, shuffle_documents=False,
        save_final_metadata=False,
    )  # fmt: skip
    step.run((Document(text=t, id=str(i)) for i, t in enumerate(texts)), rank=0, world_size=1)
    return sum(p.stat().st_size for p in out.glob("*.ds")) // 2


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-mb", type=float, default=8.0)
    parser.add_argument("--tokenizer", type=Path, default=None)
    parser.add_argument("--vocab-size", type=int, default=32000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-tokenize-"))
    try:
        corpus = work / "corpus"
        corpus.mkdir()
        size = 0
        for f in sorted((shared() / "corpora" / "flores200" / "devtest").glob("*.txt")):
            if size >= args.size_mb * 2**20:
                break
            shutil.copy(f, corpus / f.name)
            size += f.stat().st_size
        texts = [
            line for f in sorted(corpus.glob("*.txt")) for line in f.read_text("utf-8").splitlines() if line
        ]
        nbytes = sum(len(t.encode()) for t in texts)
        tok_json = args.tokenizer or train_default(work / "tokenizer.json", args.vocab_size)
        tok = tokenloom.load_tokenizer(tok_json)
        bare_s, flat = best(lambda: tok.encode_flat(texts), args.repeat)
        config = tokenloom.TokenizeConfig(shuffle=False, eos=EOS)

        def ours() -> tokenloom.TokenizeSummary:
            shutil.rmtree(work / "ours", ignore_errors=True)
            return tokenloom.tokenize_corpus(corpus, tok_json, work / "ours", config=config)

        ours_s, summary = best(ours, args.repeat)

        def theirs() -> int:
            shutil.rmtree(work / "dt", ignore_errors=True)
            return datatrove_tokens(texts, Path(tok_json), work / "dt")

        dt_s, dt_tokens = best(theirs, args.repeat)
        bare_tokens = int(np.asarray(flat.ids).size) + len(texts)
        assert summary.tokens == dt_tokens == bare_tokens, (summary.tokens, dt_tokens, bare_tokens)
        mb = nbytes / 1e6
        rows = [
            [
                "bare engine (encode_flat, in memory)",
                f"{bare_s:.2f}",
                f"{mb / bare_s:.1f}",
                f"{ours_s / bare_s:.2f}x",
            ],
            ["tokenloom tokenize_corpus (1 process)", f"{ours_s:.2f}", f"{mb / ours_s:.1f}", "1.00x"],
            [
                "datatrove DocumentTokenizer (1 process)",
                f"{dt_s:.2f}",
                f"{mb / dt_s:.1f}",
                f"{ours_s / dt_s:.2f}x",
            ],
        ]
        print(f"# {machine()}")
        print(
            f"{len(texts):,} documents, {mb:.1f} MB of UTF-8, {summary.tokens:,} tokens (EOS included, equal in "
            f"all three); tokenizer vocab {tok.vocab_size}; best of {args.repeat}"
        )
        headers = ["path", "seconds", "MB/s", "tokenloom time / this"]
        if args.markdown:
            print("| " + " | ".join(headers) + " |")
            print("|" + "|".join("---" for _ in headers) + "|")
            for r in rows:
                print("| " + " | ".join(r) + " |")
        else:
            for r in rows:
                print("  ".join(r))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
