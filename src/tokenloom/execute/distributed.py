"""Jobs as Ray tasks: the one place tokenloom imports and starts Ray.

``ray`` is optional (``pip install "tokenloom[ray]"``) and imported only here. :func:`init_ray` starts it
once per process: when Ray is not yet initialized, ``ray.init()`` joins the cluster named by
``RAY_ADDRESS`` (Ray reads that variable itself) or starts a local one, and the workers get this process's
``PYTHONPATH`` so they import the same tokenloom. :func:`ray_map` runs ``fn(job)`` for every job as one
Ray task (1 CPU each), the shared ``initargs`` put in the object store once, and yields ``(position,
result)`` as tasks finish; a task's exception is raised here. Files the jobs read or write must be visible
to every node at the same path (a shared file system). What it does not do: order results or keep state
(see ``tokenloom.execute.run``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from tokenloom.errors import ConfigError

__all__ = ["import_ray", "init_ray", "ray_map"]

J = TypeVar("J")
R = TypeVar("R")


def import_ray() -> Any:
    """The ``ray`` module, or a :class:`ConfigError` saying how to install it."""
    try:
        import ray
    except ImportError:
        raise ConfigError(
            "--distributor ray needs the ray package: pip install 'tokenloom[ray]' (or drop --distributor)"
        ) from None
    return ray


def init_ray() -> Any:
    """``ray``, initialized: joins ``RAY_ADDRESS`` or starts a local cluster when not yet initialized."""
    ray = import_ray()
    if not ray.is_initialized():
        env = {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}
        ray.init(runtime_env={"env_vars": env} if env else None, log_to_driver=False)
    return ray


def _call(
    fn: Callable[[Any], Any], initializer: Callable[..., None] | None, initargs: tuple, job: Any
) -> Any:
    """Runs on a Ray worker: set the worker up as a local worker process would be, then run one job."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # one task per CPU: no engine threads
    if initializer is not None:
        initializer(*initargs)
    return fn(job)


def ray_map(
    fn: Callable[[J], R],
    jobs: Sequence[J],
    *,
    initializer: Callable[..., None] | None = None,
    initargs: tuple = (),
) -> Iterator[tuple[int, R]]:
    """``(position, fn(job))`` for every job, run as Ray tasks, in the order they finish."""
    if not jobs:
        return
    ray = init_ray()
    remote = ray.remote(num_cpus=1)(_call)
    shared = ray.put(initargs)
    pending = {remote.remote(fn, initializer, shared, job): i for i, job in enumerate(jobs)}
    try:
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            position = pending.pop(ready[0])
            yield position, ray.get(ready[0])  # re-raises a task's exception here
    finally:
        for ref in pending:
            ray.cancel(ref)
