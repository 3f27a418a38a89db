"""Tokenize one corpus task: its documents read by the corpus plan, encoded, framed by BOS/EOS, limited.

:func:`tokenize_task` turns a :class:`~tokenloom.corpus.plan.CorpusTask` into :class:`TaskTokens`:
the token ids of every document (flat, with lengths), its sidecar row (language, script, source, input
bytes), a SHA-256 of the texts read (the corpus fingerprint is made of these) and what was set aside: a
document the reader rejects or the engine cannot encode (``errors="skip"``), a document over the length
limit (dropped, or split into pieces). Consecutive pieces are encoded together (up to ``_ENGINE_TEXTS``
texts) in the engine's ids-only flat call (:meth:`Tokenizer.encode_ids_flat
<tokenloom.text.tokenizer.Tokenizer.encode_ids_flat>`: the fast engine where it is verified exact), and BOS
and EOS are placed by array indexing — no list of ids per document; after an engine error the batch is
encoded piece by piece and text by text, so only the texts it refuses are rejects. It runs anywhere — this
process, a worker process, a Ray task — and its result does not depend on where. What it does not do:
order documents or write files (``documents.py``).
"""

from __future__ import annotations

import hashlib
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tokenloom.corpus.columnar import ramped, read_corpus_task
from tokenloom.corpus.parts import CorpusPart
from tokenloom.corpus.plan import CorpusTask
from tokenloom.corpus.records import SourceStats
from tokenloom.text.tokenizer import Tokenizer
from tokenloom.tokens.config import TokenizeConfig

__all__ = ["Framing", "TaskTokens", "tokenize_task"]


@dataclass(frozen=True)
class Framing:
    """How a document's ids are laid down: the resolved ids around it (None: none) and the shards' id type
    (every id fits it)."""

    bos: int | None
    eos: int | None
    dtype: str  # numpy's name of it, e.g. "<u2"


@dataclass
class TaskTokens:
    """One task's documents as token ids and what reading and encoding them found."""

    tokens: np.ndarray  # [T] framing.dtype: every kept document's ids, concatenated
    lengths: list[int] = field(default_factory=list)  # tokens per kept document (pieces of split ones)
    langs: list[str] = field(default_factory=list)
    scripts: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    nbytes: list[int] = field(
        default_factory=list
    )  # input UTF-8 bytes of each kept document (0: a later piece)
    input_documents: int = 0  # documents read plus documents the reader rejected
    rejected: int = 0  # documents that could not be read or encoded
    reasons: list[str] = field(default_factory=list)  # one line per reject (file, line / row group, why)
    dropped_long: int = 0  # documents over the limit, dropped
    split_long: int = 0  # documents over the limit, split into pieces
    read_bytes: int = 0
    digest: str = ""  # SHA-256 of the texts read (each UTF-8, newline-terminated)


_ENGINE_TEXTS = 8192  # texts per engine call: consecutive pieces are encoded together
_PIECE_TEXTS = 1024  # texts per piece read (``read_corpus_task``'s chunk_size): it decides the order


def _encode(tok: Tokenizer, texts: list[str], out: TaskTokens, where: str) -> list[list[int] | None]:
    """Ids of each text; a text the engine refuses is None (a reject) — one by one only after a failure."""
    try:
        return list(tok.encode_batch(texts))
    except Exception:  # an engine error on one text must not stop the run: find which ones
        result: list[list[int] | None] = []
        for i, text in enumerate(texts):
            try:
                result.append(tok.encode(text))
            except Exception as exc:
                out.rejected += 1
                out.reasons.append(f"{where} document {i}: cannot be encoded ({type(exc).__name__}: {exc})")
                result.append(None)
        return result


class _Pending:
    """Pieces read but not yet encoded: their texts, each text's part and where it was read."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.parts: list[CorpusPart] = []
        self.counts: list[int] = []
        self.nbytes: list[int] = []  # each text's UTF-8 bytes
        self.encoded: list[tuple[np.ndarray, np.ndarray]] = []  # the texts' ids, when encoded already

    def add(self, part: CorpusPart, texts: list[str], nbytes: list[int]) -> None:
        """Hold ``texts`` of ``part`` and their UTF-8 sizes (:func:`_digested`)."""
        self.nbytes += nbytes
        self.texts += texts
        self.parts.append(part)
        self.counts.append(len(texts))


def _digested(texts: list[str], digest: Any) -> list[int]:
    """Each text's UTF-8 size, every text added to ``digest`` as UTF-8 with a newline after it."""
    if not texts:
        return []
    data = [t.encode("utf-8", "surrogatepass") for t in texts]
    digest.update(b"\n".join(data))
    digest.update(b"\n")
    return list(map(len, data))


def _encode_flat(
    tok: Tokenizer, pending: _Pending, out: TaskTokens
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """([n] kept, [k] tokens per kept text, [T] ids) of the pending texts from the engine's flat ids-only
    call; after an engine error piece by piece, text by text (:func:`_encode`), a text it refuses a reject."""
    if pending.encoded:
        lengths, ids = (np.concatenate([e[k] for e in pending.encoded]) for k in (0, 1))
        return np.ones(len(pending.texts), bool), lengths, ids
    try:
        lengths, ids = tok.encode_ids_flat(pending.texts)
        return np.ones(len(pending.texts), bool), lengths, ids
    except Exception:  # find the texts the engine refuses, as the per-piece encoding did
        kept, lists, start = np.zeros(len(pending.texts), bool), [], 0
        for part, n in zip(pending.parts, pending.counts, strict=True):
            for i, got in enumerate(_encode(tok, pending.texts[start : start + n], out, part.source)):
                if got is not None:
                    kept[start + i] = True
                    lists.append(got)
            start += n
        lengths = np.fromiter(map(len, lists), np.int64, count=len(lists))
        ids = np.fromiter((i for ids_ in lists for i in ids_), np.int64, count=int(lengths.sum()))
        return kept, lengths, ids


def _framed(lengths: np.ndarray, ids: np.ndarray, framing: Framing) -> tuple[np.ndarray, np.ndarray]:
    """([k] tokens per document, [T'] ids as ``framing.dtype``) with BOS before and EOS after each document."""
    head, tail = int(framing.bos is not None), int(framing.eos is not None)
    sizes = lengths + head + tail  # [k]
    ends = np.cumsum(sizes)  # [k]
    tokens = np.empty(int(ends[-1]) if len(ends) else 0, framing.dtype)  # [T']
    body = np.ones(len(tokens), bool)
    if framing.bos is not None:
        tokens[ends - sizes] = framing.bos
        body[ends - sizes] = False
    if framing.eos is not None:
        tokens[ends - 1] = framing.eos
        body[ends - 1] = False
    tokens[body] = ids
    return sizes, tokens


def _flush(
    pending: _Pending, tok: Tokenizer, framing: Framing, config: TokenizeConfig, out: TaskTokens,
    chunks: list[np.ndarray],
) -> None:  # fmt: skip
    """Encode the pending texts in one engine call and keep their documents (see the module docstring)."""
    texts = pending.texts
    if not texts:
        return
    kept, lengths, ids = _encode_flat(tok, pending, out)
    sizes, tokens = _framed(lengths, ids, framing)
    owner = np.repeat(np.arange(len(pending.parts)), pending.counts)[kept]  # [k] each kept text's piece
    nbytes = np.asarray(pending.nbytes, dtype=np.int64)[kept].tolist()
    limit = config.max_doc_tokens
    if limit is None or not len(sizes) or int(sizes.max()) <= limit:
        chunks.append(tokens)
        out.lengths += sizes.tolist()
        out.nbytes += nbytes
        for i in owner.tolist():
            part = pending.parts[i]
            out.langs.append(part.lang)
            out.scripts.append(part.script or "")
            out.sources.append(part.source)
        return
    ends = np.cumsum(sizes).tolist()
    for end, size, i, nb in zip(ends, sizes.tolist(), owner.tolist(), nbytes, strict=True):
        pieces = [tokens[end - size : end]]
        if size > limit:
            if config.long_docs == "drop":
                out.dropped_long += 1
                continue
            out.split_long += 1
            pieces = [pieces[0][j : j + limit] for j in range(0, size, limit)]
        part = pending.parts[i]
        for k, p in enumerate(pieces):
            chunks.append(p)
            out.lengths.append(len(p))
            out.langs.append(part.lang)
            out.scripts.append(part.script or "")
            out.sources.append(part.source)
            out.nbytes.append(nb if k == 0 else 0)


def tokenize_task(task: CorpusTask, tok: Tokenizer, framing: Framing, config: TokenizeConfig) -> TaskTokens:
    """Read and encode every document of ``task`` (see the module docstring)."""
    if task.piece is not None and task.part is None and not task.aligned:  # a table's rows
        done = _overlapped(task, tok, framing, config)
        if done is not None:
            return done
    return _sequential(task, tok, framing, config)


def _sequential(task: CorpusTask, tok: Tokenizer, framing: Framing, config: TokenizeConfig) -> TaskTokens:
    """Every piece in reading order, encoded a few pieces at a time after they are read."""
    stats = SourceStats()
    out = TaskTokens(np.zeros(0, framing.dtype))
    digest = hashlib.sha256()
    chunks: list[np.ndarray] = []
    pending = _Pending()
    for piece in read_corpus_task(task, errors=config.errors, stats=stats, chunk_size=_PIECE_TEXTS):
        out.input_documents += len(piece.texts)
        pending.add(piece.part, piece.texts, _digested(piece.texts, digest))
        if len(pending.texts) >= _ENGINE_TEXTS:
            _flush(pending, tok, framing, config, out, chunks)
            pending = _Pending()
    _flush(pending, tok, framing, config, out, chunks)
    return _finish(out, stats, digest, chunks)


def _finish(out: TaskTokens, stats: SourceStats, digest: Any, chunks: list[np.ndarray]) -> TaskTokens:
    """``out`` with what reading set aside, the texts' digest and every kept document's ids."""
    out.input_documents += stats.rejected
    out.rejected += stats.rejected
    out.reasons += [f"{r.where}: {r.reason}" for r in stats.rejects]
    out.read_bytes = stats.bytes
    out.digest = digest.hexdigest()
    out.tokens = np.concatenate(chunks) if chunks else out.tokens
    return out


def _overlapped(
    task: CorpusTask, tok: Tokenizer, framing: Framing, config: TokenizeConfig
) -> TaskTokens | None:
    """A table task whose rows are encoded on a thread while the next rows are read (the parts' rows handed
    over as they come, ``held_rows``), then put in the order of :func:`_sequential`'s pieces
    (:func:`_piece_order`); ``None`` after an engine error (the task is then read again, piece by piece)."""
    stats = SourceStats()
    held: dict[CorpusPart, list[tuple[list[str], list[Any]]]] = {}
    calls: list[tuple[list[tuple[CorpusPart, int]], Future[tuple[np.ndarray, np.ndarray]]]] = []
    batch: list[tuple[CorpusPart, list[str]]] = []
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="tokenize-encode") as pool:

        def submit() -> None:
            texts = [t for _, ts in batch for t in ts]
            calls.append(([(p, len(ts)) for p, ts in batch], pool.submit(_ids_as, tok, texts, framing.dtype)))
            batch.clear()

        pieces = read_corpus_task(
            task, errors=config.errors, stats=stats, chunk_size=_PIECE_TEXTS, held_rows=_ENGINE_TEXTS
        )
        for piece in pieces:
            held.setdefault(piece.part, []).append((piece.texts, piece.ids))
            batch.append((piece.part, piece.texts))
            full = ramped(_ENGINE_TEXTS, len(calls))  # the first calls smaller: the engine starts early
            if sum(len(ts) for _, ts in batch) >= full:
                submit()
        if batch:
            submit()
        # the texts in piece order, hashed while the engine finishes the last calls
        texts = {p: [t for ts, _ in rows for t in ts] for p, rows in held.items()}
        order = _piece_order({p: [i for _, ns in rows for i in ns] for p, rows in held.items()})
        digest = hashlib.sha256()
        nbytes = [_digested(texts[part][lo:hi], digest) for part, lo, hi in order]
        try:
            encoded: dict[CorpusPart, list[tuple[np.ndarray, np.ndarray]]] = {}
            for owners, call in calls:
                lengths, ids = call.result()
                ends = np.cumsum(lengths)  # [n]
                at = 0
                for part, n in owners:
                    lo, hi = int(ends[at - 1]) if at else 0, int(ends[at + n - 1]) if n else 0
                    encoded.setdefault(part, []).append((lengths[at : at + n], ids[lo:hi] if n else ids[:0]))
                    at += n
        except Exception:  # an engine error: the texts it refuses are found piece by piece
            return None
    out, chunks = _ordered(texts, encoded, order, nbytes, tok, framing, config)
    return _finish(out, stats, digest, chunks)


def _ids_as(tok: Tokenizer, texts: list[str], dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """([n] tokens per text, [T] ids as the shards' ``dtype``, which every id fits): cast on the encoding
    thread, so the task's ids are copied and framed at their stored size."""
    lengths, ids = tok.encode_ids_flat(texts)
    return lengths, ids.astype(dtype)


def _ordered(
    texts: dict[CorpusPart, list[str]],
    encoded: dict[CorpusPart, list[tuple[np.ndarray, np.ndarray]]],
    order: list[tuple[CorpusPart, int, int]],
    nbytes: list[list[int]],
    tok: Tokenizer,
    framing: Framing,
    config: TokenizeConfig,
) -> tuple[TaskTokens, list[np.ndarray]]:
    """The task's documents, encoded already, kept in the pieces' ``order`` (:func:`_piece_order`; each
    piece's texts' UTF-8 sizes in ``nbytes``), and the kept documents' ids."""
    out = TaskTokens(np.zeros(0, framing.dtype))
    chunks: list[np.ndarray] = []
    pending = _Pending()
    lengths = {p: np.concatenate([e[0] for e in encoded[p]]) for p in texts}
    ids = {p: np.concatenate([e[1] for e in encoded[p]]) for p in texts}
    starts = {p: np.concatenate([[0], np.cumsum(n)]) for p, n in lengths.items()}  # [n + 1] per part
    for (part, lo, hi), sizes in zip(order, nbytes, strict=True):
        out.input_documents += hi - lo
        pending.add(part, texts[part][lo:hi], sizes)
        first, last = int(starts[part][lo]), int(starts[part][hi])
        pending.encoded.append((lengths[part][lo:hi], ids[part][first:last]))
        if len(pending.texts) >= _ENGINE_TEXTS:
            _flush(pending, tok, framing, config, out, chunks)
            pending = _Pending()
    _flush(pending, tok, framing, config, out, chunks)
    return out, chunks


def _piece_order(numbers: dict[CorpusPart, list[Any]]) -> list[tuple[CorpusPart, int, int]]:
    """(part, first, stop) of the pieces a table task is read into with ``chunk_size=_PIECE_TEXTS`` and no
    ``held_rows``, in order, from each part's row numbers (increasing in reading order): a part's rows are
    handed over when it holds ``_PIECE_TEXTS``, at the row that fills it, then every part's rest in the
    order the parts were first seen."""
    size = _PIECE_TEXTS
    full = [
        (ns[k + size - 1], part, k, k + size)
        for part, ns in numbers.items()
        for k in range(0, len(ns) - size + 1, size)
    ]
    order = [(part, lo, hi) for _, part, lo, hi in sorted(full, key=lambda f: f[0])]
    seen = sorted(numbers, key=lambda p: numbers[p][0])
    return order + [
        (p, len(numbers[p]) // size * size, len(numbers[p])) for p in seen if len(numbers[p]) % size
    ]
