"""``fertility_report``: one tidy table of tokenizer × slice metrics (and ``fertility_by_source``).

What it does: turns what it is given into tokenloom ``Tokenizer`` objects once, at the entry
(:func:`~tokenloom.text.adapt.as_tokenizer`: objects, our folders, any ``tokenizer.json`` or sentencepiece
``.model``), loads a corpus (paths or a :class:`~tokenloom.text.corpus.Corpus`), then streams the corpus **part by part**
(one language file at a time), each part **chunk by chunk** (``ReportConfig.chunk_size`` texts): a
:class:`~tokenloom.fertility.counting.ChunkCounter` encodes the chunk with every tokenizer (on the executor
it is given: two background workers while words are segmented and the chunk is transliterated) and turns
it into per-slice :class:`~tokenloom.fertility.counts.SliceCounts`, which the report merges. Only the few
per-text counts the bootstrap needs are kept until the part is closed, so memory follows the chunk size,
not the size of a language part or of the corpus. The pivot part is processed first so that every later
part's premium is computed on the fly from the pivot's per-sentence token counts; a slice becomes a row
(intervals, median, Rényi efficiency) as soon as no later part can add to it.

Intervals are percentile bootstrap intervals over texts, **stratified by part** (texts are resampled within
each language file, keeping the corpus composition fixed): :func:`~tokenloom.fertility.counts.close_part`
resamples each finished part with :func:`metrics.bootstrap_sums`, sums are added across the parts of a
slice, and :func:`metrics.ratio_interval` gives the interval. Deterministic (seeded).

One row per tokenizer × slice (``REPORT_COLUMNS`` are the stable columns other tools read, such as
``tokenloom costs languages``; ``EXTRA_COLUMNS`` follow, then the tokens-per-document columns of
:func:`~tokenloom.fertility.lengths.distribution_columns` for ``ReportConfig.contexts``; their log-spaced
histogram is ``df.attrs["lengths"]``, :mod:`tokenloom.fertility.length_tables`). ``ReportConfig(metrics=
"lengths")`` counts documents, characters, bytes and tokens only (ids-only engine calls, no words, round
trips, offsets, normalization checks, premiums, intervals or transliterated slices): the same columns, the
ones it does not count NaN (``segmenter`` and ``pivot`` empty).
The writers (``write_report``, ``to_markdown``, ``report_table``) live in :mod:`tokenloom.fertility.writers`
and are re-exported here. What it does not do: write files, draw charts (``plots``), decide slices
(``slices``), define metrics (``metrics``), encode or count (``counting``, ``counts``).
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import InitVar, dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from tokenloom._progress import progress
from tokenloom.errors import ConfigError
from tokenloom.fertility import metrics
from tokenloom.fertility.counting import ChunkCounter, CountOptions, Metrics, part_id
from tokenloom.fertility.counts import SliceCounts, close_part
from tokenloom.fertility.length_tables import histogram_frame, histogram_rows
from tokenloom.fertility.lengths import DEFAULT_CONTEXTS, distribution_columns, validate_contexts
from tokenloom.fertility.perturb import Perturbation, parse_perturbations
from tokenloom.fertility.slices import KIND_ORDER, SliceConfig, SliceKey, generated_parts
from tokenloom.fertility.writers import report_table, to_markdown, write_report
from tokenloom.text.adapt import TokenizerLike, as_tokenizer
from tokenloom.text.corpus import Corpus, CorpusPart, load_corpus
from tokenloom.text.tokenizer import Tokenizer
from tokenloom.text.unicode import Segmenter, SegmenterName, batch_segmenter

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "EXTRA_COLUMNS",
    "METRIC_COLUMNS",
    "REPORT_COLUMNS",
    "CorpusLike",
    "ReportConfig",
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


@dataclass(frozen=True)
class ReportConfig:
    """Statistical and slicing knobs of a report (the pivot, translit and segmenter are arguments)."""

    n_boot: int = 1000  # bootstrap resamples behind every interval
    seed: int = 0  # bootstrap seed: the same inputs give the same report
    level: float = 0.95  # interval coverage
    renyi_alpha: float = 2.5  # Rényi order α (Zouhar et al. 2023 find 2.5 correlates best with BLEU)
    batch_size: int = 256  # texts per engine call; its Python lists are turned into arrays per batch
    roundtrip: bool = True  # decode every text for the round-trip exact rate (NaN when off)
    prefetch: bool = True  # encode on two background workers while words are segmented and counted
    chunk_size: int = 1024  # texts counted at once: bounds memory, whatever the size of a language part
    translit_ascii: bool = False  # transliterated slices: Any-Latin, then Latin-ASCII
    mixed_min_share: float = 0.1  # code-mixed: every script counted holds at least this share of letters
    metrics: Metrics = "full"  # "lengths": documents, bytes, characters, tokens and their lengths only
    contexts: tuple[int, ...] = DEFAULT_CONTEXTS  # context lengths of the share columns (tokens, increasing)
    max_unk_chars: float = 0.1  # a pair is invalid above this share of unknown characters (Petrov et al.)
    encode_path: InitVar[str | None] = None  # removed: giving it is an error that says what to do instead

    def __post_init__(self, encode_path: str | None) -> None:
        if encode_path is not None:
            raise ConfigError(
                f"ReportConfig.encode_path={encode_path!r}: there is no encode_path any more; reports always "
                "encode with Tokenizer.encode_flat, which tests compare against the per-text definition "
                "(tokenloom.fertility.reference.encode_flat); drop the argument"
            )
        if not isinstance(self.n_boot, int) or self.n_boot < 0:
            raise ConfigError(
                f"ReportConfig.n_boot must be an int >= 0 (0 = no intervals), got {self.n_boot!r}"
            )
        if not 0.0 < self.level < 1.0:
            raise ConfigError(f"ReportConfig.level must be in (0, 1), e.g. 0.95, got {self.level!r}")
        if not self.renyi_alpha > 0:
            raise ConfigError(f"ReportConfig.renyi_alpha must be > 0, got {self.renyi_alpha!r}")
        if not isinstance(self.batch_size, int) or self.batch_size <= 0:
            raise ConfigError(f"ReportConfig.batch_size must be a positive int, got {self.batch_size!r}")
        if not isinstance(self.chunk_size, int) or self.chunk_size <= 0:
            raise ConfigError(f"ReportConfig.chunk_size must be a positive int, got {self.chunk_size!r}")
        SliceConfig(mixed_min_share=self.mixed_min_share)  # validates the share
        if self.metrics not in ("full", "lengths"):
            raise ConfigError(f"ReportConfig.metrics must be 'full' or 'lengths', got {self.metrics!r}")
        object.__setattr__(self, "contexts", validate_contexts(self.contexts))
        if not 0.0 <= self.max_unk_chars <= 1.0:
            raise ConfigError(
                f"ReportConfig.max_unk_chars must be a share in [0, 1], got {self.max_unk_chars!r}"
            )


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


def _resolve_corpus(corpus: CorpusLike, errors: Literal["strict", "replace"]) -> Corpus:
    if isinstance(corpus, Corpus):
        return corpus
    return load_corpus(corpus, errors=errors)


class _Table:
    """Slice counts of a report, merged chunk by chunk; a slice becomes a row once no later part adds to it."""

    def __init__(
        self,
        toks: dict[str, Tokenizer],
        *,
        config: ReportConfig,
        pivot: str | None,
        segmenter: str,
        reference: str = "",
    ) -> None:
        self.toks = toks
        self.config = config
        self.common = {"segmenter": segmenter, "pivot": pivot or "", "reference": reference}
        self.id_sets: dict[str, dict[str, Any]] = {n: {} for n in toks}  # tokenizer -> language -> id bitset
        self.counts: dict[tuple[str, SliceKey], SliceCounts] = {}
        self.part_keys: dict[str, dict[tuple[str, SliceKey], int]] = {}  # part -> slices it counted toward
        self.rows: dict[tuple[str, SliceKey], dict[str, Any]] = {}
        self.hist: dict[tuple[str, SliceKey], list[tuple[Any, ...]]] = {}  # lengths.csv rows per slice
        self.lang_parts_left: Counter[str] = Counter()  # input parts per language not closed yet

    def add(self, part: CorpusPart, counted: list[tuple[str, SliceKey, SliceCounts]]) -> None:
        """Merge one chunk's counts (:meth:`ChunkCounter.collect`) into the table."""
        seen = self.part_keys.setdefault(part_id(part), {})
        for name, key, one in counted:
            old = self.counts.get((name, key))
            self.counts[(name, key)] = one if old is None else old.merge(one)
            seen.setdefault((name, key), len(seen))

    def close(self, part: CorpusPart, size: int) -> None:
        """Resample the finished part (one bootstrap for all its slices) and finish the slices that no
        later part adds to: the part's own slice (a Corpus has no duplicates) and, after a language's
        last input part, its code-mixed slices."""
        own: SliceKey = (part.slice_kind, part.slice)
        seen = self.part_keys.pop(part_id(part), {})
        rank = {"all": 0, "script": 2, "code_mixed": 3}  # the order of slices.memberships
        names = list(self.toks)
        keys = sorted(seen, key=lambda k: (names.index(k[0]), 1 if k[1] == own else rank[k[1][0]], seen[k]))
        cfg = self.config
        n_boot = cfg.n_boot if cfg.metrics == "full" else 0
        closed = close_part([self.counts[k] for k in keys], part_id(part), size, n_boot=n_boot, seed=cfg.seed)
        self.counts.update(zip(keys, closed, strict=True))
        done: list[SliceKey] = [own]
        if not part.generated:
            self.lang_parts_left[part.lang] -= 1
            if self.lang_parts_left[part.lang] == 0:
                prefix = f"{part.lang}_"
                done += [k for _, k in self.counts if k[0] == "code_mixed" and k[1].startswith(prefix)]
        for name in self.toks:
            for key in done:
                if (name, key) in self.counts:
                    self._finish(name, key)

    def _finish(self, name: str, key: SliceKey) -> None:
        """Turn a slice's counts into its row and drop them (memory does not grow with finished slices)."""
        tok, cfg = self.toks[name], self.config
        counts = self.counts.pop((name, key))
        if counts.lengths is not None:
            self.hist[(name, key)] = histogram_rows(name, key, counts.lengths)
        if cfg.metrics == "lengths":
            metrics_ = counts.finish_lengths()
        else:
            metrics_ = counts.finish(
                vocab_size=tok.vocab_size,
                level=cfg.level,
                renyi_alpha=cfg.renyi_alpha,
                roundtrip=cfg.roundtrip,
                reference=bool(self.common["reference"]),
            )
            metrics_["valid"] = not metrics_["unk_char_rate"] > cfg.max_unk_chars  # NaN: not measured, kept
            if key[0] == "language" and counts.id_counts is not None and tok.capabilities.vocabulary:
                self.id_sets[name][key[1]] = metrics.id_set(counts.id_counts, tok.vocab_size)
        self.rows[(name, key)] = {
            "tokenizer": name, "slice_kind": key[0], "slice": key[1], **metrics_, **self.common,
            "engine": tok.engine, "algorithm": tok.algorithm,
            "vocab_size": tok.vocab_size if tok.capabilities.vocabulary else None,
            **(_missing(tok) if cfg.metrics == "full" else _missing(tok, only_defs=True)),
        }  # fmt: skip

    def _keys(self) -> list[tuple[str, SliceKey]]:
        """Every slice, tokenizers in order, then slice kinds in ``slices.KIND_ORDER``, then labels."""
        for name, key in list(self.counts):
            self._finish(name, key)
        order: dict[str, int] = {k: i for i, k in enumerate(KIND_ORDER)}
        names = list(self.toks)
        return sorted(self.rows, key=lambda k: (names.index(k[0]), order.get(k[1][0], 99), k[1][1]))

    def table(self) -> list[dict[str, Any]]:
        """Every row, in the order of :meth:`_keys`; language rows get the ids no other language uses."""
        keys = self._keys()
        for name, sets in self.id_sets.items():
            for lang, only in metrics.unique_ids(sets).items():
                self.rows[(name, ("language", lang))]["unique_ids"] = only
        return [self.rows[k] for k in keys]

    def overlap(self) -> list[tuple[str, str, str, int, float]]:
        """(tokenizer, language a, language b, shared ids, Jaccard) for every pair of language slices."""
        return [
            (name, a, b, *metrics.id_overlap(sets[a], sets[b]))
            for name, sets in self.id_sets.items()
            for i, a in enumerate(sorted(sets))
            for b in sorted(sets)[i + 1 :]
        ]

    def histogram(self) -> list[tuple[Any, ...]]:
        """Every slice's ``lengths.csv`` rows, slices in the order of :meth:`_keys`."""
        return [row for k in self._keys() for row in self.hist.get(k, [])]


_NEED_OFFSETS = (
    "strr", "partial_token_rate", "split_char_rate", "unk_char_rate", "number_place_value_rate",
    "number_single_digit_rate", "number_boundary_f1",
)  # fmt: skip


def _missing(tok: Tokenizer, *, only_defs: bool = False) -> dict[str, Any]:
    """The definitions of a tokenizer's rates, and NaN for every metric it cannot give (see the columns)."""
    caps, defs = tok.capabilities, tok.definitions
    out: dict[str, Any] = {"byte_fallback_def": defs["byte_fallback"], "unk_def": defs["unk"]}
    if only_defs:
        return out
    gone = {
        "roundtrip_exact_rate": not caps.decode,
        "continued_words": not caps.offsets,
        "renyi_efficiency": not caps.vocabulary,
        "byte_fallback_rate": not caps.vocabulary,  # the definitions then say "missing: no vocabulary"
        "unk_rate": not caps.vocabulary,
        "normalization_changed_rate": not caps.normalizer,
        **dict.fromkeys(_NEED_OFFSETS, not caps.offsets),
        **dict.fromkeys(("distinct_ids", "vocab_share", "unique_ids"), not caps.vocabulary),
    }
    out.update({column: math.nan for column, missing in gone.items() if missing})
    return out


def _count_part(
    counter: ChunkCounter,
    table: _Table,
    part: CorpusPart,
    texts: list[str],
    ids: list[Any],
    *,
    chunk_size: int,
) -> None:
    """Count one part chunk by chunk, with its generated parts (:func:`~tokenloom.fertility.slices.
    generated_parts`: transliterated, numbers, perturbed) beside it, then close them all.

    A chunk's generated texts are made while the engines encode the chunk, and queued at once."""
    extra = generated_parts(part, texts, config=counter.slice_config)
    for start in range(0, len(texts), chunk_size):
        chunk, chunk_ids = texts[start : start + chunk_size], ids[start : start + chunk_size]
        pending = counter.submit(part, chunk, chunk_ids, start)
        queued = [
            counter.submit(
                g.part, g.make(chunk), chunk_ids, start, baseline=pending if g.against_source else None
            )
            for g in extra
        ]
        table.add(part, counter.collect(pending))
        for g, q in zip(extra, queued, strict=True):
            table.add(g.part, counter.collect(q))
    table.close(part, len(texts))
    for g in extra:
        table.close(g.part, len(texts))


def fertility_report(
    tokenizers: Tokenizers,
    corpus: CorpusLike,
    *,
    pivot: str | None = "eng_Latn",
    translit: bool = True,
    segmenter: SegmenterName | Segmenter = "icu",
    config: ReportConfig | None = None,
    errors: Literal["strict", "replace"] = "strict",
    quiet: bool = True,
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
    paths (see :func:`~tokenloom.text.corpus.load_corpus`) or a :class:`~tokenloom.text.corpus.Corpus`.
    ``pivot``: the language slice premiums are measured against (``None`` for none; a pivot absent from a
    corpus that has parallel parts is an error).
    ``translit``: add generated ``<lang>_<Script>_Latn-translit`` slices. ``segmenter``: ``"icu"``,
    ``"whitespace"`` or a :class:`~tokenloom.text.unicode.Segmenter`. ``errors``: undecodable bytes in
    corpus files, ``"strict"`` (error) or ``"replace"`` (count in ``df.attrs["replaced"]``).
    ``reference``: a tokenizer (anything ``tokenizers`` takes) every slice's tokens are compared with
    (``nsl``: tokens / reference tokens, with an interval). ``perturbations``: names of
    :mod:`tokenloom.fertility.perturb` (``"diacritics,case"``, ``"all"``) to add as perturbed slices,
    premiums against the clean text. ``numbers``: add ``<lang>_<Script>_numbers`` slices (digit runs).
    ``df.attrs`` also records the pivot, segmenter and config, and ``df.attrs["vocab_overlap"]`` the
    shared ids and Jaccard overlap of every two languages' id sets per tokenizer.
    """
    import pandas as pd

    config = config or ReportConfig()
    chosen = parse_perturbations(perturbations if isinstance(perturbations, str) else list(perturbations))
    if config.metrics == "lengths":  # no premiums, no generated slices, no words
        pivot, translit, numbers, chosen, reference = None, False, False, (), None
    toks = resolve_tokenizers(tokenizers)
    ref = as_tokenizer(reference) if reference is not None else None
    ref_name = "" if ref is None else next((n for n, t in toks.items() if t is ref), ref.name)
    corp = _resolve_corpus(corpus, errors)
    seg = batch_segmenter(segmenter)
    slice_config = SliceConfig(
        translit=translit, translit_ascii=config.translit_ascii, mixed_min_share=config.mixed_min_share,
        numbers=numbers, perturbations=chosen, seed=config.seed,
    )  # fmt: skip
    ordered = _pivot_first(list(corp), pivot)
    seg_name = seg.name if config.metrics == "full" else ""
    table = _Table(toks, config=config, pivot=pivot, segmenter=seg_name, reference=ref_name)
    table.lang_parts_left.update(p.lang for p in ordered)
    options = CountOptions(
        roundtrip=config.roundtrip,
        batch_size=config.batch_size,
        metrics=config.metrics,
        contexts=config.contexts,
    )
    # two workers: one tokenizer's array work (GIL-bound) overlaps the other's engine call (GIL released)
    pool = (
        ThreadPoolExecutor(max_workers=2, thread_name_prefix="fertility-encode") if config.prefetch else None
    )
    with pool or contextlib.nullcontext():
        counter = ChunkCounter(
            toks, pivot=pivot, segmenter=seg, options=options, slice_config=slice_config, executor=pool,
            reference=ref,
        )  # fmt: skip
        for part in progress(ordered, desc="fertility", unit="part", quiet=quiet):
            texts, ids = part.load()
            _count_part(counter, table, part, texts, ids, chunk_size=config.chunk_size)
            del texts, ids
    columns = [*REPORT_COLUMNS, *EXTRA_COLUMNS, *METRIC_COLUMNS, *distribution_columns(config.contexts)]
    df = pd.DataFrame(table.table(), columns=columns)
    overlap = pd.DataFrame(
        table.overlap(), columns=["tokenizer", "lang_a", "lang_b", "shared_ids", "jaccard"]
    )
    stats = corp.stats
    df.attrs.update(
        pivot=pivot or "", segmenter=seg_name, replaced=stats.replaced,
        replaced_where=list(stats.replaced_where), config=config, metrics=config.metrics,
        lengths=histogram_frame(table.histogram()), rejects=[r.as_row() for r in stats.rejects],
        vocab_overlap=overlap, max_unk_chars=config.max_unk_chars,
    )  # fmt: skip
    if stats.replaced:
        logger.warning(
            "%d invalid UTF-8 sequences replaced by U+FFFD (first at %s)",
            stats.replaced,
            stats.replaced_where[:1],
        )
    return df


def _pivot_first(parts: list[CorpusPart], pivot: str | None) -> list[CorpusPart]:
    """The parts in order, the pivot's first (later parts' premiums need its token counts)."""
    pivots = [p for p in parts if pivot is not None and p.slice == pivot and p.slice_kind == "language"]
    if pivot is not None and not pivots and any(p.align for p in parts):
        available = sorted(p.slice for p in parts if p.align and p.slice_kind == "language")
        raise ConfigError(
            f"pivot {pivot!r} is not in the parallel part of the corpus; choose one of "
            f"{', '.join(available[:12])}{' ...' if len(available) > 12 else ''} (--pivot)"
        )
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
