"""A trained run judged on held-out text: its model, its tokenizer and its framing, then bits per byte.

:func:`evaluate_run` loads a run folder written by ``tokenloom train-lm`` (:func:`tokenloom.lm.train.load_run`),
finds the tokenizer that wrote its token shards (:func:`run_tokenizer`), reads the held-out corpus through
the corpus reader and scores every document whole (:func:`tokenloom.lm.evaluate.evaluate_documents`).
:func:`evaluate_model` is the same for a model and tokenizer in memory; :func:`evaluate_and_write` adds
the report files (what ``tokenloom eval-lm`` and the end of ``train-lm --eval`` write).

The framing follows the shards the model was trained on (:func:`scoring_ids`, from the shards' manifest
settings): each document is scored after the start token the shards put before every document — their BOS,
or, when they have none, their EOS (the separator that precedes a document in a packed stream). The
document's end is not scored by default: bits per byte is then the cost of the text alone, the same
quantity for every tokenizer; ``LmEvalConfig(score_eos=True)`` adds ``-log2 p(EOS | document)`` (the
cost of knowing where the text ends), using the shards' EOS.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokenloom.errors import ConfigError
from tokenloom.lm.evaluate import LmEvalConfig, evaluate_documents, read_documents
from tokenloom.lm.train import load_run
from tokenloom.lm.writers import write_bpb
from tokenloom.text.tokenizer import Tokenizer, load_tokenizer
from tokenloom.tokens.manifest import read_manifest, tokenizer_fingerprint

if TYPE_CHECKING:
    import pandas as pd

    from tokenloom.encoder import LanguageModel

__all__ = ["evaluate_and_write", "evaluate_model", "evaluate_run", "run_tokenizer", "scoring_ids"]

TOKENIZER_DIR = "tokenizer"  # a run folder's own copy of its tokenizer (written by compare-lm), if any


def scoring_ids(settings: Mapping[str, Any]) -> tuple[int, int | None]:
    """``(start id, end id)`` for scoring from a token shard manifest's ``settings`` (``bos_id``,
    ``eos_id``): the start is the BOS, else the EOS; a one-line error when the shards have neither."""
    bos, eos = settings.get("bos_id"), settings.get("eos_id")
    start = bos if bos is not None else eos
    if start is None:
        raise ConfigError(
            "the model's token shards put no BOS or EOS around documents, so there is no start token to "
            "score a document after; tokenize with --eos auto (or --bos ID) and train again"
        )
    return int(start), None if eos is None else int(eos)


def run_tokenizer(
    run_dir: str | os.PathLike[str],
    entry: Mapping[str, Any],
    tokenizer: Tokenizer | str | os.PathLike[str] | None = None,
) -> Tokenizer:
    """The tokenizer of a run: ``tokenizer`` (a path or object) when given, else the run folder's
    ``tokenizer/`` copy; checked against ``entry`` (the shards' manifest ``tokenizer`` entry: its
    fingerprint), so a model is never scored with ids from another tokenizer."""
    if tokenizer is None:
        own = Path(run_dir) / TOKENIZER_DIR
        if not own.is_dir():
            raise ConfigError(
                f"{run_dir} holds no copy of its tokenizer ({own}); pass the tokenizer the shards were "
                f"written with (--tokenizer PATH: {entry.get('name', '?')!r}, vocabulary {entry.get('vocab_size', '?')})"
            )
        tokenizer = own
    tok = tokenizer if isinstance(tokenizer, Tokenizer) else load_tokenizer(tokenizer)
    path = None if isinstance(tokenizer, Tokenizer) else Path(tokenizer)
    if tokenizer_fingerprint(tok, path)["fingerprint"] != entry.get("fingerprint"):
        raise ConfigError(
            f"tokenizer {tok.name!r} (vocabulary {tok.vocab_size}) is not the one that wrote the run's token "
            f"shards ({entry.get('name', '?')!r}, vocabulary {entry.get('vocab_size', '?')}); pass that one"
        )
    return tok


def evaluate_model(
    model: LanguageModel,
    tokenizer: Tokenizer,
    corpus: str | os.PathLike[str] | Iterable[Any],
    settings: Mapping[str, Any],
    config: LmEvalConfig | None = None,
    *,
    text_column: str | None = None,
    lang_column: str | None = None,
    script_column: str | None = None,
) -> pd.DataFrame:
    """Bits per byte of ``corpus`` under ``model`` (one row per language, script and over all), the
    framing taken from the shards' ``settings`` (:func:`scoring_ids`). ``text_column``, ``lang_column``,
    ``script_column``: the cells of a table corpus (as in :func:`~tokenloom.lm.evaluate.read_documents`)."""
    config = config or LmEvalConfig()
    start, eos = scoring_ids(settings)
    docs = read_documents(
        corpus, max_docs=config.max_docs, text_column=text_column, lang_column=lang_column,
        script_column=script_column,
    )  # fmt: skip
    return evaluate_documents(
        model, tokenizer, docs, context=model.config.context, bos_id=start, eos_id=eos, config=config
    )


def _load(run_dir: str | os.PathLike[str]) -> tuple[LanguageModel, dict[str, Any]]:
    model, info = load_run(run_dir)
    return model, dict(info)


def evaluate_run(
    run_dir: str | os.PathLike[str],
    corpus: str | os.PathLike[str] | Iterable[Any],
    config: LmEvalConfig | None = None,
    *,
    tokenizer: Tokenizer | str | os.PathLike[str] | None = None,
) -> pd.DataFrame:
    """Bits per byte of a trained run on a held-out corpus (module docstring); ``df.attrs`` also records
    the run folder and the tokenizer."""
    model, info = _load(run_dir)
    manifest = read_manifest(info["shards"])  # the framing the model was trained with
    entry = info.get("tokenizer") or manifest["tokenizer"]
    tok = run_tokenizer(run_dir, entry, tokenizer)
    df = evaluate_model(model, tok, corpus, manifest["settings"], config)
    df.attrs.update(run=str(run_dir), tokenizer=tok.name)
    return df


def evaluate_and_write(
    run_dir: str | os.PathLike[str],
    corpus: str | os.PathLike[str] | Iterable[Any],
    out: str | os.PathLike[str] | None = None,
    config: LmEvalConfig | None = None,
    *,
    tokenizer: Tokenizer | str | os.PathLike[str] | None = None,
) -> tuple[pd.DataFrame, dict[str, Path]]:
    """:func:`evaluate_run`, then the report files (``bpb.csv``, ``.md``, ``.html``, ``.png``) in ``out``
    (default ``RUN/eval``): the end of ``train-lm --eval`` and all of ``eval-lm``."""
    df = evaluate_run(run_dir, corpus, config, tokenizer=tokenizer)
    folder = Path(out) if out is not None else Path(run_dir) / "eval"
    return df, write_bpb(df, folder, title=f"bits per byte of {Path(run_dir).name} ({df.attrs['tokenizer']})")
