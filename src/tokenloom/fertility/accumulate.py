"""The slice table of a report: counts merged chunk by chunk and task by task, then turned into rows.

:class:`SliceTable` holds one :class:`~tokenloom.fertility.counts.SliceCounts` per tokenizer × slice.
:func:`count_part` feeds it a part read whole, chunk by chunk (with its generated transliterated part
beside it), and closes the part (its bootstrap); :func:`submit_piece` and :func:`collect_piece` feed it
consecutive texts of a part whose texts are spread over several tasks, leaving the part open (a caller
reads the next piece while the engines encode this one). A table built by a worker for one task
is merged into the report's with :meth:`SliceTable.merge_task`, which shifts the positions of open parts'
texts past the pieces merged before, so merging the tasks' tables in plan order gives the counts of one
pass. A slice becomes a row (:meth:`SliceTable.table`) once no later part can add to it; the rows'
columns are :class:`~tokenloom.fertility.counts.SliceCounts`'s, with the tokenizer's definitions and NaN
for what it cannot give. What it does not do: read corpora, schedule tasks, encode (``counting``).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

from tokenloom.corpus.parts import CorpusPart
from tokenloom.errors import CorpusError
from tokenloom.fertility import metrics
from tokenloom.fertility.counting import ChunkCounter, Pending, part_id
from tokenloom.fertility.counts import SliceCounts, close_part
from tokenloom.fertility.length_tables import BINS_PER_DECADE
from tokenloom.fertility.lengths import LengthCounts
from tokenloom.fertility.report_config import ReportConfig
from tokenloom.fertility.slices import KIND_ORDER, SliceKey, generated_parts
from tokenloom.text.tokenizer import Tokenizer

__all__ = ["SliceTable", "TaskCounts", "collect_piece", "count_part", "histogram_rows", "submit_piece"]

Key = tuple[str, SliceKey]  # (tokenizer, slice)


@dataclass
class TaskCounts:
    """What a worker's table holds after one task: plain data that pickles without the tokenizers."""

    counts: dict[Key, SliceCounts]
    part_keys: dict[str, dict[Key, int]]  # open part -> the slices it counted toward
    open_parts: dict[str, list[Any]]  # open part -> [part, texts of it in the task]
    whole: list[CorpusPart]  # parts read whole and closed by the worker


class SliceTable:
    """Slice counts of a report (see the module docstring)."""

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
        self.counts: dict[Key, SliceCounts] = {}
        self.part_keys: dict[str, dict[Key, int]] = {}  # part -> slices it counted toward
        self.rows: dict[Key, dict[str, Any]] = {}
        self.hist: dict[Key, list[tuple[Any, ...]]] = {}  # lengths.csv rows per slice
        self.lang_parts_left: Counter[str] = Counter()  # input parts per language not closed yet
        self.open_parts: dict[str, list[Any]] = {}  # part id -> [part, texts so far]: spread over tasks
        self.sources: dict[SliceKey, str] = {}  # slice -> the source of its part (merged tasks)

    def add(self, part: CorpusPart, counted: list[tuple[str, SliceKey, SliceCounts]]) -> None:
        """Merge one chunk's counts (:meth:`ChunkCounter.collect`) into the table."""
        seen = self.part_keys.setdefault(part_id(part), {})
        for name, key, one in counted:
            old = self.counts.get((name, key))
            self.counts[(name, key)] = one if old is None else old.merge(one)
            seen.setdefault((name, key), len(seen))

    def close(self, part: CorpusPart, size: int, *, finish: bool = True) -> None:
        """Resample the finished part (one bootstrap for all its slices) and, with ``finish``, finish the
        slices that no later part adds to (:meth:`done`)."""
        own: SliceKey = (part.slice_kind, part.slice)
        seen = self.part_keys.pop(part_id(part), {})
        rank = {"all": 0, "script": 2, "code_mixed": 3}  # the order of slices.memberships
        names = list(self.toks)
        keys = sorted(seen, key=lambda k: (names.index(k[0]), 1 if k[1] == own else rank[k[1][0]], seen[k]))
        cfg = self.config
        n_boot = cfg.n_boot if cfg.metrics == "full" else 0
        closed = close_part([self.counts[k] for k in keys], part_id(part), size, n_boot=n_boot, seed=cfg.seed)
        self.counts.update(zip(keys, closed, strict=True))
        if finish:
            self.done(part)

    def done(self, part: CorpusPart) -> None:
        """Finish the slices a closed part ends: its own slice (a Corpus has no duplicates) and, after a
        language's last input part, its code-mixed slices."""
        own: SliceKey = (part.slice_kind, part.slice)
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

    def export(self, whole: list[CorpusPart]) -> TaskCounts:
        """The counts of a worker's table, ``whole`` the parts it closed."""
        return TaskCounts(self.counts, self.part_keys, self.open_parts, whole)

    def merge_task(self, other: TaskCounts) -> None:
        """Merge the counts a worker made of one task: its whole parts are closed there and end their
        slices here; its open parts' texts are placed after those of the tasks merged before."""
        for part in [*other.whole, *(entry[0] for entry in other.open_parts.values())]:
            first = self.sources.setdefault((part.slice_kind, part.slice), part.source)
            if first != part.source:
                raise CorpusError(
                    f"slice {part.slice!r} ({part.slice_kind}) comes from more than one input: {first}, "
                    f"{part.source}; give each file its own language label or pass only one of them"
                )
        offsets = {pid: entry[1] for pid, entry in self.open_parts.items()}
        for key, counts in other.counts.items():
            old = self.counts.get(key)
            moved = counts.moved(offsets)
            self.counts[key] = moved if old is None else old.merge(moved)
        for pid, (part, n) in other.open_parts.items():
            entry = self.open_parts.setdefault(pid, [part, 0])
            entry[1] += n
            seen = self.part_keys.setdefault(pid, {})
            for key in other.part_keys.get(pid, {}):
                seen.setdefault(key, len(seen))
        for part in other.whole:
            self.done(part)

    def close_open(self) -> None:
        """Close the parts spread over tasks, in the order they were first met."""
        for part, size in self.open_parts.values():
            self.close(part, size, finish=False)
        self.open_parts.clear()

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

    def _keys(self) -> list[Key]:
        """Every slice, tokenizers in order, then slice kinds in ``slices.KIND_ORDER``, then labels; a numbers
        slice whose part had no digit run has no row."""
        for name, key in list(self.counts):
            self._finish(name, key)
        order: dict[str, int] = {k: i for i, k in enumerate(KIND_ORDER)}
        names = list(self.toks)
        keys = [k for k in self.rows if k[1][0] != "numbers" or self.rows[k].get("numbers")]
        return sorted(keys, key=lambda k: (names.index(k[0]), order.get(k[1][0], 99), k[1][1]))

    def table(self) -> list[dict[str, Any]]:
        """Every row, in the order of :meth:`_keys`; language rows get the ids no other language uses."""
        keys = self._keys()
        for name, sets in self.id_sets.items():
            for lang, only in metrics.unique_ids(sets).items():
                self.rows[(name, ("language", lang))]["unique_ids"] = only
        rows = [self.rows[k] for k in keys]
        for name in self.toks:
            _blank_lone_pivot([r for r in rows if r["tokenizer"] == name], self.common["pivot"])
        return rows

    def overlap(self) -> list[tuple[str, str, str, int, float]]:
        """(tokenizer, language a, language b, shared ids, Jaccard) for every pair of language slices."""
        return [
            (name, a, b, *pair)
            for name, sets in self.id_sets.items()
            for (a, b), pair in metrics.id_overlaps(sets).items()
        ]

    def histogram(self) -> list[tuple[Any, ...]]:
        """Every slice's ``lengths.csv`` rows, slices in the order of :meth:`_keys`."""
        return [row for k in self._keys() for row in self.hist.get(k, [])]


_PREMIUM_COLUMNS = (
    "premium_mean", "premium_median", "premium_lo", "premium_hi", "rel_kv_bytes", "rel_attention_work",
)  # fmt: skip


def _blank_lone_pivot(rows: list[dict[str, Any]], pivot: str) -> None:
    """Premiums need a text of another language aligned with the pivot: when no language row but the
    pivot's has a pair, the pivot's texts paired with themselves are no premiums, and every row of the
    tokenizer says so (NaN, no pairs), the ``all``, script and pivot rows included, as the summary does.
    Perturbed slices keep theirs: they are measured against their clean texts, not the pivot."""
    others = (r for r in rows if r["slice_kind"] == "language" and r["slice"] != pivot)
    if any(r.get("premium_pairs") for r in others):
        return
    for r in rows:
        if r["slice_kind"] != "perturbed" and "premium_pairs" in r:
            r.update(dict.fromkeys(_PREMIUM_COLUMNS, math.nan), premium_pairs=0)


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


def count_part(
    counter: ChunkCounter,
    table: SliceTable,
    part: CorpusPart,
    texts: list[str],
    ids: list[Any],
    *,
    chunk_size: int,
    finish: bool = True,
) -> list[CorpusPart]:
    """Count one part read whole chunk by chunk, with its generated parts (:func:`~tokenloom.fertility.
    slices.generated_parts`: transliterated, numbers, perturbed) beside it, then close them all
    (``finish``: and finish the slices they end, see :meth:`SliceTable.close`); returns them.

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
    for one in [part, *(g.part for g in extra)]:
        table.close(one, len(texts), finish=finish)
    return [part, *(g.part for g in extra)]


def submit_piece(
    counter: ChunkCounter, table: SliceTable, part: CorpusPart, texts: list[str], ids: list[Any]
) -> list[tuple[CorpusPart, Pending]]:
    """Queue the encodings of consecutive texts of a part spread over tasks (and of its generated parts);
    :func:`collect_piece` counts them into ``table``, leaving the part open (its texts so far are in
    ``table.open_parts``). A part without a script label gets no transliterated slice here: whether it has
    one is decided on all its texts, which no piece sees."""
    extra = [
        g
        for g in generated_parts(part, texts, config=counter.slice_config)
        if g.part.slice_kind != "transliterated" or part.script
    ]
    entry = table.open_parts.setdefault(part_id(part), [part, 0])
    start = entry[1]
    pending = counter.submit(part, texts, ids, start)
    queued = [(part, pending)]
    for g in extra:
        table.open_parts.setdefault(part_id(g.part), [g.part, start])
        baseline = pending if g.against_source else None
        queued.append((g.part, counter.submit(g.part, g.make(texts), ids, start, baseline=baseline)))
    for one, _ in queued:
        table.open_parts[part_id(one)][1] += len(texts)
    return queued


def collect_piece(counter: ChunkCounter, table: SliceTable, queued: list[tuple[CorpusPart, Pending]]) -> None:
    """Count what :func:`submit_piece` queued into ``table``, in order."""
    for one, pending in queued:
        table.add(one, counter.collect(pending))


def histogram_rows(tokenizer: str, key: tuple[str, str], lengths: LengthCounts) -> list[tuple[Any, ...]]:
    """The ``lengths.csv`` rows of one slice, under ``length_tables.HISTOGRAM_COLUMNS`` (none without
    documents)."""
    if not lengths.documents:
        return []
    edges, counts = lengths.histogram(BINS_PER_DECADE)
    los, his = edges[:-1].tolist(), edges[1:].tolist()
    return [
        (tokenizer, key[0], key[1], lo, hi, n) for lo, hi, n in zip(los, his, counts.tolist(), strict=True)
    ]
