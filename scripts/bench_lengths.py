"""Benchmark: ``--metrics lengths`` on a corpus mix, against the reference engine, datatrove and the bare engine.

Run under the shared lock (ratios only mean something when the benchmark ran alone)::

    flock /tmp/tokenloom-bench.lock python scripts/bench_lengths.py --corpus /tmp/mix-1g --tokenizer DIR

In this one process, over the files of ``--corpus`` (JSON Lines ``.zst``/``.gz`` and Parquet shards, e.g.
``/tmp/mix-1g`` from ``scripts/bench_corpus.py``; ``--limit`` keeps the first N files of each format) and a
saved byte-level BPE (``--tokenizer``; gigatoken must serve its ids):

1. ``fertility_report(metrics="lengths")`` with ``engine="auto"`` (the fast engine, verified at dispatch),
   reading, decompressing and parsing the files;
2. the same with ``engine="reference"`` (the code path before the fast engine); the two reports are checked
   equal;
3. datatrove's ``TokensCounter`` (``batch_size=1000``) over the same texts as documents from memory (read
   beforehand, not timed): its token total must equal the report's;
4. the bare gigatoken engine's ``encode_batch`` (one flat array) over the same texts held in memory, given
   new ``str`` objects and given their UTF-8 bytes (``bench_tokenize.bare_both``);
5. the files read as the report reads them, nothing encoded;
6. with ``--workers N``, 1. again on N worker processes (``RunConfig(workers=N)``; its CPU seconds include
   the workers'), checked equal.

A last line gives the floor any job that reads the files and runs the engine meets: reading's and the
bare engine's CPU seconds (given bytes) spread over every core.

Seconds are wall seconds; CPU seconds (all threads) beside them, since the machine is shared.
``--markdown`` prints the table as Markdown under a line naming the machine and the date.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from bench_fertility import _print_table as print_table  # the scripts' one table printer
from bench_tokenize import bare_both, floor_line, mix_files, read_only, timed  # this folder


def _datatrove(texts: list[str], tokenizer_json: Path) -> int:
    from datatrove.data import Document
    from datatrove.pipeline.tokens import TokensCounter

    counter = TokensCounter(str(tokenizer_json), batch_size=1000)
    docs = (Document(text=t, id=str(i)) for i, t in enumerate(texts))
    return sum(d.metadata["token_count"] for d in counter.run(docs))


def _with_workers(func: Any) -> tuple[float, float, Any]:
    """:func:`timed`, its CPU seconds with those of the worker processes that ended meanwhile."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall, cpu, out = timed(func)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, cpu + after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, out


def run(corpus: Path, tokenizer: Path, limit: int, markdown: bool, workers: int) -> None:
    import tempfile

    import gigatoken

    from tokenloom.corpus.tasks import iter_records
    from tokenloom.fertility.report import ReportConfig, fertility_report
    from tokenloom.fertility.runner import RunConfig
    from tokenloom.text.tokenizer import load_tokenizer

    tok = load_tokenizer(tokenizer)
    assert tok.engine_info()["ids"].engine == "gigatoken", tok.engine_info()["ids"].reason
    files = mix_files(corpus, limit)
    texts = [r.text for r in iter_records(files)]
    mb = sum(len(t.encode()) for t in texts) / 1e6
    config = ReportConfig(metrics="lengths")
    with tempfile.TemporaryDirectory() as tmp:
        links = Path(tmp) / "corpus"
        links.mkdir()
        for f in files:
            (links / f.name).symlink_to(f.resolve())
        report = partial(fertility_report, corpus=links, config=config, translit=False, numbers=False)
        auto = timed(lambda: report({"t": tok.with_engine("auto")}))
        ref = timed(lambda: report({"t": tok.with_engine("reference")}))
        assert auto[2].equals(ref[2]), "the reports differ"
        many = None
        if workers > 1:
            many = _with_workers(
                lambda: report({"t": tok.with_engine("auto")}, run=RunConfig(workers=workers))
            )
            assert many[2].equals(auto[2]), "the reports differ"
        tok_json = tok.save(Path(tmp) / "tok", formats=("tokenizer.json",))
        dt = timed(partial(_datatrove, texts, Path(tok_json) / "tokenizer.json"))
    bare_engine = gigatoken.Tokenizer.from_json(tok.hf_export().to_str())
    bare_str, bare = bare_both(bare_engine, texts)
    reading = timed(partial(read_only, files))
    assert reading[2] == len(texts), (reading[2], len(texts))
    frame = auto[2]
    total = int(frame[frame.slice_kind == "all"]["tokens"].iloc[0])
    assert dt[2] == total == bare[2] == bare_str[2], (
        f"token totals differ: datatrove {dt[2]}, report {total}, bare {bare[2]}"
    )
    rows = [
        ["report, auto (files)", auto], ["report, reference engine (files)", ref],
        ["datatrove TokensCounter (memory)", dt], ["bare gigatoken flat array (memory, new str)", bare_str],
        ["bare gigatoken flat array (memory, UTF-8 bytes)", bare],
        ["reading alone (files, nothing encoded)", reading],
    ]  # fmt: skip
    if many is not None:
        rows.append([f"report, auto (files, {workers} worker processes)", many])
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(f"Machine: {platform.system()} {platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}; {stamp}; load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    print(
        f"{len(files)} files, {len(texts):,} documents, {mb:.1f} MB of text, {total:,} tokens (all equal)\n"
    )
    headers = ["job", "wall s", "CPU s", "MB/s", "auto faster by (wall)", "auto faster by (CPU)"]
    out = [
        [name, f"{w:.2f}", f"{c:.2f}", f"{mb / w:.1f}", f"{w / auto[0]:.2f}×", f"{c / auto[1]:.2f}×"]
        for name, (w, c, _) in rows
    ]
    print_table(headers, out, markdown=markdown)
    print(floor_line(reading, bare))
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--corpus", type=Path, required=True, help="a mix folder (jsonl.zst/jsonl.gz/parquet)"
    )
    parser.add_argument("--tokenizer", type=Path, required=True, help="a saved byte-level BPE folder")
    parser.add_argument("--limit", type=int, default=0, help="first N files of each format (0: all)")
    parser.add_argument("--workers", type=int, default=1, help="also time the report on N worker processes")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    run(args.corpus, args.tokenizer, args.limit, args.markdown, args.workers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
