"""``fertility_report``: one tidy table of tokenizer × slice metrics (and ``fertility_by_source``).

What it does: loads tokenizers (objects, our folders, any ``tokenizer.json`` or sentencepiece ``.model``)
and a corpus (paths or a :class:`~tokenloom.text.corpus.Corpus`), then streams the corpus **part by part**
(one language file at a time): it segments the part's words once for all tokenizers (ICU by default, the
whole part in one call), and for each tokenizer encodes the part with offsets
(:mod:`tokenloom.fertility.encoding`, on two background workers while words are segmented and the part is
transliterated), reduces the token ids to per-text counts (:func:`metrics.count_flat`) and a token-id
histogram, and drops them before the next language. A language's transliterated part is queued for encoding
as soon as it is made, so at most one language's token ids (its texts and their transliteration) are held
per tokenizer: memory does not grow with the number of languages. The pivot part is processed first so that every later part's
premium is computed on the fly from the pivot's per-sentence token counts; a slice is finished (intervals,
median, Rényi efficiency) as soon as no later part can add to it.

Intervals are percentile bootstrap intervals over texts, **stratified by part** (texts are resampled within
each language file, keeping the corpus composition fixed), computed as resampling weights × per-text values
(:func:`metrics.bootstrap_weights`), summed across the parts that make up a slice. Deterministic (seeded).

One row per tokenizer × slice (``REPORT_COLUMNS`` are the cross-area contract; ``EXTRA_COLUMNS`` follow).
The writers (``write_report``, ``to_markdown``, ``format_table``) live in :mod:`tokenloom.fertility.writers`
and are re-exported here. What it does not do: write files, draw charts (``plots``), decide slices
(``slices``), define metrics (``metrics``).
"""

from __future__ import annotations

import functools
import logging
import math
import os
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from tokenloom._progress import progress
from tokenloom.errors import ConfigError
from tokenloom.fertility import metrics
from tokenloom.fertility.encoding import EncodedBatch, EncodePath, encode_part, engine_of
from tokenloom.fertility.slices import Membership, SliceConfig, SliceKey, memberships, translit_part
from tokenloom.fertility.writers import format_table, to_markdown, write_report
from tokenloom.text.corpus import Corpus, CorpusPart, load_corpus
from tokenloom.text.unicode import Segmenter, SegmenterName, get_segmenter

__all__ = [
    "EXTRA_COLUMNS",
    "REPORT_COLUMNS",
    "ReportConfig",
    "fertility_by_source",
    "fertility_report",
    "format_table",
    "to_markdown",
    "write_report",
]

logger = logging.getLogger(__name__)

REPORT_COLUMNS: tuple[str, ...] = (
    "tokenizer", "slice_kind", "slice", "lang", "script", "texts", "tokens", "words", "chars", "bytes",
    "fertility", "fertility_lo", "fertility_hi", "continued_words", "chars_per_token", "bytes_per_token",
    "byte_fallback_rate", "unk_rate", "roundtrip_exact_rate", "normalization_changed_rate", "premium_mean",
    "premium_median", "premium_lo", "premium_hi", "rel_kv_bytes", "rel_attention_work", "renyi_efficiency",
    "segmenter",
)  # fmt: skip
EXTRA_COLUMNS: tuple[str, ...] = ("premium_pairs", "pivot", "engine", "algorithm", "vocab_size", "generated")
_KIND_ORDER = ("all", "language", "script", "code_mixed", "transliterated", "code")


@dataclass(frozen=True)
class ReportConfig:
    """Statistical and slicing knobs of a report (the pivot, translit and segmenter are arguments)."""

    n_boot: int = 1000  # bootstrap resamples behind every interval
    seed: int = 0  # bootstrap seed: the same inputs give the same report
    level: float = 0.95  # interval coverage
    renyi_alpha: float = 2.5  # Rényi order α (Zouhar et al. 2023 find 2.5 correlates best with BLEU)
    batch_size: int = 256  # texts per engine call; its Python lists are turned into arrays per batch
    roundtrip: bool = True  # decode every text for the round-trip exact rate (NaN when off)
    encode_path: EncodePath = "auto"  # engine batch API where available, else "reference" (encoding.py)
    prefetch: bool = True  # encode in a background thread while words are segmented and counted
    translit_ascii: bool = False  # transliterated slices: Any-Latin, then Latin-ASCII
    mixed_min_share: float = 0.1  # code-mixed: every script counted holds at least this share of letters

    def __post_init__(self) -> None:
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
        SliceConfig(mixed_min_share=self.mixed_min_share)  # validates the share
        if self.encode_path not in ("auto", "engine", "reference"):
            raise ConfigError(
                f"ReportConfig.encode_path must be 'auto', 'engine' or 'reference', got {self.encode_path!r}"
            )


@dataclass
class _Acc:
    """Running sums of one tokenizer × slice."""

    texts: int = 0
    tokens: int = 0
    words: int = 0
    chars: int = 0
    bytes: int = 0
    continued: int = 0
    byte_fallback: int = 0
    unk: int = 0
    roundtrip_ok: int = 0
    norm_changed: int = 0
    pairs: int = 0
    premium_sum: float = 0.0
    premiums: list[np.ndarray] = field(default_factory=list)  # aligned per-text premiums (for the median)
    boot: np.ndarray | None = None  # [n_boot, 4]: resampled Σtokens, Σwords, Σpremium, Σaligned
    id_counts: np.ndarray | None = None  # token-id histogram (multi-part slices; dropped once final)
    final: dict[str, float] | None = None  # intervals, median, Rényi: set when the slice is complete
    langs: Counter[str] = field(default_factory=Counter)
    scripts: Counter[str] = field(default_factory=Counter)
    generated: bool = False


def _resolve_tokenizers(tokenizers: Any) -> dict[str, Any]:
    from tokenloom.text.tokenizer import load_tokenizer

    if isinstance(tokenizers, Mapping):
        items = list(tokenizers.items())
    elif isinstance(tokenizers, str | os.PathLike) or hasattr(tokenizers, "encode_batch_with_offsets"):
        items = [(None, tokenizers)]
    else:
        items = [(None, t) for t in tokenizers]
    if not items:
        raise ConfigError("no tokenizers given: pass at least one tokenizer object or path")
    out: dict[str, Any] = {}
    for name, tok in items:
        if isinstance(tok, str | os.PathLike):
            tok = load_tokenizer(tok)
        if not hasattr(tok, "encode_batch_with_offsets"):
            raise ConfigError(f"{tok!r} is not a tokenizer: pass a tokenloom Tokenizer or a path to one")
        label = str(name) if name is not None else str(tok.name)
        base, k = label, 2
        while label in out:  # two files with the same stem: keep both, numbered
            label, k = f"{base}-{k}", k + 1
        out[label] = tok
    return out


def _resolve_corpus(corpus: Any, errors: Literal["strict", "replace"]) -> Corpus:
    if isinstance(corpus, Corpus):
        return corpus
    return load_corpus(corpus, errors=errors)


class _Run:
    """One report computation: accumulators, pivot token counts, and the per-part step."""

    pool: Any = None  # a two-worker ThreadPoolExecutor when prefetching, set by fertility_report

    def __init__(
        self,
        toks: dict[str, Any],
        *,
        pivot: str | None,
        segmenter: Segmenter,
        config: ReportConfig,
        slice_config: SliceConfig,
    ) -> None:
        self.toks = toks
        self.pivot = pivot
        self.segmenter = segmenter
        self.config = config
        self.slice_config = slice_config
        self.accs: dict[tuple[str, SliceKey], _Acc] = {}
        # the engine batch path of each tokenizer (None: reference path), built once
        self.engines = {
            n: (engine_of(t) if config.encode_path != "reference" else None) for n, t in toks.items()
        }
        if config.encode_path == "engine" and any(e is None for e in self.engines.values()):
            missing = [n for n, e in self.engines.items() if e is None]
            raise ConfigError(f"tokenizer(s) {missing} have no engine batch path; use encode_path='auto'")
        self.locks = {n: threading.Lock() for n in toks}
        self.pivot_tokens: dict[tuple[str, str], dict[Any, int]] = {}  # (tokenizer, align) -> id -> tokens
        self.lang_parts_left: Counter[str] = Counter()  # input parts per language not processed yet

    def start_encoding(self, texts: list[str], bases: np.ndarray) -> dict[str, Callable[[], EncodedBatch]]:
        """One getter per tokenizer; with a pool, every encoding of this part is queued on its workers,
        so the engines (which release the GIL) run while this thread segments words and counts."""
        cfg = self.config

        def encode(name: str) -> EncodedBatch:
            with self.locks[name]:  # one tokenizer is never used by two workers at once
                return encode_part(
                    self.toks[name], texts, bases, path=cfg.encode_path, decode=cfg.roundtrip,
                    batch_size=cfg.batch_size, engine=self.engines.get(name),
                )  # fmt: skip

        if self.pool is None:
            return {name: functools.partial(encode, name) for name in self.toks}
        futures = {name: self.pool.submit(encode, name) for name in self.toks}
        return {name: future.result for name, future in futures.items()}

    def part(
        self,
        part: CorpusPart,
        texts: list[str],
        ids: list[Any],
        *,
        meanwhile: Callable[[], Any] | None = None,
        encoded: dict[str, Callable[[], EncodedBatch]] | None = None,
    ) -> Any:
        """Count one part. ``meanwhile``: work that does not need this part's tokens (the next generated
        part's transliteration), run while the engines encode; its result is returned (None if not run).
        ``encoded``: the getters of :meth:`start_encoding` when this part's encoding was queued already."""
        cfg = self.config
        n = len(texts)
        if n == 0:
            return None
        bases = metrics.text_bases(texts)
        if encoded is None:  # in a background thread with prefetch: overlaps below
            encoded = self.start_encoding(texts, bases)
        result = meanwhile() if meanwhile is not None else None
        lang = None if part.slice_kind == "code" or part.lang == "und" else part.lang
        flat_segment = getattr(self.segmenter, "flat_word_spans", None)  # all texts in one call (ICU)
        if flat_segment is not None:
            words, flat_words = flat_segment(texts, lang)  # [n], [W, 2] end-to-end word spans
        else:
            spans = [self.segmenter.word_spans(t, lang) for t in texts]
            words = np.fromiter(map(len, spans), dtype=np.int64, count=n)
            flat_words = metrics.flat_spans(spans, words, bases)  # [W, 2] end-to-end word spans
            del spans
        chars = np.fromiter(map(len, texts), dtype=np.int64, count=n)
        nbytes = np.fromiter((len(t.encode("utf-8")) for t in texts), dtype=np.int64, count=n)
        mems = memberships(part, texts, config=self.slice_config)
        masks = []
        for m in mems:
            mask = np.zeros(n, dtype=bool)
            mask[m.indices if m.indices is not None else slice(None)] = True
            masks.append(mask)
        columns: list[np.ndarray] = []  # per-text values whose bootstrap sums feed the accumulators
        targets: list[tuple[_Acc, int]] = []  # (accumulator, first of its 4 columns)
        is_pivot = part.slice == self.pivot and part.slice_kind == "language" and not part.generated
        for name, tok in self.toks.items():
            enc = encoded[name]()
            bc = metrics.count_flat(
                enc.lengths, enc.ids, enc.offsets, words, flat_words, vocab_size=int(tok.vocab_size),
                byte_fallback_ids=tok.byte_fallback_ids, unk_id=tok.unk_id,
            )  # fmt: skip
            rt = enc.roundtrip if enc.roundtrip is not None else np.zeros(n, dtype=bool)
            del enc
            batch = getattr(tok, "normalize_batch", None)  # one engine call where the tokenizer has it
            normalized = batch(texts) if batch is not None else map(tok.normalize, texts)
            nc = np.fromiter((a != t for a, t in zip(normalized, texts, strict=True)), dtype=bool, count=n)
            if is_pivot and part.align is not None:
                self.pivot_tokens[(name, part.align)] = dict(zip(ids, bc.tokens.tolist(), strict=True))
            pmap = self.pivot_tokens.get((name, part.align)) if part.align is not None else None
            if pmap is not None:
                piv = np.fromiter((pmap.get(i, 0) for i in ids), dtype=np.float64, count=n)
                aligned = piv > 0
                prem = np.divide(bc.tokens, piv, out=np.zeros(n), where=aligned)
            else:
                aligned = np.zeros(n, dtype=bool)
                prem = np.zeros(n)
            for m, mask in zip(mems, masks, strict=True):
                acc = self.accs.setdefault((name, m.key), _Acc())
                self._add(acc, m, mask, bc, words, chars, nbytes, rt, nc, prem, aligned, int(tok.vocab_size))
                acc.generated = part.generated
                targets.append((acc, len(columns)))
                columns += [bc.tokens * mask, words * mask, prem * mask, (aligned & mask).astype(np.float64)]
        if cfg.n_boot > 0:  # a one-text part adds a constant: every resample draws that text
            values = np.stack(columns, axis=1).astype(np.float64)  # [n, 4 * tokenizers * memberships]
            sums = metrics.bootstrap_sums(values, n_boot=cfg.n_boot, seed=cfg.seed)  # [n_boot, K]
            for acc, col in targets:
                block = sums[:, col : col + 4]  # [n_boot, 4]
                acc.boot = block.copy() if acc.boot is None else acc.boot + block
        # finish the slices no later part adds to: a language / code / transliterated part's own slice
        # (Corpus refuses duplicates), and code-mixed slices of a language after its last part
        done = [(part.slice_kind, part.slice)]
        if not part.generated:
            self.lang_parts_left[part.lang] -= 1
            if self.lang_parts_left[part.lang] == 0:
                prefix = f"{part.lang}_"
                done += [k for _, k in self.accs if k[0] == "code_mixed" and k[1].startswith(prefix)]
        for name, tok in self.toks.items():
            for key in done:
                acc = self.accs.get((name, key))
                if acc is not None and acc.final is None:
                    self._finish(acc, tok)
        return result

    def _finish(self, acc: _Acc, tok: Any) -> None:
        """Compute the slice's intervals, median and Rényi efficiency; drop its per-text and per-id arrays
        (so memory does not grow with the number of finished slices)."""
        level = self.config.level
        f_lo = f_hi = p_lo = p_hi = math.nan
        if acc.boot is not None:
            with np.errstate(divide="ignore", invalid="ignore"):
                if acc.words:
                    f_lo, f_hi = metrics.percentile_interval(acc.boot[:, 0] / acc.boot[:, 1], level=level)
                if acc.pairs:
                    p_lo, p_hi = metrics.percentile_interval(acc.boot[:, 2] / acc.boot[:, 3], level=level)
        counts = acc.id_counts if acc.id_counts is not None else np.zeros(1)
        acc.final = {
            "fertility_lo": f_lo,
            "fertility_hi": f_hi,
            "premium_median": float(np.median(np.concatenate(acc.premiums))) if acc.premiums else math.nan,
            "premium_lo": p_lo,
            "premium_hi": p_hi,
            "renyi_efficiency": metrics.renyi_efficiency(
                counts, vocab_size=int(tok.vocab_size), alpha=self.config.renyi_alpha
            ),
        }
        acc.boot = acc.id_counts = None
        acc.premiums = []

    @staticmethod
    def _add(
        acc: _Acc,
        m: Membership,
        mask: np.ndarray,
        bc: metrics.BatchCounts,
        words: np.ndarray,
        chars: np.ndarray,
        nbytes: np.ndarray,
        rt: np.ndarray,
        nc: np.ndarray,
        prem: np.ndarray,
        aligned: np.ndarray,
        vocab: int,
    ) -> None:
        acc.texts += int(mask.sum())
        acc.tokens += int(bc.tokens[mask].sum())
        acc.words += int(words[mask].sum())
        acc.chars += int(chars[mask].sum())
        acc.bytes += int(nbytes[mask].sum())
        acc.continued += int(bc.continued[mask].sum())
        acc.byte_fallback += int(bc.byte_fallback[mask].sum())
        acc.unk += int(bc.unk[mask].sum())
        acc.roundtrip_ok += int(rt[mask].sum())
        acc.norm_changed += int(nc[mask].sum())
        sel = aligned & mask
        acc.pairs += int(sel.sum())
        acc.premium_sum += float(prem[sel].sum())
        if sel.any():
            acc.premiums.append(prem[sel])
        if m.indices is None:
            counts = bc.id_counts
        else:
            counts = np.bincount(bc.flat_ids[mask[bc.token_text]], minlength=vocab)
        acc.id_counts = counts.copy() if acc.id_counts is None else acc.id_counts + counts
        acc.langs.update(m.langs)
        acc.scripts.update(m.scripts)

    def rows(self) -> list[dict[str, Any]]:
        cfg = self.config
        order = {k: i for i, k in enumerate(_KIND_ORDER)}
        names = list(self.toks)
        keys = sorted(self.accs, key=lambda k: (names.index(k[0]), order.get(k[1][0], 99), k[1][1]))
        out = []
        for name, (kind, label) in keys:
            acc, tok = self.accs[(name, (kind, label))], self.toks[name]
            fert = acc.tokens / acc.words if acc.words else math.nan
            if acc.final is None:
                self._finish(acc, tok)
            final = acc.final
            assert final is not None
            pmean = acc.premium_sum / acc.pairs if acc.pairs else math.nan
            out.append(
                {
                    "tokenizer": name,
                    "slice_kind": kind,
                    "slice": label,
                    "lang": _label(acc.langs),
                    "script": _label(acc.scripts),
                    "texts": acc.texts,
                    "tokens": acc.tokens,
                    "words": acc.words,
                    "chars": acc.chars,
                    "bytes": acc.bytes,
                    "fertility": fert,
                    "fertility_lo": final["fertility_lo"],
                    "fertility_hi": final["fertility_hi"],
                    "continued_words": acc.continued / acc.words if acc.words else math.nan,
                    "chars_per_token": acc.chars / acc.tokens if acc.tokens else math.nan,
                    "bytes_per_token": acc.bytes / acc.tokens if acc.tokens else math.nan,
                    "byte_fallback_rate": acc.byte_fallback / acc.tokens if acc.tokens else math.nan,
                    "unk_rate": acc.unk / acc.tokens if acc.tokens else math.nan,
                    "roundtrip_exact_rate": acc.roundtrip_ok / acc.texts
                    if cfg.roundtrip and acc.texts
                    else math.nan,
                    "normalization_changed_rate": acc.norm_changed / acc.texts if acc.texts else math.nan,
                    "premium_mean": pmean,
                    "premium_median": final["premium_median"],
                    "premium_lo": final["premium_lo"],
                    "premium_hi": final["premium_hi"],
                    "rel_kv_bytes": pmean,
                    "rel_attention_work": pmean * pmean,
                    "renyi_efficiency": final["renyi_efficiency"],
                    "segmenter": self.segmenter.name,
                    "premium_pairs": acc.pairs,
                    "pivot": self.pivot or "",
                    "engine": getattr(tok, "engine", "unknown"),
                    "algorithm": getattr(tok, "algorithm", "unknown"),
                    "vocab_size": int(tok.vocab_size),
                    "generated": acc.generated,
                }
            )
        return out


def _translit_and_queue(
    run: _Run, part: CorpusPart, texts: list[str], ids: list[Any], config: SliceConfig
) -> tuple[Any, dict[str, Callable[[], EncodedBatch]] | None]:
    """The generated transliterated part of ``part`` (or None) and, with prefetching, its queued encodings."""
    generated = translit_part(part, texts, ids, config=config)
    if generated is None or run.pool is None or not generated[1]:
        return generated, None
    return generated, run.start_encoding(generated[1], metrics.text_bases(generated[1]))


def _label(counts: Counter[str]) -> str:
    keys = [k for k, v in counts.items() if v > 0]
    return keys[0] if len(keys) == 1 else "mul" if keys else ""


def fertility_report(
    tokenizers: Mapping[str, Any] | Sequence[Any] | Any,
    corpus: Any,
    *,
    pivot: str | None = "eng_Latn",
    translit: bool = True,
    segmenter: SegmenterName | Segmenter = "icu",
    config: ReportConfig | None = None,
    errors: Literal["strict", "replace"] = "strict",
    quiet: bool = True,
) -> Any:
    """Fertility, premium and efficiency of each tokenizer on each slice of ``corpus`` (a pandas DataFrame).

    ``tokenizers``: ``{name: tokenizer or path}``, or a list of tokenizers / paths (named after the
    tokenizer). ``corpus``: a path, a list of paths (see :func:`~tokenloom.text.corpus.load_corpus`) or a
    :class:`~tokenloom.text.corpus.Corpus`. ``pivot``: the language slice premiums are measured against
    (``None`` for none; a pivot absent from a corpus that has parallel parts is an error).
    ``translit``: add generated ``<lang>_<Script>_Latn-translit`` slices. ``segmenter``: ``"icu"``,
    ``"whitespace"`` or a :class:`~tokenloom.text.unicode.Segmenter`. ``errors``: undecodable bytes in
    corpus files, ``"strict"`` (error) or ``"replace"`` (count in ``df.attrs["replaced"]``).
    ``df.attrs`` also records the pivot, segmenter and config.
    """
    import pandas as pd

    config = config or ReportConfig()
    toks = _resolve_tokenizers(tokenizers)
    corp = _resolve_corpus(corpus, errors)
    seg = get_segmenter(segmenter)
    slice_config = SliceConfig(
        translit=translit, translit_ascii=config.translit_ascii, mixed_min_share=config.mixed_min_share
    )
    parts = list(corp)
    pivots = [p for p in parts if pivot is not None and p.slice == pivot and p.slice_kind == "language"]
    if pivot is not None and not pivots and any(p.align for p in parts):
        available = sorted(p.slice for p in parts if p.align and p.slice_kind == "language")
        raise ConfigError(
            f"pivot {pivot!r} is not in the parallel part of the corpus; choose one of "
            f"{', '.join(available[:12])}{' ...' if len(available) > 12 else ''} (--pivot)"
        )
    run = _Run(toks, pivot=pivot, segmenter=seg, config=config, slice_config=slice_config)
    run.lang_parts_left.update(p.lang for p in parts)
    ordered = pivots + [p for p in parts if p not in pivots]
    # two workers: one tokenizer's array work (GIL-bound) overlaps the other's engine call (GIL released)
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="fertility-encode") as pool:
        run.pool = pool if config.prefetch else None
        for part in progress(ordered, desc="fertility", unit="part", quiet=quiet):
            texts, ids = part.load()
            # the transliterated part is made while the engines encode this one (an empty part: none)
            # and queued for encoding at once, so the engines encode it while this part is counted: at most
            # the two parts of one language (its texts and their transliteration) hold token ids at a time
            make = functools.partial(_translit_and_queue, run, part, texts, ids, slice_config)
            generated, queued = run.part(part, texts, ids, meanwhile=make) or (None, None)
            if generated is not None:
                run.part(generated[0], generated[1], ids, encoded=queued)
            del texts, ids
    df = pd.DataFrame(run.rows(), columns=[*REPORT_COLUMNS, *EXTRA_COLUMNS])
    df.attrs.update(
        pivot=pivot or "",
        segmenter=seg.name,
        replaced=corp.stats.replaced,
        replaced_where=list(corp.stats.replaced_where),
        config=config,
    )
    if corp.stats.replaced:
        logger.warning(
            "%d invalid UTF-8 sequences replaced by U+FFFD (first at %s)",
            corp.stats.replaced,
            corp.stats.replaced_where[:1],
        )
    return df


def fertility_by_source(tokenizer: Any, records: Iterable[tuple[str, str]], *, n_boot: int = 200) -> Any:
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
