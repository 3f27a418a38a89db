"""Count one chunk of a corpus part under every tokenizer: encode, segment words, measure per text.

:class:`ChunkCounter` turns a chunk of texts (consecutive texts of one part) into one
:class:`~tokenloom.fertility.counts.SliceCounts` per tokenizer × slice the texts belong to. Encoding
(:meth:`Tokenizer.encode_flat <tokenloom.text.tokenizer.Tokenizer.encode_flat>`: ids, offsets and round
trips of the whole chunk as flat arrays) is queued on the executor the counter is given
(:meth:`ChunkCounter.submit`), so the engines — which release the GIL — run while the calling thread
transliterates and segments words (:meth:`ChunkCounter.collect`); without an executor it runs in place.
Token and word spans are both in the whole-batch coordinates of :mod:`tokenloom.unicode.flat`, as
:func:`tokenloom.fertility.metrics.count_flat` takes them. A chunk's token ids are reduced to per-text
counts and dropped, so memory follows the chunk size, not the size of a part or of the corpus.

With ``CountOptions(metrics="lengths")`` a chunk is only encoded to tokens per text, in the engine's
ids-only call (:meth:`Tokenizer.count_tokens <tokenloom.text.tokenizer.Tokenizer.count_tokens>`: no offsets,
no decoding, no normalization), and no words are segmented: its
:class:`~tokenloom.fertility.counts.ChunkCounts` hold tokens, characters and bytes, every other per-text
count zero (:func:`lengths_only_counts`). Its reference is the length of each id list of
:meth:`Tokenizer.encode_batch <tokenloom.text.tokenizer.Tokenizer.encode_batch>`. With an executor, chunks
are held and queued together (:meth:`ChunkCounter.flush`, :data:`LENGTHS_BATCH` texts a call): a table
whose languages interleave hands over a small chunk per part, and one call for all of them costs the engine
less than one call each.

Premiums need the pivot's token count of the same content: the counter remembers the pivot part's
per-text token counts by id (one number per pivot text); the pivot part must be counted first. A chunk
submitted with a ``baseline`` (a perturbed copy of a chunk, :mod:`tokenloom.fertility.perturb`) takes
its premium against the baseline chunk's tokens instead: the perturbed text against the clean text.
With a ``reference`` tokenizer, every full chunk is also counted by it (ids only) for the normalized
sequence length; digit runs (:func:`tokenloom.fertility.metrics.digit_runs`) are found once per chunk.
What it does not do: load corpora, decide which slices exist (``slices``), or aggregate across chunks
(``counts``, ``report``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future, wait
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal, TypeAlias

import numpy as np

from tokenloom.corpus.columnar import ramped
from tokenloom.corpus.load import CorpusPart
from tokenloom.fertility import metrics
from tokenloom.fertility.counts import MORE_SUMS, ChunkCounts, SliceCounts
from tokenloom.fertility.lengths import DEFAULT_CONTEXTS
from tokenloom.fertility.slices import SliceConfig, SliceKey, memberships
from tokenloom.text.offsets import FlatBatch
from tokenloom.text.tokenizer import Tokenizer
from tokenloom.unicode import BatchSegmenter

__all__ = [
    "ChunkCounter",
    "CountOptions",
    "Metrics",
    "Pending",
    "lengths_only_counts",
    "part_id",
]

# what a report counts: everything, or documents, bytes, characters, tokens and their length distribution
Metrics: TypeAlias = Literal["full", "lengths"]
# metrics="lengths": texts of consecutive chunks (of any parts) encoded together in one ids-only engine call,
# up to this many; a task's first calls are smaller (``ramped``), so the engine starts soon after the task's
# first rows are read (the table readers hand rows over on the same schedule)
LENGTHS_BATCH = 8192


@dataclass(frozen=True)
class CountOptions:
    """How chunks are encoded (the report's :class:`~tokenloom.fertility.report.ReportConfig` fields)."""

    roundtrip: bool = True  # decode every text for the round-trip exact rate
    batch_size: int = 256  # texts per call of an engine that builds lists (one that gives arrays: a chunk)
    metrics: Metrics = "full"  # "lengths": tokens per text only (see the module docstring)
    contexts: tuple[int, ...] = DEFAULT_CONTEXTS  # context lengths of the length counts


@dataclass(frozen=True)
class Pending:
    """A chunk whose encodings are queued: :meth:`ChunkCounter.collect` counts it."""

    part: CorpusPart
    texts: list[str]
    ids: list[Any]
    start: int  # position in the part of the first text
    encoded: dict[str, Future[FlatBatch | np.ndarray]]  # tokenizer -> its encoding ([n] lengths only)
    reference: Future[FlatBatch | np.ndarray] | None = None  # [n] tokens of the reference tokenizer
    baseline: Pending | None = None  # the clean chunk a perturbed chunk's premium is measured against


def _now(func: Callable[[], FlatBatch | np.ndarray]) -> Future[FlatBatch | np.ndarray]:
    """A finished future: the no-executor path of :meth:`ChunkCounter.submit`."""
    future: Future[FlatBatch | np.ndarray] = Future()
    try:
        future.set_result(func())
    except Exception as exc:  # re-raised by .result(), as an executor would
        future.set_exception(exc)
    return future


def _batch_size(tok: Tokenizer, batch_size: int) -> int | None:
    """Texts per engine call: ``batch_size`` bounds the lists an engine builds; an engine that gives flat
    arrays takes a chunk in one call (a call has a fixed cost)."""
    return None if tok.ids_flat else batch_size


def _split(parts: list[tuple[int, int, Future[FlatBatch | np.ndarray]]], whole: Future[Any]) -> None:
    """Give each chunk's future its ``[lo:hi]`` of a finished joint call (or the call's error)."""
    error = whole.exception()
    for lo, hi, future in parts:
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(whole.result()[lo:hi])


class ChunkCounter:
    """Counts chunks of corpus parts under every tokenizer of a report (see the module docstring)."""

    def __init__(
        self,
        toks: dict[str, Tokenizer],
        *,
        pivot: str | None,
        segmenter: BatchSegmenter,
        options: CountOptions,
        slice_config: SliceConfig,
        executor: Executor | None = None,
        reference: Tokenizer | None = None,
    ) -> None:
        self.toks = toks
        self.reference = reference
        self.pivot = pivot
        self.segmenter = segmenter
        self.options = options
        self.slice_config = slice_config
        self.executor = executor
        self.locks = {n: threading.Lock() for n in toks}  # one tokenizer is never used by two workers
        same = [n for n, t in toks.items() if t is reference]
        self.ref_lock = self.locks[same[0]] if same else threading.Lock()
        self.pivot_tokens: dict[tuple[str, str], dict[Any, int]] = {}  # (tokenizer, align) -> id -> tokens
        self._held: list[tuple[list[str], dict[str, Future[FlatBatch | np.ndarray]]]] = []  # not queued yet
        self._calls = 0  # engine calls of held chunks so far
        self._queued: set[Future[Any]] = set()  # on the executor and not done (a done one leaves: its result
        # is the chunk's, dropped once the chunk is counted)

    def _encode(self, name: str, texts: list[str]) -> FlatBatch | np.ndarray:
        opts = self.options
        with self.locks[name]:
            if opts.metrics == "lengths":  # ids only: no lists to bound, one engine call for the chunk
                return self.toks[name].count_tokens(texts)
            tok = self.toks[name]
            return tok.encode_flat(texts, decode=opts.roundtrip, batch_size=_batch_size(tok, opts.batch_size))

    def _encode_reference(self, texts: list[str]) -> np.ndarray:
        assert self.reference is not None
        with self.ref_lock:
            return self.reference.count_tokens(
                texts, batch_size=_batch_size(self.reference, self.options.batch_size)
            )

    def _queue(
        self, func: Callable[..., FlatBatch | np.ndarray], *args: Any
    ) -> Future[FlatBatch | np.ndarray]:
        if self.executor is None:
            return _now(lambda: func(*args))
        future = self.executor.submit(func, *args)
        self._queued.add(future)
        future.add_done_callback(self._queued.discard)
        return future

    def settle(self) -> None:
        """Wait until every encoding this counter queued has ended (the executor outlives the counter)."""
        wait(list(self._queued))

    def submit(
        self,
        part: CorpusPart,
        texts: list[str],
        ids: list[Any],
        start: int,
        *,
        baseline: Pending | None = None,
    ) -> Pending:
        """Queue the encodings of a chunk (texts ``start ..`` of ``part``) on the executor; ``baseline``:
        the chunk whose tokens this one's premiums are measured against (same texts, unperturbed)."""
        if self.options.metrics == "lengths" and self.executor is not None:
            encoded: dict[str, Future[FlatBatch | np.ndarray]] = {name: Future() for name in self.toks}
            self._held.append((texts, encoded))
            if sum(len(t) for t, _ in self._held) >= ramped(LENGTHS_BATCH, self._calls):
                self.flush()
        else:
            encoded = {name: self._queue(self._encode, name, texts) for name in self.toks}
        ref = None
        if self.reference is not None and self.options.metrics == "full":
            ref = self._queue(self._encode_reference, texts)
        return Pending(part, texts, ids, start, encoded, ref, baseline)

    def flush(self) -> None:
        """Queue the held chunks' texts as one engine call per tokenizer; each chunk's future gets its slice
        of the [n] token counts (``metrics="lengths"``)."""
        held, self._held = self._held, []
        if not held:
            return
        self._calls += 1
        texts = [t for chunk, _ in held for t in chunk]
        bounds = np.cumsum([0] + [len(chunk) for chunk, _ in held]).tolist()  # [chunks + 1]
        for name in self.toks:
            whole = self._queue(self._encode, name, texts)
            parts = [
                (lo, hi, encoded[name])
                for (_, encoded), lo, hi in zip(held, bounds, bounds[1:], strict=False)
            ]  # bounds has one more entry than held
            whole.add_done_callback(partial(_split, parts))

    def _words(self, part: CorpusPart, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """[n] words per text and [W, 2] word spans in whole-batch coordinates."""
        lang = None if part.slice_kind == "code" or part.lang == "und" else part.lang
        return self.segmenter.flat_word_spans(texts, lang)

    def _premium(self, name: str, pending: Pending, tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """[n] premium (0 where not aligned) and [n] aligned of a chunk; remembers the pivot's counts."""
        part, ids, n = pending.part, pending.ids, len(pending.texts)
        if pending.baseline is not None:
            clean = pending.baseline.encoded[name].result()
            piv = (clean.lengths if isinstance(clean, FlatBatch) else clean).astype(np.float64)
            aligned = piv > 0
            return np.divide(tokens, piv, out=np.zeros(n), where=aligned), aligned
        if part.align is None:
            return np.zeros(n), np.zeros(n, dtype=bool)
        if part.slice == self.pivot and part.slice_kind == "language" and not part.generated:
            self.pivot_tokens.setdefault((name, part.align), {}).update(
                zip(ids, tokens.tolist(), strict=True)
            )
        pmap = self.pivot_tokens.get((name, part.align))
        if pmap is None:
            return np.zeros(n), np.zeros(n, dtype=bool)
        piv = np.fromiter((pmap.get(i, 0) for i in ids), dtype=np.float64, count=n)
        aligned = piv > 0
        return np.divide(tokens, piv, out=np.zeros(n), where=aligned), aligned

    def _more(
        self, enc: FlatBatch, bc: metrics.BatchCounts, runs: tuple[np.ndarray, np.ndarray], ref: np.ndarray
    ) -> np.ndarray:
        """[n, len(MORE_SUMS)] the per-text counts beyond the original ones (``counts.MORE_SUMS``)."""
        nc = metrics.count_numbers(enc.offsets, *runs)
        columns = {
            "single": bc.single, "partial": bc.partial, "split_chars": bc.split_chars,
            "unk_chars": bc.unk_chars, "numbers": nc.numbers, "place_value": nc.place_value,
            "multi_digit": nc.multi_digit, "single_digits": nc.single_digits, "placed": nc.placed,
            "expected": nc.expected, "hits": nc.hits, "ref_tokens": ref,
        }  # fmt: skip
        return np.stack([columns[c] for c in MORE_SUMS], axis=1)  # [n, len(MORE_SUMS)]

    def _text_counts(
        self,
        name: str,
        pending: Pending,
        words: np.ndarray,
        flat_words: np.ndarray,
        sizes: np.ndarray,
        runs: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> ChunkCounts:
        """The chunk's counts under one tokenizer; ``runs``: the chunk's digit runs (found when omitted)."""
        tok, texts, n = self.toks[name], pending.texts, len(pending.texts)
        enc = pending.encoded[name].result()
        assert isinstance(enc, FlatBatch)
        bc = metrics.count_flat(
            enc.lengths, enc.ids, enc.offsets, words, flat_words, vocab_size=tok.vocab_size,
            byte_fallback_ids=tok.fallback_ids, unk_id=tok.unk_id,
        )  # fmt: skip
        rt = enc.roundtrip if enc.roundtrip is not None else np.zeros(n, dtype=bool)
        normalized = tok.normalize_batch(texts)
        nc = np.fromiter((a != t for a, t in zip(normalized, texts, strict=True)), dtype=bool, count=n)
        premium, aligned = self._premium(name, pending, bc.tokens)
        ref = pending.reference.result() if pending.reference is not None else np.zeros(n, dtype=np.int64)
        assert isinstance(ref, np.ndarray)
        return ChunkCounts(
            start=pending.start, tokens=bc.tokens, words=words, chars=sizes[0], bytes=sizes[1],
            continued=bc.continued, byte_fallback=bc.byte_fallback, unk=bc.unk, roundtrip=rt,
            norm_changed=nc, premium=premium, aligned=aligned, flat_ids=bc.flat_ids,
            token_text=bc.token_text, id_counts=bc.id_counts,
            more=self._more(enc, bc, runs if runs is not None else metrics.digit_runs(texts), ref),
        )  # fmt: skip

    def collect(self, pending: Pending) -> list[tuple[str, SliceKey, SliceCounts]]:
        """Count a submitted chunk: (tokenizer, slice, counts) for every tokenizer × slice of its texts,
        tokenizers in order, slices in the order of :func:`~tokenloom.fertility.slices.memberships`."""
        part, texts = pending.part, pending.texts
        if not texts:
            return []
        if any(encoded is pending.encoded for _, encoded in self._held):
            self.flush()  # a held chunk is queued before anything waits for it
        lengths_only = self.options.metrics == "lengths"
        words, flat_words = (np.zeros(0), np.zeros(0)) if lengths_only else self._words(part, texts)
        runs = (np.zeros(0), np.zeros(0)) if lengths_only else metrics.digit_runs(texts)
        chars = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
        # UTF-8 bytes: encoding each text is a copy at C speed, cheaper than asking str.isascii() first
        nbytes = np.fromiter(map(len, map(str.encode, texts)), dtype=np.int64, count=len(texts))
        mems = memberships(part, texts, config=self.slice_config)
        out = []
        for name, tok in self.toks.items():
            if lengths_only:
                tokens = pending.encoded[name].result()
                assert isinstance(tokens, np.ndarray)
                counts = lengths_only_counts(pending.start, tokens, chars, nbytes)
            else:
                sizes = np.stack([chars, nbytes])  # [2, n]
                counts = self._text_counts(name, pending, words, flat_words, sizes, runs)
            for m in mems:
                one = SliceCounts.of(
                    counts, m.indices, part=part_id(part), vocab_size=tok.vocab_size,
                    langs=m.langs, scripts=m.scripts, generated=part.generated,
                    contexts=self.options.contexts, keep_open=not lengths_only,
                )  # fmt: skip
                out.append((name, m.key, one))
        return out

    def count(
        self, part: CorpusPart, texts: Sequence[str], ids: Sequence[Any], start: int = 0
    ) -> list[tuple[str, SliceKey, SliceCounts]]:
        """:meth:`submit` then :meth:`collect`."""
        return self.collect(self.submit(part, list(texts), list(ids), start))


def part_id(part: CorpusPart) -> str:
    """The stratum a part's texts are resampled in: its slice (unique in a corpus)."""
    return f"{part.slice_kind}:{part.slice}"


def lengths_only_counts(start: int, tokens: np.ndarray, chars: np.ndarray, nbytes: np.ndarray) -> ChunkCounts:
    """The counts of a chunk of ``[n]`` tokens, characters and bytes per text; every other count zero (no
    words, token ids, round trips, normalization checks or premiums), and no token-id histogram
    (``id_counts=None``: the slices it is counted into hold none either)."""
    n = len(tokens)
    zeros, no = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
    none = np.zeros(0, dtype=np.int64)
    return ChunkCounts(
        start=start, tokens=tokens, words=zeros, chars=chars, bytes=nbytes, continued=zeros,
        byte_fallback=zeros, unk=zeros, roundtrip=no, norm_changed=no, premium=np.zeros(n), aligned=no,
        flat_ids=none, token_text=none, id_counts=None,
    )  # fmt: skip
