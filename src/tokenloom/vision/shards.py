"""Sharded, resumable image preprocessing: decode + store transform -> uint8 shards, manifest, rejects.

Output folder (``I`` = shard index, ``K`` = number of shards, zero-padded to 5 digits)::

    plan-I-of-K.json                 settings + the item list's hash (a rerun must match it to resume)
    shards/shard-I-of-K-JJJJJ.npy    the ok images of input chunk J, in input order: store "full" (default)
                                     a flat uint8 buffer of whole views (longer side <= max_side), store
                                     "eval" uint8 [n, 3, S, S] center crops (see ``store.py``); with
                                     encoding jpeg / webp / png a flat buffer of the encoded images
    shards/shard-I-of-K-JJJJJ.jsonl  one row per input item of chunk J: ok (shard, row) or rejected (kind, reason)
    manifest-I-of-K.csv              index, path, label, sha256 (of the source file), shape, shard, row, warnings
                                     (+ offset into the flat buffer for store "full"; + offset, nbytes,
                                     encoding for encoded runs: rows without encoding are raw)
    rejects-I-of-K.csv               index, path, label, kind, reason, warnings
    summary-I-of-K.json              counts: items, ok, rejected (by kind), with warnings, ignored files, shards

Robustness: one file never stops a run. Every decode failure is a reject with a kind
(:data:`tokenloom.errors.ImageErrorKind`) and the decoder's message; the decoder's warnings (Python
warnings and C-library messages such as libjpeg's "Corrupt JPEG data") are stored per file in the
``warnings`` column (distinct messages joined by `` | ``), never printed. Each file has a time limit
(``timeout_s``): with ``workers >= 1`` a worker past it is killed and replaced and the file is a
``timeout`` reject (a worker that crashes makes a ``crashed`` reject); with ``workers=0`` the limit is
a soft SIGALRM timer that cannot stop one long call inside C code (see ``tokenloom.execute.pool``).
Timeouts depend on the machine, so they are the one thing that can differ between reruns.

Work split: items are listed and sorted (see :func:`tokenloom.vision.data.list_items`); run ``I`` of ``K``
takes items ``I, I+K, I+2K, ...`` and cuts them into chunks of ``shard_size`` inputs, so any scheduler can
run the ``K`` parts anywhere, into one folder or several (merge the folders by copying).

Atomicity and resume: each ``.npy`` and then its ``.jsonl`` are written under a temporary name and renamed;
the ``.jsonl`` is the commit marker. A rerun skips every committed chunk and redoes the rest, so an
interrupted run followed by a rerun produces byte-identical files to one uninterrupted run (nothing in
the outputs depends on time, worker count or order of completion). Timing is printed, never stored.

:func:`read_manifest` reads the committed rows back for :class:`tokenloom.vision.data.ShardDataset`.
``distributor="ray"`` runs the chunks as Ray tasks on the executor (``_distribute.py``) writing the same files; both write a
chunk with ``_chunks.write_chunk``.
This module does not augment images (train transforms apply when reading shards).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import logging
import os
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from tokenloom._atomic import atomic_write
from tokenloom._progress import progress
from tokenloom.errors import ConfigError
from tokenloom.vision._chunks import relative_path, write_chunk
from tokenloom.vision._distribute import run_chunks_on_ray
from tokenloom.vision._shard_work import map_jobs
from tokenloom.vision.encoding import Encoding, check_encoding
from tokenloom.vision.listing import list_items
from tokenloom.vision.store import STORE_KINDS, StoreKind

__all__ = ["PreprocessConfig", "PreprocessSummary", "preprocess_images", "read_manifest", "read_settings"]

logger = logging.getLogger(__name__)

# 2: warnings per row, max_pixels in the plan; 3: store kind and max_side in the plan; 4: encoding and
# quality in the plan (a format-3 folder is a raw one: it reads and resumes as format 4 with encoding "raw")
FORMAT_VERSION = 4
Distributor = Literal["local", "ray"]
MANIFEST_COLUMNS = ("index", "path", "label", "sha256", "shape", "shard", "row", "warnings")
REJECT_COLUMNS = ("index", "path", "label", "kind", "reason", "warnings")
WARNING_SEPARATOR = " | "  # between the distinct messages of one file in the CSV ``warnings`` column
_DEFAULT_MAX_PIXELS = 89_478_485  # Pillow's default Image.MAX_IMAGE_PIXELS, as DecodeConfig


@dataclass(frozen=True)
class PreprocessConfig:
    """Settings of one preprocessing run (all but ``workers`` must match when resuming)."""

    size: int = 224  # output side S (eval transform: resize shorter side to floor(S / 0.875), center crop S)
    shard_size: int = 1000  # input items per shard (a shard stores the ok ones among them)
    num_shards: int = 1  # K: number of independent parts the work is split into
    shard_index: int = 0  # I: which part this run does, 0 <= I < K
    workers: int = 0  # decoding processes; 0 decodes in this process (outputs do not depend on it)
    # seconds one file may take (decode + transform) before it is rejected as "timeout"; None: no limit
    timeout_s: float | None = 30.0
    # images with more pixels are rejected as "too_large" (decompression bombs); None: no limit
    max_pixels: int | None = _DEFAULT_MAX_PIXELS
    store: StoreKind = "full"  # "full": whole view, longer side <= max_side; "eval": center crops of size
    max_side: int = 320  # store "full": longer side of the stored image (smaller images are kept as they are)
    distributor: Distributor = "local"  # "ray": chunks run as Ray tasks (outputs do not depend on it)
    encoding: Encoding = "raw"  # how each stored image is kept: raw uint8, jpeg, webp or png (encoding.py)
    quality: int | None = None  # jpeg / webp: 1..100 (None: 90); must stay None for raw and png

    def __post_init__(self) -> None:
        check_encoding(self.encoding, self.quality)
        if self.store not in STORE_KINDS:
            raise ConfigError(f"store must be one of {STORE_KINDS}, got {self.store!r}")
        if self.max_side < 1:
            raise ConfigError(f"max_side must be positive, got {self.max_side}")
        if self.distributor not in ("local", "ray"):
            raise ConfigError(f"distributor must be 'local' or 'ray', got {self.distributor!r}")
        if self.size < 1:
            raise ConfigError(f"size must be positive, got {self.size}")
        if self.shard_size < 1:
            raise ConfigError(f"shard_size must be positive, got {self.shard_size}")
        if self.num_shards < 1:
            raise ConfigError(f"num_shards must be >= 1, got {self.num_shards}")
        if not 0 <= self.shard_index < self.num_shards:
            raise ConfigError(
                f"shard_index must be in 0..{self.num_shards - 1} for num_shards={self.num_shards}, "
                f"got {self.shard_index}"
            )
        if self.workers < 0:
            raise ConfigError(f"workers must be >= 0, got {self.workers}")
        if self.timeout_s is not None and not self.timeout_s > 0:
            raise ConfigError(f"timeout_s must be positive or None (no limit), got {self.timeout_s!r}")
        if self.max_pixels is not None and self.max_pixels < 1:
            raise ConfigError(f"max_pixels must be positive or None (no limit), got {self.max_pixels!r}")

    @property
    def stored_quality(self) -> int | None:
        """The quality the encoder uses (the default filled in; ``None`` for raw and png)."""
        return check_encoding(self.encoding, self.quality)

    @property
    def tag(self) -> str:
        return f"{self.shard_index:05d}-of-{self.num_shards:05d}"


@dataclass
class PreprocessSummary:
    """What a run did; ``elapsed_s`` / ``images_per_s`` / ``resumed_shards`` describe this run only."""

    items: int  # inputs assigned to this part
    ok: int
    rejected: int
    by_kind: dict[str, int]
    ignored: int  # files without an image extension (listed in summary-*.json)
    shards: int
    warned: int = 0  # files (ok or rejected) whose decoder emitted warnings (the ``warnings`` column)
    resumed_shards: int = 0
    elapsed_s: float = 0.0
    images_per_s: float = 0.0
    out: str = ""
    rejects: list[dict[str, Any]] = field(default_factory=list)


# --- writing ------------------------------------------------------------------------------------------


def _csv_text(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(columns), extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def _load_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def preprocess_images(
    src: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    config: PreprocessConfig | None = None,
    quiet: bool = False,
    on_shard_done: Callable[[int], None] | None = None,
) -> PreprocessSummary:
    """Preprocess the images of ``src`` (folder / list / CSV) into shards under ``out``; resumable.

    ``on_shard_done(j)`` is called after chunk ``j`` is committed (a hook for progress or fault injection).
    """
    config = config or PreprocessConfig()
    src, out = Path(src), Path(out)
    items, classes, ignored = list_items(src)
    if not items:
        raise ConfigError(
            f"no image files in {str(src)!r} ({len(ignored)} files without an image suffix ignored); "
            "pass a folder of images, a .csv (path,label) or a list file"
        )
    root = src if src.is_dir() else src.parent
    mine = list(range(config.shard_index, len(items), config.num_shards))  # global indices of this part
    chunks = [mine[j : j + config.shard_size] for j in range(0, len(mine), config.shard_size)]
    listing = "\n".join(f"{relative_path(items[i].path, root)}\t{items[i].label}" for i in range(len(items)))
    plan = {
        "format": FORMAT_VERSION,
        "src": str(src.resolve()),
        "size": config.size,
        "store": config.store,
        "max_side": config.max_side if config.store == "full" else None,
        "encoding": config.encoding,
        "quality": config.stored_quality,
        "shard_size": config.shard_size,
        "num_shards": config.num_shards,
        "shard_index": config.shard_index,
        "max_pixels": config.max_pixels,
        "items_total": len(items),
        "items": len(mine),
        "items_sha256": hashlib.sha256(listing.encode()).hexdigest(),
        "classes": classes,
    }
    shard_dir = out / "shards"
    shard_dir.mkdir(parents=True, exist_ok=True)
    plan_path = out / f"plan-{config.tag}.json"
    if plan_path.exists():
        old = _upgraded(json.loads(plan_path.read_text(encoding="utf-8")))
        if old != plan:
            diff = sorted(k for k in plan if old.get(k) != plan[k])
            raise ConfigError(
                f"{out} holds a run with different settings or inputs ({', '.join(diff)} differ); "
                "pass a new --out folder (or delete this one) to start over"
            )
    else:
        atomic_write(plan_path, json.dumps(plan, indent=2, sort_keys=True) + "\n")
    for stale in shard_dir.glob(f".shard-{config.tag}-*.tmp"):  # our own leftovers from a killed run
        stale.unlink(missing_ok=True)

    start, done_now, resumed = time.perf_counter(), 0, 0
    todo = [j for j in range(len(chunks)) if not (shard_dir / f"shard-{config.tag}-{j:05d}.jsonl").exists()]
    resumed = len(chunks) - len(todo)
    if config.distributor == "ray":
        names = {j: f"shard-{config.tag}-{j:05d}" for j in todo}
        done_now = run_chunks_on_ray(shard_dir, names, chunks, items, root, config, quiet=quiet)
        return _finish(out, config, chunks, ignored, root, start, done_now, resumed)
    jobs = [(i, str(items[i].path)) for j in todo for i in chunks[j]]
    results = progress(
        map_jobs(jobs, config),
        total=len(jobs),
        desc="preprocess",
        unit="img",
        quiet=quiet,
    )
    try:
        for j in todo:
            done_now += write_chunk(
                shard_dir, f"shard-{config.tag}-{j:05d}", chunks[j], items, root, results, config
            )
            if on_shard_done is not None:
                on_shard_done(j)
    finally:
        results.close()  # stops worker processes at once when interrupted
    return _finish(out, config, chunks, ignored, root, start, done_now, resumed)


def _finish(
    out: Path,
    config: PreprocessConfig,
    chunks: list[list[int]],
    ignored: list[Path],
    root: Path,
    start: float,
    done_now: int,
    resumed: int,
) -> PreprocessSummary:
    rows: list[dict[str, Any]] = []
    for j in range(len(chunks)):
        rows.extend(_load_jsonl(out / "shards" / f"shard-{config.tag}-{j:05d}.jsonl"))
    ok = [r for r in rows if r["status"] == "ok"]
    rejects = [r for r in rows if r["status"] == "rejected"]
    for r in ok:
        r["shape"] = "x".join(map(str, r["shape"]))
    warned = sum(1 for r in rows if r.get("warnings"))
    for r in rows:
        r["warnings"] = WARNING_SEPARATOR.join(r.get("warnings") or [])
    columns: tuple[str, ...] = MANIFEST_COLUMNS
    if config.encoding != "raw":  # encoded images: bytes at an offset into the flat buffer (see store.py)
        columns = (*MANIFEST_COLUMNS, "offset", "nbytes", "encoding")
    elif config.store == "full":
        columns = (*MANIFEST_COLUMNS, "offset")
    atomic_write(out / f"manifest-{config.tag}.csv", _csv_text(ok, columns))
    atomic_write(out / f"rejects-{config.tag}.csv", _csv_text(rejects, REJECT_COLUMNS))
    by_kind = dict(sorted(Counter(r["kind"] for r in rejects).items()))
    summary = PreprocessSummary(
        items=sum(map(len, chunks)),
        ok=len(ok),
        rejected=len(rejects),
        by_kind=by_kind,
        ignored=len(ignored),
        shards=len(chunks),
        warned=warned,
    )
    stored = asdict(summary)
    for key in ("resumed_shards", "elapsed_s", "images_per_s", "out", "rejects"):
        stored.pop(key)  # run-specific: kept out of the file so reruns are byte-identical
    stored["ignored_files"] = [relative_path(p, root) for p in ignored]
    atomic_write(out / f"summary-{config.tag}.json", json.dumps(stored, indent=2, sort_keys=True) + "\n")
    elapsed = time.perf_counter() - start
    summary.resumed_shards = resumed
    summary.elapsed_s = elapsed
    summary.images_per_s = done_now / elapsed if elapsed > 0 else 0.0
    summary.out = str(out)
    summary.rejects = rejects
    return summary


def _upgraded(plan: dict[str, Any]) -> dict[str, Any]:
    """A plan in the current format: a format-3 plan (before encodings) is a raw one."""
    if plan.get("format") == 3 and "encoding" not in plan:
        return {**plan, "format": FORMAT_VERSION, "encoding": "raw", "quality": None}
    return plan


def read_settings(out: str | os.PathLike[str]) -> dict[str, Any]:
    """The settings every part under ``out`` agrees on (its plan: store, max_side, encoding, quality, ...)."""
    out = Path(out)
    plans = [_upgraded(json.loads(p.read_text(encoding="utf-8"))) for p in sorted(out.glob("plan-*.json"))]
    if not plans:
        raise ConfigError(
            f"{out}: not a preprocessed folder (no plan-*.json); run `tokenloom images preprocess`"
        )
    # the same run split across machines: same settings and the same item list (relative paths), wherever
    # each machine mounted the source (so "src" is not compared)
    keys = ("format", "size", "store", "max_side", "encoding", "quality", "num_shards", "items_sha256")
    differ = [k for k in keys if any(p.get(k) != plans[0].get(k) for p in plans)]
    if differ:
        raise ConfigError(
            f"{out}: holds parts of different runs (plan-*.json disagree on {', '.join(differ)}); "
            "keep one run per folder"
        )
    return plans[0]


def read_manifest(out: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Committed ok rows of every part under ``out``, sorted by global item index (for ShardDataset).

    Rows of encoded runs carry ``encoding``, ``offset`` and ``nbytes``; rows without ``encoding`` are raw.
    """
    out = Path(out)
    read_settings(out)  # the parts must agree
    rows: list[dict[str, Any]] = []
    for part in sorted((out / "shards").glob("shard-*.jsonl")):
        rows.extend(r for r in _load_jsonl(part) if r["status"] == "ok")
    rows.sort(key=lambda r: r["index"])
    return rows
