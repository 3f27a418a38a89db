"""``tokenloom tokenize CORPUS --tokenizer T --out DIR``: a corpus into token shards (datatrove's layout)."""

from __future__ import annotations

import argparse
from pathlib import Path

from tokenloom._tables import plural

NAME = "tokenize"
HELP = "tokenize a corpus into token shards for training (.ds/.ds.index + sidecar + manifest.json)"


def _special(value: str) -> int | str | None:
    if value.lower() == "none":
        return None
    return int(value) if value.lstrip("-").isdigit() else value


def _sample(value: str) -> tuple[str, float]:
    lang, sep, rate = value.partition("=")
    try:
        return lang, float(rate) if sep else float("nan")
    except ValueError:
        raise argparse.ArgumentTypeError(f"--sample takes lang=rate (e.g. fra=0.5), got {value!r}") from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "corpus", nargs="+", metavar="CORPUS", help="files, folders or globs the reports read"
    )
    parser.add_argument("--tokenizer", required=True, type=Path, help="tokenizer folder or file")
    parser.add_argument("--out", required=True, type=Path, help="output folder (reused with --resume)")
    parser.add_argument(
        "--eos",
        type=_special,
        default="auto",
        help="EOS id or token after each document (auto: the tokenizer's; none)",
    )
    parser.add_argument(
        "--bos", type=_special, default=None, help="BOS id or token before each document (default none)"
    )
    parser.add_argument(
        "--max-tokens-per-shard",
        type=int,
        default=2**27,
        metavar="N",
        help="tokens per shard at most (default 2^27)",
    )
    parser.add_argument(
        "--max-doc-tokens",
        type=int,
        default=None,
        metavar="N",
        help="documents longer than N tokens are split or dropped (--long-docs)",
    )
    parser.add_argument(
        "--long-docs",
        choices=("split", "drop"),
        default="split",
        help="what happens to a document over --max-doc-tokens (default split)",
    )
    parser.add_argument(
        "--no-shuffle",
        action="store_true",
        help="keep the corpus order (default: shuffle across the whole corpus)",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the shuffle, the sampling and the validation split"
    )
    parser.add_argument(
        "--sample",
        type=_sample,
        action="append",
        default=[],
        metavar="LANG=RATE",
        help="keep a share (< 1) or repeat (> 1) one language's documents; repeatable",
    )
    parser.add_argument(
        "--validation",
        type=float,
        default=0.0,
        metavar="SHARE",
        help="share of documents held out as the validation split (default 0)",
    )
    parser.add_argument(
        "--errors",
        choices=("skip", "strict"),
        default="skip",
        help="a bad document: skip it as a reject (default) or stop",
    )
    parser.add_argument("--workers", type=int, default=1, help="processes tokenizing tasks (default 1)")
    parser.add_argument(
        "--distributor",
        choices=("local", "ray"),
        default="local",
        help="ray: tasks on a Ray cluster (RAY_ADDRESS or a local one); same shards",
    )
    parser.add_argument("--resume", action="store_true", help="keep the tasks an interrupted run finished")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from tokenloom.tokens import TokenizeConfig, tokenize_corpus

    config = TokenizeConfig(
        eos=args.eos, bos=args.bos, max_tokens_per_shard=args.max_tokens_per_shard,
        max_doc_tokens=args.max_doc_tokens, long_docs=args.long_docs, shuffle=not args.no_shuffle,
        seed=args.seed, sample=tuple(args.sample), validation=args.validation, errors=args.errors,
    )  # fmt: skip
    corpus = args.corpus[0] if len(args.corpus) == 1 else args.corpus
    summary = tokenize_corpus(
        corpus, args.tokenizer, args.out, config=config, workers=args.workers,
        distributor=args.distributor, resume=args.resume, quiet=args.quiet,
    )  # fmt: skip
    print(
        f"tokenized {plural(summary.documents, 'document')} ({plural(summary.tokens, 'token')}) into "
        f"{plural(summary.shards, 'shard')} in {summary.out}; rejected {summary.rejected} of "
        f"{summary.input_documents} input documents; {summary.resumed_tasks} of {summary.tasks} tasks resumed"
    )
    return 0
