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

from tokenloom._commands._lm_recipe import add_recipe_arguments, recipe_from_args
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
    add_recipe_arguments(
        parser, model_title="the model every tokenizer gets (the embedding follows the vocabulary)"
    )
    add_eval_arguments(parser, max_docs=False)


def _recipe(args: argparse.Namespace) -> LmTrainConfig:
    """The training recipe every model shares; shards, vocabulary and budget are set per tokenizer."""
    return recipe_from_args(args, shards="", out=str(args.out), vocab_size=1)


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
