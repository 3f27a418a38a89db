"""The kept documents of a tokenize run as arrays, their order in each split, and the shards they fill.

:class:`Documents` numbers every kept document of the tasks' results (task by task, in plan order) and
holds, for each, its task, its first token in that task's ids, its tokens, its language, script and
source (as codes into small tables) and its input bytes: one array each, so ordering and cutting the
corpus are array operations, not a Python step per document.

- :func:`order_documents`: the validation split (a ``validation`` share drawn per document with
  ``seed``), then the train documents sampled by language (``floor(rate)`` copies plus one more with
  probability ``rate % 1``) and shuffled across the whole corpus — document numbers, in writing order.
- :func:`write_split`: a split's documents cut into shards of whole documents of at most
  ``max_tokens_per_shard`` tokens (a longer document fills a shard alone); a shard's tokens are copied
  from the tasks' ids a run of consecutive documents at a time (``writer.py`` writes the files, on a
  thread, while the next shard's tokens are copied).
- :func:`language_counts`: documents and tokens per language and split, for the manifest.

Shapes: ``D`` kept documents, ``n`` documents of a split. What it does not do: read or encode texts
(``encode.py``), write the manifest (``job.py``).
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tokenloom.tokens.config import TokenizeConfig
from tokenloom.tokens.encode import TaskTokens
from tokenloom.tokens.writer import DOC_DTYPE, ShardFile, write_shard

__all__ = ["Documents", "language_counts", "order_documents", "write_split"]


def _codes(values: list[str], table: dict[str, int]) -> list[int]:
    """Each value's number in ``table``, adding new values at the end."""
    return [table.setdefault(v, len(table)) for v in values]


@dataclass(frozen=True)
class Documents:
    """Every kept document of a run (see the module docstring); ``langs``, ``scripts`` and ``sources`` are
    the tables the codes index, ``sources`` in order of first appearance (the manifest's list)."""

    tokens: list[np.ndarray]  # per task: its ids, every kept document's one after another
    task: np.ndarray  # [D]
    start: np.ndarray  # [D] first token in its task's ids
    length: np.ndarray  # [D]
    lang: np.ndarray  # [D] code into langs
    script: np.ndarray  # [D] code into scripts
    source: np.ndarray  # [D] code into sources
    nbytes: np.ndarray  # [D] input UTF-8 bytes (0 for a later piece of a split document)
    langs: list[str]
    scripts: list[str]
    sources: list[str]

    @classmethod
    def of(cls, results: list[TaskTokens]) -> Documents:
        tables: dict[str, dict[str, int]] = {"langs": {}, "scripts": {}, "sources": {}}

        def coded(field: str) -> np.ndarray:  # [D] every document's value of `field` as its number
            values = [v for r in results for v in getattr(r, field)]
            return np.fromiter(_codes(values, tables[field]), dtype=np.int64, count=len(values))

        def joined(arrays: list[np.ndarray]) -> np.ndarray:
            return np.concatenate(arrays) if arrays else np.zeros(0, np.int64)

        lengths = [np.asarray(r.lengths, dtype=np.int64) for r in results]
        lang, script, source = coded("langs"), coded("scripts"), coded("sources")  # fills the tables
        return cls(
            tokens=[np.asarray(r.tokens) for r in results],
            task=np.repeat(np.arange(len(results)), [len(n) for n in lengths]),
            start=joined([np.cumsum(n) - n for n in lengths]),
            length=joined(lengths),
            lang=lang,
            script=script,
            source=source,
            nbytes=joined([np.asarray(r.nbytes, dtype=np.int64) for r in results]),
            langs=list(tables["langs"]),
            scripts=list(tables["scripts"]),
            sources=list(tables["sources"]),
        )

    def __len__(self) -> int:
        return len(self.length)

    def ids(self, docs: np.ndarray) -> np.ndarray:
        """The ids of documents ``docs`` one after another: a slice of a task's ids per run of documents
        that lie one after another in it."""
        if not len(docs):
            return np.zeros(0, np.uint32)
        task, start, end = self.task[docs], self.start[docs], self.start[docs] + self.length[docs]
        cut = np.flatnonzero((task[1:] != task[:-1]) | (start[1:] != end[:-1])) + 1  # runs' first documents
        firsts, lasts = np.concatenate([[0], cut]), np.concatenate([cut, [len(docs)]]) - 1
        return np.concatenate(
            [
                self.tokens[t][a:b]
                for t, a, b in zip(
                    task[firsts].tolist(), start[firsts].tolist(), end[lasts].tolist(), strict=True
                )
            ]
        )


def order_documents(docs: Documents, config: TokenizeConfig) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    """(train, validation, drawn): document numbers of each split in writing order, and the train copies
    drawn per language when ``config.sample`` is set (else empty)."""
    everyone = np.arange(len(docs))
    rng = np.random.default_rng(config.seed)
    held = rng.random(len(docs)) < config.validation if config.validation else np.zeros(len(docs), bool)
    train, val = everyone[~held], everyone[held]
    drawn: dict[str, int] = {}
    if config.sample:
        rates = dict(config.sample)
        rate = np.array([rates.get(lang, 1.0) for lang in docs.langs], dtype=np.float64)[docs.lang[train]]
        draws = np.random.default_rng([config.seed, 1]).random(len(train))
        copies = rate.astype(np.int64) + (draws < np.mod(rate, 1.0))  # [n]
        per_lang = np.bincount(docs.lang[train], weights=copies, minlength=len(docs.langs))
        seen = np.unique(docs.lang[train])
        drawn = {docs.langs[c]: int(per_lang[c]) for c in seen.tolist()}
        train = np.repeat(train, copies)
    if config.shuffle:
        train = train[np.random.default_rng([config.seed, 2]).permutation(len(train))]
    return train, val, drawn


def write_split(
    out: Path, split: str, order: np.ndarray, docs: Documents, dtype: np.dtype, limit: int
) -> list[dict[str, Any]]:
    """Shards ``SPLIT-NNNNN`` of documents ``order`` (see the module docstring); their manifest entries. A
    shard is written on a thread while the next one's ids are gathered, so two shards' ids are held at a
    time (``limit`` tokens each at most)."""
    ends = np.concatenate([[0], np.cumsum(docs.length[order])])  # [n + 1] tokens before each document
    limit = min(limit, max(int(ends[-1]), 1))  # the same cuts; no int64 overflow for a huge limit
    langs = np.asarray(docs.langs, dtype=DOC_DTYPE["lang"])
    scripts = np.asarray(docs.scripts, dtype=DOC_DTYPE["script"])
    shards: list[dict[str, Any]] = []
    written: Future[list[ShardFile]] | None = None  # the shard before: written while the next is gathered
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="tokenloom-shards") as writer:
        first = 0
        while first < len(order):
            # the most documents from `first` whose tokens stay within the limit, and at least one
            last = max(int(np.searchsorted(ends, ends[first] + limit, side="right")) - 1, first + 1)
            chosen = order[first:last]
            name = f"{split}-{len(shards):05d}"
            meta, ids = _sidecar(docs, chosen, langs, scripts), docs.ids(chosen)
            if written is not None:
                shards[-1]["files"] = [f.as_dict() for f in written.result()]
            written = writer.submit(write_shard, out, name, ids, docs.length[chosen], meta, dtype)
            shards.append({
                "name": name, "split": split, "documents": len(chosen), "tokens": int(ends[last] - ends[first]),
                "files": [],
            })  # fmt: skip
            first = last
        if written is not None:
            shards[-1]["files"] = [f.as_dict() for f in written.result()]
    return shards


def _sidecar(docs: Documents, chosen: np.ndarray, langs: np.ndarray, scripts: np.ndarray) -> np.ndarray:
    """[n] DOC_DTYPE rows of documents ``chosen`` (their token counts are filled in by ``write_shard``)."""
    meta = np.zeros(len(chosen), DOC_DTYPE)
    meta["lang"] = langs[docs.lang[chosen]]
    meta["script"] = scripts[docs.script[chosen]]
    meta["source"] = docs.source[chosen]
    meta["bytes"] = docs.nbytes[chosen]
    return meta


def language_counts(docs: Documents, train: np.ndarray, val: np.ndarray) -> dict[str, dict[str, int]]:
    """Documents and tokens per language in each split, languages in name order."""
    counts: dict[str, dict[str, int]] = {}
    for split, order in (("train", train), ("validation", val)):
        number = np.bincount(docs.lang[order], minlength=len(docs.langs))
        tokens = np.bincount(docs.lang[order], weights=docs.length[order], minlength=len(docs.langs))
        for code in np.flatnonzero(number).tolist():
            entry = counts.setdefault(
                docs.langs[code],
                {"train_documents": 0, "train_tokens": 0, "validation_documents": 0, "validation_tokens": 0},
            )
            entry[f"{split}_documents"] = int(number[code])
            entry[f"{split}_tokens"] = int(tokens[code])
    return dict(sorted(counts.items()))
