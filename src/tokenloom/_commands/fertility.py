"""``tokenloom fertility``: fertility / premium report of tokenizers over a corpus, per slice."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from tokenloom._commands._args import TokenizerSpec, add_errors_argument
from tokenloom.text.algorithms import ENCODE_ENGINES

NAME = "fertility"
STATE_DIR = ".tasks"  # under --out: finished tasks' counts, until the report is written
HELP = "compare tokenizers across languages, scripts, code-mixed, transliterated and code slices"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tokenizer",
        action=TokenizerSpec,
        dest="tokenizers",
        required=True,
        metavar="SPEC",
        help="a saved tokenloom tokenizer folder, a tokenizer.json or a sentencepiece .model; "
        "tiktoken:FILE.tiktoken (with --pattern); transformers:FOLDER (a save_pretrained folder, loaded "
        "offline) (repeatable)",
    )
    parser.add_argument(
        "--pattern",
        action=TokenizerSpec,
        dest="tokenizers",
        metavar="NAME|REGEX",
        help="pre-tokenizer of the tiktoken:FILE before it: cl100k, o200k, gpt2, llama3 or a regex",
    )
    parser.add_argument(
        "--name", action=TokenizerSpec, dest="tokenizers", help="report name of the --tokenizer before it"
    )
    parser.add_argument(
        "--corpus",
        action="append",
        required=True,
        metavar="PATH",
        help="a FLORES-style folder (<lang>_<Script>.txt), .jsonl/.csv/.parquet, source files, globs (repeatable)",
    )
    parser.add_argument(
        "--engine",
        choices=ENCODE_ENGINES,
        default="auto",
        help="engine that computes token ids: auto (gigatoken where it serves the tokenizer and gives identical "
        "ids on a probe set, else the tokenizer's own engine), gigatoken (or an error), reference (the "
        "tokenizer's own engine)",
    )
    parser.add_argument("--pivot", default="eng_Latn", help="language slice premiums are measured against")
    parser.add_argument(
        "--no-translit",
        action="store_true",
        help="do not add ICU-transliterated <lang>_<Script>_Latn-translit slices",
    )
    parser.add_argument(
        "--no-numbers", action="store_true", help="do not add <lang>_<Script>_numbers slices (digit runs)"
    )
    parser.add_argument(
        "--reference",
        metavar="SPEC",
        help="a tokenizer (same specs as --tokenizer) every slice's tokens are compared with: the nsl column",
    )
    parser.add_argument(
        "--reference-pattern", metavar="NAME|REGEX", help="pre-tokenizer of a tiktoken:FILE --reference"
    )
    parser.add_argument(
        "--perturb",
        metavar="LIST",
        default="",
        help="perturbed slices to add, premiums against the clean text: a comma list of diacritics, case, "
        "fullwidth, zerowidth, homoglyphs, keyboard, ocr, or all (default: none)",
    )
    parser.add_argument(
        "--include-invalid",
        action="store_true",
        help="keep pairs with more than 10%% unknown characters in the summary's premium statistics",
    )
    parser.add_argument("--segmenter", choices=("icu", "whitespace"), default="icu", help="word segmenter")
    parser.add_argument(
        "--metrics",
        choices=("full", "lengths"),
        default="full",
        help="full: every metric; lengths: documents, bytes, characters, tokens and tokens per document only "
        "(fast: no words, round trips, premiums, transliterated or code-mixed slices)",
    )
    parser.add_argument(
        "--context",
        action="append",
        type=_context_list,
        metavar="TOKENS",
        help="context length for the share of documents longer than it and of tokens beyond it "
        "(repeatable or a comma list; default 2048,4096,8192,32768)",
    )
    add_errors_argument(parser)
    parser.add_argument(
        "--text-column", metavar="COLUMN", help="column of a table holding the text; default: text"
    )
    parser.add_argument(
        "--lang-column",
        metavar="COLUMN",
        help="column of a table holding the language; default: lang, else language",
    )
    parser.add_argument(
        "--script-column",
        metavar="COLUMN",
        help="column of a table holding the script; default: script, else language_script",
    )
    parser.add_argument(
        "--align-column",
        metavar="COLUMN",
        help="column of a table holding a translation key: rows sharing one are aligned across languages "
        "(premiums); default: tables are not aligned (an 'id' column of a pretraining shard is a document id)",
    )
    parser.add_argument(
        "--out", type=Path, required=True, metavar="DIR", help="folder for report.csv/.md/.html and PNGs"
    )
    parser.add_argument(
        "--overwrite", action="store_true", help="replace the report files in an existing --out folder"
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="count the corpus's tasks (a file, a range of Parquet row groups or of a large file's bytes) "
        "in N processes (default 1: this process)",
    )
    parser.add_argument(
        "--distributor",
        choices=("local", "ray"),
        default="local",
        help="ray: run the tasks as Ray tasks (RAY_ADDRESS, or a local cluster); the report is the same",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="keep the tasks a killed run finished (kept under --out until the report is written) and "
        "count only the rest",
    )
    parser.add_argument(
        "--task-mb",
        type=int,
        default=64,
        metavar="MB",
        help="about how many MiB of input one task reads (default 64)",
    )
    parser.add_argument(
        "--table",
        action="store_true",
        help="also print every slice row (the summary is always printed; report.md has the full table)",
    )


def _context_list(value: str) -> list[int]:
    """``--context 4096`` or ``--context 2048,8192``: token counts."""
    try:
        return [int(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r}: give token counts, e.g. 4096 or 2048,8192") from None


def _exists_message(out: Path, state: Path, *, resume: bool) -> str:
    """Why an existing ``--out`` stops the run, and the fixes: ``--resume`` first when it holds the tasks
    a killed run finished (``--overwrite`` would discard them)."""
    saved = len(list(state.glob("*.pkl"))) if state.is_dir() and not resume else 0
    if saved:
        return (
            f"output folder {str(out)!r} holds an unfinished run: {saved} finished task"
            f"{'s' * (saved != 1)} in {state}; pass --resume to reuse {'them' if saved != 1 else 'it'} (a task "
            "counted with the same tokenizers and settings on an unchanged file) and count only the rest, "
            "or --overwrite to discard the saved tasks and count everything again"
        )
    return f"output folder {str(out)!r} already exists; pass --overwrite to replace it" + (
        " (it holds no unfinished run to --resume)" if resume else ""
    )


def run(args: argparse.Namespace) -> int:
    from tokenloom.errors import ConfigError
    from tokenloom.fertility.lengths import DEFAULT_CONTEXTS
    from tokenloom.fertility.perturb import parse_perturbations
    from tokenloom.fertility.report import ReportConfig, RunConfig, fertility_report
    from tokenloom.fertility.summary import format_summary
    from tokenloom.fertility.writers import report_table, write_report
    from tokenloom.text.adapt import load_tokenizer_spec

    state = args.out / STATE_DIR
    resuming = args.resume and state.is_dir()
    if args.out.exists() and not args.overwrite and not resuming:  # checked before any work starts
        raise ConfigError(_exists_message(args.out, state, resume=args.resume))
    if args.out.exists() and not args.out.is_dir():
        raise ConfigError(f"--out {str(args.out)!r} is a file; give a folder for the report")
    contexts = sorted({c for group in args.context for c in group}) if args.context else DEFAULT_CONTEXTS
    config = ReportConfig(metrics=args.metrics, contexts=tuple(contexts))  # checked before any work starts
    perturbations = parse_perturbations(args.perturb)  # checked before any work starts
    if args.task_mb < 1:
        raise ConfigError(f"--task-mb must be >= 1, got {args.task_mb}")
    run_config = RunConfig(
        workers=args.workers, distributor=args.distributor, state_dir=state, resume=args.resume,
        task_bytes=args.task_mb << 20,
    )  # fmt: skip
    toks = [
        load_tokenizer_spec(t["spec"], pattern=t["pattern"], name=t["name"], engine=args.engine)
        for t in args.tokenizers
    ]
    reference = None
    if args.reference:
        reference = load_tokenizer_spec(args.reference, pattern=args.reference_pattern, engine=args.engine)
    df = fertility_report(
        toks, args.corpus, pivot=args.pivot, translit=not args.no_translit, segmenter=args.segmenter,
        quiet=args.quiet, config=config, errors=args.errors, run=run_config, text_column=args.text_column,
        lang_column=args.lang_column, script_column=args.script_column, align_column=args.align_column,
        reference=reference,
        perturbations=perturbations, numbers=not args.no_numbers,
    )  # fmt: skip
    if args.table:
        print(report_table(df))
        print()
    print(format_summary(df, include_invalid=args.include_invalid))
    written = write_report(df, args.out)
    shutil.rmtree(state, ignore_errors=True)  # the report is written: nothing left to resume
    tasks = df.attrs["tasks"]
    if tasks["resumed"]:
        print(f"resumed {tasks['resumed']} of {tasks['tasks']} tasks from the unfinished run in {args.out}")
    if df.attrs.get("replaced"):
        print(f"note: {df.attrs['replaced']} invalid UTF-8 sequences were replaced by U+FFFD")
    print(f"wrote {', '.join(p.name for p in written.values())} to {args.out}")
    return 0
