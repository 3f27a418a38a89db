"""Preprocessing chunks as Ray tasks: the same per-chunk work as a local run, scheduled by a Ray cluster.

Each uncommitted chunk becomes one task that decodes its images, writes the chunk's ``.npy`` and then its
``.jsonl`` (the commit marker) with the very code a local run uses (``_chunks.write_chunk``), so the
files, their bytes and the rejects are identical to a local run. The output folder must be visible to every
node at the same path (a shared file system). The driver then writes the manifest, rejects and summary.

The chunks run on the one executor of batch work (:func:`tokenloom.execute.run_tasks` with
``distributor="ray"``; ``tokenloom.execute.distributed`` starts Ray and says what it needs).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokenloom.execute import Progress, run_tasks
from tokenloom.vision import _shard_work
from tokenloom.vision._chunks import write_chunk

if TYPE_CHECKING:
    from tokenloom.vision.shards import PreprocessConfig

__all__ = ["chunk_task", "run_chunks_on_ray"]


def chunk_task(job: tuple[str, str, list[int], dict[int, Any], str, PreprocessConfig]) -> int:
    """Runs on a Ray worker: decode ``chunk`` and commit it as ``name`` (returns the number of inputs)."""
    shard_dir, name, chunk, items, root, config = job
    _shard_work.init_worker(config, single_thread=True)
    jobs = [(i, str(items[i].path)) for i in chunk]
    by_index: Any = items  # indexed by global item index, like the full list a local run passes
    return write_chunk(
        Path(shard_dir), name, chunk, by_index, Path(root), iter(map(_shard_work.process, jobs)), config
    )


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
    jobs = [
        (str(shard_dir), names[j], chunks[j], {i: items[i] for i in chunks[j]}, str(root), config)
        for j in sorted(names)
    ]
    shown = Progress[int](desc="preprocess (ray)", total=len(jobs), unit="shard", quiet=quiet)
    return sum(done for done, _ in run_tasks(chunk_task, jobs, distributor="ray", progress=shown))
