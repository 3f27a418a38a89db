"""The local worker pool: map a function over jobs in worker processes, yielding results in input order.

:func:`ordered_map` is the one pool of worker processes in tokenloom; batch jobs reach it through
:func:`tokenloom.execute.run_tasks` only (image preprocessing with a per-file time limit, ``JobLimit``).
Each worker process has its own pipe and runs one job at a time, so the parent knows which job every
worker holds and since when:

* a job running longer than ``timeout_s`` gets its worker killed (``SIGKILL``: a decoder stuck inside C
  code cannot be interrupted any other way) and replaced by a fresh one; ``on_timeout(job)`` gives its
  result and the run goes on;
* a worker that dies on its own (a crash inside a C library) is replaced the same way and
  ``on_crash(job, exitcode)`` gives the result;
* results are yielded in input order; at most ``window`` jobs are in flight or waiting to be yielded, so
  one slow job never lets finished results pile up without bound.

``workers=0`` runs the jobs in this process. The limit is then soft: a ``SIGALRM`` timer (POSIX, main
thread only) interrupts Python code between decoder calls, but not one long call inside C code; elsewhere
(another thread, Windows) no limit applies. Use one worker or more for a hard limit.

``fn`` must return normally (catch per-job failures inside it); an exception escaping it in a worker
stops the map with a ``RuntimeError`` carrying the worker's traceback. ``start_method`` picks how workers
start: ``"fork"`` (POSIX only; cheap) or ``"spawn"`` (a fresh interpreter: needed when the parent holds
engine thread pools, which do not survive a fork; ``fn`` and ``initargs`` must then pickle). This module
knows nothing of what the jobs are.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import signal
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from multiprocessing import connection
from typing import Any, Generic, Literal, TypeAlias, TypeVar

__all__ = ["StartMethod", "ordered_map"]

StartMethod: TypeAlias = Literal["fork", "spawn"]

logger = logging.getLogger(__name__)

J = TypeVar("J")
R = TypeVar("R")


class _Timeout(BaseException):
    """Raised by the SIGALRM handler (a BaseException, so that no ``except Exception`` swallows it)."""


def _worker_main(
    conn: Any, fn: Callable[[Any], Any], initializer: Callable[..., None] | None, args: tuple
) -> None:
    if initializer is not None:
        initializer(*args)
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        try:
            conn.send(("ok", fn(job)))
        except Exception:
            conn.send(("error", traceback.format_exc()))


class _Worker(Generic[J]):
    """One worker process, its pipe, and the job it holds (position in the input and start time)."""

    def __init__(
        self, ctx: Any, fn: Callable[[J], Any], initializer: Callable[..., None] | None, args: tuple
    ):
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_worker_main, args=(child, fn, initializer, args), daemon=True)
        self.process.start()
        child.close()
        self.position: int | None = None
        self.started = 0.0

    def give(self, position: int, job: J) -> None:
        self.position, self.started = position, time.monotonic()
        self.conn.send(job)

    def stop(self, *, kill: bool) -> None:
        if kill:
            self.process.kill()
        else:
            with contextlib.suppress(OSError):
                self.conn.send(None)
        self.process.join(timeout=None if kill else 5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.conn.close()


class _Pool(Generic[J, R]):
    """Worker processes plus what is needed to replace one (fork on POSIX, spawn elsewhere)."""

    def __init__(
        self,
        fn: Callable[[J], R],
        workers: int,
        initializer: Callable[..., None] | None,
        initargs: tuple,
        start_method: StartMethod,
    ) -> None:
        method = start_method if os.name == "posix" else "spawn"
        self.ctx = multiprocessing.get_context(method)
        self.fn, self.initializer, self.initargs = fn, initializer, initargs
        self.workers = [self.fresh() for _ in range(workers)]

    def fresh(self) -> _Worker[J]:
        return _Worker(self.ctx, self.fn, self.initializer, self.initargs)

    def close(self) -> None:
        for worker in self.workers:
            worker.stop(kill=worker.position is not None)


def ordered_map(
    fn: Callable[[J], R],
    jobs: Sequence[J],
    *,
    workers: int,
    timeout_s: float | None,
    on_timeout: Callable[[J], R],
    on_crash: Callable[[J, int | None], R],
    initializer: Callable[..., None] | None = None,
    initargs: tuple = (),
    window: int | None = None,
    start_method: StartMethod = "fork",
) -> Iterator[R]:
    """``fn(job)`` for every job, in input order; see the module docstring for limits and failures."""
    if workers == 0:
        if initializer is not None:
            initializer(*initargs)
        yield from _inline(fn, jobs, timeout_s, on_timeout)
        return
    window = window or max(8 * workers, 32)
    pool = _Pool(fn, workers, initializer, initargs, start_method)
    done: dict[int, R] = {}
    sent = emitted = 0
    try:
        while emitted < len(jobs):
            for worker in pool.workers:
                if worker.position is None and sent < len(jobs) and sent - emitted < window:
                    worker.give(sent, jobs[sent])
                    sent += 1
            while emitted in done:
                yield done.pop(emitted)
                emitted += 1
            busy = [w for w in pool.workers if w.position is not None]
            if not busy:
                continue
            now = time.monotonic()
            wait_s = None if timeout_s is None else max(0.0, min(w.started + timeout_s - now for w in busy))
            connection.wait([w.conn for w in busy] + [w.process.sentinel for w in busy], timeout=wait_s)
            for i, worker in enumerate(pool.workers):
                if worker.position is not None:
                    pool.workers[i] = _collect(pool, worker, jobs, done, timeout_s, on_timeout, on_crash)
    finally:
        pool.close()


def _collect(
    pool: _Pool[J, R],
    worker: _Worker[J],
    jobs: Sequence[J],
    done: dict[int, R],
    timeout_s: float | None,
    on_timeout: Callable[[J], R],
    on_crash: Callable[[J, int | None], R],
) -> _Worker[J]:
    """Take a finished worker's result, or replace a dead or overdue worker; returns the worker to keep."""
    position = worker.position
    assert position is not None
    if worker.conn.poll():
        try:
            status, value = worker.conn.recv()
        except (EOFError, OSError):
            status, value = "dead", None
        if status == "ok":
            done[position] = value
            worker.position = None
            return worker
        if status == "error":
            raise RuntimeError(f"a worker process failed on job {position}:\n{value}")
    elif worker.process.is_alive():
        if timeout_s is None or time.monotonic() - worker.started < timeout_s:
            return worker  # still working within its time
        worker.stop(kill=True)
        done[position] = on_timeout(jobs[position])
        logger.debug("job %d ran past %.1f s: worker killed and replaced", position, timeout_s)
        return pool.fresh()
    worker.process.join(timeout=5)
    exitcode = worker.process.exitcode
    worker.stop(kill=True)
    done[position] = on_crash(jobs[position], exitcode)
    logger.debug("worker died on job %d (exit code %s): replaced", position, exitcode)
    return pool.fresh()


def _raise_timeout(signum: int, frame: object) -> None:
    raise _Timeout


def _inline(
    fn: Callable[[J], R], jobs: Sequence[J], timeout_s: float | None, on_timeout: Callable[[J], R]
) -> Iterator[R]:
    """Run the jobs in this process, each under a SIGALRM timer when one can be used (soft limit)."""
    timed = (
        timeout_s is not None
        and hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
    )
    if not timed:
        yield from map(fn, jobs)
        return
    assert timeout_s is not None
    for job in jobs:
        previous = signal.signal(signal.SIGALRM, _raise_timeout)
        try:
            signal.setitimer(signal.ITIMER_REAL, timeout_s)
            try:
                result = fn(job)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except _Timeout:
            result = on_timeout(job)
        finally:
            signal.signal(signal.SIGALRM, previous)
        yield result  # outside the timer and with the caller's handler back in place
