"""The one way to run batch work: tasks in this process, in worker processes or as Ray tasks.

- ``run``: :func:`run_tasks` — results in plan order, finished results kept under a state folder and
  skipped on resume, progress, worker-count rules and per-job time limits (:class:`JobLimit`);
- ``pool``: the local worker pool (:func:`ordered_map`, per-job time limits, crashed workers replaced);
- ``distributed``: Ray (its import, start-up and ``RAY_ADDRESS`` handling, :func:`ray_map`).

Every batch job — a report, image preprocessing, writing token shards — hands its plan's tasks to
:func:`run_tasks`; none starts its own pool. ``pool`` and ``distributed`` are reached only through
``run``, so this package exports neither's entry points.
"""

from __future__ import annotations

from tokenloom.execute.pool import StartMethod
from tokenloom.execute.run import Distributor, JobLimit, Progress, ResultStore, run_tasks, worker_count

__all__ = [
    "Distributor",
    "JobLimit",
    "Progress",
    "ResultStore",
    "StartMethod",
    "run_tasks",
    "worker_count",
]
