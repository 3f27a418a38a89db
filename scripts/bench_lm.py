"""Benchmark: train-step tokens/s of tokenloom's LanguageModel against the same GPT written plainly in PyTorch.

Two tables, both from one process, the two sides timed back to back in alternating order (a slow moment
of a shared machine hits both; the verdict is the median of the per-repeat ratios):

1. **LanguageModel vs a plain GPT** of nanoGPT's ``model.py`` shape (``nn.Embedding`` tokens and
   positions, pre-norm blocks with ``F.scaled_dot_product_attention(is_causal=True)``, exact GELU,
   LayerNorm eps 1e-5, biases, tied head) at the same width, depth, context, batch and dtype; the same
   parameter count is checked. One AdamW step (forward, cross-entropy, backward, update) per timed step.
   Target: ours / plain >= 0.95.
2. **Packed vs padded batches of the same documents** (lengths drawn from a log-normal, at most the
   context): packed rows hold several documents (``segment_ids``; attention stays in each document),
   padded rows one document each, padded to the longest of its batch. Reported: the padding share and
   useful (document) tokens/s over one pass through all documents. Target: packed / padded >= 1.3.

``--cuda`` runs both on the GPU in bf16 autocast at a GPT-2-small-sized configuration (12 × 768, 12 heads,
context 1024, vocabulary 50304) and adds the model FLOP utilisation: the cost model's training FLOPs
(``tokenloom.costs.lm_flops(...).training``, 3 × forward, causal attention pairs only) per second over the
chip's dense bf16 peak (``--peak-tflops``, default from the device name). Without CUDA it prints one line
and exits 3. Run it alone, under the shared lock:

    flock /tmp/tokenloom-bench.lock python scripts/bench_lm.py --markdown
"""

from __future__ import annotations

import argparse
import datetime
import math
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from tokenloom.costs import lm_flops, lm_params
from tokenloom.encoder import EncoderConfig, LanguageModel, LanguageModelConfig
from tokenloom.training.throughput import PEAK_TFLOPS

EXIT_NO_CUDA = 3

Batch = tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]  # ids, targets, segment ids (packed rows)


# --------------------------------------------------------------------------- the plain peer


class PlainBlock(nn.Module):
    """nanoGPT's Block: x + attn(ln_1(x)), x + mlp(ln_2(x))."""

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(width)
        self.c_attn = nn.Linear(width, 3 * width)
        self.c_proj = nn.Linear(width, width)
        self.ln_2 = nn.LayerNorm(width)
        self.c_fc = nn.Linear(width, 4 * width)
        self.gelu = nn.GELU()
        self.mlp_proj = nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, c = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(c, dim=2)  # [B, N, C] x3
        q = q.view(b, n, self.heads, c // self.heads).transpose(1, 2)  # [B, H, N, D]
        k = k.view(b, n, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, n, self.heads, c // self.heads).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # [B, H, N, D]
        x = x + self.c_proj(y.transpose(1, 2).contiguous().view(b, n, c))
        return x + self.mlp_proj(self.gelu(self.c_fc(self.ln_2(x))))


class PlainGPT(nn.Module):
    """nanoGPT's GPT: token + position embeddings, blocks, final LayerNorm, head tied to the embedding."""

    def __init__(self, vocab: int, context: int, width: int, depth: int, heads: int) -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Embedding(context, width)
        self.blocks = nn.ModuleList(PlainBlock(width, heads) for _ in range(depth))
        self.ln_f = nn.LayerNorm(width)
        self.lm_head = nn.Linear(width, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied
        for module in self.modules():
            if isinstance(module, nn.Linear | nn.Embedding):
                nn.init.normal_(module.weight, std=0.02)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.wte(ids) + self.wpe(torch.arange(ids.shape[1], device=ids.device))  # [B, N, d]
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))  # [B, N, V]


# --------------------------------------------------------------------------- setup


@dataclass(frozen=True)
class Setup:
    vocab: int
    context: int
    width: int
    depth: int
    heads: int
    batch: int
    device: str
    bf16: bool

    @property
    def config(self) -> LanguageModelConfig:
        enc = EncoderConfig(width=self.width, depth=self.depth, heads=self.heads, norm_eps=1e-5, causal=True)
        return LanguageModelConfig(vocab_size=self.vocab, encoder=enc, context=self.context)

    def describe(self) -> str:
        dtype = "bf16 autocast" if self.bf16 else "fp32"
        return (
            f"width {self.width}, depth {self.depth}, heads {self.heads}, context {self.context}, vocab "
            f"{self.vocab}, batch {self.batch}, {dtype}, {self.device}"
        )


def train_step(model: nn.Module, opt: torch.optim.Optimizer, setup: Setup) -> Callable[..., None]:
    """One AdamW step on (ids, targets[, segment_ids]) with the model's loss."""

    def step(ids: torch.Tensor, targets: torch.Tensor, segment_ids: torch.Tensor | None = None) -> None:
        with torch.autocast(setup.device, dtype=torch.bfloat16, enabled=setup.bf16):
            if isinstance(model, LanguageModel):
                loss = model.loss(ids, targets, segment_ids=segment_ids)
            else:
                logits = model(ids)
                loss = F.cross_entropy(logits.float().flatten(0, 1), targets.flatten(), ignore_index=-100)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step


def repeat(step: Callable[..., None], batch: tuple[torch.Tensor, ...], times: int) -> Callable[[], None]:
    """A run: ``times`` steps on one batch."""

    def run() -> None:
        for _ in range(times):
            step(*batch)

    return run


def each(step: Callable[..., None], batches: list[Batch]) -> Callable[[], None]:
    """A run: one step on every batch (one pass over the documents)."""

    def run() -> None:
        for batch in batches:
            step(*batch)

    return run


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def timed(fn: Callable[[], None], device: str) -> tuple[float, float]:
    """(wall seconds, this process's CPU seconds) of one call."""
    sync(device)
    start, cpu = time.perf_counter(), time.process_time()
    fn()
    sync(device)
    return time.perf_counter() - start, time.process_time() - cpu


Times = dict[str, list[float]]


def interleave(runs: dict[str, Callable[[], None]], repeats: int, device: str) -> tuple[Times, Times]:
    """Wall and CPU seconds of each run, ``repeats`` times, alternating which goes first."""
    wall: Times = {name: [] for name in runs}
    cpu: Times = {name: [] for name in runs}
    order = list(runs)
    for index in range(repeats):
        for name in order if index % 2 == 0 else order[::-1]:
            w, c = timed(runs[name], device)
            wall[name].append(w)
            cpu[name].append(c)
    return wall, cpu


def paired(times: Times, slow: str, fast: str) -> list[float]:
    """Sorted per-repeat ratios ``times[slow] / times[fast]`` (a speed ratio fast : slow)."""
    return sorted(s / f for f, s in zip(times[fast], times[slow], strict=True))


# --------------------------------------------------------------------------- table 1: ours vs plain


def bench_models(setup: Setup, args: argparse.Namespace) -> tuple[list[str], float, float]:
    torch.manual_seed(0)
    ours = LanguageModel(setup.config).to(setup.device)
    plain = PlainGPT(setup.vocab, setup.context, setup.width, setup.depth, setup.heads).to(setup.device)
    n_ours = sum(p.numel() for p in ours.parameters())
    n_plain = sum(p.numel() for p in plain.parameters())
    assert n_ours == n_plain == lm_params(setup.config), (n_ours, n_plain, lm_params(setup.config))
    if args.compile:  # in place: ours stays a LanguageModel, so its step still runs its own loss
        ours.compile()
        plain.compile()
    g = torch.Generator().manual_seed(1)
    data = torch.randint(0, setup.vocab, (setup.batch, setup.context + 1), generator=g).to(setup.device)
    ids, targets = data[:, :-1], data[:, 1:]
    steps = {
        "tokenloom": train_step(ours, torch.optim.AdamW(ours.parameters(), lr=1e-4), setup),
        "plain": train_step(plain, torch.optim.AdamW(plain.parameters(), lr=1e-4), setup),
    }
    runs = {name: repeat(s, (ids, targets), args.steps) for name, s in steps.items()}
    for run in runs.values():
        for _ in range(args.warmup):
            run()
    times, cpu = interleave(runs, args.repeats, setup.device)
    tokens = setup.batch * setup.context * args.steps
    flops = lm_flops(setup.config, setup.batch, setup.context).training * args.steps
    peak = args.peak_tflops * 1e12 if args.peak_tflops else 0.0
    lines = [
        "| model | tokens/s (median) | tokens/s (best) | ms/step (median) | CPU ms/step (median) |"
        + (" MFU |" if peak else "")
    ]
    lines.append("|---|---:|---:|---:|---:|" + ("---:|" if peak else ""))
    for name, ts in times.items():
        med = statistics.median(ts)
        mfu = f" {flops / med / peak:.1%} |" if peak else ""
        lines.append(
            f"| {name} | {tokens / med:,.0f} | {tokens / min(ts):,.0f} | {med / args.steps * 1e3:.1f} | "
            f"{statistics.median(cpu[name]) / args.steps * 1e3:.1f} |{mfu}"
        )
    ratios, cpu_ratios = paired(times, "plain", "tokenloom"), paired(cpu, "plain", "tokenloom")
    lines.append("")
    lines.append(
        f"parameters: {n_ours:,} each; per-repeat speed ratios ours/plain: wall min {ratios[0]:.3f}, "
        f"median {statistics.median(ratios):.3f}, max {ratios[-1]:.3f}; CPU time median "
        f"{statistics.median(cpu_ratios):.3f}"
    )
    return lines, statistics.median(ratios), statistics.median(cpu_ratios)


# --------------------------------------------------------------------------- table 2: packed vs padded


def documents(count: int, context: int, seed: int) -> list[int]:
    """Document lengths: log-normal around context / 4, between 8 and the context."""
    g = torch.Generator().manual_seed(seed)
    raw = torch.exp(math.log(context / 4) + 0.9 * torch.randn(count, generator=g, dtype=torch.float64))
    return [int(x) for x in raw.clamp(8, context).round().tolist()]


def packed_rows(lengths: list[int], context: int) -> list[list[int]]:
    """Documents (by index) per row, in order, a document never split (document-aware packing)."""
    rows: list[list[int]] = [[]]
    used = 0
    for index, length in enumerate(lengths):
        if used + length > context:
            rows.append([])
            used = 0
        rows[-1].append(index)
        used += length
    return rows


def make_batches(lengths: list[int], setup: Setup, *, packed: bool) -> tuple[list[Batch], int]:
    """Batches (ids, targets, segment_ids) over every document once, and the tokens they hold."""
    g = torch.Generator().manual_seed(2)
    docs = [torch.randint(0, setup.vocab, (n,), generator=g) for n in lengths]
    groups = packed_rows(lengths, setup.context) if packed else [[i] for i in range(len(lengths))]
    batches: list[Batch] = []
    total = 0
    for start in range(0, len(groups), setup.batch):
        rows = groups[start : start + setup.batch]
        width = setup.context if packed else max(lengths[r[0]] for r in rows)
        ids = torch.zeros(len(rows), width, dtype=torch.long)
        seg = torch.full((len(rows), width), -1, dtype=torch.long)
        for row, members in enumerate(rows):
            at = 0
            for number, doc in enumerate(members):
                ids[row, at : at + lengths[doc]] = docs[doc]
                seg[row, at : at + lengths[doc]] = number
                at += lengths[doc]
        targets = torch.full_like(ids, -100)
        same = (seg[:, 1:] == seg[:, :-1]) & (seg[:, :-1] >= 0)  # the next token is of the same document
        targets[:, :-1] = torch.where(same, ids[:, 1:], -100)
        total += ids.numel()
        dev = setup.device
        batches.append((ids.to(dev), targets.to(dev), seg.to(dev) if packed else None))
    return batches, total


def bench_packing(setup: Setup, args: argparse.Namespace) -> tuple[list[str], float]:
    lengths = documents(args.documents, setup.context, seed=3)
    useful = sum(lengths)
    torch.manual_seed(0)
    model = LanguageModel(setup.config).to(setup.device)
    step = train_step(model, torch.optim.AdamW(model.parameters(), lr=1e-4), setup)
    kinds = {kind: make_batches(lengths, setup, packed=kind == "packed") for kind in ("packed", "padded")}
    runs = {kind: each(step, batches) for kind, (batches, _) in kinds.items()}
    for run in runs.values():
        run()  # warm-up: one pass
    times, _ = interleave(runs, args.pack_repeats, setup.device)
    lines = [
        f"{len(lengths)} documents, {useful:,} tokens (median length {statistics.median(lengths):.0f}, "
        f"max {max(lengths)}); one training pass over all of them per repeat",
        "",
        "| batches | rows | tokens processed | padding share | useful tokens/s (median) | s/pass (median) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for kind, (batches, total) in kinds.items():
        med = statistics.median(times[kind])
        rows = sum(b[0].shape[0] for b in batches)
        lines.append(
            f"| {kind} | {rows} | {total:,} | {1 - useful / total:.1%} | {useful / med:,.0f} | {med:.2f} |"
        )
    ratios = paired(times, "padded", "packed")
    lines.append("")
    lines.append(
        f"per-repeat ratios packed/padded (useful tokens/s): min {ratios[0]:.2f}, "
        f"median {statistics.median(ratios):.2f}, max {ratios[-1]:.2f}"
    )
    return lines, statistics.median(ratios)


# --------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cuda", action="store_true", help="GPU, bf16 autocast, GPT-2-small-sized defaults")
    parser.add_argument("--width", type=int, help="model width (CPU default 128, --cuda 768)")
    parser.add_argument("--depth", type=int, help="blocks (CPU default 4, --cuda 12)")
    parser.add_argument("--heads", type=int, help="heads (CPU default 4, --cuda 12)")
    parser.add_argument("--context", type=int, help="tokens per row (CPU default 256, --cuda 1024)")
    parser.add_argument("--vocab", type=int, help="vocabulary (CPU default 2048, --cuda 50304)")
    parser.add_argument("--batch", type=int, help="rows per step (CPU default 8, --cuda 16)")
    parser.add_argument("--steps", type=int, default=2, help="training steps per timed repeat (default 2)")
    parser.add_argument("--repeats", type=int, default=7, help="timed repeats per model (default 7)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed repeats per model first (default 1)")
    parser.add_argument(
        "--documents", type=int, default=96, help="documents in the packing table (default 96)"
    )
    parser.add_argument("--pack-repeats", type=int, default=3, help="timed passes per batching (default 3)")
    parser.add_argument("--compile", action="store_true", help="torch.compile both models")
    parser.add_argument("--peak-tflops", type=float, default=0.0, help="dense bf16 peak for MFU (--cuda)")
    parser.add_argument("--threads", type=int, default=0, help="torch threads; 0 = torch's default")
    parser.add_argument("--markdown", action="store_true", help="print a header with machine and date")
    return parser.parse_args(argv)


def make_setup(args: argparse.Namespace) -> Setup:
    cpu = {"width": 128, "depth": 4, "heads": 4, "context": 256, "vocab": 2048, "batch": 8}
    gpu = {"width": 768, "depth": 12, "heads": 12, "context": 1024, "vocab": 50304, "batch": 16}
    base = gpu if args.cuda else cpu
    fields = {name: getattr(args, name) or value for name, value in base.items()}
    return Setup(**fields, device="cuda" if args.cuda else "cpu", bf16=args.cuda)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.cuda:
        if not torch.cuda.is_available():
            print("bench_lm: no CUDA device is visible; nothing measured (exit 3)")
            return EXIT_NO_CUDA
        name = torch.cuda.get_device_name()
        if not args.peak_tflops:
            args.peak_tflops = next((v for k, v in PEAK_TFLOPS.items() if k in name), 0.0)
        machine = f"{name}, peak {args.peak_tflops:g} TFLOP/s dense bf16"
    else:
        machine = f"CPU {platform.machine()}, {torch.get_num_threads()} threads"
    setup = make_setup(args)
    head = f"bench_lm: {setup.describe()}; {machine}; torch {torch.__version__}"
    if args.markdown:
        head = f"{head}; {datetime.date.today().isoformat()}"
    print(head)
    print()
    lines, ratio, cpu_ratio = bench_models(setup, args)
    print("\n".join(lines))
    verdict = "meets" if ratio >= 0.95 else "MISSES"
    print(
        f"ours / plain (median of per-repeat wall-clock ratios) = {ratio:.3f} -> {verdict} the >= 0.95x "
        f"target (CPU-time ratio {cpu_ratio:.3f})"
    )
    print()
    lines, pack = bench_packing(setup, args)
    print("\n".join(lines))
    verdict = "meets" if pack >= 1.3 else "MISSES"
    print(f"packed / padded useful tokens/s = {pack:.2f} -> {verdict} the >= 1.3x target")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
