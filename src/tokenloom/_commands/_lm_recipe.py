"""The training recipe of a language model as command-line options, shared by ``train-lm`` and ``compare-lm``.

:func:`add_recipe_arguments` adds the model's blocks and the optimization (each flag defined here only);
:func:`recipe_from_args` turns them into an :class:`~tokenloom.lm.run_config.LmTrainConfig`, given what a
command sets itself (shards, run folder, vocabulary, context, budget, running options).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, Literal

from tokenloom._commands._args import positive

if TYPE_CHECKING:
    from tokenloom.lm.run_config import LmTrainConfig

__all__ = ["add_recipe_arguments", "recipe_from_args"]


def add_recipe_arguments(
    parser: argparse.ArgumentParser, *, model_title: str = "model"
) -> argparse._ArgumentGroup:
    """Add the model and optimization options; returns the model group (a command adds its own there)."""
    m = parser.add_argument_group(model_title)
    m.add_argument("--width", type=positive, default=64, help="model width d (default 64)")
    m.add_argument("--depth", type=positive, default=2, help="number of blocks L (default 2)")
    m.add_argument("--heads", type=positive, default=2, help="attention heads H (default 2)")
    m.add_argument("--mlp", choices=("gelu", "swiglu"), default="gelu", help="MLP kind")
    m.add_argument("--position", choices=("learned", "sinusoidal", "rope", "none"), default="learned")
    m.add_argument(
        "--attn-impl", choices=("auto", "reference", "sdpa", "tiled", "triton"), default="auto",
        help="attention path",
    )  # fmt: skip
    m.add_argument("--untied", action="store_true", help="an output head of its own (default: tied)")
    o = parser.add_argument_group("optimization")
    o.add_argument("--seq-len", type=positive, default=128, help="tokens per row (default 128)")
    o.add_argument("--batch-size", type=positive, default=16, help="global rows per step (default 16)")
    o.add_argument("--lr", type=float, default=3e-3, help="peak learning rate (default 3e-3)")
    o.add_argument("--min-lr-ratio", type=float, default=0.1, help="cosine floor / lr (default 0.1)")
    o.add_argument("--warmup-steps", type=int, default=0, help="linear warmup steps (default 0)")
    o.add_argument("--weight-decay", type=float, default=0.1, help="AdamW decoupled decay (default 0.1)")
    o.add_argument("--clip-grad", type=float, default=1.0, help="max gradient norm; 0 turns clipping off")
    o.add_argument(
        "--seed", type=int, default=0, help="seed of the model's init and the row order (default 0)"
    )
    o.add_argument("--windows", action="store_true", help="fixed windows across documents, not packed rows")
    o.add_argument("--compile", action="store_true", help="torch.compile the model")
    o.add_argument("--no-autocast", action="store_true", help="no bf16 autocast on CUDA")
    return m


def recipe_from_args(
    args: argparse.Namespace,
    *,
    shards: str,
    out: str,
    vocab_size: int,
    context: int | None = None,
    budget: int = 1,
    unit: Literal["tokens", "bytes"] = "tokens",
    **running: Any,
) -> LmTrainConfig:
    """The :class:`LmTrainConfig` of :func:`add_recipe_arguments`'s options; ``context`` defaults to the
    row length; ``running``: further fields (log_every, checkpoint_every, device)."""
    from tokenloom.encoder.config import EncoderConfig, LanguageModelConfig
    from tokenloom.lm.run_config import LmTrainConfig

    blocks = EncoderConfig(
        width=args.width, depth=args.depth, heads=args.heads, mlp=args.mlp, position=args.position,
        attn_impl=args.attn_impl, causal=True,
    )  # fmt: skip
    model = LanguageModelConfig(
        vocab_size=vocab_size, encoder=blocks, context=context or args.seq_len, tie_embeddings=not args.untied
    )
    return LmTrainConfig(
        shards=shards, out=out, model=model, seq_len=args.seq_len, batch_size=args.batch_size, budget=budget,
        budget_unit=unit, lr=args.lr, min_lr_ratio=args.min_lr_ratio, warmup_steps=args.warmup_steps,
        weight_decay=args.weight_decay, clip_grad=args.clip_grad or None, seed=args.seed,
        packed=not args.windows, compile=args.compile, autocast=not args.no_autocast, **running,
    )  # fmt: skip
