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

``--corpus DIR`` runs on a generated mix instead (``scripts/bench_corpus.py``'s layout, e.g. ``/tmp/mix-1g``:
JSON Lines ``.zst`` / ``.gz`` and Parquet shards; ``--limit N`` keeps the first N files of each format, and
``--datatrove-limit N`` gives datatrove only the first N files of each format — its time is then scaled
to the whole input by bytes, which the output says). Its tokenizer (``--tokenizer``, default: a byte-level
BPE of ``--vocab-size`` trained by ``tokenloom.train_tokenizer(engine="auto")`` on FLORES dev, not timed)
must be served by the fast engine; ``--eos`` names the end-of-text token (default ``</s>``, tokenloom's).
Timed, one pass each: tokenloom's ``tokenize_corpus`` from the files, ``Tokenizer.encode_ids_flat`` and
the bare gigatoken ``encode_batch`` (one flat array, 8,192 texts a call) over the texts in memory (given
new ``str`` objects, as a reader makes them, and given their UTF-8 bytes: see :func:`bare_both`), the
files read as ``tokenize_corpus`` reads them with nothing encoded, and datatrove's ``DocumentTokenizer``
(texts from memory). Token totals are checked equal. A last line gives the floor any job that reads the
files and runs the engine meets: reading's and the bare engine's CPU seconds (given bytes) spread over every
core.
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
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

import tokenloom
from bench_fertility import _print_table as print_table  # this folder: the scripts' one table printer

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


def datatrove_tokens(texts: list[str], tokenizer_json: Path, out: Path, eos: str = EOS) -> int:
    from datatrove.data import Document
    from datatrove.pipeline.tokens.tokenizer import DocumentTokenizer

    step = DocumentTokenizer(
        str(out), tokenizer_name_or_path=str(tokenizer_json), eos_token=eos, shuffle_documents=False,
        save_final_metadata=False,
    )  # fmt: skip
    step.run((Document(text=t, id=str(i)) for i, t in enumerate(texts)), rank=0, world_size=1)
    return sum(p.stat().st_size for p in out.glob("*.ds")) // 2


def mix_files(corpus: Path, limit: int) -> list[Path]:
    """The first ``limit`` files of each format of a mix folder (0: all), sorted."""
    out: list[Path] = []
    for pattern in ("*.jsonl.zst", "*.jsonl.gz", "*.parquet"):
        found = sorted(corpus.glob(pattern))
        out += found[:limit] if limit else found
    return out


def timed(func: Callable[[], Any]) -> tuple[float, float, Any]:
    wall, cpu = time.perf_counter(), time.process_time()
    out = func()
    return time.perf_counter() - wall, time.process_time() - cpu, out


def read_only(files: list[Path]) -> int:
    """Texts read from ``files`` as the report and ``tokenize_corpus`` read them, nothing encoded: the corpus
    plan's tasks, each read by ``read_corpus_task`` in pieces of up to 8,192 texts."""
    from tokenloom.corpus.columnar import read_corpus_task
    from tokenloom.corpus.plan import plan_corpus_tasks

    return sum(
        len(piece.texts)
        for task in plan_corpus_tasks(files)
        for piece in read_corpus_task(task, chunk_size=8192, held_rows=8192)
    )


def floor_line(reading: tuple[float, float, Any], bare: tuple[float, float, Any]) -> str:
    """How fast any job that reads the files and runs the engine can be: both jobs' CPU seconds spread
    perfectly over every core, against the bare engine's wall seconds."""
    cores = os.cpu_count() or 1
    cpu = reading[1] + bare[1]
    return (
        f"floor: reading alone costs {reading[1]:.2f} CPU s, the bare engine {bare[1]:.2f} CPU s; a job doing "
        f"both needs {cpu:.2f} CPU s, at least {cpu / cores:.2f} s wall on {cores} cores = "
        f"{cpu / cores / bare[0]:.2f}x the bare engine's {bare[0]:.2f} s"
    )


def fresh(texts: list[str]) -> list[str]:
    """New ``str`` objects equal to ``texts``, as a reader makes them. An engine given a ``str`` leaves its
    UTF-8 form cached in it (CPython keeps it), so the next engine given the same object skips that
    conversion: texts that went through another engine first are not texts as read."""
    return [t.encode("utf-8", "surrogatepass").decode("utf-8", "surrogatepass") for t in texts]


def bare_both(engine: Any, texts: list[str]) -> tuple[tuple[float, float, Any], tuple[float, float, Any]]:
    """The bare engine timed over ``texts`` in memory, two ways: given new ``str`` objects (:func:`fresh`;
    best of two, the first run also grows the process's memory) and given their UTF-8 ``bytes`` (the
    engine's own input, no conversion: its ceiling, which the goals are measured against)."""
    bare_gigatoken(engine, fresh(texts[:200]))  # thread pool start: not timed
    as_str = min((timed(partial(bare_gigatoken, engine, fresh(texts))) for _ in range(2)), key=lambda r: r[0])
    data = [t.encode("utf-8", "surrogatepass") for t in texts]
    return as_str, timed(partial(bare_gigatoken, engine, data))


def bare_gigatoken(engine: Any, texts: list[str], batch: int = 8192) -> int:
    """Token total of the bare gigatoken engine's flat arrays, ``batch`` texts a call."""
    import awkward as ak

    return sum(
        int(ak.sum(ak.num(engine.encode_batch(texts[i : i + batch]), axis=1)))
        for i in range(0, len(texts), batch)
    )


def run_mix(args: argparse.Namespace) -> int:
    """The ``--corpus`` benchmark (see the module docstring)."""
    import gigatoken

    from tokenloom.corpus.tasks import iter_records

    work = Path(tempfile.mkdtemp(prefix="bench-tokenize-"))
    try:
        files = mix_files(args.corpus, args.limit)
        links = work / "corpus"
        links.mkdir()
        for f in files:
            (links / f.name).symlink_to(f.resolve())
        if args.tokenizer is None:
            dev = sorted((shared() / "corpora" / "flores200" / "dev").glob("*.txt"))
            trained = tokenloom.train_tokenizer(
                dev, algorithm="bytelevel-bpe", vocab_size=args.vocab_size, engine="auto", quiet=True
            )
            args.tokenizer = Path(trained.save(work / "tok"))
        tok = tokenloom.load_tokenizer(args.tokenizer)
        assert tok.engine_info()["ids"].engine == "gigatoken", tok.engine_info()["ids"].reason
        texts = [r.text for r in iter_records(files)]
        mb = sum(len(t.encode()) for t in texts) / 1e6
        dt_files = mix_files(args.corpus, args.datatrove_limit) if args.datatrove_limit else files
        dt_texts = texts if dt_files == files else [r.text for r in iter_records(dt_files)]
        dt_mb = sum(len(t.encode()) for t in dt_texts) / 1e6
        config = tokenloom.TokenizeConfig(shuffle=False, eos=args.eos)
        ours = timed(lambda: tokenloom.tokenize_corpus(links, tok, work / "ours", config=config))
        tok.encode_ids_flat(fresh(texts[:200]))  # thread pool start: not timed
        flat = timed(partial(tok.encode_ids_flat, fresh(texts), batch_size=8192))  # copies made untimed
        engine = gigatoken.Tokenizer.from_json(tok.hf_export().to_str())
        bare_str, bare = bare_both(engine, texts)
        assert bare_str[2] == bare[2], (bare_str[2], bare[2])
        reading = timed(lambda: read_only(files))
        assert reading[2] == len(texts), (reading[2], len(texts))
        tok_json = Path(tok.save(work / "tok-json", formats=("tokenizer.json",))) / "tokenizer.json"
        dt = timed(lambda: datatrove_tokens(dt_texts, tok_json, work / "dt", args.eos))
        total = int(flat[2][0].sum()) + len(texts)
        assert ours[2].tokens == total == bare[2] + len(texts), (ours[2].tokens, total, bare[2])
        dt_total = int(tok.encode_ids_flat(dt_texts, batch_size=8192)[0].sum()) + len(dt_texts)
        assert dt[2] == dt_total, (dt[2], dt_total)
        scale = mb / dt_mb  # datatrove's time for the whole input, by bytes
        rows = [
            ["tokenloom tokenize_corpus (files, 1 process)", ours[0], ours[1]],
            ["Tokenizer.encode_ids_flat (memory)", flat[0], flat[1]],
            ["bare gigatoken flat array (memory, new str)", bare_str[0], bare_str[1]],
            ["bare gigatoken flat array (memory, UTF-8 bytes)", bare[0], bare[1]],
            ["reading alone (files, nothing encoded)", reading[0], reading[1]],
            [
                f"datatrove DocumentTokenizer (memory{', scaled' if scale != 1 else ''})",
                dt[0] * scale,
                dt[1] * scale,
            ],
        ]
        print(f"# {machine()}; load average {os.getloadavg()[0]:.1f}")
        print(
            f"{len(files)} files, {len(texts):,} documents, {mb:.1f} MB of UTF-8, {ours[2].tokens:,} tokens "
            f"(EOS included; equal to the flat and bare encodings); tokenizer vocab {tok.vocab_size}, ids on "
            f"{tok.engine_info()['ids'].engine}"
        )
        if scale != 1:
            print(
                f"datatrove ran on {len(dt_files)} files ({dt_mb:.1f} MB, {dt[0]:.1f} s wall, token total equal "
                f"to the engine's): its times are scaled by {scale:.2f} to the whole input"
            )
        headers = ["path", "wall s", "CPU s", "MB/s (wall)", "tokenloom faster by (wall)", "(CPU)"]
        out = [
            [name, f"{w:.2f}", f"{c:.2f}", f"{mb / w:.1f}", f"{w / ours[0]:.2f}x", f"{c / ours[1]:.2f}x"]
            for name, w, c in rows
        ]
        print_table(headers, out, markdown=args.markdown)
        print(floor_line(reading, bare))
        print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-mb", type=float, default=8.0)
    parser.add_argument("--tokenizer", type=Path, default=None)
    parser.add_argument("--vocab-size", type=int, default=32000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--corpus", type=Path, default=None, help="a mix folder (jsonl.zst/jsonl.gz/parquet)")
    parser.add_argument(
        "--limit", type=int, default=0, help="--corpus: first N files of each format (0: all)"
    )
    parser.add_argument(
        "--datatrove-limit", type=int, default=0, help="--corpus: datatrove on the first N of each"
    )
    parser.add_argument("--eos", default="</s>", help="--corpus: the end-of-text token")
    args = parser.parse_args(argv)
    if args.corpus is not None:
        return run_mix(args)
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
