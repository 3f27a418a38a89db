"""``fertility_report``: one tidy table of tokenizer × slice metrics (and ``fertility_by_source``).

What it does: turns what it is given into tokenloom ``Tokenizer`` objects once, at the entry
(:func:`~tokenloom.text.adapt.as_tokenizer`: objects, our folders, any ``tokenizer.json`` or sentencepiece
``.model``), then counts the corpus into a :class:`~tokenloom.fertility.accumulate.SliceTable`:

- a corpus given by **paths** is cut into tasks (:mod:`tokenloom.corpus.plan`: a file part, a
  range of Parquet row groups, a byte range of a large file) and counted by :mod:`tokenloom.fertility.runner`
  — in this process, in ``RunConfig(workers=N)`` processes or as Ray tasks, resumably — each task
  **chunk by chunk** (``ReportConfig.chunk_size`` texts of a part at a time, never a whole file);
- a :class:`~tokenloom.corpus.load.Corpus` or an in-memory corpus is counted here, part by part.

Either way a :class:`~tokenloom.fertility.counting.ChunkCounter` encodes each chunk with every tokenizer
(on two background threads while words are segmented and the chunk is transliterated) and turns it into
per-slice :class:`~tokenloom.fertility.counts.SliceCounts`, which merge exactly: both ways give the same
report. Only the few per-text counts the bootstrap needs are kept until a part is closed. The pivot's
texts are counted first so that every later text's premium is computed on the fly from the pivot's
per-sentence token counts; a slice becomes a row (intervals, median, Rényi efficiency) once no later part
can add to it.

Intervals are percentile bootstrap intervals over texts, **stratified by part** (texts are resampled within
each language file, keeping the corpus composition fixed): :func:`~tokenloom.fertility.counts.close_part`
resamples each finished part with :func:`bootstrap.bootstrap_sums`, sums are added across the parts of a
slice, and :func:`bootstrap.ratio_interval` gives the interval. Deterministic (seeded).

One row per tokenizer × slice (``REPORT_COLUMNS`` are the stable columns other tools read, such as
``tokenloom costs languages``; ``EXTRA_COLUMNS`` follow, then the tokens-per-document columns of
:func:`~tokenloom.fertility.lengths.distribution_columns` for ``ReportConfig.contexts``; their log-spaced
histogram is ``df.attrs["lengths"]``, :mod:`tokenloom.fertility.length_tables`). ``ReportConfig(metrics=
"lengths")`` counts documents, characters, bytes and tokens only (ids-only engine calls, no words, round
trips, offsets, normalization checks, premiums, intervals, transliterated or code-mixed slices): the same columns, the
ones it does not count NaN (``segmenter`` and ``pivot`` empty).
The writers (``write_report``, ``to_markdown``, ``report_table``) live in :mod:`tokenloom.fertility.writers`
and are re-exported here. What it does not do: write files, draw charts (``plots``), decide slices
(``slices``), define metrics (``metrics``), encode or count (``counting``, ``counts``).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, TypeAlias

from tokenloom._progress import progress
from tokenloom.corpus.load import UNLABELLED, Corpus, CorpusPart, load_corpus
from tokenloom.corpus.plan import plan_corpus_tasks
from tokenloom.corpus.reader import is_paths
from tokenloom.corpus.records import BATCH_ERRORS, Columns, Errors
from tokenloom.errors import ConfigError
from tokenloom.fertility.accumulate import SliceTable, count_part
from tokenloom.fertility.counting import ChunkCounter, CountOptions
from tokenloom.fertility.length_tables import histogram_frame
from tokenloom.fertility.lengths import distribution_columns
from tokenloom.fertility.perturb import Perturbation, parse_perturbations
from tokenloom.fertility.report_config import ReportConfig
from tokenloom.fertility.runner import Counting, RunConfig, check_pivot, count_corpus
from tokenloom.fertility.slices import SliceConfig
from tokenloom.fertility.writers import report_table, to_markdown, write_report
from tokenloom.text.adapt import TokenizerLike, as_tokenizer
from tokenloom.text.tokenizer import Tokenizer
from tokenloom.unicode import Segmenter, SegmenterName, batch_segmenter

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "EXTRA_COLUMNS",
    "METRIC_COLUMNS",
    "REPORT_COLUMNS",
    "CorpusLike",
    "ReportConfig",
    "RunConfig",
    "Tokenizers",
    "fertility_by_source",
    "fertility_report",
    "report_table",
    "to_markdown",
    "write_report",
]

logger = logging.getLogger(__name__)

# what the entry points take: one tokenizer, a list of them (named after each), or {name: tokenizer}
Tokenizers: TypeAlias = TokenizerLike | Mapping[str, TokenizerLike] | Sequence[TokenizerLike]
# a corpus: a Corpus, or the paths load_corpus takes
CorpusLike: TypeAlias = Corpus | str | os.PathLike[str] | Iterable[str | os.PathLike[str]]

REPORT_COLUMNS: tuple[str, ...] = (
    "tokenizer", "slice_kind", "slice", "lang", "script", "texts", "tokens", "words", "chars", "bytes",
    "fertility", "fertility_lo", "fertility_hi", "continued_words", "chars_per_token", "bytes_per_token",
    "byte_fallback_rate", "unk_rate", "roundtrip_exact_rate", "normalization_changed_rate", "premium_mean",
    "premium_median", "premium_lo", "premium_hi", "rel_kv_bytes", "rel_attention_work", "renyi_efficiency",
    "segmenter",
)  # fmt: skip
EXTRA_COLUMNS: tuple[str, ...] = (
    "premium_pairs", "pivot", "engine", "algorithm", "vocab_size", "generated", "byte_fallback_def", "unk_def",
)  # fmt: skip
# retention, UTF-8 integrity, validity, vocabulary use, the reference tokenizer and numbers (metrics)
METRIC_COLUMNS: tuple[str, ...] = (
    "strr", "partial_token_rate", "split_char_rate", "unk_char_rate", "valid", "distinct_ids", "vocab_share",
    "unique_ids", "nsl", "nsl_lo", "nsl_hi", "reference", "numbers", "number_place_value_rate",
    "number_single_digit_rate", "number_boundary_f1",
)  # fmt: skip


def resolve_tokenizers(tokenizers: Tokenizers) -> dict[str, Tokenizer]:
    """Name -> :class:`Tokenizer`, each through :func:`~tokenloom.text.adapt.as_tokenizer` (the one place
    the entry points turn what they are given into tokenizers); two with the same name are numbered."""
    items: list[tuple[str | None, TokenizerLike]]
    if isinstance(tokenizers, Mapping):
        items = list(tokenizers.items())
    elif isinstance(tokenizers, Sequence) and not isinstance(tokenizers, str):
        items = [(None, t) for t in tokenizers]
    else:
        items = [(None, tokenizers)]
    if not items:
        raise ConfigError("no tokenizers given: pass at least one tokenizer object or path")
    out: dict[str, Tokenizer] = {}
    for name, given in items:
        tok = as_tokenizer(given)
        label = str(name) if name is not None else tok.name
        base, k = label, 2
        while label in out:  # two files with the same stem: keep both, numbered
            label, k = f"{base}-{k}", k + 1
        out[label] = tok
    return out


def fertility_report(
    tokenizers: Tokenizers,
    corpus: CorpusLike,
    *,
    pivot: str | None = "eng_Latn",
    translit: bool = True,
    segmenter: SegmenterName | Segmenter = "icu",
    config: ReportConfig | None = None,
    errors: Errors = BATCH_ERRORS,
    quiet: bool = True,
    run: RunConfig | None = None,
    text_column: str | None = None,
    lang_column: str | None = None,
    script_column: str | None = None,
    align_column: str | None = None,
    reference: TokenizerLike | None = None,
    perturbations: str | Sequence[Perturbation] = (),
    numbers: bool = True,
) -> pd.DataFrame:
    """Fertility, premium and efficiency of each tokenizer on each slice of ``corpus`` (a pandas DataFrame).

    ``tokenizers``: ``{name: tokenizer or path}``, a list of them (named after the tokenizer) or one. A
    tokenizer is anything :func:`~tokenloom.text.adapt.as_tokenizer` takes: a tokenloom ``Tokenizer``, a
    ``tokenizers.Tokenizer``, a ``SentencePieceProcessor``, a ``transformers`` tokenizer, a ``tiktoken.Encoding``
    (or an object with ``encode``/``decode``), a function ``text -> ids`` or a path; special tokens are never
    added. Metrics adapt to the family (columns ``byte_fallback_def``, ``unk_def``); what an engine cannot give
    (a function has no decoder, vocabulary or offsets) is NaN, not guessed. ``corpus``: a path, a list of
    paths (see :func:`~tokenloom.corpus.load.load_corpus`) or a :class:`~tokenloom.corpus.load.Corpus`.
    ``pivot``: the language slice premiums are measured against (``None`` for none; a pivot absent from a
    corpus that has parallel parts is an error in every mode, ``metrics="lengths"`` included).
    ``translit``: add generated ``<lang>_<Script>_Latn-translit`` slices. ``segmenter``: ``"icu"``,
    ``"whitespace"`` or a :class:`~tokenloom.unicode.Segmenter`. ``errors``: bad input in
    corpus files, ``"skip"`` (the default of every batch job, ``tokenloom.corpus.records.BATCH_ERRORS``: every
    bad line, row or file set aside in ``df.attrs["rejects"]``, counted by the summary), ``"strict"`` (an
    error at the first) or ``"replace"`` (invalid UTF-8 replaced, counted in ``df.attrs["replaced"]``).
    ``run``: how a corpus given by paths is counted (:class:`~tokenloom.fertility.runner.RunConfig`:
    worker processes, Ray, a state folder to resume from); the report does not depend on it.
    ``text_column`` / ``lang_column`` / ``script_column``: the cells of table rows holding the text and
    its labels; ``align_column``: a translation key aligning table rows across languages (premiums), off
    by default (see :func:`~tokenloom.corpus.load.load_corpus`). ``df.attrs`` also records the pivot,
    segmenter, config, the rejects, the length histogram and ``tasks`` (``{"tasks": N, "resumed": K}``).
    ``reference``: a tokenizer (anything ``tokenizers`` takes) every slice's tokens are compared with
    (``nsl``: tokens / reference tokens, with an interval). ``perturbations``: names of
    :mod:`tokenloom.fertility.perturb` (``"diacritics,case"``, ``"all"``) to add as perturbed slices,
    premiums against the clean text. ``numbers``: add ``<lang>_<Script>_numbers`` slices (digit runs).
    ``df.attrs["vocab_overlap"]``: the shared ids and Jaccard overlap of every two languages' id sets;
    ``df.attrs["unlabelled"]``: the text files read as language ``und`` (their names are no language code).
    """
    import pandas as pd

    config, run = config or ReportConfig(), run or RunConfig()
    chosen = parse_perturbations(perturbations if isinstance(perturbations, str) else list(perturbations))
    if config.metrics == "lengths":  # no premiums, no generated slices, no words; the pivot is checked
        translit, numbers, chosen, reference = False, False, (), None
    toks = resolve_tokenizers(tokenizers)
    ref = as_tokenizer(reference) if reference is not None else None
    ref_name = "" if ref is None else next((n for n, t in toks.items() if t is ref), ref.name)
    seg = batch_segmenter(segmenter)
    seg_name = seg.name if config.metrics == "full" else ""
    columns = Columns.of(text_column, lang_column, script_column, align_column)
    counting = Counting(
        toks, pivot, segmenter if isinstance(segmenter, str) else seg, config,
        SliceConfig(
            translit=translit, translit_ascii=config.translit_ascii, mixed_min_share=config.mixed_min_share,
            code_mixed=config.metrics == "full", numbers=numbers, perturbations=chosen, seed=config.seed,
        ),
        columns, errors, ref,
    )  # fmt: skip
    premium_pivot = pivot if config.metrics == "full" else None
    table = SliceTable(toks, config=config, pivot=premium_pivot, segmenter=seg_name, reference=ref_name)
    if is_paths(corpus):
        tasks = plan_corpus_tasks(corpus, errors=errors, columns=columns, chunk_bytes=run.task_bytes)  # type: ignore[arg-type]
        stats, summary = count_corpus(table, tasks, counting, run, quiet=quiet)
        parts = list(dict.fromkeys(t.part for t in tasks if t.part is not None))
    else:
        if run != RunConfig():
            raise ConfigError(
                "workers, Ray and resume read a corpus task by task from its files: give the corpus as "
                "paths (a Corpus object or in-memory texts are counted in this process)"
            )
        corp = (
            corpus
            if isinstance(corpus, Corpus)
            else load_corpus(
                corpus,
                errors=errors,
                text_column=text_column,
                lang_column=lang_column,
                script_column=script_column,
                align_column=align_column,
            )
        )
        _count_in_process(table, corp, counting, quiet=quiet)
        stats, summary, parts = corp.stats, {"tasks": len(corp), "resumed": 0}, list(corp)
    columns_ = [*REPORT_COLUMNS, *EXTRA_COLUMNS, *METRIC_COLUMNS, *distribution_columns(config.contexts)]
    df = pd.DataFrame(table.table(), columns=columns_)
    overlap = pd.DataFrame(
        table.overlap(), columns=["tokenizer", "lang_a", "lang_b", "shared_ids", "jaccard"]
    )
    df.attrs.update(
        pivot=premium_pivot or "", segmenter=seg_name, replaced=stats.replaced,
        replaced_where=list(stats.replaced_where), config=config, metrics=config.metrics,
        lengths=histogram_frame(table.histogram()), rejects=[r.as_row() for r in stats.rejects],
        tasks=summary, vocab_overlap=overlap, max_unk_chars=config.max_unk_chars,
        unlabelled=[str(p) for part in parts if part.slice == UNLABELLED for p in part.paths],
    )  # fmt: skip
    if stats.replaced:
        logger.warning(
            "%d invalid UTF-8 sequences replaced by U+FFFD (first at %s)",
            stats.replaced,
            stats.replaced_where[:1],
        )
    return df


def _count_in_process(table: SliceTable, corp: Corpus, counting: Counting, *, quiet: bool) -> None:
    """Count a corpus given as parts (a :class:`Corpus`), part by part in this process, pivot first."""
    cfg = counting.config
    ordered = _pivot_first(list(corp), counting.pivot)
    table.lang_parts_left.update(p.lang for p in ordered)
    options = CountOptions(
        roundtrip=cfg.roundtrip, batch_size=cfg.batch_size, metrics=cfg.metrics, contexts=cfg.contexts
    )
    # two workers: one tokenizer's array work (GIL-bound) overlaps the other's engine call (GIL released)
    pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="fertility-encode") if cfg.prefetch else None
    with pool or contextlib.nullcontext():
        counter = ChunkCounter(
            counting.toks, pivot=counting.pivot, segmenter=batch_segmenter(counting.segmenter),
            options=options, slice_config=counting.slice_config, executor=pool, reference=counting.reference,
        )  # fmt: skip
        for part in progress(ordered, desc="fertility", unit="part", quiet=quiet):
            texts, ids = part.load()
            count_part(counter, table, part, texts, ids, chunk_size=cfg.chunk_size)
            del texts, ids


def _pivot_first(parts: list[CorpusPart], pivot: str | None) -> list[CorpusPart]:
    """The parts in order, the pivot's first (later parts' premiums need its token counts)."""
    check_pivot(parts, pivot)
    pivots = [p for p in parts if pivot is not None and p.slice == pivot and p.slice_kind == "language"]
    return pivots + [p for p in parts if p not in pivots]


def fertility_by_source(
    tokenizer: TokenizerLike, records: Iterable[tuple[str, str]], *, n_boot: int = 200
) -> pd.DataFrame:
    """Per-script and per-language fertility of one tokenizer on ``(source name, text)`` records.

    For trainers' held-out samples: a source named ``<lang>_<Script>`` (``eng_Latn.txt``, any path ending so)
    gives a language row; every text counts toward its script row (labelled or detected) and the ``all``
    row. Same columns as :func:`fertility_report`; no pivot, no transliteration.
    """
    corpus = Corpus.from_records(records)
    df = fertility_report([tokenizer], corpus, pivot=None, translit=False, config=ReportConfig(n_boot=n_boot))
    keep = df["slice_kind"].isin(["all", "script"]) | (
        (df["slice_kind"] == "language") & (df["lang"] != "und")
    )
    return df[keep].reset_index(drop=True)
