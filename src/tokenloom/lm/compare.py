"""What a tokenizer does to a model: matched small models, one per tokenizer, judged in bits per byte.

:func:`compare_tokenizers` runs, for each tokenizer, in order:

1. its token shards of the training corpus, written once (:func:`tokenloom.tokens.tokenize_corpus`, on the
   executor; an existing folder of the same tokenizer and settings is kept). Documents are framed
   ``EOS x_1 .. x_T EOS`` (the tokenizer's end token before and after), so the model learns the first
   token of a document after the separator it is scored after;
2. a model of one configuration (:class:`CompareConfig`: the same blocks, hence the same non-embedding
   parameters, depth and width; only the embedding follows the vocabulary), trained from the same seed on
   the same budget (:func:`tokenloom.lm.train.train_lm`): ``budget="bytes"`` — every model reads the same
   bytes of text; ``budget="flops"`` — every model spends the same training FLOPs (the cost model's
   ``3 x forward`` per token, so a larger vocabulary's costlier head buys fewer tokens);
3. its bits per byte per language on the held-out corpus (:func:`tokenloom.lm.runs.evaluate_model`).

Then a fertility report of every tokenizer on the held-out corpus (:func:`tokenloom.fertility_report`)
gives the intrinsic metrics, and :mod:`tokenloom.lm.compare_table` joins everything into one table and
correlates each intrinsic metric with bits per byte. Folders under ``out``: ``shards/NAME``,
``runs/NAME`` (each with a copy of its tokenizer), and the report files (:mod:`tokenloom.lm.compare_writers`).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from tokenloom.costs import lm_flops, lm_params
from tokenloom.errors import ConfigError
from tokenloom.fertility.report import fertility_report
from tokenloom.fertility.report_config import ReportConfig
from tokenloom.lm.compare_table import RunTotals, compare_table, metric_correlations
from tokenloom.lm.compare_writers import write_compare
from tokenloom.lm.evaluate import LmEvalConfig, evaluate_documents, read_documents
from tokenloom.lm.run_config import LmTrainConfig
from tokenloom.lm.runs import scoring_ids
from tokenloom.lm.train import load_run, train_lm
from tokenloom.text.tokenizer import Tokenizer, load_tokenizer
from tokenloom.tokens import TokenizeConfig, tokenize_corpus
from tokenloom.tokens.manifest import read_manifest

if TYPE_CHECKING:
    import pandas as pd

    from tokenloom.encoder import LanguageModelConfig
    from tokenloom.lm.correlation import Correlation

__all__ = ["Budget", "CompareConfig", "CompareResult", "compare_tokenizers", "tokens_for_flops"]

Budget = Literal["bytes", "flops"]


@dataclass(frozen=True)
class CompareConfig:
    """One comparison's settings: the shared training recipe, the budget and the judging."""

    train: LmTrainConfig  # the recipe every model shares (model blocks, seq_len, batch, lr, seed...);
    # its shards, out, vocabulary and budget are set per tokenizer
    budget: Budget = "bytes"  # what is held equal: bytes of training text or training FLOPs
    amount: float = 1e6  # the budget: bytes of text, or FLOPs, per model
    eval: LmEvalConfig = field(default_factory=LmEvalConfig)  # how held-out text is scored
    pivot: str | None = "eng_Latn"  # the language premiums are measured against (None: no premium)
    n_boot: int = 1000  # bootstrap resamples of the rank correlations
    workers: int = 1  # processes tokenizing each training corpus (the executor's)

    def __post_init__(self) -> None:
        if self.budget not in ("bytes", "flops"):
            raise ConfigError(f"budget must be 'bytes' or 'flops', got {self.budget!r} (--budget)")
        if self.eval.max_docs is not None:
            raise ConfigError(
                "a comparison scores every held-out document (its fertility report reads them all); "
                "drop max_docs (--max-docs) and give a smaller held-out corpus instead"
            )
        if not self.amount > 0:
            raise ConfigError(f"the budget amount must be positive, got {self.amount!r} (--amount)")


@dataclass(frozen=True)
class CompareResult:
    """The comparison: the table, the rank correlations and the files written."""

    table: pd.DataFrame  # one row per tokenizer and language (tokenloom.lm.compare_table.COMPARE_COLUMNS)
    correlations: list[Correlation]  # one per intrinsic metric, against bits per byte
    written: dict[str, Path]  # the report files


def tokens_for_flops(model: LanguageModelConfig, seq_len: int, flops: float) -> int:
    """Training tokens that cost ``flops`` for ``model`` at ``seq_len`` (the cost model's training FLOPs:
    3 x forward, :func:`tokenloom.costs.lm_flops`)."""
    per_token = lm_flops(model, 1, seq_len).training / seq_len
    tokens = int(flops // per_token)
    if tokens < 1:
        raise ConfigError(
            f"{flops:g} FLOPs buy no training token ({per_token:.3g} per token); raise --amount"
        )
    return tokens


def _train(
    name: str, tok: Tokenizer, shards: Path, run_dir: Path, config: CompareConfig, *, quiet: bool
) -> tuple[Any, dict[str, Any], RunTotals]:
    """Train one tokenizer's model; ``(model, run info, totals)``."""

    recipe = config.train
    model = dataclasses.replace(recipe.model, vocab_size=tok.vocab_size)
    unit: Literal["tokens", "bytes"] = "bytes" if config.budget == "bytes" else "tokens"
    if config.budget == "bytes":
        budget = int(config.amount)
    else:
        budget = tokens_for_flops(model, recipe.seq_len, config.amount)
    train_config = dataclasses.replace(
        recipe, shards=str(shards), out=str(run_dir), model=model, budget=budget, budget_unit=unit
    )
    run_dir = Path(train_lm(train_config, quiet=quiet))
    tok.save(run_dir / "tokenizer", overwrite=True)
    loaded, info = load_run(run_dir)
    totals = RunTotals(
        vocab_size=tok.vocab_size, params=lm_params(model), non_embedding_params=lm_params(model, embedding=False),
        train_tokens=int(info["tokens_seen"]), train_bytes=int(info["bytes_seen"]),
        train_flops=float(info["training_flops"]), wall_seconds=float(info["wall_seconds"]),
    )  # fmt: skip
    return loaded, dict(info), totals


def _notes(config: CompareConfig, table: pd.DataFrame) -> list[str]:
    recipe = config.train
    enc = recipe.model.encoder
    held = "bytes of training text" if config.budget == "bytes" else "training FLOPs (3 x forward per token)"
    params = ", ".join(sorted({f"{n:,}" for n in table["non_embedding_params"]})) if len(table) else "?"
    return [
        f"Every model: {enc.depth} blocks of width {enc.width}, {params} non-embedding parameters (the "
        f"embedding follows the vocabulary), context {recipe.seq_len}, seed {recipe.seed}; the same "
        f"{config.amount:.3g} {held} per model.",
        "Held-out documents scored whole after the EOS separator, windows beyond the context; the end of a "
        + ("document scored." if config.eval.score_eos else "document not scored (bits of the text only).")
        + " Bits per byte = summed bits / UTF-8 bytes: the same denominator for every tokenizer.",
        f"Intrinsic metrics from a fertility report on the same held-out text (premium against "
        f"{config.pivot or 'no pivot'}).",
    ]


def compare_tokenizers(
    tokenizers: Mapping[str, Tokenizer | str | os.PathLike[str]],
    train_corpus: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    eval_corpus: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    config: CompareConfig,
    *,
    quiet: bool = True,
) -> CompareResult:
    """Train and judge one model per tokenizer (module docstring) and write the comparison into ``out``."""

    if len(tokenizers) < 1:
        raise ConfigError("compare-lm needs at least one tokenizer (--tokenizers a,b,...)")
    toks = {n: t if isinstance(t, Tokenizer) else load_tokenizer(t) for n, t in tokenizers.items()}
    out = Path(out)
    docs = read_documents(eval_corpus)
    framing = TokenizeConfig(bos="auto", eos="auto", seed=config.train.seed)
    bpb: dict[str, pd.DataFrame] = {}
    runs: dict[str, RunTotals] = {}
    for name, tok in toks.items():
        shards = out / "shards" / name
        tokenize_corpus(train_corpus, tok, shards, config=framing, workers=config.workers, quiet=quiet)
        model, _, runs[name] = _train(name, tok, shards, out / "runs" / name, config, quiet=quiet)
        start, eos = scoring_ids(read_manifest(shards)["settings"])
        bpb[name] = evaluate_documents(
            model, tok, docs, context=model.config.context, bos_id=start, eos_id=eos, config=config.eval
        )
    fert = fertility_report(
        toks, eval_corpus, pivot=config.pivot, translit=False, numbers=False, quiet=quiet,
        config=ReportConfig(n_boot=config.eval.n_boot, seed=config.eval.seed),
    )  # fmt: skip
    table = compare_table(bpb, fert, runs)
    correlations = metric_correlations(table, n_boot=config.n_boot, seed=config.eval.seed)
    written = write_compare(table, correlations, out, notes=_notes(config, table))
    return CompareResult(table, correlations, written)
