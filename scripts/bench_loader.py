"""Benchmark: ``TokenShardDataset`` batches from page cache on one core, against the per-sample reading
and a small encoder's training step.

Run it alone on the machine (``flock /tmp/tokenloom-bench.lock``), e.g.::

    python scripts/bench_loader.py --tokens 100000000 --markdown

Not timed: ``--files`` Latin-script FLORES-200 devtest files (``$TOKENLOOM_SHARED`` or ``../shared``, name
order; every line a document) are tokenized by ``tokenize_corpus`` with a byte-level BPE of
``--vocab-size`` trained on them (``uint16`` ids); those documents, repeated in order until ``--tokens``
ids, are written by the library's shard writer into shards of at most ``--shard-tokens`` ids in a
temporary folder under ``/tmp``, and every ``.ds`` file is read once so it sits in page cache. The
process is pinned to one core and torch to one thread.

Timed, for ``packing="windows"`` and ``packing="documents"`` at each ``--batch-sizes`` (``seq_len`` =
``--seq-len``, shuffled epoch order): ``ds.batches(B)`` with every array handed to ``torch.from_numpy``,
for about ``--seconds`` each; the same with the per-sample reading (``tokens.reference``, the code
before) for the ratio; and, as a ceiling, one contiguous slice of ``B * (N + 1)`` ids cast to ``int64``.
Opening the folder and planning the samples are timed apart (the dataset's constructor; for the
per-sample reading also its list plan and first batch). Rates count the id slots delivered (padding
included; its share is printed, counted outside the timing) and their bytes as stored (2 bytes an id).
Last, one AdamW step of a causal encoder (width 256, depth 4, 4 heads, RoPE) on packed
batches of ``B = 8``, ``N = --seq-len``: the loader's rate over the step's tokens/s is the margin.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from bench_tokenize import machine, shared  # this folder is on sys.path when a script runs

GOAL_BYTES = 1e9  # 1 GB/s of token ids


def build(tmp: Path, n_files: int, vocab_size: int, tokens: int, shard_tokens: int) -> tuple[Path, int, int]:
    """The shard folder to read (path), its ids and the FLORES sample's ids."""
    from tokenloom import tokenize_corpus, train_tokenizer
    from tokenloom.tokens.manifest import read_manifest, write_manifest
    from tokenloom.tokens.writer import DOC_DTYPE, write_shard

    files = sorted((shared() / "corpora" / "flores200" / "devtest").glob("*_Latn.txt"))[:n_files]
    sample = tmp / "sample"
    sample.mkdir()
    for f in files:
        os.symlink(f, sample / f.name)
    tok = tmp / "tokenizer"
    train_tokenizer(
        str(sample), algorithm="bytelevel-bpe", vocab_size=vocab_size, special_tokens=("<|endoftext|>",),
        heldout=0.0, quiet=True,
    ).save(tok)  # fmt: skip
    flores = tmp / "flores"
    tokenize_corpus(sample, tok, flores, quiet=True)
    manifest = read_manifest(flores)
    dtype = np.dtype(manifest["settings"]["dtype"])
    ids = np.concatenate([np.fromfile(flores / f"{s['name']}.ds", dtype=dtype) for s in manifest["shards"]])
    lengths = np.concatenate(
        [
            np.diff(np.fromfile(flores / f"{s['name']}.ds.index", dtype="<u8"), prepend=0)
            for s in manifest["shards"]
        ]
    ).astype(np.int64)
    docs = np.split(ids, np.cumsum(lengths)[:-1])  # the sample's documents, in order
    big, shards, written, k = tmp / "big", [], 0, 0
    big.mkdir()
    while written < tokens:
        chunk, n = [], 0
        while n < shard_tokens and written + n < tokens:
            chunk.append(docs[k % len(docs)])
            n, k = n + len(chunk[-1]), k + 1
        name = f"train-{len(shards):05d}"
        lengths = [len(d) for d in chunk]
        files_written = write_shard(
            big, name, np.concatenate(chunk), lengths, np.zeros(len(chunk), DOC_DTYPE), dtype
        )
        shards.append({
            "name": name, "split": "train", "documents": len(chunk), "tokens": n,
            "files": [f.as_dict() for f in files_written],
        })  # fmt: skip
        written += n
    write_manifest(big, {**{k: v for k, v in manifest.items() if k != "format"}, "shards": shards})
    for f in big.glob("*.ds"):
        np.fromfile(f, dtype=np.uint8).sum()  # into page cache
    return big, written, len(ids)


def rate(batches: Iterator[dict[str, np.ndarray]], seconds: float) -> tuple[float, float, float]:
    """(id slots/s, padding share, seconds) over ``batches`` for about ``seconds`` (from the first batch)."""
    import torch

    next(batches)  # planning and the first read are not timed
    slots = pad = 0
    counting = 0.0  # seconds spent counting the padding: not the loader's
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        batch = next(batches, None)
        if batch is None:
            break
        tensors = {k: torch.from_numpy(v) for k, v in batch.items()}
        slots += tensors["input_ids"].numel()
        if "segment_ids" in batch:
            mark = time.perf_counter()
            pad += int(np.count_nonzero(batch["segment_ids"] < 0))
            counting += time.perf_counter() - mark
    elapsed = time.perf_counter() - start - counting
    return slots / elapsed, pad / max(slots, 1), elapsed


def ceiling(folder: Path, width: int, seconds: float) -> float:
    """Id slots/s of one contiguous slice of ``width`` ids cast to int64, from the first shard."""
    import torch

    from tokenloom.tokens.manifest import read_manifest

    tokens = np.memmap(folder / f"{read_manifest(folder)['shards'][0]['name']}.ds", dtype="<u2", mode="r")
    slots, at, start = 0, 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        if at + width > len(tokens):
            at = 0
        torch.from_numpy(np.asarray(tokens[at : at + width]).astype(np.int64))
        slots, at = slots + width, at + width
    return slots / (time.perf_counter() - start)


def train_rate(folder: Path, vocab: int, seq_len: int, steps: int) -> float:
    """Tokens/s (id slots) of AdamW steps of a small causal encoder on packed batches of 8 rows."""
    import torch

    from tokenloom import TokenShardDataset
    from tokenloom.encoder.config import EncoderConfig, LanguageModelConfig
    from tokenloom.encoder.lm import LanguageModel

    torch.manual_seed(0)
    enc = EncoderConfig(width=256, depth=4, heads=4, causal=True, position="rope")
    model = LanguageModel(LanguageModelConfig(vocab_size=vocab, encoder=enc, context=seq_len))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    batches = TokenShardDataset(folder, seq_len=seq_len, packing="documents").batches(8)

    def step() -> None:
        b = {k: torch.from_numpy(v) for k, v in next(batches).items()}  # [B, N] each
        loss = model.loss(b["input_ids"], segment_ids=b["segment_ids"], positions=b["positions"])
        opt.zero_grad()
        loss.backward()
        opt.step()

    step()  # warm-up
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return steps * 8 * seq_len / (time.perf_counter() - start)


def measure(folder: Path, args: argparse.Namespace) -> tuple[list[list[str]], dict[str, float]]:
    """The table's rows and the best batched rate (id slots/s) per packing."""
    from tokenloom import TokenShardDataset
    from tokenloom.tokens.reference import reference_batches

    rows: list[list[str]] = []
    best: dict[str, float] = {}
    n = args.seq_len
    for packing in ("windows", "documents"):
        for b in args.batch_sizes:
            opened = time.perf_counter()
            ds = TokenShardDataset(folder, seq_len=n, packing=packing, seed=0)
            opened = time.perf_counter() - opened
            fast, pad, _ = rate(ds.batches(b), args.seconds)
            plan = time.perf_counter()
            ref_ds = TokenShardDataset(folder, seq_len=n, packing=packing, seed=0)
            ref_it = reference_batches(ref_ds, b)
            next(ref_it)
            plan = time.perf_counter() - plan
            ref, _, _ = rate(ref_it, args.seconds / 2)
            best[packing] = max(best.get(packing, 0.0), fast)
            gb = fast * 2 / 1e9
            rows.append([
                f'`packing="{packing}"`, B = {b}', f"{fast / 1e6:,.1f} M", f"{gb:.2f}", f"{gb * 1e9 / GOAL_BYTES:.2f}x",
                f"{ref / 1e6:,.1f} M", f"{fast / ref:.1f}x", f"{opened:.2f} / {plan:.2f}", f"{pad:.1%}",
            ])  # fmt: skip
    for b in args.batch_sizes:
        top = ceiling(folder, b * (n + 1), args.seconds)
        rows.append([f"ceiling: one slice of B·(N+1) ids → int64, B = {b}", f"{top / 1e6:,.1f} M",
                     f"{top * 2 / 1e9:.2f}", f"{top * 2 / GOAL_BYTES:.2f}x", "", "", "", ""])  # fmt: skip
    return rows, best


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--tokens", type=int, default=100_000_000, help="ids in the shard folder read")
    parser.add_argument("--shard-tokens", type=int, default=25_000_000, help="ids per shard at most")
    parser.add_argument("--files", type=int, default=20, help="Latin-script FLORES devtest files tokenized")
    parser.add_argument("--vocab-size", type=int, default=1000)
    parser.add_argument("--seq-len", type=int, default=512)
    parser.add_argument("--batch-sizes", type=lambda s: [int(x) for x in s.split(",")], default=[8, 64, 256])
    parser.add_argument("--seconds", type=float, default=3.0, help="time per loader measurement")
    parser.add_argument("--steps", type=int, default=5, help="timed training steps")
    parser.add_argument(
        "--markdown", action="store_true", help="the table under a line naming machine and date"
    )
    args = parser.parse_args(argv)
    import torch

    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(dir="/tmp", prefix="bench-loader-") as tmp:
        folder, total, sample = build(Path(tmp), args.files, args.vocab_size, args.tokens, args.shard_tokens)
        rows, best = measure(folder, args)
        step = train_rate(folder, args.vocab_size, args.seq_len, args.steps)
    head = [f"what (N = {args.seq_len})", "id slots/s", "GB/s of ids (uint16)", "of 1 GB/s", "per-sample reading",
            "batched / per-sample", "open + plan s (batched / per-sample)", "padding"]  # fmt: skip
    if args.markdown:
        print(f"# {machine()}; load average {os.getloadavg()[0]:.1f}; one core, torch 1 thread")
    print(f"{args.files} FLORES devtest files: {sample:,} ids (BPE {args.vocab_size}), repeated to {total:,} ids "
          f"({total * 2 / 1e6:,.0f} MB) in shards of <= {args.shard_tokens:,}")  # fmt: skip
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print(f"training step (width 256, depth 4, B = 8, N = {args.seq_len}, AdamW): {step:,.0f} tokens/s; "
          f"loader / step: windows {best['windows'] / step:,.0f}x, documents {best['documents'] / step:,.0f}x (goal >= 50x)")  # fmt: skip
    if args.markdown:
        print(f"load average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
