"""Benchmark: token accounting of a pretraining mix against datatrove and the raw engine, scaling, memory.

Run alone on the machine (ratios and scaling only mean something then)::

    python scripts/bench_corpus.py --mix /tmp/mix-1g --size-mb 1024 --tokenizer /tmp/tok-bpe

The mix (written once by ``scripts/make_mix.py`` when ``--mix`` does not exist yet: FLORES-200 devtest
sentences of five languages, documents of 8 sentences, in ``jsonl.zst``, ``jsonl.gz`` and ``parquet``
shards, FineWeb-2 columns) and a 100 MB mix beside it for the memory comparison. ``--tokenizer``: a
tokenloom folder or a ``tokenizer.json`` on the HF engine (default: a byte-level BPE of 32k trained on
FLORES dev, not timed). Every timing is of one pass, and includes reading and decompressing unless said.

1. **datatrove** (``JsonlReader`` + ``TokensCounter`` on ``LocalPipelineExecutor``, ``tasks = workers =
   N``) and ``tokenloom fertility --metrics lengths --workers N`` over the same ``jsonl.gz`` shards, N = 1
   and 2: token totals (must be identical) and documents/s.
2. **The raw engine**: ``tokenizers.Tokenizer.encode_batch`` over every text of the whole mix held in
   memory (read beforehand, not timed), against ``--metrics lengths`` (1 worker) on the files, and the
   full report (1 worker; without and with the transliterated slices, which encode every non-Latin text
   twice) against the raw engine on the 100 MB mix.
3. **Scaling**: ``tokenloom fertility --metrics lengths`` on the whole mix (wall time of the command): 1
   worker (the engine's own threads on, the default), 1 worker with the engine on one thread
   (``TOKENIZERS_PARALLELISM=false``, one core's rate), 2 worker processes (each with the engine on one
   thread), and ``--distributor ray`` (a local cluster on the 2 CPUs; ``--no-ray`` skips it). The reports
   must be identical.
4. **Memory**: peak RSS (``ru_maxrss`` of a child running the CLI, 1 worker) of ``--metrics lengths`` on
   the 100 MB and the whole mix.

``--markdown`` prints the tables as Markdown under a line naming the machine and the date.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

DEFAULT_SHARED = Path(os.environ.get("TOKENLOOM_SHARED", Path(__file__).resolve().parents[2] / "shared"))
FORMATS = [("jsonl", "zst"), ("jsonl", "gz"), ("parquet", "none")]


def machine() -> str:
    """OS, CPU model, cores, Python version and the date."""
    cpu = platform.machine()
    for line in Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").exists() else []:
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    date = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"{platform.system()} {platform.release()}, {cpu}, {os.cpu_count()} cores, Python {platform.python_version()}; {date}"


def make_mix(folder: Path, shared: Path, size_mb: float, shards: int) -> Path:
    """The mix in ``folder`` (written when missing): ``size_mb`` MB of text in all, a third per format."""
    if folder.exists():
        return folder
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import make_mix as mm

    tmp = folder.with_name(folder.name + ".partial")
    mm.write_mix(tmp, shared, size_bytes=int(size_mb * 1e6 / len(FORMATS)), formats=FORMATS, shards=shards,
                 sentences_per_doc=8, lines=1012, row_group_rows=2048)  # fmt: skip
    tmp.rename(folder)
    return folder


def timed(func: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = func()
    return time.perf_counter() - start, out


def datatrove_tokens(folder: Path, tokenizer_json: Path, workers: int, logs: Path) -> int:
    """datatrove's token total over the ``*.jsonl.gz`` shards of ``folder``, counted by ``workers`` processes."""
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.tokens import TokensCounter

    pipeline = [
        JsonlReader(str(folder), glob_pattern="*.jsonl.gz", compression="gzip"),
        TokensCounter(str(tokenizer_json), batch_size=1000),
    ]
    LocalPipelineExecutor(
        pipeline=pipeline, tasks=workers, workers=workers, logging_dir=str(logs), skip_completed=False
    ).run()
    stats = json.loads((logs / "stats.json").read_text())
    counter = next(step for step in stats if "Counter" in step["name"])
    return int(counter["stats"]["tokens"]["total"])


def ours(
    corpus: Sequence[str] | str,
    tok: Any,
    *,
    workers: int = 1,
    metrics: str = "lengths",
    translit: bool = False,
) -> Any:
    """The report (1 tokenizer) of ``corpus`` run in this process (``workers=1``) or on worker processes."""
    from tokenloom.fertility.report import ReportConfig, RunConfig, fertility_report

    config = ReportConfig(metrics=metrics)  # type: ignore[arg-type]
    return fertility_report([tok], corpus, config=config, translit=translit, run=RunConfig(workers=workers))


def total(df: Any) -> tuple[int, int]:
    row = df[df.slice_kind == "all"].iloc[0]
    return int(row.tokens), int(row.texts)


def raw_tokens(texts: list[str], tokenizer_json: Path) -> int:
    from tokenizers import Tokenizer

    engine = Tokenizer.from_file(str(tokenizer_json))
    n = 0
    for start in range(0, len(texts), 1000):
        n += sum(
            len(e.ids) for e in engine.encode_batch(texts[start : start + 1000], add_special_tokens=False)
        )
    return n


_PEAK = "import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"


def peak_rss_mb(args: list[str]) -> float:
    """Peak RSS (MB) of ``tokenloom ARGS`` run as the only child of a fresh process."""
    out = subprocess.run([sys.executable, "-c", _PEAK, sys.executable, "-m", "tokenloom", *args],
                         check=True, capture_output=True, text=True)  # fmt: skip
    return int(out.stdout.split()[-1]) / 1024


def table(title: str, headers: list[str], rows: list[list[str]], markdown: bool) -> None:
    print(f"\n{title}")
    if markdown:
        print("| " + " | ".join(headers) + " |")
        print("|" + "|".join("---" for _ in headers) + "|")
        for r in rows:
            print("| " + " | ".join(r) + " |")
        return
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))


def default_tokenizer(shared: Path, out: Path) -> Path:
    from tokenloom import train_tokenizer

    dev = sorted((shared / "corpora" / "flores200" / "dev").glob("*.txt"))
    train_tokenizer(dev, algorithm="bytelevel-bpe", vocab_size=32000, heldout=0.0, quiet=True).save(out)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mix", type=Path, required=True, help="the mix folder (written when missing)")
    parser.add_argument("--size-mb", type=float, default=1024.0, help="text in the mix (MB)")
    parser.add_argument("--shards", type=int, default=8, help="shards per format")
    parser.add_argument("--small-mb", type=float, default=100.0, help="text in the small mix (MB)")
    parser.add_argument("--tokenizer", type=Path, help="a tokenloom folder or tokenizer.json (HF engine)")
    parser.add_argument("--shared", type=Path, default=DEFAULT_SHARED)
    parser.add_argument("--no-ray", action="store_true")
    parser.add_argument(
        "--skip", default="", help="comma list of sections to skip: datatrove,raw,scaling,memory"
    )
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    skip = set(filter(None, args.skip.split(",")))

    from tokenloom.corpus.sources import corpus_files
    from tokenloom.corpus.tasks import iter_texts
    from tokenloom.text.tokenizer import load_tokenizer

    work = Path(tempfile.mkdtemp(prefix="bench-corpus-"))
    tok_path = args.tokenizer or default_tokenizer(args.shared, work / "tok")
    tok_json = tok_path if tok_path.suffix == ".json" else tok_path / "tokenizer.json"
    tok = load_tokenizer(tok_path)
    mix = make_mix(args.mix, args.shared, args.size_mb, args.shards)
    small = make_mix(
        args.mix.with_name(f"{args.mix.name}-{args.small_mb:g}mb"), args.shared, args.small_mb, 2
    )
    size = sum(p.stat().st_size for p in corpus_files(str(mix)))
    print(f"# {machine()}")
    print(f"mix: {mix} ({size / 1e6:.0f} MB on disk), tokenizer {tok_path} ({tok.engine}, {tok.vocab_size})")

    if "datatrove" not in skip:
        gz = sorted(str(p) for p in mix.glob("*.jsonl.gz"))
        rows = []
        for workers in (1, 2):
            t_dt, n_dt = timed(lambda w=workers: datatrove_tokens(mix, tok_json, w, work / f"dt-{w}"))
            t_us, df = timed(lambda w=workers: ours(gz, tok, workers=w))
            n_us, docs = total(df)
            assert n_us == n_dt, f"token totals differ: tokenloom {n_us}, datatrove {n_dt}"
            rows.append(
                [
                    str(workers),
                    f"{n_us:,}",
                    f"{docs / t_dt:,.0f}",
                    f"{docs / t_us:,.0f}",
                    f"{t_dt / t_us:.2f}x",
                ]
            )
        table("datatrove TokensCounter vs --metrics lengths, jsonl.gz shards (token totals identical)",
              ["processes", "tokens", "datatrove docs/s", "tokenloom docs/s", "tokenloom speed-up"], rows, args.markdown)  # fmt: skip

    if "raw" not in skip:
        rows = []
        for name, corpus in (("whole mix", mix), (f"{args.small_mb:g} MB mix", small)):
            texts = [t for p in corpus_files(str(corpus)) for t in iter_texts(p)]
            t_raw, n_raw = timed(lambda texts=texts: raw_tokens(texts, tok_json))
            del texts
            modes = (
                [("lengths", False)]
                if corpus is mix
                else [("lengths", False), ("full", False), ("full", True)]
            )
            for metrics, translit in modes:
                t_us, df = timed(
                    lambda m=metrics, c=corpus, t=translit: ours(str(c), tok, metrics=m, translit=t)
                )
                n_us = int(df[(df.slice_kind == "all")].tokens.iloc[0])
                assert n_us == n_raw, f"{metrics}: token totals differ from the engine's"
                label = metrics + (" + transliterated slices" if translit else "")
                rows.append([name, label, f"{t_raw:.1f}", f"{t_us:.1f}", f"{t_us / t_raw:.2f}x"])
        table("raw encode_batch (texts in memory) vs the report from the files, 1 process",
              ["corpus", "--metrics", "raw s", "tokenloom s", "ratio"], rows, args.markdown)  # fmt: skip

    if "scaling" not in skip:
        runs = [("1 worker", ["--workers", "1"], {}),
                ("1 worker, engine on 1 thread", ["--workers", "1"], {"TOKENIZERS_PARALLELISM": "false"}),
                ("2 workers", ["--workers", "2"], {})]  # fmt: skip
        if not args.no_ray:
            runs.append(("Ray, 2 CPUs", ["--distributor", "ray"], {}))
        seconds, reports = {}, {}
        for name, flags, env in runs:
            out = work / f"scale-{len(seconds)}"
            cli = [sys.executable, "-m", "tokenloom", "fertility", "--tokenizer", str(tok_path), "--corpus",
                   str(mix), "--metrics", "lengths", "--out", str(out), "--quiet", *flags]  # fmt: skip
            seconds[name], _ = timed(
                lambda cli=cli, env=env: subprocess.run(
                    cli, check=True, stdout=subprocess.DEVNULL, env={**os.environ, **env}
                )
            )
            reports[name] = [(out / f).read_bytes() for f in ("report.csv", "lengths.csv", "rejects.csv")]
        first = next(iter(reports.values()))
        assert all(r == first for r in reports.values()), "the reports differ between runs"
        base, one_core = seconds["1 worker"], seconds["1 worker, engine on 1 thread"]
        rows = [[name, f"{t:.1f}", f"{base / t:.2f}x", f"{one_core / t:.2f}x"] for name, t in seconds.items()]
        if "Ray, 2 CPUs" in seconds:
            rows[-1][0] += f" ({seconds['Ray, 2 CPUs'] / seconds['2 workers']:.2f}x the time of 2 workers)"
        table(f"--metrics lengths on the whole mix ({size / 1e6:.0f} MB on disk), CLI wall time: identical reports",
              ["run", "seconds", "vs 1 worker", "vs 1 worker on 1 thread"], rows, args.markdown)  # fmt: skip

    if "memory" not in skip:
        rows = []
        for name, corpus in ((f"{args.small_mb:g} MB mix", small), ("whole mix", mix)):
            out = work / f"mem-{corpus.name}"
            mb = peak_rss_mb(["fertility", "--tokenizer", str(tok_path), "--corpus", str(corpus),
                              "--metrics", "lengths", "--out", str(out), "--quiet"])  # fmt: skip
            on_disk = sum(p.stat().st_size for p in corpus_files(str(corpus)))
            rows.append([name, f"{on_disk / 1e6:.0f}", f"{mb:.0f}"])
        table("peak RSS of --metrics lengths (CLI, 1 worker)", ["corpus", "MB on disk", "peak RSS MB"], rows, args.markdown)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
