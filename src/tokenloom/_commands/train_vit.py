"""``tokenloom train-vit``: train a ViT image classifier on preprocessed shards (also under ``torchrun``)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from tokenloom._commands._args import positive

NAME = "train-vit"
HELP = "train a ViT classifier on preprocessed image shards (single process or torchrun DDP)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("data", type=Path, metavar="SHARDS", help="folder written by `images preprocess`")
    parser.add_argument("--out", type=Path, required=True, help="log, plot and checkpoint folder")
    parser.add_argument(
        "--eval-data", type=Path, help="preprocessed held-out folder (default: --val-fraction)"
    )
    parser.add_argument("--val-fraction", type=float, default=0.1, help="held-out share of SHARDS (0.1)")
    parser.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint.pt")
    parser.add_argument(
        "--allow-resize", action="store_true",
        help="with --resume: accept a checkpoint written with another --batch-size or process count "
        "(continues from the same epoch, not exactly)",
    )  # fmt: skip
    m = parser.add_argument_group("model (a preset, optionally overridden)")
    m.add_argument("--preset", default="vit-ti16", help="encoder preset (default vit-ti16)")
    m.add_argument("--width", type=positive, help="model width d")
    m.add_argument("--depth", type=positive, help="number of blocks L")
    m.add_argument("--heads", type=positive, help="attention heads H")
    m.add_argument("--mlp", choices=("gelu", "swiglu"), help="MLP kind")
    m.add_argument(
        "--attn-impl", choices=("auto", "reference", "sdpa", "tiled", "triton"), help="attention path"
    )
    m.add_argument("--image-size", type=positive, default=224, help="crop side (default 224)")
    m.add_argument("--patch-size", type=positive, default=16, help="patch side (default 16)")
    m.add_argument("--pool", choices=("token", "avg"), default="token", help="class token or mean pooling")
    o = parser.add_argument_group("optimization")
    o.add_argument("--epochs", type=positive, default=10, help="epochs (default 10)")
    o.add_argument("--max-steps", type=positive, help="stop after this many steps")
    o.add_argument("--batch-size", type=positive, default=64, help="global batch (default 64)")
    o.add_argument("--lr", type=float, default=1e-3, help="peak learning rate (default 1e-3)")
    o.add_argument("--min-lr-ratio", type=float, default=0.01, help="cosine floor / lr (default 0.01)")
    o.add_argument("--warmup-steps", type=int, default=0, help="linear warmup steps (default 0)")
    o.add_argument("--weight-decay", type=float, default=0.05, help="AdamW decoupled decay (default 0.05)")
    o.add_argument("--label-smoothing", type=float, default=0.1, help="default 0.1")
    o.add_argument("--mixup", type=float, default=0.0, help="mixup Beta alpha (default 0: off)")
    o.add_argument("--cutmix", type=float, default=0.0, help="cutmix Beta alpha (default 0: off)")
    o.add_argument("--clip-grad", type=float, default=1.0, help="max gradient norm; 0 turns clipping off")
    o.add_argument(
        "--auto-augment", choices=("none", "randaugment", "trivialaugment"), default="none",
        help="extra augmentation after RandomResizedCrop + flip",
    )  # fmt: skip
    o.add_argument("--no-amp", action="store_true", help="no bf16 autocast on CUDA")
    o.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    r = parser.add_argument_group("running")
    r.add_argument("--workers", type=int, default=2, help="loader processes per training process (2)")
    r.add_argument(
        "--normalize-on-device", action="store_true",
        help="loaders yield uint8 batches, normalized on the training device (for GPUs; same results)",
    )  # fmt: skip
    r.add_argument("--log-every", type=positive, default=10, help="steps per progress line (10)")
    r.add_argument(
        "--checkpoint-every", type=int, default=0, help="steps between checkpoints (0: at the end)"
    )
    r.add_argument("--device", default="auto", help="auto (cuda if present), cpu, cuda, cuda:1 ...")


def config_from_args(args: argparse.Namespace) -> Any:
    from tokenloom.encoder.config import EncoderConfig
    from tokenloom.vision.train import TrainConfig

    overrides = {
        k: getattr(args, k)
        for k in ("width", "depth", "heads", "mlp", "attn_impl")
        if getattr(args, k) is not None
    }
    return TrainConfig(
        encoder=EncoderConfig.preset(args.preset, **overrides),
        image_size=args.image_size, patch_size=args.patch_size, pool=args.pool, epochs=args.epochs,
        max_steps=args.max_steps, batch_size=args.batch_size, lr=args.lr, min_lr_ratio=args.min_lr_ratio,
        warmup_steps=args.warmup_steps, weight_decay=args.weight_decay, label_smoothing=args.label_smoothing,
        mixup=args.mixup, cutmix=args.cutmix, clip_grad=args.clip_grad or None, auto_augment=args.auto_augment,
        val_fraction=args.val_fraction, seed=args.seed, workers=args.workers, log_every=args.log_every,
        checkpoint_every=args.checkpoint_every, amp=not args.no_amp, device=args.device,
        normalize_on_device=args.normalize_on_device,
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from tokenloom.vision.train import train_vit

    result = train_vit(
        args.data, args.out, config=config_from_args(args), eval_data=args.eval_data, resume=args.resume,
        allow_resize=args.allow_resize, quiet=args.quiet,
    )  # fmt: skip
    if not args.quiet and os.environ.get("RANK", "0") == "0":  # under torchrun only rank 0 reports
        print(
            f"done: {result.steps} steps, {result.images_per_s:.1f} images/s, data wait "
            f"{result.data_wait:.0%}; held-out loss {result.eval_loss:.4f}, top-1 {result.eval_top1:.2%}; "
            f"log {Path(result.out) / 'train_log.csv'}"
        )
    return 0
