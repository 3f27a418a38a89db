"""The per-image work of sharded preprocessing: decode, transform, and the ordered worker pool around it.

:func:`process` turns one ``(index, path)`` job into a result row — the stored uint8 image (encoded as the
run's ``encoding`` asks, see ``encoding.py``) or a reject
kind and reason, plus the decoder's warnings; it never raises for one bad file. :func:`map_jobs` runs it
over many jobs in input order (in this process or in worker processes with a per-file time limit) on the
one executor of batch work (``tokenloom.execute.run_tasks``). ``shards.py`` writes the results;
``_distribute.py`` runs the same functions as Ray tasks. What it does not do: list inputs or write files.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from tokenloom.errors import ImageDecodeError
from tokenloom.execute import JobLimit, run_tasks
from tokenloom.vision import io as image_io
from tokenloom.vision.encoding import encode_view
from tokenloom.vision.store import make_store_transform

if TYPE_CHECKING:
    from tokenloom.vision.shards import PreprocessConfig

__all__ = ["Result", "init_worker", "map_jobs", "process"]

_WORKER_TRANSFORM: Any = None
_WORKER_DECODE: Any = None
_WORKER_ENCODING: tuple[Any, int | None] = ("raw", None)
# index, sha256, uint8 [3,S,S] / [3,h,w] | EncodedView | None, kind, reason, warnings
Result = tuple[int, str, Any, str, str, list[str]]


def init_worker(config: PreprocessConfig, single_thread: bool = False) -> None:
    """Set up this process's transform and decode settings (worker processes: one torch thread)."""
    global _WORKER_TRANSFORM, _WORKER_DECODE, _WORKER_ENCODING
    import torch

    if single_thread:  # worker processes only: N workers x M torch threads would oversubscribe the cores
        torch.set_num_threads(1)
    _WORKER_TRANSFORM = make_store_transform(config.store, size=config.size, max_side=config.max_side)
    _WORKER_DECODE = image_io.DecodeConfig(max_pixels=config.max_pixels)
    _WORKER_ENCODING = (config.encoding, config.stored_quality)


def process(job: tuple[int, str]) -> Result:
    """(index, path) -> (index, sha256, stored image | None, kind, reason, warnings).

    The stored image is the uint8 array ``[3, S, S]`` / ``[3, h, w]`` (raw) or its :class:`EncodedView`.
    """
    index, path = job
    sha, said = "", list[str]()
    try:
        data, label = image_io.read_source(path)
        sha = hashlib.sha256(data).hexdigest()
        image = image_io.load_image(  # [3, H, W]
            data, target_size=_WORKER_TRANSFORM.decode_size, config=_WORKER_DECODE, name=label, warnings=said
        )
        out = _WORKER_TRANSFORM(image).numpy()  # [3, S, S] (eval) or [3, h, w] (full) uint8
    except ImageDecodeError as exc:
        return index, sha, None, exc.kind, exc.detail, said
    except Exception as exc:  # the transform failing on a decoded image must not stop the run either
        return (
            index,
            sha,
            None,
            "corrupt",
            f"cannot transform the decoded image ({type(exc).__name__}: {exc})",
            said,
        )
    encoding, quality = _WORKER_ENCODING
    if encoding == "raw":
        return index, sha, out, "", "", said
    try:
        return index, sha, encode_view(out, encoding, quality), "", "", said
    except Exception as exc:  # an encoder failing on one image must not stop the run either
        reason = f"cannot encode the decoded image as {encoding} ({type(exc).__name__}: {exc})"
        return index, sha, None, "corrupt", reason, said


def map_jobs(jobs: Sequence[tuple[int, str]], config: PreprocessConfig) -> Iterator[Result]:
    """:func:`process` over ``jobs`` in input order, in ``config.workers`` processes, with the time limit."""
    limit = config.timeout_s
    image_io.import_decoders()  # before the clock starts; forked workers inherit the imported modules

    def timed_out(job: tuple[int, str]) -> Result:
        reason = (
            f"decoding took longer than {limit:g} s (the per-file limit, --timeout); the file was skipped"
        )
        return job[0], "", None, "timeout", reason, []

    def crashed(job: tuple[int, str], exitcode: int | None) -> Result:
        reason = f"the decoding process died (exit code {exitcode}) inside a decoder; the file was skipped"
        return job[0], "", None, "crashed", reason, []

    results = run_tasks(
        process, jobs, workers=config.workers, limit=JobLimit(limit, timed_out, crashed),
        initializer=init_worker, initargs=(config, config.workers > 0), start_method="fork",
    )  # fmt: skip
    for result, _ in results:
        yield result
