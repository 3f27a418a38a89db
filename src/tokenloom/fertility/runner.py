"""Count a report's corpus as tasks: in this process, in worker processes or as Ray tasks, resumably.

The tasks are :func:`~tokenloom.corpus.plan.plan_corpus_tasks`'s (a file part, a range of Parquet
row groups, a byte range of a large file; an in-memory corpus is one task, counted in this process with
the default ``RunConfig`` only). Each is counted by :func:`count_task` into a
:class:`TaskResult` — its slice counts (:class:`~tokenloom.fertility.accumulate.TaskCounts`), reading
statistics and rejects — and the results are merged into the report's
:class:`~tokenloom.fertility.accumulate.SliceTable` **in plan order**, whatever order they finish in. The
counts do not depend on where or in which order tasks ran, so one process, ``workers=N`` processes and
Ray write the same report, byte for byte.

Premiums need the pivot's token counts first: when a report measures them (a pivot, ``metrics="full"``)
on aligned parts, the tasks holding pivot texts run first counting only those (phase ``"pivot"``), and
their per-text pivot counts go with every other task (phase ``"rest"``: every other text). A table whose
rows carry ids is read in both phases; any other task in one.

The tasks run on :func:`tokenloom.execute.run_tasks` (the one executor of batch work):

- ``RunConfig(workers=N)``: N worker processes (``spawn``: the engines' thread pools do not survive a
  fork). The tokenizers and settings (:class:`Counting`) are pickled once per worker, so tokenizers must
  pickle (every engine tokenloom wraps does; a lambda does not — an error says so).
- ``RunConfig(distributor="ray")``: one Ray task (1 CPU) per corpus task, the settings put in the object
  store once (see ``tokenloom.execute.distributed`` for how Ray is started). Files must be visible to
  every node at the same path.
- ``RunConfig(state_dir=D)``: each finished task's result is written atomically to ``D`` with a
  fingerprint of everything that decides it (the settings, the tokenizers, the file's size and mtime);
  ``resume=True`` loads the results whose fingerprint matches and counts only the rest, so a run killed
  at any point (``kill -9``) and resumed writes the identical report.

Progress (on a terminal): bytes/s of input read and documents/s, with an ETA over the input's bytes.
Memory: a worker holds one chunk of texts per part of its task (``chunk_size`` texts; with
``metrics="lengths"`` at least :data:`LENGTHS_CHUNK`, the chunks of all parts encoded together in ids-only
engine calls of up to that many texts), never a whole file; the merged counts
hold sums, histograms and sketches, plus per-text values for the bootstrap only for parts spread over
tasks (none with ``metrics="lengths"``).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Literal, TypeAlias

from tokenloom.corpus.columnar import Piece, read_corpus_task
from tokenloom.corpus.parts import CorpusPart
from tokenloom.corpus.plan import CorpusTask
from tokenloom.corpus.records import Columns, Errors, SourceStats
from tokenloom.corpus.tasks import CHUNK_BYTES
from tokenloom.errors import ConfigError
from tokenloom.execute import Progress, ResultStore, run_tasks
from tokenloom.fertility.accumulate import SliceTable, TaskCounts, collect_piece, count_part, submit_piece
from tokenloom.fertility.counting import LENGTHS_BATCH, ChunkCounter, CountOptions
from tokenloom.fertility.counts import MORE_SUMS
from tokenloom.fertility.report_config import ReportConfig
from tokenloom.fertility.slices import SliceConfig
from tokenloom.text.tokenizer import Tokenizer
from tokenloom.unicode import Segmenter, SegmenterName, batch_segmenter

__all__ = [
    "Counting",
    "Phase",
    "RunConfig",
    "TaskResult",
    "check_pivot",
    "count_corpus",
    "count_task",
    "plan_jobs",
]

Phase: TypeAlias = Literal["all", "pivot", "rest"]  # which texts of a task are counted
# texts counted at once with metrics="lengths" at least: a text holds a few numbers there, and the engine's
# ids-only call, one per chunk, costs a fixed time per call
LENGTHS_CHUNK = LENGTHS_BATCH
PivotTokens: TypeAlias = dict[tuple[str, str], dict[Any, int]]  # (tokenizer, align) -> id -> tokens


@dataclass(frozen=True)
class RunConfig:
    """How a report's tasks run (see the module docstring); the counts never depend on it."""

    workers: int = 1  # processes counting tasks (1: this process)
    distributor: Literal["local", "ray"] = "local"  # "ray": Ray tasks instead of local processes
    state_dir: Path | None = None  # where finished tasks' results are kept (None: nowhere)
    resume: bool = False  # load the results in state_dir that match and count only the rest
    task_bytes: int = CHUNK_BYTES  # about how many input bytes one task reads

    def __post_init__(self) -> None:
        if not isinstance(self.workers, int) or self.workers < 1:
            raise ConfigError(f"workers must be an int >= 1, got {self.workers!r} (--workers)")
        if self.distributor not in ("local", "ray"):
            raise ConfigError(f"distributor must be 'local' or 'ray', got {self.distributor!r}")
        if not isinstance(self.task_bytes, int) or self.task_bytes < 1:
            raise ConfigError(f"task_bytes must be a positive int, got {self.task_bytes!r}")
        if self.resume and self.state_dir is None:
            raise ConfigError("resume=True needs a state_dir to resume from")


@dataclass(frozen=True)
class Counting:
    """Everything a task is counted with: sent once to each worker."""

    toks: dict[str, Tokenizer]
    config: ReportConfig  # what is measured: the pivot, slices, segmenter, how the corpus is read
    reference: Tokenizer | None = None  # counted too, ids only: the normalized sequence length

    @property
    def pivot(self) -> str | None:
        return self.config.pivot

    @property
    def segmenter(self) -> SegmenterName | Segmenter:
        return self.config.segmenter

    @property
    def slice_config(self) -> SliceConfig:
        return self.config.slice_config()

    @property
    def columns(self) -> Columns:
        return self.config.columns

    @property
    def errors(self) -> Errors:
        return self.config.errors


@dataclass
class TaskResult:
    """One task's counts, the pivot counts it made (a task of the pivot phase) and what reading it found."""

    id: str
    phase: Phase
    counts: TaskCounts
    pivot_tokens: PivotTokens
    stats: SourceStats
    documents: int  # texts counted
    bytes: int  # input bytes the task read
    parts: list[CorpusPart] = field(default_factory=list)  # every part it counted texts of
    resumed: bool = False  # loaded from a previous run's state, not counted now


def _keep(part: CorpusPart, phase: Phase, pivot: str | None) -> bool:
    is_pivot = part.slice_kind == "language" and part.slice == pivot and not part.generated
    return phase == "all" or (phase == "pivot") == is_pivot


_POOLS: dict[int, ThreadPoolExecutor] = {}  # the encoding threads, by process id (a forked child: its own)


def _encode_pool() -> ThreadPoolExecutor:
    """Two threads, so one tokenizer's array work (GIL-bound) overlaps the other's engine call (GIL
    released); started once per process, not per task: starting a thread waits for the GIL."""
    pid = os.getpid()
    pool = _POOLS.get(pid)
    if pool is None:  # two tasks racing keep one pool: an executor starts its threads on its first task
        pool = _POOLS.setdefault(
            pid, ThreadPoolExecutor(max_workers=2, thread_name_prefix="fertility-encode")
        )
    return pool


def count_task(task: CorpusTask, phase: Phase, pivot_tokens: PivotTokens, counting: Counting) -> TaskResult:
    """Count one task's texts of ``phase`` (premiums against ``pivot_tokens``) into a :class:`TaskResult`."""
    cfg = counting.config
    options = CountOptions(
        roundtrip=cfg.roundtrip, batch_size=cfg.batch_size, metrics=cfg.metrics, contexts=cfg.contexts
    )
    seg = batch_segmenter(counting.segmenter)
    seg_name = seg.name if cfg.metrics == "full" else ""
    table = SliceTable(counting.toks, config=cfg, pivot=counting.pivot, segmenter=seg_name)
    stats = SourceStats()
    chunk = cfg.chunk_size if cfg.metrics == "full" else max(cfg.chunk_size, LENGTHS_CHUNK)
    counter = ChunkCounter(
        counting.toks, pivot=counting.pivot, segmenter=seg, options=options, slice_config=counting.slice_config,
        executor=_encode_pool() if cfg.prefetch else None, reference=counting.reference,
    )  # fmt: skip
    counter.pivot_tokens.update(pivot_tokens)  # read only here: tasks given them count no pivot text
    pieces = read_corpus_task(
        task, columns=counting.columns, errors=counting.errors, stats=stats, chunk_size=chunk,
        first=counting.pivot, held_rows=chunk if cfg.metrics == "lengths" else None,
    )  # fmt: skip
    kept = (p for p in pieces if _keep(p.part, phase, counting.pivot))
    try:
        docs, whole, parts = _count_pieces(
            counter, table, kept, chunk, ahead=2 * chunk if cfg.metrics == "lengths" else 0
        )
    finally:
        counter.settle()  # no encoding of this task outlives it: the threads go on to the next
    made = {} if pivot_tokens else counter.pivot_tokens  # a task given the pivot's counts makes none
    return TaskResult(task.id, phase, table.export(whole), made, stats, docs, task.bytes, parts)


def _count_pieces(
    counter: ChunkCounter, table: SliceTable, pieces: Iterable[Piece], chunk: int, *, ahead: int
) -> tuple[int, list[CorpusPart], list[CorpusPart]]:
    """Count a task's pieces: (texts, the parts closed here, every part met). The pieces being encoded while
    the next ones are read are counted in order: the last one, or up to ``ahead`` texts (lengths: twice a
    chunk, as a table hands several parts over at once)."""
    docs, whole = 0, []
    parts: dict[tuple[str, str], CorpusPart] = {}
    queued: deque[tuple[list[Any], int]] = deque()
    for piece in pieces:
        docs += len(piece.texts)
        parts.setdefault((piece.part.slice_kind, piece.part.slice), piece.part)
        if piece.whole:
            while queued:
                collect_piece(counter, table, queued.popleft()[0])
            whole += count_part(
                counter, table, piece.part, piece.texts, piece.ids, chunk_size=chunk, finish=False
            )
        else:
            queued.append(
                (submit_piece(counter, table, piece.part, piece.texts, piece.ids), len(piece.texts))
            )
            while len(queued) > 1 and sum(n for _, n in queued) - queued[-1][1] >= ahead:
                collect_piece(counter, table, queued.popleft()[0])
    while queued:
        collect_piece(counter, table, queued.popleft()[0])
    return docs, whole, list(parts.values())


_WORKER: dict[str, Any] = {}  # the settings of this worker process (set by _init_worker)


def _init_worker(payload: bytes, pivot: PivotTokens) -> None:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # one process per core: no engine threads
    _WORKER["counting"] = pickle.loads(payload)
    _WORKER["pivot"] = pivot


def _worker_count(job: Job) -> TaskResult:
    task, phase = job
    return count_task(task, phase, _WORKER["pivot"], _WORKER["counting"])


def _payload(counting: Counting) -> bytes:
    try:
        return pickle.dumps(counting, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # pickle raises many types (PicklingError, TypeError, AttributeError)
        raise ConfigError(
            f"the tokenizers or segmenter cannot be sent to worker processes ({exc}); pass tokenizers by "
            "path or as engine objects, or run with workers=1 (--workers 1) and no resume state"
        ) from exc


def _fingerprint(job: Job) -> str:
    """What decides a job's result besides the settings: the task, its phase, its files' size and mtime."""
    task, phase = job
    paths = [task.piece.path] if task.piece is not None else list(task.part.paths if task.part else ())
    stamp = []
    for p in paths:
        with contextlib.suppress(OSError):
            st = p.stat()
            stamp.append((str(p), st.st_size, st.st_mtime_ns))
    return repr((phase, task, stamp))


def _measure(result: TaskResult) -> tuple[float, int]:
    return result.bytes, result.documents


Job: TypeAlias = tuple[CorpusTask, Phase]


def _run_tasks(
    jobs: Sequence[Job],
    counting: Counting,
    run: RunConfig,
    store: ResultStore | None,
    *,
    pivot: PivotTokens | None = None,
    quiet: bool = True,
) -> Iterator[TaskResult]:
    """Count ``jobs`` (task, phase) as ``run`` says on the executor, yielding the results in the order of
    ``jobs``. Results already in the store are loaded (``run.resume``); new ones are saved there."""
    keys = [_fingerprint(job) for job in jobs] if store is not None else []
    found = {k for k in keys if run.resume and store is not None and store.has(k)}
    total = sum(
        job[0].bytes for job, key in zip(jobs, keys or [""] * len(jobs), strict=True) if key not in found
    )
    shown = Progress[TaskResult](desc="fertility", total=total, unit="B", measure=_measure, quiet=quiet)
    payload = _payload(counting) if run.workers > 1 or run.distributor == "ray" else b""
    results = run_tasks(
        _worker_count if payload else partial(_count_here, counting, pivot or {}), jobs,
        workers=run.workers, distributor=run.distributor,
        initializer=_init_worker if payload else None, initargs=(payload, pivot or {}) if payload else (),
        store=store, keys=keys, resume=run.resume, progress=shown,
    )  # fmt: skip
    for result, resumed in results:
        result.resumed = resumed
        yield result


def _count_here(counting: Counting, pivot: PivotTokens, job: Job) -> TaskResult:
    return count_task(job[0], job[1], pivot, counting)


def plan_jobs(
    tasks: Sequence[CorpusTask], parts: Sequence[CorpusPart], pivot: str | None, premiums: bool
) -> tuple[list[Job], list[Job]]:
    """The (task, phase) jobs of the pivot phase and of the rest (see the module docstring); ``parts``: those
    the tasks name before they are read (``plan.task_parts``)."""
    first: list[Job] = []
    rest: list[Job] = []
    for task in tasks:
        if task.part is not None:
            is_pivot = premiums and task.part.align is not None and _keep(task.part, "pivot", pivot)
            (first if is_pivot else rest).append((task, "all"))
        elif premiums and task.aligned:
            first.append((task, "pivot"))
            rest.append((task, "rest"))
        else:
            rest.append((task, "all"))
    if all(t.part is not None for t in tasks if t.piece or t.part):  # no table: every part is known now
        check_pivot(parts, pivot)
    return first, rest


def check_pivot(parts: Sequence[CorpusPart], pivot: str | None) -> None:
    """The one rule for a pivot, whatever the metrics: a pivot that no part names is an error when some
    parts are parallel (premiums would need it; ``metrics="lengths"``, which computes none, is held to the
    same rule, so that a mistyped ``--pivot`` is never accepted silently). ``None``: no pivot, no check."""
    if pivot is None or any(_keep(p, "pivot", pivot) for p in parts) or not any(p.align for p in parts):
        return
    available = sorted({p.slice for p in parts if p.align and p.slice_kind == "language"})
    raise ConfigError(
        f"pivot {pivot!r} is not in the parallel part of the corpus; choose one of "
        f"{', '.join(available[:12])}{' ...' if len(available) > 12 else ''} (--pivot)"
    )


def count_corpus(
    table: SliceTable,
    tasks: Sequence[CorpusTask],
    parts: Sequence[CorpusPart],
    counting: Counting,
    run: RunConfig,
    *,
    quiet: bool = True,
) -> tuple[SourceStats, dict[str, int]]:
    """Count every task into ``table`` (pivot phase first, results merged in plan order) and close the
    parts spread over tasks (``parts``: those the tasks name before they are read, ``plan.task_parts``);
    returns the reading statistics (rejects in plan order) and how many jobs
    there were and were resumed (``{"tasks": N, "resumed": K}``)."""
    if run != RunConfig() and any(t.memory is not None for t in tasks):
        raise ConfigError(
            "workers, Ray and resume read a corpus task by task from its files: give the corpus as "
            "paths (a Corpus object or in-memory texts are counted in this process)"
        )
    premiums = counting.pivot is not None and counting.config.metrics == "full"
    first, rest = plan_jobs(tasks, parts, counting.pivot, premiums)
    if all(t.part is not None and t.piece is None for t in tasks if t.piece or t.part):  # parts read whole
        table.lang_parts_left.update(p.lang for p in parts if not p.generated)
    stats = SourceStats()
    pivot: PivotTokens = {}
    summary = {"tasks": len(first) + len(rest), "resumed": 0}
    read: list[CorpusPart] = []
    store = None
    if run.state_dir is not None:
        # the count layout is part of the key: results saved with other columns are counted again
        layout = hashlib.sha256(_payload(counting) + repr(MORE_SUMS).encode()).digest()
        store = ResultStore(run.state_dir, layout, resume=run.resume)
    for jobs in (first, rest):
        for result in _run_tasks(jobs, counting, run, store, pivot=pivot, quiet=quiet):
            summary["resumed"] += result.resumed
            table.merge_task(result.counts)
            if result.phase != "pivot":  # a table read twice: its rejects are counted in the "rest" phase
                stats.add(result.stats)
            for key, tokens in result.pivot_tokens.items():
                pivot.setdefault(key, {}).update(tokens)
            read.extend(result.parts)
    check_pivot(read, counting.pivot)  # tables: their parts are known once read
    table.close_open()
    return stats, summary
