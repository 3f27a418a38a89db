"""``tokenloom costs train``: the memory one training step holds, part by part.

Parameters, gradients, optimizer state and activations (attention scores only when the attention path
materializes them), from :func:`tokenloom.costs.training_memory`; printed as a table with each part's share.
"""

from __future__ import annotations

import argparse

from tokenloom._commands._args import parse_length, refuse_ignored
from tokenloom._commands._args import positive as _positive
from tokenloom._commands._costs_args import (
    add_dtype,
    add_model,
    add_units,
    add_vit,
    memory_units,
    model_config,
)

__all__ = ["TRAIN_HELP", "add_train", "run_train"]

TRAIN_HELP = (
    "training-step memory: parameters, gradients, optimizer state, activations (scores only if materialized)"
)


def add_train(p: argparse.ArgumentParser) -> None:
    add_model(p)
    p.add_argument("--seq-len", type=parse_length, help="tokens N (default: the ViT tokens of --image-size)")
    p.add_argument("--image-size", type=_positive, help="image side for N (default 224; not with --seq-len)")
    p.add_argument("--patch-size", type=_positive, help="patch side for N (default 16; not with --seq-len)")
    add_vit(p)
    p.add_argument("--optimizer", choices=("adamw", "adam", "momentum", "sgd"), default="adamw",
                   help="optimizer state: adamw/adam 2 moments, momentum 1, sgd none (default adamw)")  # fmt: skip
    p.add_argument("--attention", choices=("flash", "materialized"), default="flash",
                   help="flash: no N² buffers kept (tiled, SDPA, Triton); materialized: the reference path")  # fmt: skip
    p.add_argument(
        "--checkpointing", action="store_true", help="recompute each block's activations in backward"
    )
    add_dtype(p, "fp32")
    add_units(p)


def run_train(args: argparse.Namespace) -> int:
    from tokenloom._tables import format_table
    from tokenloom.costs import training_memory, vit_tokens
    from tokenloom.costs.tables import describe, format_memory

    cfg, name = model_config(args)
    if args.seq_len is not None:
        refuse_ignored(args, ["--image-size", "--patch-size", "--no-class-token", "--pad"], "with --seq-len")
        n, why = args.seq_len, ""
    else:
        size, patch = args.image_size or 224, args.patch_size or 16
        n = vit_tokens(size, patch, class_token=not args.no_class_token, pad=args.pad)
        why = f" ({size}×{size} image, patch {patch})"
    mem = training_memory(
        cfg, args.batch, n, args.dtype, optimizer=args.optimizer, attention=args.attention,
        checkpointing=args.checkpointing,
    )  # fmt: skip
    print(describe(cfg, name))
    print(
        f"one training step: batch B={args.batch}, tokens N={n}{why}, {args.dtype}, {args.optimizer}, "
        f"attention {args.attention}" + (", activation checkpointing" if args.checkpointing else "")
    )
    units = memory_units(args)
    rows = [
        [what, format_memory(n_bytes, units), f"{n_bytes / mem.total:.1%}"] for what, n_bytes in mem.rows()
    ]
    print(format_table(["what", "memory", "share"], rows, align="lrr"))
    return 0
