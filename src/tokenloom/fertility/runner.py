"""Count a report's corpus as tasks: in this process, in worker processes or as Ray tasks, resumably.

The tasks are :func:`~tokenloom.text.corpus_tasks.plan_corpus_tasks`'s (a file part, a range of Parquet
row groups, a byte range of a large file). Each is counted by :func:`count_task` into a
:class:`TaskResult` — its slice counts (:class:`~tokenloom.fertility.accumulate.TaskCounts`), reading
statistics and rejects — and the results are merged into the report's
:class:`~tokenloom.fertility.accumulate.SliceTable` **in plan order**, whatever order they finish in. The
counts do not depend on where or in which order tasks ran, so one process, ``workers=N`` processes and
Ray write the same report, byte for byte.

Premiums need the pivot's token counts first: when a report measures them (a pivot, ``metrics="full"``)
on aligned parts, the tasks holding pivot texts run first counting only those (phase ``"pivot"``), and
their per-text pivot counts go with every other task (phase ``"rest"``: every other text). A table whose
rows carry ids is read in both phases; any other task in one.

- ``RunConfig(workers=N)``: N worker processes (``spawn``: the engines' thread pools do not survive a
  fork). The tokenizers and settings (:class:`Counting`) are pickled once per worker, so tokenizers must
  pickle (every engine tokenloom wraps does; a lambda does not — an error says so).
- ``RunConfig(distributor="ray")``: one Ray task (1 CPU) per corpus task, the settings put in the object
  store once; ``ray.init()`` joins ``RAY_ADDRESS`` or starts a local cluster when Ray is not initialized.
  Files must be visible to every node at the same path.
- ``RunConfig(state_dir=D)``: each finished task's result is written atomically to ``D`` with a
  fingerprint of everything that decides it (the settings, the tokenizers, the file's size and mtime);
  ``resume=True`` loads the results whose fingerprint matches and counts only the rest, so a run killed
  at any point (``kill -9``) and resumed writes the identical report.

Progress (on a terminal): bytes/s of input read and documents/s, with an ETA over the input's bytes.
Memory: a worker holds one chunk of texts per part of its task, never a whole file; the merged counts
hold sums, histograms and sketches, plus per-text values for the bootstrap only for parts spread over
tasks (none with ``metrics="lengths"``).
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import multiprocessing
import os
import pickle
from collections.abc import Iterator, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeAlias

from tokenloom._atomic import atomic_write
from tokenloom._progress import bar
from tokenloom.errors import ConfigError
from tokenloom.fertility.accumulate import SliceTable, TaskCounts, collect_piece, count_part, submit_piece
from tokenloom.fertility.counting import ChunkCounter, CountOptions
from tokenloom.fertility.counts import MORE_SUMS
from tokenloom.fertility.report_config import ReportConfig
from tokenloom.fertility.slices import SliceConfig
from tokenloom.text.corpus_tasks import CorpusTask, read_corpus_task
from tokenloom.text.parts import CorpusPart
from tokenloom.text.records import Columns, Errors, SourceStats
from tokenloom.text.tasks import CHUNK_BYTES
from tokenloom.text.tokenizer import Tokenizer
from tokenloom.text.unicode import Segmenter, SegmenterName, batch_segmenter

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
    pivot: str | None
    segmenter: SegmenterName | Segmenter
    config: ReportConfig
    slice_config: SliceConfig
    columns: Columns
    errors: Errors
    reference: Tokenizer | None = None  # counted too, ids only: the normalized sequence length


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


def count_task(task: CorpusTask, phase: Phase, pivot_tokens: PivotTokens, counting: Counting) -> TaskResult:
    """Count one task's texts of ``phase`` (premiums against ``pivot_tokens``) into a :class:`TaskResult`."""
    cfg = counting.config
    options = CountOptions(
        roundtrip=cfg.roundtrip, batch_size=cfg.batch_size, metrics=cfg.metrics, contexts=cfg.contexts
    )
    seg = batch_segmenter(counting.segmenter)
    seg_name = seg.name if cfg.metrics == "full" else ""
    table = SliceTable(counting.toks, config=cfg, pivot=counting.pivot, segmenter=seg_name)
    stats, whole, docs = SourceStats(), [], 0
    parts: dict[tuple[str, str], CorpusPart] = {}
    # two threads: one tokenizer's array work (GIL-bound) overlaps the other's engine call (GIL released)
    pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="fertility-encode") if cfg.prefetch else None
    with pool or contextlib.nullcontext():
        counter = ChunkCounter(
            counting.toks, pivot=counting.pivot, segmenter=seg, options=options,
            slice_config=counting.slice_config, executor=pool, reference=counting.reference,
        )  # fmt: skip
        counter.pivot_tokens.update(pivot_tokens)  # read only here: tasks given them count no pivot text
        pieces = read_corpus_task(
            task, columns=counting.columns, errors=counting.errors, stats=stats, chunk_size=cfg.chunk_size
        )
        queued: list[Any] = []  # the piece being encoded while the next one is read
        for piece in pieces:
            if not _keep(piece.part, phase, counting.pivot):
                continue
            docs += len(piece.texts)
            parts.setdefault((piece.part.slice_kind, piece.part.slice), piece.part)
            if piece.whole:
                collect_piece(counter, table, queued)
                queued = []
                whole += count_part(
                    counter,
                    table,
                    piece.part,
                    piece.texts,
                    piece.ids,
                    chunk_size=cfg.chunk_size,
                    finish=False,
                )
            else:
                now = submit_piece(counter, table, piece.part, piece.texts, piece.ids)
                collect_piece(counter, table, queued)
                queued = now
        collect_piece(counter, table, queued)
    made = {} if pivot_tokens else counter.pivot_tokens  # a task given the pivot's counts makes none
    return TaskResult(
        task.id, phase, table.export(whole), made, stats, docs, task.bytes, list(parts.values())
    )


_WORKER: dict[str, Counting] = {}  # the settings of this worker process (set by _init_worker)


def _init_worker(payload: bytes) -> None:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # one process per core: no engine threads
    _WORKER["counting"] = pickle.loads(payload)


def _worker_count(task: CorpusTask, phase: Phase, pivot_tokens: PivotTokens) -> TaskResult:
    return count_task(task, phase, pivot_tokens, _WORKER["counting"])


def _payload(counting: Counting) -> bytes:
    try:
        return pickle.dumps(counting, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # pickle raises many types (PicklingError, TypeError, AttributeError)
        raise ConfigError(
            f"the tokenizers or segmenter cannot be sent to worker processes ({exc}); pass tokenizers by "
            "path or as engine objects, or run with workers=1 (--workers 1) and no resume state"
        ) from exc


class _State:
    """Finished tasks' results under a folder, each named after the task, its phase and the fingerprint
    of everything that decides it (settings, tokenizers, the file's size and mtime)."""

    def __init__(self, folder: Path | None, counting: Counting, *, resume: bool) -> None:
        self.folder = folder
        self.key = b""
        if folder is None:
            return
        # the count layout is part of the key: results saved with other columns are counted again
        self.key = hashlib.sha256(_payload(counting) + repr(MORE_SUMS).encode()).digest()
        if folder.exists() and not resume:
            for old in folder.glob("*.pkl"):
                old.unlink()

    def path(self, task: CorpusTask, phase: Phase) -> Path | None:
        if self.folder is None:
            return None
        paths = [task.piece.path] if task.piece is not None else list(task.part.paths if task.part else ())
        stamp = []
        for p in paths:
            with contextlib.suppress(OSError):
                st = p.stat()
                stamp.append((str(p), st.st_size, st.st_mtime_ns))
        digest = hashlib.sha256(self.key + repr((phase, task, stamp)).encode()).hexdigest()
        return self.folder / f"{digest[:40]}.pkl"

    def has(self, task: CorpusTask, phase: Phase) -> bool:
        path = self.path(task, phase)
        return path is not None and path.is_file()

    def load(self, task: CorpusTask, phase: Phase) -> TaskResult:
        path = self.path(task, phase)
        assert path is not None
        try:
            result: TaskResult = pickle.loads(path.read_bytes())
        except (OSError, pickle.UnpicklingError, EOFError, ValueError) as exc:
            raise ConfigError(
                f"cannot read the finished task {task.id} in {path} ({exc}); delete {self.folder} (or drop "
                "--resume) to count every task again"
            ) from exc
        result.resumed = True
        return result

    def save(self, task: CorpusTask, result: TaskResult) -> None:
        path = self.path(task, result.phase)
        if path is not None:
            atomic_write(path, pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))


Job: TypeAlias = tuple[CorpusTask, Phase]


def _local(
    jobs: Sequence[Job], pivot: PivotTokens, counting: Counting, run: RunConfig
) -> Iterator[TaskResult]:
    """Results of ``jobs`` as they finish, on this process or on ``run.workers`` processes."""
    if not jobs:
        return
    if run.workers == 1:
        for task, phase in jobs:
            yield count_task(task, phase, pivot, counting)
        return
    ctx = multiprocessing.get_context("spawn")
    pool: Executor = ProcessPoolExecutor(
        max_workers=min(run.workers, len(jobs)), mp_context=ctx, initializer=_init_worker,
        initargs=(_payload(counting),),
    )  # fmt: skip
    with pool:
        futures = [pool.submit(_worker_count, task, phase, pivot) for task, phase in jobs]
        try:
            for future in as_completed(futures):
                yield future.result()
        finally:
            for future in futures:
                future.cancel()


def _ray(jobs: Sequence[Job], pivot: PivotTokens, counting: Counting) -> Iterator[TaskResult]:
    """Results of ``jobs`` as they finish, as Ray tasks."""
    try:
        import ray
    except ImportError:
        raise ConfigError(
            "--distributor ray needs the ray package: pip install 'tokenloom[ray]' (or drop --distributor)"
        ) from None
    if not ray.is_initialized():
        env = {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}
        ray.init(runtime_env={"env_vars": env} if env else None, log_to_driver=False)
    remote = ray.remote(num_cpus=1)(_ray_count)
    settings, pivot_ref = ray.put(_payload(counting)), ray.put(pivot)
    pending = [remote.remote(task, phase, pivot_ref, settings) for task, phase in jobs]
    while pending:
        ready, pending = ray.wait(pending, num_returns=1)
        yield ray.get(ready[0])  # re-raises a task's exception here


def _ray_count(task: CorpusTask, phase: Phase, pivot: PivotTokens, payload: bytes) -> TaskResult:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    return count_task(task, phase, pivot, pickle.loads(payload))


def _run_tasks(
    jobs: Sequence[Job],
    counting: Counting,
    run: RunConfig,
    state: _State,
    *,
    pivot: PivotTokens | None = None,
    quiet: bool = True,
) -> Iterator[TaskResult]:
    """Count ``jobs`` (task, phase) as ``run`` says, yielding the results in the order of ``jobs`` as soon
    as every earlier one is there (only results that finished early are held). Results already in the
    state folder are loaded (``run.resume``); new ones are saved there as they finish."""
    found = {i for i, (task, phase) in enumerate(jobs) if run.resume and state.has(task, phase)}
    todo = [i for i in range(len(jobs)) if i not in found]
    total = sum(jobs[i][0].bytes for i in todo)
    progress = bar(total=total, desc="fertility", unit="B", unit_scale=True, unit_divisor=1024, quiet=quiet)
    index = {(jobs[i][0].id, jobs[i][1]): i for i in todo}
    held: dict[int, TaskResult] = {}
    ready, docs = 0, 0
    todo_jobs = [jobs[i] for i in todo]
    source = (
        _ray(todo_jobs, pivot or {}, counting)
        if run.distributor == "ray"
        else _local(todo_jobs, pivot or {}, counting, run)
    )
    try:
        for result in itertools.chain(source, [None]):
            if result is not None:
                i = index[(result.id, result.phase)]
                state.save(jobs[i][0], result)
                held[i] = result
                docs += result.documents
                progress.update(result.bytes)
                elapsed = progress.format_dict["elapsed"] if hasattr(progress, "format_dict") else 0.0
                progress.set_postfix_str(f"{docs / elapsed:,.0f} docs/s" if elapsed else f"{docs:,} docs")
            while ready < len(jobs) and (ready in held or ready in found):
                yield held.pop(ready) if ready in held else state.load(*jobs[ready])
                ready += 1
    finally:
        progress.close()


def plan_jobs(tasks: Sequence[CorpusTask], pivot: str | None, premiums: bool) -> tuple[list[Job], list[Job]]:
    """The (task, phase) jobs of the pivot phase and of the rest (see the module docstring)."""
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
        check_pivot([t.part for t in tasks if t.part is not None], pivot)
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
    counting: Counting,
    run: RunConfig,
    *,
    quiet: bool = True,
) -> tuple[SourceStats, dict[str, int]]:
    """Count every task into ``table`` (pivot phase first, results merged in plan order) and close the
    parts spread over tasks; returns the reading statistics (rejects in plan order) and how many jobs
    there were and were resumed (``{"tasks": N, "resumed": K}``)."""
    premiums = counting.pivot is not None and counting.config.metrics == "full"
    first, rest = plan_jobs(tasks, counting.pivot, premiums)
    if all(t.part is not None and t.piece is None for t in tasks if t.piece or t.part):  # parts read whole
        table.lang_parts_left.update(
            t.part.lang for t in tasks if t.part is not None and not t.part.generated
        )
    stats = SourceStats()
    pivot: PivotTokens = {}
    summary = {"tasks": len(first) + len(rest), "resumed": 0}
    parts: list[CorpusPart] = []
    state = _State(run.state_dir, counting, resume=run.resume)
    for jobs in (first, rest):
        for result in _run_tasks(jobs, counting, run, state, pivot=pivot, quiet=quiet):
            summary["resumed"] += result.resumed
            table.merge_task(result.counts)
            if result.phase != "pivot":  # a table read twice: its rejects are counted in the "rest" phase
                stats.add(result.stats)
            for key, tokens in result.pivot_tokens.items():
                pivot.setdefault(key, {}).update(tokens)
            parts.extend(result.parts)
    check_pivot(parts, counting.pivot)  # tables: their parts are known once read
    table.close_open()
    return stats, summary
