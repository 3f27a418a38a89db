"""The executor: results in plan order from every place tasks run, resume that skips finished tasks."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tokenloom.errors import ConfigError
from tokenloom.execute import JobLimit, ResultStore, run_tasks, worker_count

_CALLS: list[int] = []


def _square_late_first(job: int) -> int:
    time.sleep(0.05 if job == 0 else 0.0)  # the first job finishes last in a pool
    return job * job


def _record(job: int) -> int:
    _CALLS.append(job)
    return job + 100


def test_results_come_in_plan_order_in_process_and_in_workers() -> None:
    jobs = list(range(7))
    here = [r for r, _ in run_tasks(_square_late_first, jobs)]
    pool = [r for r, _ in run_tasks(_square_late_first, jobs, workers=2)]
    assert here == pool == [j * j for j in jobs]


def _hang_on_three(job: int) -> int:
    if job == 3:
        time.sleep(60)  # killed at the time limit
    return job * job


def test_a_job_limit_gives_the_timeout_result_in_plan_order_and_the_run_goes_on() -> None:
    limit = JobLimit(1.0, on_timeout=lambda job: -job, on_crash=lambda job, code: -1000)
    got = [
        r for r, _ in run_tasks(_hang_on_three, list(range(6)), workers=2, limit=limit, start_method="fork")
    ]
    assert got == [0, 1, 4, -3, 16, 25]


def test_resume_loads_finished_results_and_runs_only_the_rest(tmp_path: Path) -> None:
    keys = [f"task-{j}" for j in range(5)]
    store = ResultStore(tmp_path, b"settings", resume=False)
    first = run_tasks(_record, list(range(5)), store=store, keys=keys)
    assert [next(first), next(first)] == [(100, False), (101, False)]
    first.close()  # interrupted after two results
    _CALLS.clear()
    again = ResultStore(tmp_path, b"settings", resume=True)
    results = list(run_tasks(_record, list(range(5)), store=again, keys=keys, resume=True))
    assert results == [(100, True), (101, True), (102, False), (103, False), (104, False)]
    assert _CALLS == [2, 3, 4]
    other = ResultStore(tmp_path, b"other settings", resume=True)  # another fingerprint: nothing matches
    _CALLS.clear()
    assert [r for r, _ in run_tasks(_record, [0, 1], store=other, keys=keys[:2], resume=True)] == [100, 101]
    assert _CALLS == [0, 1]


def test_worker_counts_and_bad_settings() -> None:
    assert worker_count(4, 2) == 2 and worker_count(1, 0) == 1 and worker_count(0, 1000) >= 1
    with pytest.raises(ConfigError, match="workers must be an int >= 0"):
        worker_count(-1, 3)
    with pytest.raises(ConfigError, match="distributor must be 'local' or 'ray'"):
        list(run_tasks(_record, [1], distributor="dask"))  # type: ignore[arg-type]
