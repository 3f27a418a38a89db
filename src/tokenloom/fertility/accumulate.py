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

from tokenloom.errors import CorpusError
from tokenloom.fertility.counting import ChunkCounter, Pending, part_id
from tokenloom.fertility.counts import SliceCounts, close_part
from tokenloom.fertility.length_tables import histogram_rows
from tokenloom.fertility.report_config import ReportConfig
from tokenloom.fertility.slices import KIND_ORDER, SliceKey, translit_target
from tokenloom.text.parts import CorpusPart
from tokenloom.text.tokenizer import Tokenizer
from tokenloom.text.unicode import transliterate

__all__ = ["SliceTable", "TaskCounts", "collect_piece", "count_part", "submit_piece"]

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
        self, toks: dict[str, Tokenizer], *, config: ReportConfig, pivot: str | None, segmenter: str
    ) -> None:
        self.toks = toks
        self.config = config
        self.common = {"segmenter": segmenter, "pivot": pivot or ""}
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
            )
        self.rows[(name, key)] = {
            "tokenizer": name, "slice_kind": key[0], "slice": key[1], **metrics_, **self.common,
            "engine": tok.engine, "algorithm": tok.algorithm,
            "vocab_size": tok.vocab_size if tok.capabilities.vocabulary else None,
            **(_missing(tok) if cfg.metrics == "full" else _missing(tok, only_defs=True)),
        }  # fmt: skip

    def _keys(self) -> list[Key]:
        """Every slice, tokenizers in order, then slice kinds in ``slices.KIND_ORDER``, then labels."""
        for name, key in list(self.counts):
            self._finish(name, key)
        order: dict[str, int] = {k: i for i, k in enumerate(KIND_ORDER)}
        names = list(self.toks)
        return sorted(self.rows, key=lambda k: (names.index(k[0]), order.get(k[1][0], 99), k[1][1]))

    def table(self) -> list[dict[str, Any]]:
        """Every row, in the order of :meth:`_keys`."""
        return [self.rows[k] for k in self._keys()]

    def histogram(self) -> list[tuple[Any, ...]]:
        """Every slice's ``lengths.csv`` rows, slices in the order of :meth:`_keys`."""
        return [row for k in self._keys() for row in self.hist.get(k, [])]


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
    """Count one part read whole chunk by chunk, with its generated transliterated part beside it, then
    close both (``finish``: and finish the slices they end, see :meth:`SliceTable.close`); returns them.

    A chunk's transliteration is made while the engines encode the chunk, and queued at once."""
    target = translit_target(part, texts, config=counter.slice_config)
    ascii_ = counter.slice_config.translit_ascii
    for start in range(0, len(texts), chunk_size):
        chunk, chunk_ids = texts[start : start + chunk_size], ids[start : start + chunk_size]
        pending = counter.submit(part, chunk, chunk_ids, start)
        generated = None
        if target is not None:
            generated = counter.submit(target, transliterate(chunk, ascii=ascii_), chunk_ids, start)
        table.add(part, counter.collect(pending))
        if target is not None and generated is not None:
            table.add(target, counter.collect(generated))
    table.close(part, len(texts), finish=finish)
    if target is None:
        return [part]
    table.close(target, len(texts), finish=finish)
    return [part, target]


def submit_piece(
    counter: ChunkCounter, table: SliceTable, part: CorpusPart, texts: list[str], ids: list[Any]
) -> list[tuple[CorpusPart, Pending]]:
    """Queue the encodings of consecutive texts of a part spread over tasks (and of their
    transliteration); :func:`collect_piece` counts them into ``table``, leaving the part open (its texts
    so far are in ``table.open_parts``). A part without a script label gets no transliterated slice
    here: whether it has one is decided on all its texts, which no piece sees."""
    targets = [(part, texts)]
    target = translit_target(part, texts, config=counter.slice_config) if part.script else None
    if target is not None:
        targets.append((target, transliterate(texts, ascii=counter.slice_config.translit_ascii)))
    queued = []
    for one, its_texts in targets:
        entry = table.open_parts.setdefault(part_id(one), [one, 0])
        queued.append((one, counter.submit(one, its_texts, ids, entry[1])))
        entry[1] += len(its_texts)
    return queued


def collect_piece(counter: ChunkCounter, table: SliceTable, queued: list[tuple[CorpusPart, Pending]]) -> None:
    """Count what :func:`submit_piece` queued into ``table``, in order."""
    for one, pending in queued:
        table.add(one, counter.collect(pending))
