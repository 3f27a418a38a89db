"""Preprocessing chunks as Ray tasks: the same per-chunk work as a local run, scheduled by a Ray cluster.

Each uncommitted chunk becomes one task that decodes its images, writes the chunk's ``.npy`` and then its
``.jsonl`` (the commit marker) with the very code a local run uses (``_chunks.write_chunk``), so the
files, their bytes and the rejects are identical to a local run. The output folder must be visible to every
node at the same path (a shared file system). The driver then writes the manifest, rejects and summary.

``ray`` is optional (``pip install "tokenloom[ray]"``) and imported only here. When Ray is not yet
initialized, ``ray.init()`` joins the cluster named by ``RAY_ADDRESS`` or starts a local one. Worker processes
receive this process's ``PYTHONPATH`` so they import the same tokenloom.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokenloom._progress import progress
from tokenloom.errors import ConfigError
from tokenloom.vision import _shard_work
from tokenloom.vision._chunks import write_chunk

if TYPE_CHECKING:
    from tokenloom.vision.shards import PreprocessConfig

__all__ = ["run_chunks_on_ray"]


def _chunk_task(
    shard_dir: str, name: str, chunk: list[int], items: dict[int, Any], root: str, config: PreprocessConfig
) -> int:
    """Runs on a Ray worker: decode ``chunk`` and commit it as ``name`` (returns the number of inputs)."""
    _shard_work.init_worker(config, single_thread=True)
    jobs = [(i, str(items[i].path)) for i in chunk]
    by_index: Any = items  # indexed by global item index, like the full list a local run passes
    return write_chunk(
        Path(shard_dir), name, chunk, by_index, Path(root), iter(map(_shard_work.process, jobs)), config
    )


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError(
            "--distributor ray needs the ray package: pip install 'tokenloom[ray]' (or drop --distributor)"
        ) from None
    return ray


def run_chunks_on_ray(
    shard_dir: Path,
    names: dict[int, str],
    chunks: Sequence[list[int]],
    items: Sequence[Any],
    root: Path,
    config: PreprocessConfig,
    *,
    quiet: bool = False,
) -> int:
    """Run chunk ``j`` as a Ray task writing ``names[j]`` for every ``j`` in ``names``; returns inputs done."""
    ray = _import_ray()
    if not ray.is_initialized():
        env = {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}
        ray.init(runtime_env={"env_vars": env} if env else None, log_to_driver=False)
    task = ray.remote(num_cpus=1)(_chunk_task)
    pending = [
        task.remote(str(shard_dir), names[j], chunks[j], {i: items[i] for i in chunks[j]}, str(root), config)
        for j in sorted(names)
    ]
    done = 0

    def finished() -> Any:
        nonlocal pending
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            yield ray.get(ready[0])  # re-raises a task's exception here

    for n in progress(finished(), total=len(names), desc="preprocess (ray)", unit="shard", quiet=quiet):
        done += n
    return done
