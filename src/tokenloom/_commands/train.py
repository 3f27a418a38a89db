"""``tokenloom train``: train a BPE, unigram or byte-level BPE tokenizer on text files and save it, with a
one-screen summary.

The saved folder is the tokenizer's (``Tokenizer.save``) plus ``fertility.csv``: the fertility of the
held-out lines (``tokenloom.fertility.heldout.save_with_fertility``). The training flags are generated from
the :class:`~tokenloom.text.train_config.TrainerConfig` fields (:func:`add_config_arguments`).
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
    from tokenloom.text.train_config import TrainerConfig

NAME = "train"
HELP = (
    "train a BPE or unigram tokenizer (HF tokenizers or sentencepiece) with byte fallback, or byte-level BPE"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "inputs",
        nargs="+",
        metavar="INPUT",
        help="corpus files (text, .jsonl/.csv/.parquet tables, source code), folders or globs",
    )
    add_config_arguments(parser)
    parser.add_argument(
        "--out", type=Path, required=True, metavar="DIR", help="output folder (must not exist)"
    )
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --out folder")
    parser.add_argument(
        "--strict-export",
        action="store_true",
        help="fail, writing nothing, when an export (tokenizer.json beside a sentencepiece model, tiktoken) "
        "differs from the tokenizer; by default such an export is left out with a warning",
    )


# the flags not spelled after their field: they are given once per token / language
_FLAGS = {"special_tokens": "--special-token", "ratios": "--ratio"}


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """One flag per :class:`~tokenloom.text.train_config.TrainerConfig` field, its help and default taken
    from the field; a flag not given leaves the field out of :func:`config_from_args` (the default applies)."""
    import dataclasses
    import typing

    from tokenloom.text.train_config import TrainerConfig, choices

    group = parser.add_argument_group("training settings (TrainerConfig fields)")
    hints, listed = typing.get_type_hints(TrainerConfig), choices()
    for f in dataclasses.fields(TrainerConfig):
        flag = _FLAGS.get(f.name, "--" + f.name.replace("_", "-"))
        shown = " ".join(f.default) if isinstance(f.default, tuple) else f.default
        kind: dict[str, Any] = {"metavar": f.metadata["metavar"]}
        if f.name in listed:
            kind = {"choices": listed[f.name]}
        elif isinstance(f.default, bool):
            kind = {"action": argparse.BooleanOptionalAction}
        elif isinstance(f.default, tuple):
            kind["action"] = "append"
        else:  # int, float or str, or None
            hint = hints[f.name]
            convert = next(t for t in typing.get_args(hint) or (hint,) if t is not type(None))
            kind["type"] = {"seed": parse_seed, "max_bytes": parse_bytes}.get(f.name, convert)
            kind["metavar"] = kind["metavar"] or {int: "N", float: "F"}.get(convert, "TEXT")
        text = f"{f.metadata['help']}; default: {shown}"
        group.add_argument(flag, dest=f.name, default=argparse.SUPPRESS, help=text, **kind)


def config_from_args(args: argparse.Namespace) -> TrainerConfig:
    """The :class:`TrainerConfig` of the flags given (:func:`add_config_arguments`); the others default."""
    import dataclasses

    from tokenloom.text.train_config import TrainerConfig

    given = {
        f.name: getattr(args, f.name) for f in dataclasses.fields(TrainerConfig) if hasattr(args, f.name)
    }
    return TrainerConfig(**given)


def parse_bytes(text: str) -> int:
    """``--max-bytes``: bytes or a size such as ``2GB`` (argparse error otherwise)."""
    from tokenloom.errors import ConfigError
    from tokenloom.text.train_config import parse_size

    try:
        return parse_size(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


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


def run(args: argparse.Namespace) -> int:
    from tokenloom.errors import ConfigError
    from tokenloom.fertility.heldout import save_with_fertility
    from tokenloom.text.train import train_with_heldout

    if args.out.exists() and not args.overwrite:
        raise ConfigError(f"output folder {str(args.out)!r} already exists; pass --overwrite to replace it")
    config = config_from_args(args)
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


def _sample_line(inputs: list[str], text_column: str) -> str:
    """The first non-empty line of the corpus, read as training reads it (a table's text column)."""
    from tokenloom.corpus.reader import corpus_files, iter_texts
    from tokenloom.corpus.records import Columns

    for path in corpus_files(inputs)[:5]:
        for text in iter_texts(path, errors="skip", columns=Columns(text_column)):
            line = next((line for line in text.split("\n") if line.strip()), "")
            if line:
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
    from tokenloom._tables import plural, set_aside

    record = tok.record
    corpus, training = record["corpus"], record["training"]
    sample = _sample_line(inputs, record.get("config", {}).get("text_column", "text"))
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
    if corpus.get("rejected"):
        counted = set_aside(corpus["rejected"], corpus.get("rejected_files", 0))
        lines.append(f"  bad input      {counted} (--errors skip; --errors strict stops at the first)")
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
