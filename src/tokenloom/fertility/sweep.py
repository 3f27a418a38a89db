"""Vocabulary sweeps: train every algorithm × vocabulary size, evaluate them together, say what each costs.

:func:`vocab_sweep` trains one tokenizer per (algorithm, size) on a training corpus, runs one
:func:`~tokenloom.fertility.report.fertility_report` over an evaluation corpus for all of them, and
derives two tables:

- ``table``, one row per tokenizer: fertility, premium median / spread (max − min across languages) /
  worst, Gini of the premiums, Rényi efficiency, byte-fallback share, single-token retention (STRR) and
  split-character share (the report's ``all`` slice), the median STRR over languages, the distinct ids used
  and their share of the vocabulary, the languages left out of the premiums as invalid, and
  what the vocabulary itself costs — embedding and output-layer parameters and bytes (``V·d``, doubled when
  untied, :func:`tokenloom.costs.embedding_params`);
- ``languages``, one row per tokenizer × language: the tokens the same content needs and what that costs
  at a reference context, by :func:`tokenloom.costs.languages.language_cost` (the definition the report's
  ``rel_*`` columns and ``tokenloom costs languages`` use). The reference is the pivot language's content
  in ``context`` tokens of the sweep's first tokenizer, so the premium of a language under a tokenizer is
  its report ``premium_mean`` (against the pivot under the same tokenizer) times that tokenizer's pivot
  tokens ÷ the first tokenizer's (the same pivot texts under both); under the first tokenizer it is the
  report's ``premium_mean`` itself. The evaluation corpus must be parallel for this to mean anything
  (FLORES-style ``<lang>_<Script>.txt`` files).

The BPE shortcut: with the ``tokenizers`` engine the merges of a smaller BPE vocabulary are a prefix of a
larger one's, so the largest BPE (and the largest byte-level BPE) is trained once and the smaller ones are
cut from it (:mod:`tokenloom.text.bpe_cut`; tests compare the cut with separate trainings). ``parity-bpe``
is trained once per size (its merges are chosen against a dev set; no cut is claimed equal to a training).

A size the training corpus cannot fill (it gives fewer pieces, :class:`~tokenloom.errors.VocabSizeError`) is
a row of its own, ``made`` = ``"not trained: <reason>"`` with no metrics, and the sweep goes on; with
``allow_smaller_vocab`` the smaller tokenizer is kept once instead, named after its real size (a smaller
size of a cut algorithm is still cut from what the corpus gave). :func:`train_sweep` is the training
alone; :func:`write_sweep` writes the tokenizers, the tables, the full report and charts. The config, the
result and the training records are :mod:`tokenloom.fertility.sweep_types`. What it does not do: define
metrics (``metrics``), count tokens (``report``) or draw (``plots``).
"""

from __future__ import annotations

import json
import logging
import math
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from tokenloom._atomic import atomic_dir
from tokenloom.costs import embedding_params, tensor_bytes
from tokenloom.costs.languages import language_cost
from tokenloom.encoder.config import EncoderConfig
from tokenloom.errors import ConfigError, TokenizerError, VocabSizeError
from tokenloom.fertility.report import fertility_report
from tokenloom.fertility.summary import summarize
from tokenloom.fertility.sweep_types import (
    EvalCorpus,
    SweepAlgorithm,
    SweepConfig,
    SweepResult,
    TrainCorpus,
    TrainingRecord,
    sweep_name,
)
from tokenloom.fertility.sweep_writers import write_sweep_files
from tokenloom.text.bpe_cut import cut_bpe
from tokenloom.text.tiktoken_export import can_export
from tokenloom.text.tokenizer import SaveFormat, Tokenizer, load_tokenizer
from tokenloom.text.train import train_tokenizer

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["SweepConfig", "SweepResult", "SweepTraining", "train_sweep", "vocab_sweep", "write_sweep"]

logger = logging.getLogger(__name__)
_CUTTABLE = ("bpe", "bytelevel-bpe")  # ids in merge order (bpe_cut); not on sentencepiece


class SweepTraining(NamedTuple):
    """The tokenizers a sweep made (``{name: Tokenizer}``, in table order) and how every row of its table was
    made (sizes that were not trained too)."""

    tokenizers: dict[str, Tokenizer]
    training: dict[str, TrainingRecord]


def _cut_all(big: Tokenizer, sizes: list[int], big_name: str) -> list[tuple[Tokenizer, float]]:
    """Smaller BPE tokenizers cut from ``big`` (saved to a temp folder to read its tokenizer.json), with the
    seconds each took."""
    out: list[tuple[Tokenizer, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        big.save(Path(tmp) / "big")
        meta = json.loads((Path(tmp) / "big" / "tokenloom.json").read_text("utf-8"))
        source = json.loads((Path(tmp) / "big" / "tokenizer.json").read_text("utf-8"))
        for size in sizes:
            start = time.perf_counter()
            folder = Path(tmp) / str(size)
            folder.mkdir()
            (folder / "tokenizer.json").write_text(
                json.dumps(cut_bpe(source, size), ensure_ascii=False), "utf-8"
            )
            record = {**meta, "vocab_size": size, "cut_from": big_name}
            record["config"] = {**meta.get("config", {}), "vocab_size": size}
            (folder / "tokenloom.json").write_text(json.dumps(record, ensure_ascii=False), "utf-8")
            out.append((load_tokenizer(folder), time.perf_counter() - start))
    return out


@dataclass
class _Rows:
    """The table rows of one algorithm, in order: name -> how it was made; and the tokenizers made.

    A size the corpus cannot fill is a row ``"not trained: <reason>"`` under its asked name; with
    ``allow_smaller_vocab`` the smaller tokenizer is kept once, under its real size."""

    algorithm: SweepAlgorithm
    engine: str
    allow: bool
    training: dict[str, TrainingRecord] = field(default_factory=dict)
    tokenizers: dict[str, Tokenizer] = field(default_factory=dict)

    def made(self, tok: Tokenizer, how: str, seconds: float) -> str:
        name = sweep_name(self.algorithm, tok.vocab_size)
        self.tokenizers[name] = tok
        self.training[name] = {
            "how": how,
            "engine": self.engine,
            "seconds": seconds,
            "vocab_size": tok.vocab_size,
        }
        return name

    def not_made(self, asked: int, reason: str, seconds: float) -> None:
        self.training[sweep_name(self.algorithm, asked)] = {
            "how": f"not trained: {reason}", "engine": self.engine, "seconds": seconds, "vocab_size": asked,
        }  # fmt: skip

    def short(self, asked: int, reached: int, tok: Tokenizer | None, seconds: float) -> str | None:
        """A size the corpus could not fill: it gave ``reached`` pieces (``tok``: that tokenizer, when the
        engine gave it); returns the name the tokenizer is kept under, if it is kept."""
        kept = sweep_name(self.algorithm, reached)
        if tok is None or not self.allow:
            reason = VocabSizeError(asked, reached, where=f"{self.algorithm} on {self.engine}")
            self.not_made(asked, str(reason), seconds)
        elif kept in self.tokenizers:
            self.not_made(asked, f"the corpus gives only {reached} pieces, kept as {kept}", seconds)
        else:
            return self.made(tok, f"trained (asked {asked}; the corpus gave {reached} pieces)", seconds)
        return None


def _train(
    corpus: TrainCorpus, config: SweepConfig, algorithm: SweepAlgorithm, size: int, quiet: bool
) -> tuple[Tokenizer | None, int, float]:
    """One training: the tokenizer (``None`` when the engine refused a size the corpus cannot fill), the size
    it reached and the seconds it took; a corpus too small for ``size`` is not an error here."""
    start = time.perf_counter()
    try:
        trained = train_tokenizer(
            corpus, algorithm=algorithm, vocab_size=size, engine=config.engine_for(algorithm),
            max_bytes=config.max_bytes, seed=config.seed, quiet=quiet,
            language_sampling=config.language_sampling,
            dev=config.dev if algorithm == "parity-bpe" else None,
            pretokenizer=config.pretokenizer if algorithm in ("bytelevel-bpe", "parity-bpe") else None,
            allow_smaller_vocab=config.allow_smaller_vocab, errors=config.errors,
        )  # fmt: skip
    except VocabSizeError as exc:  # the rows say what became of this size
        return exc.tokenizer, exc.reached, time.perf_counter() - start
    return trained, trained.vocab_size, time.perf_counter() - start


def train_sweep(corpus: TrainCorpus, config: SweepConfig, *, quiet: bool = False) -> SweepTraining:
    """Train every (algorithm, vocab size) of ``config`` on ``corpus`` (the BPE shortcut and the sizes the
    corpus cannot fill as the module docstring says); no evaluation."""
    tokenizers: dict[str, Tokenizer] = {}
    training: dict[str, TrainingRecord] = {}
    sizes = sorted(config.vocab_sizes)
    for algorithm in config.algorithms:
        engine = config.engine_for(algorithm)
        rows = _Rows(algorithm, engine, config.allow_smaller_vocab)
        if config.shortcut and algorithm in _CUTTABLE and engine != "sentencepiece" and len(sizes) > 1:
            _cut_rows(rows, *_train(corpus, config, algorithm, sizes[-1], quiet), sizes)
        else:
            for size in sizes:
                tok, reached, seconds = _train(corpus, config, algorithm, size, quiet)
                if tok is not None and reached == size:
                    rows.made(tok, "trained", seconds)
                else:
                    rows.short(size, reached, tok, seconds)
        tokenizers.update(rows.tokenizers)
        training.update(sorted(rows.training.items(), key=lambda row: int(row[1]["vocab_size"])))
    return SweepTraining({name: tokenizers[name] for name in training if name in tokenizers}, training)


def _cut_rows(rows: _Rows, big: Tokenizer | None, reached: int, seconds: float, sizes: list[int]) -> None:
    """The rows of a cut algorithm: ``big`` trained at ``sizes[-1]``, the sizes it reached cut from it; the
    sizes above what the corpus gave are short (the first carries the training time)."""
    assert big is not None  # the tokenizers engine always gives the tokenizer it trained
    asked, algorithm = sizes[-1], rows.algorithm
    if reached == asked:
        source, cuts = sweep_name(algorithm, asked), sizes[:-1]
    else:
        kept_as_big = rows.allow and reached not in sizes  # else: no row holds the big tokenizer itself
        source = (
            sweep_name(algorithm, reached) if kept_as_big else f"the {sweep_name(algorithm, asked)} training"
        )
        cuts = [size for size in sizes if size <= reached]
    if cuts:
        for tok, cut_seconds in _cut_all(big, cuts, source):
            rows.made(tok, f"cut from {source}", cut_seconds)
    if reached == asked:
        rows.made(big, "trained", seconds)
        return
    for k, size in enumerate(size for size in sizes if size > reached):
        rows.short(size, reached, big, seconds if k == 0 else 0.0)


def _table(result: SweepResult, d_model: int) -> pd.DataFrame:
    import pandas as pd

    cfg, df = result.config, result.report
    summaries = {s.tokenizer: s for s in summarize(df)}
    rows = []
    for name, made in result.training.items():  # every row, trained or not, in order
        tok = result.tokenizers.get(name)
        algorithm, size = name.rsplit("-", 1)[0], int(made["vocab_size"])
        params = embedding_params(size, d_model, tied=cfg.tied)
        row = dict(tokenizer=name, algorithm=algorithm, vocab_size=size, engine=made["engine"],
                   made=made["how"], train_seconds=made["seconds"])  # fmt: skip
        metrics = dict.fromkeys(_METRICS, math.nan)
        if tok is not None:
            everything = df[(df["tokenizer"] == name) & (df["slice_kind"] == "all")].iloc[0]
            langs = df[(df["tokenizer"] == name) & (df["slice_kind"] == "language")]
            prem = [
                float(p) for p, s in zip(langs["premium_mean"], langs["slice"], strict=True) if s != cfg.pivot
            ]
            prem = [p for p in prem if math.isfinite(p)]
            s = summaries[name]
            metrics = dict(
                fertility=float(everything["fertility"]), median_language_fertility=s.median_fertility,
                premium_median=s.median_premium, premium_spread=(max(prem) - min(prem)) if prem else math.nan,
                premium_worst=s.worst_premium, premium_gini=s.gini,
                renyi_efficiency=float(everything["renyi_efficiency"]),
                byte_fallback_rate=float(everything["byte_fallback_rate"]),
                strr=float(everything["strr"]), median_language_strr=s.median_strr,
                split_char_rate=float(everything["split_char_rate"]), distinct_ids=s.distinct_ids,
                vocab_share=s.vocab_share, invalid_languages=len(s.left_out),
            )  # fmt: skip
        rows.append(
            {**row, **metrics, "embedding_params": params, "embedding_bytes": tensor_bytes(params, cfg.dtype)}
        )
    return pd.DataFrame(rows)


_METRICS = (
    "fertility", "median_language_fertility", "premium_median", "premium_spread", "premium_worst", "premium_gini",
    "renyi_efficiency", "byte_fallback_rate", "strr", "median_language_strr", "split_char_rate", "distinct_ids",
    "vocab_share", "invalid_languages",
)  # fmt: skip


def _languages(result: SweepResult) -> pd.DataFrame:
    """One :func:`~tokenloom.costs.languages.language_cost` per tokenizer × language of the report, its
    premium against the pivot under the first tokenizer (see the module docstring)."""
    import pandas as pd

    cfg, df = result.config, result.report
    model = EncoderConfig.preset(cfg.preset)
    langs = df[df["slice_kind"] == "language"]
    pivot = langs[langs["slice"] == cfg.pivot]
    pivot_tokens = dict(zip(pivot["tokenizer"], pivot["tokens"].astype(int), strict=True))
    t0 = pivot_tokens.get(next(iter(result.tokenizers)), 0)
    if t0 <= 0:
        raise ConfigError(
            f"pivot {cfg.pivot!r} is not a language of the evaluation corpus; name one of its "
            f"<lang>_<Script> files with --pivot (found {sorted(set(langs['slice']))})"
        )
    rows = []
    columns = (langs[c].tolist() for c in ("tokenizer", "slice", "script", "tokens", "premium_mean"))
    for name, lang, script, tokens, premium in zip(*columns, strict=True):
        cost = language_cost(premium * (pivot_tokens[name] / t0), model, context=cfg.context, dtype=cfg.dtype)
        rows.append(
            dict(tokenizer=name, lang=lang, script=script, tokens=int(tokens), premium=cost.premium,
                 seq_len=cost.seq_len, attention_flops=cost.attention_flops, encoder_flops=cost.encoder_flops,
                 kv_cache_bytes=cost.kv_cache_bytes)
        )  # fmt: skip
    frame = pd.DataFrame(rows)
    return frame.astype(
        dict.fromkeys(("seq_len", "attention_flops", "encoder_flops", "kv_cache_bytes"), "Int64")
    )


def vocab_sweep(
    corpus: TrainCorpus, eval_corpus: EvalCorpus, config: SweepConfig | None = None, *, quiet: bool = False
) -> SweepResult:
    """Train every (algorithm, vocab size) of ``config`` on ``corpus`` and evaluate all on ``eval_corpus``
    (progress on stderr when it is a terminal, unless ``quiet``)."""
    config = config or SweepConfig()
    d_model = EncoderConfig.preset(config.preset).width  # fails early on an unknown preset
    tokenizers, training = train_sweep(corpus, config, quiet=quiet)
    if not tokenizers:
        reasons = "; ".join(f"{name}: {made['how']}" for name, made in training.items())
        raise ConfigError(f"no tokenizer of the sweep was trained ({reasons})")
    report = fertility_report(
        tokenizers,
        eval_corpus,
        pivot=config.pivot,
        translit=config.translit,
        errors=config.errors,
        quiet=quiet,
    )
    result = SweepResult(config, tokenizers, report, report.iloc[:0], report.iloc[:0], training)
    result.table = _table(result, d_model)
    result.languages = _languages(result)
    return result


def write_sweep(
    result: SweepResult, out: str | os.PathLike[str], *, overwrite: bool = False, strict: bool = False
) -> dict[str, Path]:
    """Write ``sweep.csv``, ``languages.csv``, ``sweep.html`` + charts, ``report/`` and ``tokenizers/<name>/``.

    The folder is built beside ``out`` and renamed into place (an existing ``out`` needs ``overwrite``).
    The table's ``saved`` column says what was written for each tokenizer: ``"yes"``; ``"without
    tokenizer.json: <reason>"`` when an export failed its check and was left out (``Tokenizer.save``: the
    engine's own file is written, the folder loads); ``"no: <reason>"`` when nothing could be written —
    with ``strict=True`` that is what a failed export check gives (logged; the rest of the sweep is written).
    """
    with atomic_dir(out, overwrite=overwrite) as tmp:
        saved = []
        for name in result.table["tokenizer"]:
            tok = result.tokenizers.get(name)
            if tok is None:
                saved.append("no: not trained")
                continue
            try:
                formats: tuple[SaveFormat, ...] = ("tokenizer.json",)
                if can_export(tok):  # byte-level BPE: its tiktoken file too (verified before writing)
                    formats += ("tiktoken",)
                tok.save(Path(tmp) / "tokenizers" / name, formats=formats, strict=strict)
                skipped = tok.record.get("skipped_formats") or {}
                saved.append("; ".join(f"without {f}: {why}" for f, why in skipped.items()) or "yes")
            except TokenizerError as exc:  # one tokenizer that cannot be saved does not lose the sweep
                logger.warning("tokenizer %s not saved: %s", name, exc)
                saved.append(f"no: {exc}")
        result.table["saved"] = saved
        write_sweep_files(result, Path(tmp))
    return {p.name: Path(out) / p.name for p in Path(out).iterdir()}
