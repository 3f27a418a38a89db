"""``tokenloom sweep``: train every algorithm × vocabulary size, evaluate them together, price each size."""

from __future__ import annotations

import argparse
from pathlib import Path

from tokenloom._commands._args import add_errors_argument, argument_value
from tokenloom._commands.train import parse_bytes

NAME = "sweep"
HELP = "train tokenizers over algorithms × vocabulary sizes and compare fertility, premiums and costs"


def _vocab_sizes(text: str) -> tuple[int, ...]:
    """``--vocab-sizes``: :func:`tokenloom.fertility.sweep_types.parse_vocab_sizes` (imported on use, so that
    ``--help`` stays cheap), its error argparse's one-line error."""
    from tokenloom.fertility.sweep_types import parse_vocab_sizes

    return argument_value(parse_vocab_sizes, text)


def _names(text: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in text.split(",") if x.strip())


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("corpus", nargs="+", metavar="CORPUS", help="training text: files, folders, globs")
    parser.add_argument(
        "--algorithms",
        type=_names,
        default=("bpe", "unigram"),
        help="comma-separated from bpe, unigram, bytelevel-bpe, parity-bpe (trained per size; needs --dev) "
        "(default: bpe,unigram)",
    )
    parser.add_argument(
        "--vocab-sizes",
        type=_vocab_sizes,
        default=(8000, 16000, 32000, 64000),
        help="comma-separated, k = 1000 (default: 8k,16k,32k,64k)",
    )
    parser.add_argument(
        "--eval", action="append", required=True, metavar="PATH", help="evaluation corpus (repeatable)"
    )
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="folder for every sweep file")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --out folder")
    parser.add_argument(
        "--engine",
        choices=("auto", "hf", "sentencepiece"),
        default="auto",
        help="auto: bpe and bytelevel-bpe on the tokenizers engine (trained once, smaller sizes cut from "
        "it), unigram on sentencepiece (default: auto)",
    )
    parser.add_argument(
        "--no-shortcut",
        action="store_true",
        help="train every (byte-level) BPE size separately instead of cutting",
    )
    parser.add_argument(
        "--pretokenizer",
        default=None,
        metavar="NAME|REGEX",
        help="bytelevel-bpe: split pattern gpt2, cl100k, llama3 (= cl100k) or o200k, or a regex; default: o200k",
    )
    parser.add_argument("--pivot", default="eng_Latn", help="language premiums are measured against")
    parser.add_argument("--preset", default="vit-b16", help="encoder preset whose costs are reported")
    parser.add_argument(
        "--context", type=int, default=4096, help="reference context in tokens (default: 4096)"
    )
    parser.add_argument(
        "--max-bytes",
        type=parse_bytes,
        default=None,
        metavar="SIZE",
        help="deterministic sample of the training corpus drawn across all of it, e.g. 2GB or 1000000",
    )
    parser.add_argument(
        "--language-sampling",
        type=float,
        default=1.0,
        metavar="ALPHA",
        help="each language's share of the training bytes ~ n_l**ALPHA (1: as it is, 0: uniform; default: 1)",
    )
    parser.add_argument(
        "--dev",
        default=None,
        metavar="CORPUS",
        help="parity-bpe: a parallel development set of its languages",
    )
    parser.add_argument(
        "--allow-smaller-vocab",
        action="store_true",
        help="keep a tokenizer the corpus could not fill to its size, named after its real size; by default "
        "such a size is reported as not trained",
    )
    add_errors_argument(parser)
    parser.add_argument(
        "--strict-export",
        action="store_true",
        help="do not write a tokenizer whose export (tokenizer.json beside a sentencepiece model, tiktoken) "
        "differs from it; by default it is written without that export, with a warning",
    )


def run(args: argparse.Namespace) -> int:
    from tokenloom._tables import set_aside
    from tokenloom.errors import ConfigError
    from tokenloom.fertility.summary import format_summary
    from tokenloom.fertility.sweep import SweepConfig, vocab_sweep, write_sweep
    from tokenloom.fertility.sweep_writers import format_sweep

    if args.out.exists() and not args.overwrite:  # checked before hours of training, not after
        raise ConfigError(f"--out {str(args.out)!r} already exists; pass --overwrite to replace it")
    config = SweepConfig(
        algorithms=args.algorithms,
        vocab_sizes=args.vocab_sizes,
        engine=args.engine,
        shortcut=not args.no_shortcut,
        pivot=args.pivot,
        preset=args.preset,
        context=args.context,
        max_bytes=args.max_bytes,
        language_sampling=args.language_sampling,
        dev=args.dev,
        pretokenizer=args.pretokenizer,
        allow_smaller_vocab=args.allow_smaller_vocab,
        errors=args.errors,
    )
    result = vocab_sweep(args.corpus, args.eval, config, quiet=args.quiet)
    write_sweep(result, args.out, overwrite=args.overwrite, strict=args.strict_export)
    print(format_sweep(result.table))
    for name, made, saved in zip(*(result.table[c] for c in ("tokenizer", "made", "saved")), strict=True):
        if made.startswith("not trained: "):
            print(f"note: {name} {made}")
        elif saved.startswith("no: "):
            print(f"note: {name} was evaluated but its files were not written ({saved[4:]})")
        elif saved != "yes":
            print(f"note: {name} saved {saved}")
    read = [tok.record.get("corpus", {}) for tok in result.tokenizers.values()]
    rejected = next((c for c in read if c.get("rejected")), None)  # every training read the same corpus
    if rejected:
        counted = set_aside(rejected["rejected"], rejected.get("rejected_files", 0))
        print(f"note: training corpus bad input: {counted} (--errors strict stops at the first)")
    print()
    print(format_summary(result.report))
    print(f"\nwrote sweep.csv, languages.csv, sweep.html, charts, report/ and tokenizers/ to {args.out}")
    return 0
