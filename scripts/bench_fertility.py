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
   ``fertility_report`` on the same corpus with both tokenizers: ``metrics="lengths"`` (documents, bytes,
   characters, tokens and tokens per document only), then the full report without and with the generated
   transliterated slices (every metric, numbers slices included), and the full report with the second
   tokenizer as the reference tokenizer of the first (``reference=``: the normalized sequence length, one
   more ids-only encoding of every text), and the report without transliteration on two worker processes
   (``run=RunConfig(workers=2)``). Each tokenizer reports which engine computed its ids and offsets
   (``Tokenizer.engine_info()``). Every report's token counts are checked
   against the raw engines' (an oracle) before any time is printed.
2. **Memory**, in fresh child processes: the RSS before a full report on the first 10 / 50 / all languages
   (eng_Latn always included; imports done, tokenizers loaded), the peak RSS sampled every 10 ms during it,
   and the peak of Python-allocated memory (tracemalloc): the report's own data. RSS also holds what the
   native libraries load per language (ICU dictionaries and transliteration rules, engine caches). Flat peaks show that
   the report holds one language's token ids at a time, not the corpus's.
3. **Scale** (``--scale 1,10``), in fresh child processes: the corpus with every language file repeated
   ×k (written to a temporary folder), one tokenizer (the first), the whole report with transliterated
   slices; the peak RSS of each child (``ru_maxrss``). Texts are counted in chunks of
   ``ReportConfig.chunk_size``, so the peak stays flat from ×1 to ×10; the largest scale is also run with one
   chunk per part (``chunk_size`` = the part's size: memory then follows the largest language part). The
   reports are compared: the chunked and the one-chunk-per-part reports are identical
   (``pandas.testing.assert_frame_equal``), and the ×k report has k times the ×1 counts with the same
   ratios (fertility, rates, premiums, Rényi efficiency; intervals narrow as texts grow).

4. **Against another version** (``--against DIR``, a checkout of tokenloom, e.g. a ``git worktree`` of an
   older commit): the report in fresh child processes, this code and the code in ``DIR/src`` alternating
   ``--repeat`` times (so both see the same machine load); each child times the raw engines' encoding of the
   corpus first, then ``metrics="lengths"`` and the full report with transliterated slices, and reports wall
   and CPU seconds (CPU time, user + system of the process, moves less with other jobs than wall time).

``--markdown`` prints every table as Markdown under a line naming the machine and the date.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pickle
import platform
import resource
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

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


def _print_table(headers: Sequence[str], rows: Sequence[Sequence[object]], *, markdown: bool) -> None:
    """A Markdown table (``--markdown``) or the same columns aligned as plain text."""
    cells = [[str(c) for c in r] for r in rows]
    if markdown:
        print("| " + " | ".join(headers) + " |")
        print("|" + "|".join("---" if i == 0 else "---:" for i in range(len(headers))) + "|")
        for r in cells:
            print("| " + " | ".join(r) + " |")
        return
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
    for r in cells:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))


def _machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    date = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    system = f"{platform.system()} {platform.release()}"
    return f"{system}, {cpu}, {os.cpu_count()} cores, Python {platform.python_version()}; {date}"


def _repeat_corpus(src: Path, out: Path, factor: int) -> Path:
    """Every ``<lang>_<Script>.txt`` of ``src`` with its lines repeated ``factor`` times, written to ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    for f in sorted(src.glob("*_*.txt")):
        text = f.read_text(encoding="utf-8")
        if not text.endswith("\n"):
            text += "\n"
        (out / f.name).write_text(text * factor, encoding="utf-8")
    return out


def _scale_child(args: argparse.Namespace) -> int:
    """One report on ``--corpus`` with the first tokenizer; prints the peak RSS; pickles the report."""
    from tokenloom.fertility.report import ReportConfig, fertility_report
    from tokenloom.text.tokenizer import load_tokenizer

    name = Path(args.tokenizer[0]).name
    tok = load_tokenizer(args.tokenizer[0])
    import pandas  # noqa: F401 - imported before the baseline

    base = _rss_mb()
    kwargs = {"config": ReportConfig(chunk_size=args.chunk_size)} if args.chunk_size else {}
    start = time.perf_counter()
    df = fertility_report({name: tok}, args.corpus, **kwargs)
    seconds = time.perf_counter() - start
    df.attrs.pop("config", None)
    with open(args.scale_child, "wb") as fh:
        pickle.dump(df, fh)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
    print(json.dumps({"base_mb": base, "peak_mb": peak, "seconds": seconds, "rows": len(df)}))
    return 0


_ADDITIVE = ("texts", "tokens", "words", "chars", "bytes", "premium_pairs")
_RATIOS = (
    "fertility", "continued_words", "chars_per_token", "bytes_per_token", "byte_fallback_rate", "unk_rate",
    "roundtrip_exact_rate", "normalization_changed_rate", "premium_mean", "premium_median", "rel_kv_bytes",
    "rel_attention_work", "renyi_efficiency",
)  # fmt: skip


def _check_scaled(one: object, scaled: object, factor: int) -> None:
    """The ×k report counts k times the ×1 texts, with the same ratios (an oracle for the chunked counting)."""
    import numpy as np
    import pandas as pd

    assert isinstance(one, pd.DataFrame) and isinstance(scaled, pd.DataFrame)
    assert len(one) == len(scaled), "the scaled report has other rows"
    keys = ["tokenizer", "slice_kind", "slice"]
    pd.testing.assert_frame_equal(one[keys], scaled[keys])
    for col in _ADDITIVE:
        assert (scaled[col].to_numpy() == factor * one[col].to_numpy()).all(), col
    for col in _RATIOS:
        assert np.allclose(scaled[col], one[col], rtol=1e-9, atol=0, equal_nan=True), col
    for kind in ("fertility", "premium"):
        inside = scaled[f"{kind}_lo"].isna() | (
            (scaled[f"{kind}_lo"] <= scaled[f"{kind}_mean" if kind == "premium" else kind] + 1e-12)
            & (scaled[f"{kind}_mean" if kind == "premium" else kind] <= scaled[f"{kind}_hi"] + 1e-12)
        )
        assert inside.all(), f"{kind} outside its interval"


def _run_scale_child(folder: Path, tokenizer: Path, out: Path, chunk_size: int | None) -> dict[str, float]:
    cmd = [sys.executable, __file__, "--scale-child", str(out), "--corpus", str(folder)]
    cmd += ["--tokenizer", str(tokenizer)] + (["--chunk-size", str(chunk_size)] if chunk_size else [])
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"scale child failed:\n{done.stderr}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _scale(args: argparse.Namespace, factors: list[int]) -> None:
    """Section 3 of the module docstring."""
    import pandas as pd

    rows = []
    reports = {}
    with tempfile.TemporaryDirectory(prefix="bench-fertility-scale-") as tmp:
        runs = [(k, None) for k in factors] + [(max(factors), 10**9)]
        for factor, chunk in runs:
            folder = Path(tmp) / f"x{factor}"
            if not folder.exists():
                _repeat_corpus(args.corpus, folder, factor)
            size = sum(f.stat().st_size for f in folder.iterdir()) / 2**20
            r = _run_scale_child(folder, args.tokenizer[0], Path(tmp) / f"x{factor}-{chunk}.pkl", chunk)
            with open(Path(tmp) / f"x{factor}-{chunk}.pkl", "rb") as fh:
                reports[(factor, chunk)] = pickle.load(fh)
            label = "one per part" if chunk else "default (ReportConfig.chunk_size)"
            rows.append(
                (f"×{factor}", f"{size:.0f}", label, int(r["rows"]), f"{r['base_mb']:.0f}", f"{r['peak_mb']:.0f}",
                 f"{r['seconds']:.1f}")
            )  # fmt: skip
    top = max(factors)
    pd.testing.assert_frame_equal(reports[(top, None)], reports[(top, 10**9)], check_exact=True)
    for factor in factors:
        _check_scaled(reports[(min(factors), None)], reports[(factor, None)], factor // min(factors))
    print(
        f"\nscale: {args.corpus.name} repeated ×k, 1 tokenizer ({Path(args.tokenizer[0]).name}), full report"
    )
    headers = ["scale", "corpus (MiB)", "chunks", "rows", "RSS before (MiB)", "peak RSS (MiB)", "seconds"]
    _print_table(headers, rows, markdown=args.markdown)
    print(
        f"\n(×{top} chunked == ×{top} one chunk per part: identical DataFrames; ×k counts == k × the ×1 counts, "
        "same ratios: checked)"
    )


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
        "languages": len(files), "texts": int(df[df.slice_kind == "all"]["texts"].iloc[0]), "rows": len(df),
        "base_mb": base, "peak_mb": peak, "traced_mb": traced,
        "largest": f"{per_part.idxmax()} ({per_part.max():,})",
    }  # fmt: skip
    print(json.dumps(result))
    return 0


def _speed(args: argparse.Namespace, corpus_line: list[str]) -> None:
    """Section 1 of the module docstring."""
    from tokenloom.fertility.counting import Metrics
    from tokenloom.fertility.report import ReportConfig, fertility_report
    from tokenloom.fertility.runner import RunConfig
    from tokenloom.text.tokenizer import load_tokenizer

    files = _languages(args.corpus, None)
    texts = {f.stem: f.read_text(encoding="utf-8").splitlines() for f in files}
    names = [Path(p).name for p in args.tokenizer]
    encoders = {name: _raw_encoder(Path(path)) for name, path in zip(names, args.tokenizer, strict=True)}
    corpus_line += [f"raw engine of {name}: {engine}" for name, (engine, _) in encoders.items()]
    toks = {name: load_tokenizer(path) for name, path in zip(names, args.tokenizer, strict=True)}
    for name, tok in toks.items():
        info = tok.engine_info()
        corpus_line.append(
            f"report engines of {name}: ids {info['ids'].engine}, offsets {info['offsets'].engine}"
        )
    raw_tokens: dict[str, dict[str, int]] = {}
    frames: dict[tuple[bool, str, bool, int], Any] = {}

    def raw() -> None:
        for name, (_, encode) in encoders.items():
            raw_tokens[name] = {lang: sum(map(len, encode(ts))) for lang, ts in texts.items()}

    def wrapper() -> None:  # the floor of any report that needs offsets through the Tokenizer contract
        for tok in toks.values():
            for ts in texts.values():
                tok.encode_batch_with_offsets(ts)

    def report(translit: bool, metrics: Metrics = "full", reference: bool = False, workers: int = 1) -> None:
        ref = toks[names[-1]] if reference else None
        config, run = ReportConfig(metrics=metrics), RunConfig(workers=workers)
        df = fertility_report(toks, args.corpus, translit=translit, config=config, reference=ref, run=run)
        frames[(translit, metrics, reference, workers)] = df
        for name in names:  # oracle: the report counted exactly the raw engines' tokens
            got = df[(df.tokenizer == name) & (df.slice_kind == "language")].set_index("slice")["tokens"]
            assert got.to_dict() == raw_tokens[name], (
                f"{name}: report token counts differ from the raw engine"
            )

    runs = {
        "raw engines' batch encoding": raw,
        "Tokenizer.encode_batch_with_offsets only (ids + offsets, no metrics)": wrapper,
        'report, metrics="lengths" (tokens per document only)': lambda: report(False, "lengths"),
        "report, no transliteration": lambda: report(False),
        "report, no transliteration, 2 worker processes": lambda: report(False, workers=2),
        "report, full (with transliterated slices)": lambda: report(True),
        "report, full, with a reference tokenizer (NSL)": lambda: report(True, reference=True),
    }
    timings: dict[str, float] = {}
    for _ in range(args.repeat):  # interleaved repeats; the best of each is kept (the machine is shared)
        for label, func in runs.items():
            start = time.perf_counter()
            func()
            timings[label] = min(timings.get(label, math.inf), time.perf_counter() - start)
    one, two = frames[(False, "full", False, 1)], frames[(False, "full", False, 2)]
    assert one.equals(two), "the report on 2 worker processes differs from the report in this process"
    raw_seconds = timings["raw engines' batch encoding"]
    rows = [(label, f"{sec:.2f}", f"{sec / raw_seconds:.2f}") for label, sec in timings.items()]
    print("\n".join(corpus_line) + "\n")
    headers = [
        f"run ({len(names)} tokenizers, whole corpus; best of {args.repeat})",
        "seconds",
        "ratio vs raw",
    ]
    _print_table(headers, rows, markdown=args.markdown)
    print(
        "\n(report token counts == raw engine token counts for every tokenizer and language; the report on 2"
        " worker processes == the report in this process: checked)"
    )


_MODES = ("lengths", "full")  # section 4: the report's two modes, the full one with transliterated slices
_LABELS = ("other", "this code")  # section 4: the checkout compared against, then this one


def _time_child(args: argparse.Namespace) -> int:
    """Section 4, one child: the raw engines, then the report in each mode, with the code this process
    imports; prints the timings as JSON."""
    from tokenloom.fertility.report import ReportConfig, fertility_report
    from tokenloom.text.tokenizer import load_tokenizer

    toks = {Path(p).name: load_tokenizer(p) for p in args.tokenizer}
    encoders = [_raw_encoder(Path(p))[1] for p in args.tokenizer]
    texts = [f.read_text(encoding="utf-8").splitlines() for f in _languages(args.corpus, None)]
    start = time.perf_counter()
    for encode in encoders:
        for ts in texts:
            encode(ts)
    out: dict[str, float] = {"raw": time.perf_counter() - start}
    for mode in _MODES:
        before = resource.getrusage(resource.RUSAGE_SELF)
        start = time.perf_counter()
        fertility_report(toks, args.corpus, translit=mode == "full", config=ReportConfig(metrics=mode))
        out[mode] = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_SELF)
        out[f"{mode} cpu"] = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    print(json.dumps(out))
    return 0


def _against(args: argparse.Namespace) -> None:
    """Section 4 of the module docstring."""
    import tokenloom

    ours = Path(tokenloom.__file__).resolve().parents[1]  # the src folder this process imports
    other = (args.against / "src").resolve()
    if not (other / "tokenloom" / "__init__.py").is_file():
        raise SystemExit(f"--against {args.against}: no src/tokenloom there; pass a checkout of tokenloom")
    runs: list[tuple[str, dict[str, float]]] = []
    for _ in range(args.repeat):
        for label, src in zip(_LABELS, (other, ours), strict=True):
            cmd = [sys.executable, __file__, "--time-child", "--corpus", str(args.corpus)]
            for p in args.tokenizer:
                cmd += ["--tokenizer", str(p)]
            env = {**os.environ, "PYTHONPATH": str(src)}
            done = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if done.returncode != 0:
                raise SystemExit(f"{label} child failed:\n{done.stderr}")
            runs.append((label, json.loads(done.stdout.strip().splitlines()[-1])))
    print(f"\nagainst {args.against} (fresh processes, alternating; full: with transliterated slices)")
    headers = ["code", "raw s"] + [f"{m} {k}" for m in _MODES for k in ("s", "/ raw", "CPU s")]
    table = [
        [label, f"{r['raw']:.2f}"]
        + [v for m in _MODES for v in (f"{r[m]:.2f}", f"{r[m] / r['raw']:.2f}", f"{r[f'{m} cpu']:.2f}")]
        for label, r in runs
    ]
    _print_table(headers, table, markdown=args.markdown)
    for mode in _MODES:
        best = {lab: min((r[mode], r[f"{mode} cpu"]) for lb, r in runs if lb == lab) for lab in _LABELS}
        (w0, c0), (w1, c1) = best["other"], best["this code"]
        print(f"{mode}: this code / other, best of {args.repeat}: wall {w1 / w0:.2f}x, CPU {c1 / c0:.2f}x")


def _memory(args: argparse.Namespace, counts: list[int]) -> None:
    """Section 2 of the module docstring."""
    rows = []
    for count in counts:
        cmd = [sys.executable, __file__, "--child", str(count), "--corpus", str(args.corpus)]
        for p in args.tokenizer:
            cmd += ["--tokenizer", str(p)]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
        r = json.loads(out)
        rows.append(
            (r["languages"], f"{r['texts']:,}", r["rows"], f"{r['base_mb']:.0f}", f"{r['peak_mb']:.0f}",
             f"{r['peak_mb'] - r['base_mb']:.0f}", f"{r['traced_mb']:.1f}", r["largest"])
        )  # fmt: skip
    headers = [
        "languages", "texts", "rows", "RSS before (MiB)", "peak RSS during (MiB)", "increase (MiB)",
        "peak Python-allocated (MiB, tracemalloc)", "largest part (tokens, all tokenizers)",
    ]  # fmt: skip
    print()
    _print_table(headers, rows, markdown=args.markdown)


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
    parser.add_argument(
        "--scale", default="", help="only the scale runs: repeat factors of the corpus, e.g. 1,10 (see above)"
    )
    parser.add_argument(
        "--against",
        type=Path,
        default=None,
        help="only section 4: a checkout of another version to time against",
    )
    parser.add_argument("--markdown", action="store_true", help="Markdown tables under a machine + date line")
    parser.add_argument("--time-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--scale-child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--chunk-size", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        return _child(args)
    if args.scale_child is not None:
        return _scale_child(args)
    if args.time_child:
        return _time_child(args)
    tmp = None
    if not args.tokenizer:
        tmp = tempfile.TemporaryDirectory(prefix="bench-fertility-")
        print("training two 8k tokenizers on 3 MB of FLORES dev (not timed) ...", flush=True)
        args.tokenizer = _train_default(Path(tmp.name), DEFAULT_SHARED)
    if args.markdown:
        print(f"machine: {_machine()} (shared VM: timings are noisy)\n")
    files = _languages(args.corpus, None)
    n_texts = sum(len(f.read_text(encoding="utf-8").splitlines()) for f in files)
    corpus_line = [
        f"corpus: {args.corpus} ({len(files)} languages, {n_texts:,} texts)",
        f"tokenizers: {', '.join(Path(p).name for p in args.tokenizer)}",
    ]
    factors = [int(k) for k in args.scale.split(",") if k.strip()]
    if args.against is not None:
        print("\n".join(corpus_line))
        _against(args)
    elif factors:
        _scale(args, factors)
    else:
        if not args.memory_only:
            _speed(args, corpus_line)
        counts = [int(c) for c in args.memory.split(",") if c.strip()]
        if counts:
            _memory(args, counts)
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
