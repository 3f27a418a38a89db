"""The one way to run batch work: tasks in this process, in worker processes or as Ray tasks.

- ``run``: :func:`run_tasks` — results in plan order, finished results kept under a state folder and
  skipped on resume, progress, worker-count rules and per-job time limits (:class:`JobLimit`);
- ``pool``: the local worker pool (:func:`ordered_map`, per-job time limits, crashed workers replaced);
- ``distributed``: Ray (its import, start-up and ``RAY_ADDRESS`` handling, :func:`ray_map`).

Every batch job — a report, image preprocessing, writing token shards — hands its plan's tasks here;
none starts its own pool.
"""

from __future__ import annotations

from tokenloom.execute.distributed import import_ray, init_ray, ray_map
from tokenloom.execute.pool import StartMethod, ordered_map
from tokenloom.execute.run import Distributor, JobLimit, Progress, ResultStore, run_tasks, worker_count

__all__ = [
    "Distributor",
    "JobLimit",
    "Progress",
    "ResultStore",
    "StartMethod",
    "import_ray",
    "init_ray",
    "ordered_map",
    "ray_map",
    "run_tasks",
    "worker_count",
]
