"""Fertility report from a config file: what ``tokenloom fertility`` does, with the options written down.

Usage::

    python scripts/fertility_report.py report.toml      # or report.json

A config (TOML or JSON) looks like::

    out = "/tmp/fertility-report"          # folder for report.csv / .md / .html and the PNGs (required)
    corpus = ["../shared/corpora/flores200/devtest"]   # paths, folders, globs (required)
    pivot = "eng_Latn"                     # optional; "" for no pivot
    translit = true                        # optional; generated <lang>_<Script>_Latn-translit slices
    segmenter = "icu"                      # optional; "icu" or "whitespace"
    errors = "skip"                        # optional; "strict" stops at the first bad input
    title = "My report"                    # optional

    [tokenizers]                           # name = tokenizer folder / tokenizer.json / .model (required)
    bpe-16k = "/tmp/tok-bpe16k"
    unigram-16k = "/tmp/tok-uni16k"

    [report]                               # optional: ReportConfig fields (n_boot, seed, level, ...)
    n_boot = 1000

Unknown keys are an error naming the key and the allowed ones.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tomllib
from pathlib import Path
from typing import Any

from tokenloom.errors import ConfigError, TokenloomError

TOP_KEYS = {"out", "corpus", "pivot", "translit", "segmenter", "errors", "title", "tokenizers", "report"}


def read_config(path: Path) -> dict[str, Any]:
    """The config as a dict, validated for required and unknown keys."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config {path}: {exc.strerror}") from None
    try:
        config = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(
            f"{path}: not valid {'JSON' if path.suffix == '.json' else 'TOML'}: {exc}"
        ) from None
    unknown = sorted(set(config) - TOP_KEYS)
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) {unknown}; allowed: {sorted(TOP_KEYS)}")
    for key in ("out", "corpus", "tokenizers"):
        if key not in config:
            raise ConfigError(f"{path}: missing required key {key!r}")
    if not isinstance(config["tokenizers"], dict) or not config["tokenizers"]:
        raise ConfigError(f"{path}: 'tokenizers' must be a table of name = path")
    from tokenloom.fertility.report import ReportConfig

    fields = {f.name for f in dataclasses.fields(ReportConfig)}
    bad = sorted(set(config.get("report", {})) - fields)
    if bad:
        raise ConfigError(f"{path}: unknown [report] key(s) {bad}; allowed: {sorted(fields)}")
    return config


def run(config: dict[str, Any], *, quiet: bool = False) -> dict[str, Path]:
    """Compute and write the report described by ``config``; returns the written files."""
    from tokenloom.corpus.records import BATCH_ERRORS
    from tokenloom.fertility.report import ReportConfig, fertility_report
    from tokenloom.fertility.writers import report_table, write_report

    corpus = config["corpus"]
    df = fertility_report(
        dict(config["tokenizers"]),
        [corpus] if isinstance(corpus, str) else list(corpus),
        pivot=config.get("pivot", "eng_Latn") or None,
        translit=bool(config.get("translit", True)),
        segmenter=config.get("segmenter", "icu"),
        config=ReportConfig(**config.get("report", {})),
        errors=config.get("errors", BATCH_ERRORS),
        quiet=quiet,
    )
    if not quiet:
        print(report_table(df))
    return write_report(df, config["out"], title=config.get("title", "tokenloom fertility report"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="fertility report from a TOML / JSON config")
    parser.add_argument("config", type=Path)
    parser.add_argument("-q", "--quiet", action="store_true")
    args = parser.parse_args(argv)
    try:
        written = run(read_config(args.config), quiet=args.quiet)
    except TokenloomError as exc:
        print(f"fertility_report: error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {', '.join(str(p) for p in written.values())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
