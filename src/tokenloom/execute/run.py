"""Run a plan's tasks — in this process, in worker processes or as Ray tasks — in plan order, resumably.

:func:`run_tasks` is how a batch job (a report, image preprocessing, writing token shards) runs its
tasks: ``fn(job)`` for every job, on

- this process (``workers=1``, the default),
- ``workers=N`` local processes (:func:`tokenloom.execute.pool.ordered_map`; ``spawn`` by default, since
  the engines' thread pools do not survive a fork; ``initializer(*initargs)`` runs once per process), or
- Ray tasks (``distributor="ray"``, :func:`tokenloom.execute.distributed.ray_map`; the initializer runs
  before every task, its arguments put in the object store once).

Results come back **in the order of ``jobs``**, each as soon as every earlier one is there (only results
that finished early are held), so what a job writes from them does not depend on where tasks ran.

State and resume: with a :class:`ResultStore` and one key per job (a fingerprint of everything that
decides the job's result), every finished result is pickled atomically under the store's folder as it
arrives; ``resume=True`` loads the results whose key is there and runs only the rest, so a run killed at
any point (``kill -9``) and resumed yields the same results. Without ``resume`` a store starts empty.

Progress (on a terminal, not ``quiet``): one tqdm bar over :class:`Progress`'s total, advanced by
``measure(result)`` (units done, documents), with documents/s beside it. What this module does not do:
plan tasks or know what they compute.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import pickle
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Literal, TypeAlias, TypeVar

from tokenloom._atomic import atomic_write
from tokenloom._progress import bar
from tokenloom.errors import ConfigError
from tokenloom.execute.distributed import ray_map
from tokenloom.execute.pool import StartMethod, ordered_map

__all__ = ["Distributor", "JobLimit", "Progress", "ResultStore", "run_tasks", "worker_count"]

J = TypeVar("J")
R = TypeVar("R")
Distributor: TypeAlias = Literal["local", "ray"]


def worker_count(requested: int, jobs: int) -> int:
    """Local processes to start for ``jobs`` jobs: ``requested`` (0: one per CPU), never more than jobs."""
    if not isinstance(requested, int) or requested < 0:
        raise ConfigError(f"workers must be an int >= 0 (0: one per CPU), got {requested!r} (--workers)")
    wanted = requested or (os.cpu_count() or 1)
    return max(1, min(wanted, jobs))


@dataclass(frozen=True)
class JobLimit(Generic[J, R]):
    """A per-job time limit for local runs: a job past ``timeout_s`` (or whose worker dies) gets the result
    ``on_timeout(job)`` (``on_crash(job, exitcode)``) and the run goes on (see ``execute.pool``)."""

    timeout_s: float | None
    on_timeout: Callable[[J], R]
    on_crash: Callable[[J, int | None], R]


@dataclass(frozen=True)
class Progress(Generic[R]):
    """What the bar shows: ``total`` units (bytes, images, ...) advanced by ``measure(result)``."""

    desc: str  # the bar's label
    total: float | None = None  # units of all jobs run now (None: unknown)
    unit: str = "B"  # what a unit is ("B" scales to kB/MB)
    measure: Callable[[R], tuple[float, int]] | None = None  # result -> (units, documents); None: (1, 0)
    quiet: bool = True  # no bar at all (also off when stderr is not a terminal)


class ResultStore:
    """Finished results under ``folder``, one pickle per job, named after ``key`` (the settings'
    fingerprint, shared by every job) and the job's own fingerprint."""

    def __init__(self, folder: Path, key: bytes, *, resume: bool) -> None:
        self.folder, self.key = Path(folder), key
        if self.folder.exists() and not resume:
            for old in self.folder.glob("*.pkl"):
                old.unlink()

    def path(self, fingerprint: str) -> Path:
        digest = hashlib.sha256(self.key + fingerprint.encode()).hexdigest()
        return self.folder / f"{digest[:40]}.pkl"

    def has(self, fingerprint: str) -> bool:
        return self.path(fingerprint).is_file()

    def load(self, fingerprint: str, name: str) -> Any:
        path = self.path(fingerprint)
        try:
            return pickle.loads(path.read_bytes())
        except (OSError, pickle.UnpicklingError, EOFError, ValueError) as exc:
            raise ConfigError(
                f"cannot read the finished task {name} in {path} ({exc}); delete {self.folder} (or drop "
                "--resume) to run every task again"
            ) from exc

    def save(self, fingerprint: str, result: Any) -> None:
        atomic_write(self.path(fingerprint), pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))


def _crashed(job: Any, exitcode: int | None) -> Any:
    raise RuntimeError(f"a worker process died (exit code {exitcode}) while running {job!r:.200}")


def _timed_out(job: Any) -> Any:  # no time limit is set: never called
    raise AssertionError("no per-job time limit was set")


def _source(
    fn: Callable[[J], R],
    jobs: Sequence[J],
    workers: int,
    distributor: Distributor,
    initializer: Callable[..., None] | None,
    initargs: tuple,
    start_method: StartMethod,
    limit: JobLimit[J, R] | None,
) -> Iterator[tuple[int, R]]:
    """``(position, result)`` for every job, in whatever order they finish."""
    if distributor == "ray":
        yield from ray_map(fn, jobs, initializer=initializer, initargs=initargs)
        return
    if limit is not None:  # the pool's own count: 0 runs here under a soft limit, N >= 1 processes
        yield from enumerate(
            ordered_map(
                fn, jobs, workers=workers, timeout_s=limit.timeout_s, on_timeout=limit.on_timeout,
                on_crash=limit.on_crash, initializer=initializer, initargs=initargs, start_method=start_method,
            )
        )  # fmt: skip
        return
    if workers == 1 or len(jobs) <= 1:
        if jobs and initializer is not None:
            initializer(*initargs)
        yield from enumerate(map(fn, jobs))
        return
    yield from enumerate(
        ordered_map(
            fn, jobs, workers=worker_count(workers, len(jobs)), timeout_s=None, on_timeout=_timed_out,
            on_crash=_crashed, initializer=initializer, initargs=initargs, start_method=start_method,
        )
    )  # fmt: skip


def run_tasks(
    fn: Callable[[J], R],
    jobs: Sequence[J],
    *,
    workers: int = 1,
    distributor: Distributor = "local",
    initializer: Callable[..., None] | None = None,
    initargs: tuple = (),
    start_method: StartMethod = "spawn",
    store: ResultStore | None = None,
    keys: Sequence[str] = (),
    resume: bool = False,
    progress: Progress[R] | None = None,
    limit: JobLimit[J, R] | None = None,
) -> Iterator[tuple[R, bool]]:
    """``(fn(job), resumed)`` for every job in the order of ``jobs`` (see the module docstring).

    ``workers=1`` runs in this process (then ``initializer`` runs here, once, when a job runs).
    ``keys[i]`` fingerprints ``jobs[i]`` in ``store``; ``resume`` loads those already there. With a
    ``limit`` (local runs), ``workers`` counts the pool's processes as ``execute.pool`` does: 0 runs here
    under a soft limit, 1 or more run in that many processes under a hard one.
    """
    if store is not None and len(keys) != len(jobs):
        raise ValueError(f"run_tasks needs one key per job with a store: {len(keys)} keys, {len(jobs)} jobs")
    if distributor not in ("local", "ray"):
        raise ConfigError(f"distributor must be 'local' or 'ray', got {distributor!r}")
    found = {i for i in range(len(jobs)) if resume and store is not None and store.has(keys[i])}
    todo = [i for i in range(len(jobs)) if i not in found]
    shown = progress or Progress[R](desc="tasks", unit="task")
    meter = bar(total=shown.total, desc=shown.desc, unit=shown.unit, quiet=shown.quiet,
                unit_scale=shown.unit == "B", unit_divisor=1024 if shown.unit == "B" else 1000)  # fmt: skip
    held: dict[int, R] = {}
    ready = docs = 0
    todo_jobs = [jobs[i] for i in todo]
    source = _source(fn, todo_jobs, workers, distributor, initializer, initargs, start_method, limit)
    try:
        for item in itertools.chain(source, [None]):
            if item is not None:
                i = todo[item[0]]
                if store is not None:
                    store.save(keys[i], item[1])
                held[i] = item[1]
                units, n = shown.measure(item[1]) if shown.measure else (1, 0)
                docs += n
                meter.update(units)
                elapsed = meter.format_dict["elapsed"] if hasattr(meter, "format_dict") else 0.0
                if shown.measure:
                    meter.set_postfix_str(f"{docs / elapsed:,.0f} docs/s" if elapsed else f"{docs:,} docs")
            while ready < len(jobs) and (ready in held or ready in found):
                if ready in held:
                    yield held.pop(ready), False
                else:
                    assert store is not None
                    yield store.load(keys[ready], str(ready)), True
                ready += 1
    finally:
        meter.close()
        close = getattr(source, "close", None)
        if close is not None:
            close()
