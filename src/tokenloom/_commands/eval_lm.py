"""``tokenloom eval-lm RUN --corpus HELDOUT --out DIR``: a trained language model's bits per byte per language."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tokenloom.lm import LmEvalConfig

NAME = "eval-lm"
HELP = "bits per byte of a trained language model on held-out text, per language and script"


def add_eval_arguments(parser: argparse.ArgumentParser, *, max_docs: bool = True) -> None:
    """The scoring options (one home: :class:`tokenloom.lm.LmEvalConfig`), shared with ``compare-lm``
    (which scores every document: ``max_docs=False``)."""
    parser.add_argument(
        "--stride",
        type=int,
        default=None,
        help="tokens scored per window beyond the context (default: context/2)",
    )
    parser.add_argument(
        "--score-eos",
        action="store_true",
        help="add -log2 p(EOS | document) to each document's bits (default: the text's bits only)",
    )
    if max_docs:
        parser.add_argument(
            "--max-docs", type=int, default=None, help="score the first N documents of each language"
        )
    parser.add_argument(
        "--eval-batch-size", type=int, default=32, help="windows per forward pass when scoring"
    )
    parser.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples per interval (0: none)")
    parser.add_argument("--boot-seed", type=int, default=0, help="seed of the bootstrap draws")


def eval_config(args: argparse.Namespace, *, max_docs: int | None = None) -> LmEvalConfig:
    """The scoring options as a :class:`~tokenloom.lm.LmEvalConfig`."""
    from tokenloom.lm import LmEvalConfig

    return LmEvalConfig(
        stride=args.stride, score_eos=args.score_eos, batch_size=args.eval_batch_size,
        max_docs=max_docs, n_boot=args.n_boot, seed=args.boot_seed,
    )  # fmt: skip


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", type=Path, metavar="RUN", help="a run folder written by tokenloom train-lm")
    parser.add_argument(
        "--corpus", required=True, nargs="+", metavar="HELDOUT",
        help="held-out text: a FLORES-style folder (<lang>_<Script>.txt), .jsonl/.csv/.parquet, globs",
    )  # fmt: skip
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: RUN/eval)")
    parser.add_argument(
        "--tokenizer", type=Path, default=None,
        help="the tokenizer that wrote the run's token shards (default: RUN/tokenizer; checked either way)",
    )  # fmt: skip
    add_eval_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from tokenloom.lm.runs import evaluate_and_write
    from tokenloom.lm.writers import bpb_table, describe_scoring

    config = eval_config(args, max_docs=args.max_docs)
    corpus = args.corpus[0] if len(args.corpus) == 1 else args.corpus
    df, written = evaluate_and_write(args.run, corpus, args.out, config, tokenizer=args.tokenizer)
    print(bpb_table(df))
    print(describe_scoring(df.attrs))
    print(f"wrote {', '.join(str(p) for p in written.values())}")
    return 0
