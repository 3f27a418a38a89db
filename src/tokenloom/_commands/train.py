"""``tokenloom train``: train a BPE, unigram or byte-level BPE tokenizer on text files and save it, with a
one-screen summary.

The saved folder is the tokenizer's (``Tokenizer.save``) plus ``fertility.csv``: the fertility of the
held-out lines, measured here (``tokenloom.fertility``), since the tokenizer itself knows nothing of reports.
A byte-level BPE tokenizer is saved in tiktoken's format too (``tokenizer.tiktoken``) when it has one
(no ``--split-digits``, normalization none) and tiktoken is installed to verify it. An export that fails
its check is left out with a warning and a line in the summary (``--strict-export``: the command fails and
writes nothing).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tokenloom.text.tokenizer import SaveFormat, Tokenizer
    from tokenloom.text.train import TrainResult

NAME = "train"
HELP = (
    "train a BPE or unigram tokenizer (HF tokenizers or sentencepiece) with byte fallback, or byte-level BPE"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "inputs", nargs="+", metavar="INPUT", help="text files, folders (searched for .txt) or globs"
    )
    parser.add_argument(
        "--algorithm",
        choices=("bpe", "unigram", "bytelevel-bpe"),
        default="bpe",
        help="bytelevel-bpe: GPT-2 / tiktoken-style byte-level BPE (tokenizers engine); default: bpe",
    )
    parser.add_argument(
        "--engine",
        choices=("auto", "hf", "sentencepiece"),
        default="auto",
        help="auto = sentencepiece for bpe and unigram (fastest), hf for bytelevel-bpe; default: auto",
    )
    parser.add_argument(
        "--pretokenizer",
        default=None,
        metavar="NAME|REGEX",
        help="bytelevel-bpe: split pattern gpt2, cl100k, llama3 (= cl100k) or o200k, or a regex; default: o200k",
    )
    parser.add_argument(
        "--split-digits", action="store_true", help="bytelevel-bpe: every digit a token of its own"
    )
    parser.add_argument(
        "--vocab-size", type=int, default=8000, metavar="N", help="total vocabulary; default 8000"
    )
    parser.add_argument(
        "--no-byte-fallback",
        dest="byte_fallback",
        action="store_false",
        help="no <0x00>..<0xFF> pieces (unseen characters then become <unk>)",
    )
    parser.add_argument(
        "--normalization", choices=("none", "nfc", "nfkc"), default="none", help="default: none (lossless)"
    )
    parser.add_argument(
        "--special-token",
        dest="special_tokens",
        action="append",
        metavar="T",
        help="a special token (repeat; default: <unk> <s> </s> <pad>)",
    )
    parser.add_argument(
        "--max-bytes", type=int, default=None, metavar="N", help="train on a deterministic sample of N bytes"
    )
    parser.add_argument(
        "--seed",
        type=parse_seed,
        default=0,
        metavar="N",
        help="seed of sampling and training, 0 <= N < 2**32; default 0",
    )
    parser.add_argument(
        "--errors",
        choices=("strict", "replace"),
        default="strict",
        help="invalid UTF-8: strict stops with file/line/offset; replace substitutes U+FFFD and counts",
    )
    parser.add_argument(
        "--heldout",
        type=float,
        default=0.01,
        metavar="F",
        help="fraction of lines held out and reported in fertility.csv; default 0.01 (0 disables)",
    )
    parser.add_argument(
        "--out", type=Path, required=True, metavar="DIR", help="output folder (must not exist)"
    )
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --out folder")
    parser.add_argument(
        "--allow-smaller-vocab",
        action="store_true",
        help="keep the tokenizer when the corpus gives fewer pieces than --vocab-size (a warning; the folder "
        "records the real size); by default that is an error naming the size reached",
    )
    parser.add_argument(
        "--strict-export",
        action="store_true",
        help="fail, writing nothing, when an export (tokenizer.json beside a sentencepiece model, tiktoken) "
        "differs from the tokenizer; by default such an export is left out with a warning",
    )


def parse_seed(text: str) -> int:
    """``--seed``: an integer ``0 <= N < 2**32``, the range every engine accepts (argparse error otherwise)."""
    from tokenloom._fields import SEED_LIMIT

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"seed {text!r} is not an integer; give 0 <= N < 2**32") from None
    if not 0 <= value < SEED_LIMIT:
        raise argparse.ArgumentTypeError(
            f"seed {value} is out of range; give 0 <= N < 2**32 ({SEED_LIMIT}), the range every engine accepts"
        )
    return value


def save_with_fertility(
    result: TrainResult,
    out: Path,
    *,
    overwrite: bool = False,
    formats: tuple[SaveFormat, ...] = ("tokenizer.json",),
    strict: bool = False,
) -> Any:
    """Save the trained tokenizer to ``out`` (in ``formats``; ``strict``: see ``Tokenizer.save``) and, when
    lines were held out, their per-script and per-language fertility as ``out/fertility.csv`` (written
    atomically); returns that table (a DataFrame) or ``None``."""
    from tokenloom._atomic import atomic_write

    tok = result.tokenizer
    table = None
    if result.heldout:
        from tokenloom.fertility.report import fertility_by_source

        table = fertility_by_source(tok, result.heldout)
    tok.save(out, overwrite=overwrite, formats=formats, strict=strict)
    if table is not None:
        atomic_write(out / "fertility.csv", table.to_csv(index=False))
    return table


def run(args: argparse.Namespace) -> int:
    from tokenloom.errors import ConfigError
    from tokenloom.text.train import TrainerConfig, train_with_heldout

    if args.out.exists() and not args.overwrite:
        raise ConfigError(f"output folder {str(args.out)!r} already exists; pass --overwrite to replace it")
    specials = tuple(args.special_tokens) if args.special_tokens else TrainerConfig.special_tokens
    config = TrainerConfig(
        algorithm=args.algorithm,
        engine=args.engine,
        vocab_size=args.vocab_size,
        byte_fallback=args.byte_fallback,
        normalization=args.normalization,
        special_tokens=specials,
        seed=args.seed,
        max_bytes=args.max_bytes,
        heldout=args.heldout,
        errors=args.errors,
        pretokenizer=args.pretokenizer,
        split_digits=args.split_digits,
        allow_smaller_vocab=args.allow_smaller_vocab,
    )
    inputs = [str(p) for p in args.inputs]
    result = train_with_heldout(inputs, config, quiet=args.quiet)
    from tokenloom.text.tiktoken_export import can_export

    tiktoken = can_export(result.tokenizer)
    formats: tuple[SaveFormat, ...] = ("tokenizer.json", "tiktoken") if tiktoken else ("tokenizer.json",)
    table = save_with_fertility(
        result, args.out, overwrite=args.overwrite, formats=formats, strict=args.strict_export
    )
    _summary(result.tokenizer, args.out, inputs, table)
    return 0


def _sample_line(inputs: list[str]) -> str:
    from tokenloom.text.sources import iter_lines, resolve_inputs

    for path in resolve_inputs(inputs)[:5]:
        for line in iter_lines(path, errors="replace"):
            if line.strip():
                return line[:70]
    return "Hello, world!"


def _fertility_lines(table: Any, out: Path, top: int = 5) -> list[str]:
    """The top rows (highest tokens per word) of the held-out fertility table, per script."""
    if table is None or table.empty:
        return []
    from tokenloom._tables import format_table

    rows = table[table["slice_kind"] == "script"].sort_values("fertility", ascending=False).head(top)
    what = "script" if len(rows) == 1 else f"{len(rows)} scripts"
    lines = [f"  fertility      {out / 'fertility.csv'} (held-out lines; top {what} by tokens/word)"]
    header = ["script", "texts", "tokens/word", "chars/token", "byte fallback"]
    cells = [
        [r.slice, r.texts, f"{r.fertility:.2f}", f"{r.chars_per_token:.2f}", f"{r.byte_fallback_rate:.1%}"]
        for r in rows.itertuples()
    ]
    return lines + ["    " + line for line in format_table(header, cells).splitlines()]


def _asked(tok: Tokenizer) -> str:
    asked = tok.record.get("config", {}).get("vocab_size", tok.vocab_size)
    return f" of {asked} asked (all the corpus gave)" if asked != tok.vocab_size else ""


def _fallback(tok: Tokenizer) -> str:
    if tok.backend.byte_fallback == "byte_level":
        return "byte-level alphabet"
    return "yes" if tok.byte_fallback_ids else "no"


def _summary(tok: Tokenizer, out: Path, inputs: list[str], fertility: Any) -> None:
    from tokenloom._tables import plural

    record = tok.record
    corpus, training = record["corpus"], record["training"]
    sample = _sample_line(inputs)
    pieces = tok.tokens(sample)
    if tok.backend.byte_fallback == "byte_level":  # byte characters are unreadable: show each token's text
        pieces = [tok.decode([i]) for i in tok.encode(sample)]  # a partial character shows as U+FFFD
    algorithm = record.get("config", {}).get("algorithm", tok.algorithm)
    lines = [
        f"trained {algorithm} on {tok.engine} -> {out}",
        f"  vocab size     {tok.vocab_size}{_asked(tok)}  (byte fallback: {_fallback(tok)})",
        f"  corpus         {plural(corpus['files'], 'file')}, {plural(corpus['lines'], 'line')}, "
        f"{plural(corpus['chars'], 'character')}",
        f"  bytes read     {corpus['bytes']:,}  (trained on {corpus['train_bytes']:,}; held out "
        f"{plural(corpus['heldout_lines'], 'line')})",
        f"  time           {training['seconds']:.2f} s  ({training['mb_per_s']:.2f} MB/s)",
    ]
    if corpus["replaced"]:
        lines.append(
            f"  invalid UTF-8  {plural(corpus['replaced'], 'replacement')} in {plural(corpus['replaced_lines'], 'line')}"
        )
    if corpus["split_lines"]:
        lines.append(
            f"  long lines     {corpus['split_lines']:,} split into {plural(corpus['split_chunks'], 'chunk')} (none dropped)"
        )
    if "export" in record:
        lines.append(
            f"  export         tokenizer.json identical to tokenizer.model on {record['export']['verified_texts']} texts"
        )
    for fmt, reason in record.get("skipped_formats", {}).items():
        lines.append(f"  export         {fmt} not written (the folder loads without it): {reason[:160]}")
    if "tiktoken" in record:
        lines.append(
            f"  tiktoken       {record['tiktoken']['file']} identical to tokenizer.json on "
            f"{record['tiktoken']['verified_texts']} texts"
        )
    lines += _fertility_lines(fertility, out)
    shown = " ".join(pieces[:24]) + (" ..." if len(pieces) > 24 else "")
    lossless = tok.is_lossless(sample)
    lines += [
        f"  sample         {sample!r}",
        f"  -> {plural(len(pieces), 'token')}: {shown}",
        f"  round trip     {'exact' if lossless else 'not exact (see normalize())'}",
    ]
    print("\n".join(lines))
