"""``tokenloom train-lm``: train a language model on token shards (also under ``torchrun``)."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any, Literal

from tokenloom._commands._args import positive
from tokenloom._commands._lm_recipe import add_recipe_arguments, recipe_from_args

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
    m = add_recipe_arguments(parser)
    m.add_argument("--context", type=positive, help="model context (default: --seq-len)")
    m.add_argument("--vocab-size", type=positive, help="output vocabulary (default: the shards' tokenizer's)")
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
    unit: Literal["tokens", "bytes"] = "tokens" if args.tokens is not None else "bytes"
    return recipe_from_args(
        args, shards=str(args.shards), out=str(args.out), vocab_size=args.vocab_size or _vocab(args.shards),
        context=args.context, budget=args.tokens if args.tokens is not None else args.bytes, unit=unit,
        log_every=args.log_every, checkpoint_every=args.checkpoint_every, device=args.device,
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
