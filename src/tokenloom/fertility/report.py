"""``fertility_report``: one tidy table of tokenizer × slice metrics (and ``fertility_by_source``).

What it does: turns what it is given into tokenloom ``Tokenizer`` objects once, at the entry
(:func:`~tokenloom.text.adapt.as_tokenizer`: objects, our folders, any ``tokenizer.json`` or sentencepiece
``.model``), maps its keyword conveniences into the :class:`ReportConfig` (what is measured;
:meth:`ReportConfig.given`), plans the corpus into tasks (:func:`~tokenloom.corpus.plan.plan_corpus_tasks`:
a file part, a range of Parquet row groups, a byte range of a large file — or, for a
:class:`~tokenloom.corpus.parts.Corpus` or an in-memory corpus, one task holding it) and counts them into a
:class:`~tokenloom.fertility.accumulate.SliceTable` by :mod:`tokenloom.fertility.runner`, the one counting
route — in this process, in ``RunConfig(workers=N)`` processes or as Ray tasks, resumably (how it runs is
the :class:`RunConfig`) — each task **chunk by chunk** (``ReportConfig.chunk_size`` texts of a part at a
time, never a whole file).

A :class:`~tokenloom.fertility.counting.ChunkCounter` encodes each chunk with every tokenizer
(on two background threads while words are segmented and the chunk is transliterated) and turns it into
per-slice :class:`~tokenloom.fertility.counts.SliceCounts`, which merge exactly: however the tasks run, the
report is the same. Only the few per-text counts the bootstrap needs are kept until a part is closed. The
pivot's texts are counted first so that every later text's premium is computed on the fly from the pivot's
per-sentence token counts; a slice becomes a row (intervals, median, Rényi efficiency) once no later part
can add to it. What a premium costs (``rel_kv_bytes``, ``rel_attention_work``) is added to the table after
counting, by :func:`tokenloom.costs.languages.premium_cost_columns`: counting never reaches the cost model.

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

import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, TypeAlias

from tokenloom.corpus.load import UNLABELLED, Corpus
from tokenloom.corpus.plan import plan_corpus_tasks, task_parts
from tokenloom.corpus.records import Errors
from tokenloom.costs.languages import premium_cost_columns
from tokenloom.errors import ConfigError
from tokenloom.fertility.accumulate import SliceTable
from tokenloom.fertility.length_tables import histogram_frame
from tokenloom.fertility.lengths import distribution_columns
from tokenloom.fertility.perturb import Perturbation
from tokenloom.fertility.report_config import KEEP, Keep, ReportConfig
from tokenloom.fertility.runner import Counting, RunConfig, count_corpus
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
    config: ReportConfig | None = None,
    run: RunConfig | None = None,
    quiet: bool = True,
    reference: TokenizerLike | None = None,
    pivot: str | Keep | None = KEEP,
    translit: bool | Keep = KEEP,
    segmenter: SegmenterName | Segmenter | Keep = KEEP,
    errors: Errors | Keep = KEEP,
    text_column: str | Keep | None = KEEP,
    lang_column: str | Keep | None = KEEP,
    script_column: str | Keep | None = KEEP,
    align_column: str | Keep | None = KEEP,
    perturbations: str | Sequence[Perturbation] | Keep = KEEP,
    numbers: bool | Keep = KEEP,
) -> pd.DataFrame:
    """Fertility, premium and efficiency of each tokenizer on each slice of ``corpus`` (a pandas DataFrame).

    ``tokenizers``: ``{name: tokenizer or path}``, a list of them (named after the tokenizer) or one. A
    tokenizer is anything :func:`~tokenloom.text.adapt.as_tokenizer` takes: a tokenloom ``Tokenizer``, a
    ``tokenizers.Tokenizer``, a ``SentencePieceProcessor``, a ``transformers`` tokenizer, a ``tiktoken.Encoding``
    (or an object with ``encode``/``decode``), a function ``text -> ids`` or a path; special tokens are never
    added. Metrics adapt to the family (columns ``byte_fallback_def``, ``unk_def``); what an engine cannot give
    (a function has no decoder, vocabulary or offsets) is NaN, not guessed. ``corpus``: a path, a list of
    paths (see :func:`~tokenloom.corpus.load.load_corpus`), a :class:`~tokenloom.corpus.parts.Corpus` or an
    in-memory corpus (one task of the plan, :func:`~tokenloom.corpus.plan.plan_corpus_tasks`).
    ``config``: what is measured (:class:`ReportConfig`); each keyword below that is given replaces the
    config's field of the same name (:meth:`ReportConfig.given`), so ``pivot="fra_Latn"`` and
    ``config=ReportConfig(pivot="fra_Latn")`` are one report. ``pivot``: the language slice premiums are measured against (``None`` for none; a pivot absent from a
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

    config = (config or ReportConfig()).given(
        pivot=pivot, translit=translit, segmenter=segmenter, errors=errors, text_column=text_column,
        lang_column=lang_column, script_column=script_column, align_column=align_column,
        perturbations=perturbations, numbers=numbers,
    )  # fmt: skip
    run = run or RunConfig()
    toks = resolve_tokenizers(tokenizers)
    ref = as_tokenizer(reference) if reference is not None and config.metrics == "full" else None
    ref_name = "" if ref is None else next((n for n, t in toks.items() if t is ref), ref.name)
    seg = batch_segmenter(config.segmenter)  # an unknown segmenter is an error in every mode
    seg_name = seg.name if config.metrics == "full" else ""
    premium_pivot = config.premium_pivot
    table = SliceTable(toks, config=config, pivot=premium_pivot, segmenter=seg_name, reference=ref_name)
    tasks = plan_corpus_tasks(
        corpus, errors=config.errors, columns=config.columns, chunk_bytes=run.task_bytes
    )
    parts = task_parts(tasks)  # the parts named before reading (a table's are known once read)
    stats, summary = count_corpus(table, tasks, parts, Counting(toks, config, ref), run, quiet=quiet)
    columns_ = [*REPORT_COLUMNS, *EXTRA_COLUMNS, *METRIC_COLUMNS, *distribution_columns(config.contexts)]
    df = pd.DataFrame(table.table(), columns=columns_)
    for name, values in premium_cost_columns(df["premium_mean"]).items():  # costs: after counting
        df[name] = pd.Series(values, index=df.index, dtype="float64")
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
