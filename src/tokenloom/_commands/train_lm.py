"""``tokenloom train-lm``: train a language model on token shards (also under ``torchrun``)."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any, Literal

from tokenloom._commands._args import positive

NAME = "train-lm"
HELP = "train a causal language model on token shards (single process or torchrun DDP)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("shards", type=Path, metavar="SHARDS", help="folder written by `tokenloom tokenize`")
    parser.add_argument("--out", type=Path, required=True, help="run folder (checkpoint, log, run.json)")
    budget = parser.add_mutually_exclusive_group(required=True)
    budget.add_argument("--tokens", type=positive, help="train on this many tokens")
    budget.add_argument(
        "--bytes", type=positive, help="train on this many UTF-8 bytes of text (the same for every tokenizer)"
    )
    parser.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint.pt")
    parser.add_argument(
        "--allow-resize", action="store_true",
        help="with --resume: accept a checkpoint written with another --batch-size or process count "
        "(continues from about the same place, not exactly)",
    )  # fmt: skip
    m = parser.add_argument_group("model")
    m.add_argument("--width", type=positive, default=64, help="model width d (default 64)")
    m.add_argument("--depth", type=positive, default=2, help="number of blocks L (default 2)")
    m.add_argument("--heads", type=positive, default=2, help="attention heads H (default 2)")
    m.add_argument("--mlp", choices=("gelu", "swiglu"), default="gelu", help="MLP kind")
    m.add_argument("--position", choices=("learned", "sinusoidal", "rope", "none"), default="learned")
    m.add_argument(
        "--attn-impl", choices=("auto", "reference", "sdpa", "tiled", "triton"), default="auto",
        help="attention path",
    )  # fmt: skip
    m.add_argument("--context", type=positive, help="model context (default: --seq-len)")
    m.add_argument("--vocab-size", type=positive, help="output vocabulary (default: the shards' tokenizer's)")
    m.add_argument("--untied", action="store_true", help="an output head of its own (default: tied)")
    o = parser.add_argument_group("optimization")
    o.add_argument("--seq-len", type=positive, default=128, help="tokens per row (default 128)")
    o.add_argument("--batch-size", type=positive, default=16, help="global rows per step (default 16)")
    o.add_argument("--lr", type=float, default=3e-3, help="peak learning rate (default 3e-3)")
    o.add_argument("--min-lr-ratio", type=float, default=0.1, help="cosine floor / lr (default 0.1)")
    o.add_argument("--warmup-steps", type=int, default=0, help="linear warmup steps (default 0)")
    o.add_argument("--weight-decay", type=float, default=0.1, help="AdamW decoupled decay (default 0.1)")
    o.add_argument("--clip-grad", type=float, default=1.0, help="max gradient norm; 0 turns clipping off")
    o.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    o.add_argument("--windows", action="store_true", help="fixed windows across documents, not packed rows")
    o.add_argument("--compile", action="store_true", help="torch.compile the model")
    o.add_argument("--no-autocast", action="store_true", help="no bf16 autocast on CUDA")
    r = parser.add_argument_group("running")
    r.add_argument("--log-every", type=positive, default=10, help="steps per progress line (10)")
    r.add_argument(
        "--checkpoint-every", type=int, default=0, help="steps between checkpoints (0: at the end)"
    )
    r.add_argument("--device", default="auto", help="auto (cuda if present), cpu, cuda, cuda:1 ...")
    e = parser.add_argument_group("held-out bits per byte at the end (as tokenloom eval-lm)")
    e.add_argument("--eval", nargs="+", metavar="HELDOUT", help="held-out text, scored into OUT/eval")
    e.add_argument("--tokenizer", type=Path, help="with --eval: the tokenizer that wrote SHARDS (checked)")


def _vocab(shards: Path) -> int:
    from tokenloom.tokens.manifest import read_manifest

    return int(read_manifest(shards)["tokenizer"]["vocab_size"])


def config_from_args(args: argparse.Namespace) -> Any:
    from tokenloom.encoder.config import EncoderConfig, LanguageModelConfig
    from tokenloom.lm.run_config import LmTrainConfig

    blocks = EncoderConfig(
        width=args.width, depth=args.depth, heads=args.heads, mlp=args.mlp, position=args.position,
        attn_impl=args.attn_impl, causal=True,
    )  # fmt: skip
    model = LanguageModelConfig(
        vocab_size=args.vocab_size or _vocab(args.shards), encoder=blocks,
        context=args.context or args.seq_len, tie_embeddings=not args.untied,
    )  # fmt: skip
    unit: Literal["tokens", "bytes"] = "tokens" if args.tokens is not None else "bytes"
    budget = args.tokens if args.tokens is not None else args.bytes
    return LmTrainConfig(
        shards=str(args.shards), out=str(args.out), model=model, seq_len=args.seq_len,
        batch_size=args.batch_size, budget=budget, budget_unit=unit, lr=args.lr,
        min_lr_ratio=args.min_lr_ratio, warmup_steps=args.warmup_steps, weight_decay=args.weight_decay,
        clip_grad=args.clip_grad or None, seed=args.seed, packed=not args.windows, compile=args.compile,
        autocast=not args.no_autocast, log_every=args.log_every, checkpoint_every=args.checkpoint_every,
        device=args.device,
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from tokenloom.lm.train import RUN_FILE, train_lm

    out = train_lm(
        config_from_args(args), resume=args.resume, allow_resize=args.allow_resize, quiet=args.quiet
    )
    if not args.quiet and os.environ.get("RANK", "0") == "0":  # under torchrun only rank 0 reports
        info = json.loads((out / RUN_FILE).read_text(encoding="utf-8"))
        print(
            f"done: {info['steps']} steps, {info['tokens_seen']:,} tokens ({info['bytes_seen']:,} bytes) in "
            f"{info['wall_seconds']:.1f} s, {info['training_flops']:.3g} training FLOPs; final loss "
            f"{info['final_loss']:.4f}; run {out / RUN_FILE}"
        )
    if args.eval and os.environ.get("RANK", "0") == "0":
        from tokenloom.lm.runs import evaluate_and_write
        from tokenloom.lm.writers import bpb_table

        held = args.eval[0] if len(args.eval) == 1 else args.eval
        df, _ = evaluate_and_write(out, held, tokenizer=args.tokenizer)
        print(bpb_table(df))
    return 0
