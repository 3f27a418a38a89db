"""``tokenloom compare-lm --tokenizers a,b --corpus TRAIN --eval HELDOUT --out DIR``: what a tokenizer does to a model.

One model per tokenizer, all of one configuration (the embedding follows the vocabulary), trained on the
same budget from the same seed, judged in bits per byte per language beside the tokenizers' fertility,
premium and STRR on the same held-out text (:func:`tokenloom.lm.compare.compare_tokenizers`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tokenloom.lm.run_config import LmTrainConfig

from tokenloom._commands._args import positive
from tokenloom._commands.eval_lm import add_eval_arguments, eval_config

NAME = "compare-lm"
HELP = "train one small model per tokenizer on a matched budget and compare bits per byte per language"


def _tokenizers(text: str) -> dict[str, str]:
    """``"a,b"`` or ``"name=path,..."`` -> ``{name: path}`` (a path's name is its file or folder name)."""
    out: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, path = item.partition("=")
        name, path = (name, path) if sep else (Path(item).stem or item, item)
        if name in out:
            raise argparse.ArgumentTypeError(f"tokenizer name {name!r} given twice; name them: NAME=PATH,...")
        out[name] = path
    if not out:
        raise argparse.ArgumentTypeError(f"--tokenizers takes PATH,PATH,... or NAME=PATH,..., got {text!r}")
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tokenizers", required=True, type=_tokenizers, metavar="A,B,...",
        help="tokenizer folders or files, comma-separated (NAME=PATH to name one)",
    )  # fmt: skip
    parser.add_argument(
        "--corpus", required=True, nargs="+", metavar="TRAIN", help="training text (any corpus)"
    )
    parser.add_argument(
        "--eval", required=True, nargs="+", metavar="HELDOUT", help="held-out text, by language"
    )
    parser.add_argument("--out", required=True, type=Path, help="output folder (shards/, runs/, the report)")
    parser.add_argument(
        "--budget", choices=("bytes", "flops"), default="bytes",
        help="what every model gets the same amount of: bytes of training text or training FLOPs",
    )  # fmt: skip
    parser.add_argument(
        "--amount",
        required=True,
        type=float,
        help="the budget: bytes of text (2e6) or FLOPs (1e12) per model",
    )
    parser.add_argument("--pivot", default="eng_Latn", help="language premiums are measured against")
    parser.add_argument("--workers", type=int, default=1, help="processes tokenizing each training corpus")
    m = parser.add_argument_group("the model every tokenizer gets (the embedding follows the vocabulary)")
    m.add_argument("--width", type=positive, default=64, help="model width d")
    m.add_argument("--depth", type=positive, default=2, help="number of blocks L")
    m.add_argument("--heads", type=positive, default=2, help="attention heads H")
    m.add_argument("--seq-len", type=positive, default=128, help="tokens per row (and the model's context)")
    m.add_argument("--batch-size", type=positive, default=16, help="rows per optimizer step")
    m.add_argument("--lr", type=float, default=3e-3, help="peak learning rate")
    m.add_argument("--seed", type=int, default=0, help="seed of every model's init and row order")
    add_eval_arguments(parser, max_docs=False)


def _recipe(args: argparse.Namespace) -> LmTrainConfig:
    """The training recipe every model shares; shards, out, vocabulary and budget are set per tokenizer."""
    from tokenloom.encoder.config import EncoderConfig, LanguageModelConfig
    from tokenloom.lm.run_config import LmTrainConfig

    blocks = EncoderConfig(width=args.width, depth=args.depth, heads=args.heads, causal=True)
    model = LanguageModelConfig(vocab_size=1, encoder=blocks, context=args.seq_len)
    return LmTrainConfig(
        shards="", out=str(args.out), model=model, seq_len=args.seq_len, batch_size=args.batch_size,
        lr=args.lr, seed=args.seed,
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from tokenloom.lm.compare import CompareConfig, compare_tokenizers
    from tokenloom.lm.compare_writers import compare_text, correlation_text

    config = CompareConfig(
        train=_recipe(args), budget=args.budget, amount=args.amount, eval=eval_config(args),
        pivot=args.pivot, n_boot=args.n_boot, workers=args.workers,
    )  # fmt: skip
    train = args.corpus[0] if len(args.corpus) == 1 else args.corpus
    held = args.eval[0] if len(args.eval) == 1 else args.eval
    result = compare_tokenizers(args.tokenizers, train, held, args.out, config, quiet=args.quiet)
    print(compare_text(result.table))
    print(correlation_text(result.correlations))
    print(f"wrote {', '.join(str(p) for p in result.written.values())}")
    return 0
