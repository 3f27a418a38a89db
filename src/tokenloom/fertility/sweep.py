"""Vocabulary sweeps: train every algorithm × vocabulary size, evaluate them together, say what each costs.

:func:`vocab_sweep` trains one tokenizer per (algorithm, size) on a training corpus, runs one
:func:`~tokenloom.fertility.report.fertility_report` over an evaluation corpus for all of them, and
derives two tables:

- ``table``, one row per tokenizer: fertility, premium median / spread (max − min across languages) /
  worst, Gini of the premiums, Rényi efficiency and byte-fallback share (the report's ``all`` slice), and
  what the vocabulary itself costs — embedding and output-layer parameters and bytes (``V·d``, doubled when
  untied, :func:`tokenloom.costs.embedding_params`);
- ``languages``, one row per tokenizer × language: the tokens the same content needs and what that costs
  at a reference context. The reference is the pivot language's text under the sweep's first tokenizer at
  ``context`` tokens; a language whose text took ``t`` tokens under a tokenizer (the pivot: ``t₀`` under the
  first) needs ``round(context · t / t₀)`` tokens for the same content, and the encoder's attention FLOPs and
  KV-cache bytes follow from that length (:func:`tokenloom.costs.encoder_flops`,
  :func:`tokenloom.costs.encoder_kv_cache_bytes`). The evaluation corpus must be parallel for this to mean
  anything (FLORES-style ``<lang>_<Script>.txt`` files).

The BPE shortcut: with the ``tokenizers`` engine the merges of a smaller BPE vocabulary are a prefix of a
larger one's, so the largest BPE (and the largest byte-level BPE) is trained once and the smaller ones are
cut from it (:mod:`tokenloom.text.bpe_cut`; tests compare the cut with separate trainings). :func:`write_sweep` writes
the tokenizers, the tables, the full report and charts. What it does not do: define metrics (``metrics``),
count tokens (``report``) or draw (``plots``).
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
from typing import TYPE_CHECKING, Any, Literal

from tokenloom._fields import check_ints, check_seed
from tokenloom.errors import ConfigError, TokenizerError

if TYPE_CHECKING:
    import pandas as pd

    from tokenloom.text.tokenizer import SaveFormat, Tokenizer

__all__ = ["SweepConfig", "SweepResult", "vocab_sweep", "write_sweep"]

SweepEngine = Literal["auto", "hf", "sentencepiece"]
# engine="auto" in a sweep: BPE on the tokenizers engine (the cut shortcut applies), the rest as training does
logger = logging.getLogger(__name__)
_AUTO_ENGINE = {"bpe": "hf", "unigram": "sentencepiece", "bytelevel-bpe": "hf"}
_CUTTABLE = ("bpe", "bytelevel-bpe")  # trained in merge order by the tokenizers engine (bpe_cut)


@dataclass(frozen=True)
class SweepConfig:
    """What a vocabulary sweep trains, how it evaluates, and the model it prices the results for."""

    algorithms: tuple[str, ...] = ("bpe", "unigram")  # "bpe" | "unigram" | "bytelevel-bpe"
    vocab_sizes: tuple[int, ...] = (8000, 16000, 32000, 64000)  # trained for every algorithm
    engine: SweepEngine = "auto"  # "auto": bpe, bytelevel-bpe -> hf (cut shortcut), unigram -> sentencepiece
    shortcut: bool = (
        True  # cut smaller (byte-level) BPE vocabularies from the largest (tokenizers engine only)
    )
    pivot: str = "eng_Latn"  # premiums and the reference context are the pivot language's
    translit: bool = False  # also report generated transliterated slices (slower)
    preset: str = "vit-b16"  # EncoderConfig preset whose width, depth and heads price the results
    context: int = 4096  # reference context: the pivot's content in this many tokens of the first tokenizer
    dtype: str = "bf16"  # bytes of embeddings and the KV cache
    tied: bool = True  # output layer shares the embedding matrix
    max_bytes: int | None = None  # deterministic sample of the training corpus (None: all of it)
    seed: int = 0  # training seed, 0 <= seed < 2**32
    pretokenizer: str | None = None  # bytelevel-bpe's split pattern: a name or a regex (None: "o200k")

    def __post_init__(self) -> None:
        if not self.algorithms:
            raise ConfigError("a sweep needs at least one algorithm, e.g. algorithms=('bpe', 'unigram')")
        unknown = [a for a in self.algorithms if a not in _AUTO_ENGINE]
        if unknown:
            raise ConfigError(f"unknown algorithm {unknown[0]!r}; choose from {tuple(_AUTO_ENGINE)}")
        sizes = self.vocab_sizes
        if not sizes or any(isinstance(v, bool) or not isinstance(v, int) or v <= 0 for v in sizes):
            raise ConfigError(f"vocab_sizes must be positive ints, got {sizes!r}")
        if len(set(sizes)) != len(sizes) or len(set(self.algorithms)) != len(self.algorithms):
            raise ConfigError(f"duplicate algorithms or sizes: {self.algorithms!r}, {sizes!r}")
        if self.engine not in ("auto", "hf", "sentencepiece"):
            raise ConfigError(f"engine must be 'auto', 'hf' or 'sentencepiece', got {self.engine!r}")
        if not isinstance(self.context, int) or self.context <= 0:
            raise ConfigError(f"context must be a positive int, got {self.context!r}")
        check_ints(self, {"seed": 0})
        check_seed(self.seed, name="SweepConfig.seed")
        if self.pretokenizer is not None and "bytelevel-bpe" not in self.algorithms:
            raise ConfigError("pretokenizer applies to bytelevel-bpe only; add it to algorithms or drop it")

    def engine_for(self, algorithm: str) -> str:
        """The engine that trains ``algorithm`` in this sweep."""
        return _AUTO_ENGINE.get(algorithm, "auto") if self.engine == "auto" else self.engine


@dataclass
class SweepResult:
    """The tokenizers (``{name: Tokenizer}``, names like ``bpe-32k``), the report and the derived tables."""

    config: SweepConfig
    tokenizers: dict[str, Tokenizer]
    report: pd.DataFrame
    table: pd.DataFrame
    languages: pd.DataFrame
    training: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> how it was made, seconds


def _name(algorithm: str, vocab_size: int) -> str:
    return f"{algorithm}-{vocab_size // 1000}k" if vocab_size % 1000 == 0 else f"{algorithm}-{vocab_size}"


def _cut_all(
    big: Tokenizer, sizes: list[int], big_name: str, algorithm: str
) -> dict[str, tuple[Tokenizer, float]]:
    """Smaller BPE tokenizers cut from ``big`` (saved to a temp folder to read its tokenizer.json)."""
    from tokenloom.text.bpe_cut import cut_bpe
    from tokenloom.text.tokenizer import load_tokenizer

    out: dict[str, tuple[Tokenizer, float]] = {}
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
            tok = load_tokenizer(folder)
            out[_name(algorithm, size)] = (tok, time.perf_counter() - start)
    return out


def _train_all(corpus: Any, config: SweepConfig, quiet: bool) -> tuple[dict[str, Tokenizer], dict[str, Any]]:
    from tokenloom.text.train import train_tokenizer

    tokenizers: dict[str, Tokenizer] = {}
    training: dict[str, dict[str, Any]] = {}
    sizes = sorted(config.vocab_sizes)
    for algorithm in config.algorithms:
        engine = config.engine_for(algorithm)
        cut = config.shortcut and algorithm in _CUTTABLE and engine == "hf" and len(sizes) > 1
        for size in reversed(sizes) if cut else sizes:
            name = _name(algorithm, size)
            if cut and size != sizes[-1]:
                continue
            start = time.perf_counter()
            tokenizers[name] = train_tokenizer(
                corpus, algorithm=algorithm, vocab_size=size, engine=engine,  # type: ignore[arg-type]
                max_bytes=config.max_bytes, seed=config.seed, quiet=quiet,
                pretokenizer=config.pretokenizer if algorithm == "bytelevel-bpe" else None,
            )  # fmt: skip
            training[name] = {"how": "trained", "engine": engine, "seconds": time.perf_counter() - start}
        if cut:
            big = _name(algorithm, sizes[-1])
            for name, (tok, seconds) in _cut_all(tokenizers[big], sizes[:-1], big, algorithm).items():
                tokenizers[name] = tok
                training[name] = {"how": f"cut from {big}", "engine": engine, "seconds": seconds}
    order = [_name(a, v) for a in config.algorithms for v in sizes]
    return {n: tokenizers[n] for n in order}, training


def _table(result: SweepResult, d_model: int) -> pd.DataFrame:
    import pandas as pd

    from tokenloom.costs import embedding_params, tensor_bytes
    from tokenloom.fertility.summary import summarize

    cfg, df = result.config, result.report
    summaries = {s.tokenizer: s for s in summarize(df)}
    rows = []
    for name, tok in result.tokenizers.items():
        algorithm, size = name.rsplit("-", 1)[0], int(tok.vocab_size)
        everything = df[(df["tokenizer"] == name) & (df["slice_kind"] == "all")].iloc[0]
        langs = df[(df["tokenizer"] == name) & (df["slice_kind"] == "language")]
        prem = [
            float(p) for p, s in zip(langs["premium_mean"], langs["slice"], strict=True) if s != cfg.pivot
        ]
        prem = [p for p in prem if math.isfinite(p)]
        params = embedding_params(size, d_model, tied=cfg.tied)
        s = summaries[name]
        rows.append(
            dict(tokenizer=name, algorithm=algorithm, vocab_size=size, engine=result.training[name]["engine"],
                 made=result.training[name]["how"], train_seconds=result.training[name]["seconds"],
                 fertility=float(everything["fertility"]), median_language_fertility=s.median_fertility,
                 premium_median=s.median_premium, premium_spread=(max(prem) - min(prem)) if prem else math.nan,
                 premium_worst=s.worst_premium, premium_gini=s.gini,
                 renyi_efficiency=float(everything["renyi_efficiency"]),
                 byte_fallback_rate=float(everything["byte_fallback_rate"]),
                 embedding_params=params, embedding_bytes=tensor_bytes(params, cfg.dtype))
        )  # fmt: skip
    return pd.DataFrame(rows)


def _languages(result: SweepResult) -> pd.DataFrame:
    import pandas as pd

    from tokenloom.costs import encoder_flops, encoder_kv_cache_bytes
    from tokenloom.encoder.config import EncoderConfig

    cfg, df = result.config, result.report
    model = EncoderConfig.preset(cfg.preset)
    langs = df[df["slice_kind"] == "language"]
    first = next(iter(result.tokenizers))
    ref = langs[(langs["tokenizer"] == first) & (langs["slice"] == cfg.pivot)]
    if ref.empty:
        raise ConfigError(
            f"pivot {cfg.pivot!r} is not a language of the evaluation corpus; name one of its "
            f"<lang>_<Script> files with --pivot (found {sorted(set(langs['slice']))})"
        )
    t0 = int(ref["tokens"].to_numpy()[0])
    rows = []
    columns = (langs[c].tolist() for c in ("tokenizer", "slice", "script", "tokens"))
    for name, lang, script, tokens in zip(*columns, strict=True):
        n = max(1, round(cfg.context * int(tokens) / t0))
        fl = encoder_flops(model, 1, n)
        rows.append(
            dict(tokenizer=name, lang=lang, script=script, tokens=int(tokens), seq_len=n,
                 attention_flops=fl.attention, encoder_flops=fl.total,
                 kv_cache_bytes=encoder_kv_cache_bytes(model, 1, n, cfg.dtype))
        )  # fmt: skip
    return pd.DataFrame(rows)


def vocab_sweep(
    corpus: Any, eval_corpus: Any, config: SweepConfig | None = None, *, quiet: bool = True
) -> SweepResult:
    """Train every (algorithm, vocab size) of ``config`` on ``corpus`` and evaluate all on ``eval_corpus``."""
    from tokenloom.encoder.config import EncoderConfig
    from tokenloom.fertility.report import fertility_report

    config = config or SweepConfig()
    d_model = EncoderConfig.preset(config.preset).width  # fails early on an unknown preset
    tokenizers, training = _train_all(corpus, config, quiet)
    report = fertility_report(
        tokenizers, eval_corpus, pivot=config.pivot, translit=config.translit, quiet=quiet
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
    from tokenloom._atomic import atomic_dir
    from tokenloom.fertility.sweep_writers import write_sweep_files
    from tokenloom.text.tiktoken_export import can_export

    with atomic_dir(out, overwrite=overwrite) as tmp:
        saved = []
        for name, tok in result.tokenizers.items():
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
