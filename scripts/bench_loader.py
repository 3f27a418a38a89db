"""Benchmark: ``TokenShardDataset.batches`` from page cache against the per-sample reference and a training step.

Run alone on the machine::

    python scripts/bench_loader.py

The shards (not timed) are FLORES-200 devtest (``$TOKENLOOM_SHARED`` or ``../shared``; or ``--corpus``)
tokenized by ``tokenize_corpus`` with a byte-level BPE trained on FLORES dev (or ``--tokenizer``) into
``--out``, then read once so they sit in the page cache. Timed on one core, each the best of
``--repeat`` passes over one epoch:

1. **reference**: the samples one by one (``iter(ds)``, each ``ds[i]``) stacked into batches, as a
   loader without batch gathering does;
2. **tokenloom**: ``ds.batches(B)``: one gather per shard and batch;
3. **training step**: one AdamW step of a small causal language model (width 256, depth 4, RoPE, one
   torch thread) on a packed batch, for the loader / step ratio.

Both loaders are checked equal, batch by batch. Rates count the token ids handed out (``B x N`` per
batch, padding included) and their bytes as stored (``uint16``: 2 bytes an id).
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

import tokenloom
from tokenloom import TokenShardDataset
from tokenloom.tokens.manifest import read_manifest

GOAL_BYTES = 1e9  # token-id bytes a second from page cache, one core
GOAL_RATIO = 50.0  # the loader's tokens/s over a training step's


def _shared() -> Path:
    return Path(os.environ.get("TOKENLOOM_SHARED", Path(__file__).resolve().parents[2] / "shared"))


def _shards(args: argparse.Namespace) -> Path:
    out = args.out / "shards"
    if (out / "manifest.json").is_file():
        return out
    flores = _shared() / "corpora" / "flores200"
    if args.tokenizer:
        tok = tokenloom.load_tokenizer(args.tokenizer)
    else:
        tok = tokenloom.train_tokenizer(
            str(flores / "dev"), algorithm="bytelevel-bpe", vocab_size=4000, quiet=True
        )
    tokenloom.tokenize_corpus(args.corpus or flores / "devtest", tok, out, quiet=True)
    return out


def _reference(ds: TokenShardDataset, batch_size: int) -> Iterator[dict[str, np.ndarray]]:
    batch: list[dict[str, np.ndarray]] = []
    for sample in ds:
        batch.append(sample)
        if len(batch) == batch_size:
            yield {k: np.stack([b[k] for b in batch]) for k in batch[0]}
            batch = []
    if batch:
        yield {k: np.stack([b[k] for b in batch]) for k in batch[0]}


def _time(make: Iterator[dict[str, np.ndarray]]) -> tuple[float, int]:
    start, tokens = time.perf_counter(), 0
    for batch in make:
        tokens += batch["input_ids"].size
    return time.perf_counter() - start, tokens


def _loader_rows(folder: Path, args: argparse.Namespace) -> list[list[str]]:
    rows = []
    for packing in ("windows", "documents"):
        ds = TokenShardDataset(folder, seq_len=args.seq_len, packing=packing, seed=0)  # type: ignore[arg-type]
        ds.set_epoch(0)
        for a, b in zip(
            _reference(ds, args.batch_size),
            TokenShardDataset(  # type: ignore[arg-type]
                folder, seq_len=args.seq_len, packing=packing, seed=0
            ).batches(args.batch_size),
            strict=True,
        ):
            assert all(np.array_equal(a[k], b[k]) for k in a), "the fast batches differ from the reference"
        itemsize = np.dtype(ds.manifest["settings"]["dtype"]).itemsize
        for name, run in (
            ("reference (per sample)", lambda ds=ds: _reference(ds, args.batch_size)),
            ("tokenloom batches", lambda ds=ds: ds.batches(args.batch_size)),
        ):
            best, tokens = min(_time(run()) for _ in range(args.repeat))
            rate = tokens / best
            rows.append([packing, name, f"{rate / 1e6:,.1f} M", f"{rate * itemsize / 1e9:.2f}",
                         f"{rate * itemsize / GOAL_BYTES:.2f}x"])  # fmt: skip
    return rows


def _step_rate(args: argparse.Namespace, folder: Path) -> float:
    import torch

    from tokenloom.encoder import EncoderConfig, LanguageModel, LanguageModelConfig

    torch.set_num_threads(1)
    torch.manual_seed(0)
    vocab = int(read_manifest(folder)["tokenizer"]["vocab_size"])
    enc = EncoderConfig(width=256, depth=4, heads=4, position="rope", causal=True)
    model = LanguageModel(LanguageModelConfig(vocab_size=vocab, encoder=enc, context=args.step_seq_len))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ds = TokenShardDataset(folder, seq_len=args.step_seq_len, packing="documents")
    batch = ds.batch(np.arange(8) % len(ds))
    ids, seg, pos = (torch.from_numpy(batch[k]) for k in ("input_ids", "segment_ids", "positions"))
    times = []
    for _ in range(4):
        start = time.perf_counter()
        loss = model.loss(ids, segment_ids=seg, positions=pos)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        times.append(time.perf_counter() - start)
    return ids.numel() / min(times[1:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "bench-loader")
    parser.add_argument("--corpus", help="corpus to tokenize (default: FLORES-200 devtest)")
    parser.add_argument("--tokenizer", help="tokenizer (default: byte-level BPE 4k trained on FLORES dev)")
    parser.add_argument("--seq-len", type=int, default=1024)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--step-seq-len", type=int, default=512)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    folder = _shards(args)
    for f in folder.glob("*.ds*"):  # into the page cache
        f.read_bytes()
    rows = _loader_rows(folder, args)
    step = _step_rate(args, folder)
    manifest = read_manifest(folder)
    total = sum(s["tokens"] for s in manifest["shards"])
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{platform.system()} {platform.release()}, {platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}; {stamp}; load average {load}")  # fmt: skip
    print(
        f"{total:,} tokens in {len(manifest['shards'])} shards; B = {args.batch_size}, N = {args.seq_len}\n"
    )
    print("| packing | loader | token ids/s | GB/s of ids | of the 1 GB/s goal |")
    print("|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    fast_docs = float(rows[3][2].split()[0].replace(",", "")) * 1e6
    print(f"\ntraining step (width 256, depth 4, RoPE, B = 8, N = {args.step_seq_len}, 1 thread): "
          f"{step:,.0f} tokens/s; packed batches / step = {fast_docs / step:,.0f}x (goal >= {GOAL_RATIO:.0f}x)")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
