"""Benchmark: tokenloom's engines against their peers, side by side in one process.

Run under the shared lock (ratios only mean something when the benchmark ran alone)::

    flock /tmp/tokenloom-bench.lock python scripts/bench_engines.py --shared ../shared --markdown

1. **Training** byte-level BPE (``--vocab``, comma-separated: 32000,64000) with GPT-2's and the o200k split
   pattern on FLORES-200 dev + devtest and the shared training text (Bible New Testaments, literature), or a
   deterministic share of every file (``--train-mb``), and on the first ``--mix-mb`` of a generated mix
   (``--mix``: ``scripts/make_mix.py OUT --formats txt:none --size-mb 520``): the raw tokenizers engine
   (``BpeTrainer`` on tokenloom's pipeline), raw gigatoken (``train_bpe``, GPT-2's pattern only), raw
   rustbpe and ``tokenloom.train_tokenizer(engine="auto", max_bytes=None)``. Checked before any time is
   printed: on GPT-2's pattern the auto tokenizer's merges are the tokenizers engine's, in order; on o200k
   its FLORES-200 devtest token count against the tokenizers engine's tokenizer is printed, marked when
   outside ±0.1%. ``--skip flores`` trains on the mix only.
2. **Encoding** (``--encode-mb`` of the same texts) for a byte-level BPE (o200k, from 1.), a BPE with byte
   fallback (``--vocab``, sentencepiece style, trained on the tokenizers engine with ``--bpe-train-mb``) and
   a tiktoken-shaped cl100k byte-level BPE (saved in tiktoken's format and read by tiktoken): tokenloom's
   ids-only path (``Tokenizer.count_tokens``, ``encode_batch``), the bare gigatoken engine's flat array,
   the tokenizers engine's ``encode_batch_fast`` and tiktoken's ``encode_ordinary_batch``; MB/s and MB/s
   per core (every engine runs on all cores), best of ``--repeat``. Token totals are checked equal.
3. **Lengths report** (``fertility_report(metrics="lengths")``) on FLORES-200 devtest (``--report-lines``
   per language) with ``engine="auto"`` against ``engine="reference"`` (the code path before the fast
   engine) and against datatrove's ``TokensCounter`` given the same texts as documents from memory, all in
   this one process; the two reports are checked equal and datatrove's token total equal to theirs.

``--markdown`` prints every table as Markdown under a line naming the machine and the date.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import tokenloom
from bench_fertility import _machine  # this folder is on sys.path when a script runs
from bench_fertility import _print_table as print_table
from tokenloom.fertility.report import ReportConfig, fertility_report
from tokenloom.text.backends.hf import HFBackend
from tokenloom.text.bytelevel import PATTERNS, build_pre_tokenizer, resolve_pattern
from tokenloom.text.tiktoken_export import tiktoken_encoding_kwargs

SEP = b"\xff"


@contextlib.contextmanager
def quiet_native_output() -> Iterator[None]:
    """gigatoken's trainer prints progress on file descriptors 1 and 2: /dev/null meanwhile."""
    saved = [os.dup(1), os.dup(2)]
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 1)
            os.dup2(null.fileno(), 2)
            yield
    finally:
        for fd, copy in zip((1, 2), saved, strict=True):
            os.dup2(copy, fd)
            os.close(copy)


def _print_table(headers: Sequence[str], rows: Sequence[Sequence[object]], *, markdown: bool) -> None:
    print_table(headers, rows, markdown=markdown)
    print()


def _timed(func: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = func()
    return time.perf_counter() - start, out


def _lines(shared: Path, megabytes: float) -> list[str]:
    """FLORES-200 dev + devtest and the training text; with ``megabytes``, the same share of every file."""
    corpora = shared / "corpora"
    paths = sorted((corpora / "flores200" / "dev").glob("*.txt")) + sorted(
        (corpora / "flores200" / "devtest").glob("*.txt")
    )
    paths += sorted((corpora / "train").glob("*/*_*.txt"))
    files = [[ln for ln in p.read_text("utf-8").splitlines() if ln] for p in paths]
    total = sum(len(ln.encode()) + 1 for f in files for ln in f) / 1e6
    share = 1.0 if not megabytes else min(1.0, megabytes / total)
    return [ln for f in files for ln in f[: max(1, round(len(f) * share))]]


def _mb(lines: Sequence[str]) -> float:
    return sum(len(ln.encode()) + 1 for ln in lines) / 1e6


def _train_raw_hf(lines: list[str], pre: str, vocab: int) -> Any:
    """The tokenizers engine's BpeTrainer on tokenloom's byte-level pipeline (split pattern, byte mapping)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    hf = Tokenizer(models.BPE(ignore_merges=True))
    hf.pre_tokenizer = build_pre_tokenizer(resolve_pattern(pre))
    hf.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab, special_tokens=["<unk>", "<s>", "</s>", "<pad>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )  # fmt: skip
    hf.train_from_iterator((lines[i : i + 1000] for i in range(0, len(lines), 1000)), trainer=trainer)
    return hf


def _merges(hf: Any) -> list[tuple[str, str]]:
    return [tuple(m) for m in json.loads(hf.to_str())["model"]["merges"]]


def _train_row(
    label: str, lines: list[str], devtest: list[str], pre: str, vocab: int
) -> tuple[list[str], Any]:
    """One training row: the four trainers on ``lines``, checked (merges / devtest tokens), and ``auto``."""
    import gigatoken
    import rustbpe

    t_hf, hf = _timed(partial(_train_raw_hf, lines, pre, vocab))
    t_gt = None
    if pre == "gpt2":
        data = SEP.join(ln.encode() for ln in lines)
        with quiet_native_output():  # its progress lines, printed by the Rust code
            t_gt, _ = _timed(partial(gigatoken.train_bpe, data, vocab - 4, [], separator=SEP))
        del data
    trainer = rustbpe.Tokenizer()
    t_rb, _ = _timed(partial(trainer.train_from_iterator, iter(lines), vocab - 4, pattern=PATTERNS[pre]))
    settings = dict(
        algorithm="bytelevel-bpe",
        pretokenizer=pre,
        vocab_size=vocab,
        heldout=0,
        quiet=True,
        max_bytes=None,
        max_line_bytes=1 << 24,
    )
    t_auto, auto = _timed(partial(tokenloom.train_tokenizer, iter(lines), **settings))
    engine = auto.record["resolved"]["engine"]
    ref = tokenloom.Tokenizer(name="hf", backend=HFBackend(hf))
    n_hf, n_auto = int(ref.count_tokens(devtest).sum()), int(auto.count_tokens(devtest).sum())
    if pre == "gpt2":
        same = _merges(auto.hf_export()) == _merges(hf)
        assert same, f"{label}, {vocab}: gigatoken's merges differ from the tokenizers engine's"
        check = f"merges identical ({len(_merges(hf)):,})"
    else:
        change = n_auto / n_hf - 1  # printed, not asserted: a row outside the tolerance is a result too
        check = f"devtest tokens {change:+.4%}" + ("" if abs(change) <= 0.001 else " (OUTSIDE ±0.1%)")
    gt = f"{t_gt:.1f} ({t_hf / t_gt:.2f}×)" if t_gt else "— (GPT-2 pattern only)"
    row = [
        label, str(vocab), pre, f"{_mb(lines):.1f}", f"{t_hf:.1f}", gt, f"{t_rb:.1f} ({t_hf / t_rb:.2f}×)",
        f"{t_auto:.1f} ({t_hf / t_auto:.2f}×)", engine, check,
    ]  # fmt: skip
    return row, auto


def training(
    corpora: dict[str, list[str]],
    devtest: list[str],
    vocabs: Sequence[int],
    markdown: bool,
    patterns: Sequence[str] = ("gpt2", "o200k"),
) -> dict[str, Any]:
    """Section 1: every text × vocabulary × pattern; returns the first text's first-vocabulary tokenizers."""
    rows, made = [], {}
    for label, lines in corpora.items():
        for vocab in vocabs:
            for pre in patterns:
                row, auto = _train_row(label, lines, devtest, pre, vocab)
                rows.append(row)
                print("  " + " | ".join(row), file=sys.stderr, flush=True)  # progress: long runs
                if not made.get(pre):
                    made[pre] = auto
    print("Training byte-level BPE: seconds (× the tokenizers engine)\n")
    headers = [
        "text", "vocab", "pattern", "MB", "tokenizers s", "gigatoken s", "rustbpe s", "tokenloom auto s",
        "auto engine", "check",
    ]  # fmt: skip
    _print_table(headers, rows, markdown=markdown)
    return made


def _mix_lines(path: Path, megabytes: float) -> list[str]:
    """The first ``megabytes`` of a text file's lines (``scripts/make_mix.py --formats txt:none``)."""
    limit, lines, size = megabytes * 1e6, [], 0
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if size >= limit:
                break
            size += len(line.encode())
            lines.append(line.rstrip("\n"))
    return lines


def _throughput(mb: float, seconds: float) -> str:
    cores = os.cpu_count() or 1
    return f"{mb / seconds:.1f} ({mb / seconds / cores:.1f}/core)"


def _best(func: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """The fastest of ``repeat`` timed calls (engines keep caches: the first call over a text is the slowest)."""
    runs = [_timed(func) for _ in range(repeat)]
    return min(t for t, _ in runs), runs[-1][1]


def encoding(toks: dict[str, Any], texts: list[str], repeat: int, markdown: bool) -> None:
    import awkward as ak
    import gigatoken
    import tiktoken

    mb = _mb(texts)
    rows = []
    for kind, tok in toks.items():
        assert tok.engine_info()["ids"].engine == "gigatoken", tok.engine_info()["ids"].reason
        hf = tok.hf_export()
        bare = gigatoken.Tokenizer.from_json(hf.to_str())
        for warm in (tok.count_tokens, tok.encode_batch, bare.encode_batch, hf.encode_batch_fast):
            warm(texts[:200])  # first calls start thread pools and import the array library: not timed
        t_count, counts = _best(partial(tok.count_tokens, texts), repeat)
        t_lists, _ = _best(partial(tok.encode_batch, texts), repeat)
        t_bare, flat = _best(partial(bare.encode_batch, texts), repeat)
        t_hf, encs = _best(partial(hf.encode_batch_fast, texts, add_special_tokens=False), repeat)
        total = int(counts.sum())
        assert total == sum(len(e) for e in encs) == int(ak.sum(ak.num(flat, axis=1))), kind
        peer = "—"
        if kind != "byte-fallback BPE":
            with tempfile.TemporaryDirectory() as tmp:
                folder = tok.save(Path(tmp) / "t", formats=("tokenizer.json", "tiktoken"), strict=True)
                enc = tiktoken.Encoding(**tiktoken_encoding_kwargs(folder))
            t_tt, ids = _best(
                partial(enc.encode_ordinary_batch, texts, num_threads=os.cpu_count() or 1), repeat
            )
            assert sum(map(len, ids)) == total, kind
            peer = f"{_throughput(mb, t_tt)}; ours {t_tt / t_count:.1f}×"
        rows.append([
            kind, f"{mb:.1f}", f"{total:,}", _throughput(mb, t_count), _throughput(mb, t_lists),
            _throughput(mb, t_bare), f"{_throughput(mb, t_hf)}; ours {t_hf / t_count:.1f}×", peer,
        ])  # fmt: skip
    print(
        f"Encoding: MB/s (per core), best of {repeat}; ours = tokenloom count_tokens on the verified fast engine\n"
    )
    headers = [
        "tokenizer",
        "MB",
        "tokens",
        "count_tokens",
        "encode_batch (lists)",
        "bare gigatoken (flat)",
        "tokenizers",
        "tiktoken",
    ]
    _print_table(headers, rows, markdown=markdown)


def datatrove_count(texts: list[str], tokenizer_json: Path) -> int:
    """datatrove's ``TokensCounter`` over ``texts`` in this process (documents from memory): its token total."""
    from datatrove.data import Document
    from datatrove.pipeline.tokens import TokensCounter

    counter = TokensCounter(str(tokenizer_json), batch_size=1000)
    docs = (Document(text=t, id=str(i)) for i, t in enumerate(texts))
    return sum(d.metadata["token_count"] for d in counter.run(docs))


def lengths_report(toks: dict[str, Any], shared: Path, lines: int, markdown: bool) -> None:
    """Section 3: the lengths report on both engines and datatrove's ``TokensCounter``, one process."""
    src = shared / "corpora" / "flores200" / "devtest"
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        texts: list[str] = []
        for path in sorted(src.glob("*.txt")):
            keep = path.read_text("utf-8").splitlines()[:lines]
            texts += keep
            (Path(tmp) / path.name).write_text("\n".join(keep) + "\n", "utf-8")
        mb = sum(p.stat().st_size for p in Path(tmp).glob("*.txt")) / 1e6
        for kind, tok in toks.items():
            tok_json = tok.save(Path(tmp) / "tok" / kind.split()[0], formats=("tokenizer.json",))
            frames, seconds = {}, {}
            for engine in ("reference", "auto"):
                chosen = tok.with_engine(engine)
                config = ReportConfig(metrics="lengths")
                seconds[engine], frames[engine] = _timed(
                    partial(
                        fertility_report, {kind: chosen}, tmp, config=config, translit=False, numbers=False
                    )
                )
            assert frames["auto"].equals(frames["reference"]), f"{kind}: reports differ"
            t_dt, n_dt = _timed(partial(datatrove_count, texts, Path(tok_json) / "tokenizer.json"))
            all_row = frames["auto"][frames["auto"].slice_kind == "all"]
            n_ours = int(all_row["tokens"].iloc[0])
            assert n_dt == n_ours, f"{kind}: datatrove counted {n_dt:,} tokens, the report {n_ours:,}"
            rows.append([
                kind, f"{mb:.1f}", f"{n_ours:,}", f"{t_dt:.2f}", f"{seconds['reference']:.2f}",
                f"{seconds['auto']:.2f}", f"{seconds['reference'] / seconds['auto']:.2f}×",
                f"{t_dt / seconds['auto']:.2f}×", "identical",
            ])  # fmt: skip
    print(
        "fertility_report(metrics='lengths') on FLORES-200 devtest against datatrove's TokensCounter "
        "(documents from memory), one process: seconds\n"
    )
    headers = [
        "tokenizer", "MB", "tokens", "datatrove s", "report, reference engine s", "report, auto s",
        "auto vs reference", "auto vs datatrove", "reports",
    ]  # fmt: skip
    _print_table(headers, rows, markdown=markdown)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=Path(os.environ.get("TOKENLOOM_SHARED", "../shared")))
    parser.add_argument("--vocab", default="32000", help="training vocabularies, comma-separated")
    parser.add_argument("--train-mb", type=float, default=0, help="share of the training text (0: all)")
    parser.add_argument(
        "--mix", type=Path, default=None, help="also train on this text file (make_mix.py txt)"
    )
    parser.add_argument("--mix-mb", type=float, default=500, help="MB of --mix to train on")
    parser.add_argument("--encode-mb", type=float, default=10)
    parser.add_argument("--bpe-train-mb", type=float, default=8)
    parser.add_argument("--report-lines", type=int, default=1012)
    parser.add_argument("--repeat", type=int, default=2, help="encoding: best of this many runs")
    parser.add_argument("--patterns", default="gpt2,o200k", help="training split patterns, comma-separated")
    parser.add_argument("--skip", default="", help="comma list of sections to skip: flores,encoding,report")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    vocabs = [int(v) for v in args.vocab.split(",")]
    print(f"Machine: {_machine()}; load average {os.getloadavg()[0]:.1f}\n", flush=True)
    devtest = [
        ln for p in sorted((args.shared / "corpora" / "flores200" / "devtest").glob("*.txt"))
        for ln in p.read_text("utf-8").splitlines()
    ]  # fmt: skip
    corpora = {} if "flores" in skip else {"FLORES + training text": _lines(args.shared, args.train_mb)}
    if args.mix is not None:
        corpora[f"mix ({args.mix.name})"] = _mix_lines(args.mix, args.mix_mb)
    patterns = [p.strip() for p in args.patterns.split(",") if p.strip()]
    made = training(corpora, devtest, vocabs, args.markdown, patterns)
    if {"encoding", "report"} <= skip:
        return 0
    texts = _lines(args.shared, args.encode_mb)
    small = _lines(args.shared, args.bpe_train_mb)
    toks = {
        "byte-level BPE (o200k)": made["o200k"],
        "byte-fallback BPE": tokenloom.train_tokenizer(
            iter(small), algorithm="bpe", engine="hf", vocab_size=vocabs[0], heldout=0, quiet=True
        ),
        "cl100k-shaped (tiktoken)": tokenloom.train_tokenizer(
            iter(small),
            algorithm="bytelevel-bpe",
            pretokenizer="cl100k",
            vocab_size=vocabs[0],
            heldout=0,
            quiet=True,
        ),
    }
    if "encoding" not in skip:
        encoding(toks, texts, args.repeat, args.markdown)
    if "report" not in skip:
        lengths_report(toks, args.shared, args.report_lines, args.markdown)
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
