"""Tokenize one corpus task: its documents read by the corpus plan, encoded, framed by BOS/EOS, limited.

:func:`tokenize_task` turns a :class:`~tokenloom.corpus.plan.CorpusTask` into :class:`TaskTokens`:
the token ids of every document (flat, with lengths), its sidecar row (language, script, source, input
bytes), a SHA-256 of the texts read (the corpus fingerprint is made of these) and what was set aside: a
document the reader rejects or the engine cannot encode (``errors="skip"``), a document over the length
limit (dropped, or split into pieces). It runs anywhere — this process, a worker process, a Ray task — and
its result does not depend on where. What it does not do: order documents or write files (``job.py``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from tokenloom.corpus.plan import CorpusTask, read_corpus_task
from tokenloom.corpus.records import SourceStats
from tokenloom.text.tokenizer import Tokenizer
from tokenloom.tokens.config import TokenizeConfig

__all__ = ["Framing", "TaskTokens", "tokenize_task"]


@dataclass(frozen=True)
class Framing:
    """The resolved ids around each document (None: none)."""

    bos: int | None
    eos: int | None


@dataclass
class TaskTokens:
    """One task's documents as token ids and what reading and encoding them found."""

    tokens: np.ndarray  # [T] uint32: every kept document's ids, concatenated
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


def tokenize_task(task: CorpusTask, tok: Tokenizer, framing: Framing, config: TokenizeConfig) -> TaskTokens:
    """Read and encode every document of ``task`` (see the module docstring)."""
    stats = SourceStats()
    out = TaskTokens(np.zeros(0, np.uint32))
    digest = hashlib.sha256()
    chunks: list[np.ndarray] = []
    head = [framing.bos] if framing.bos is not None else []
    tail = [framing.eos] if framing.eos is not None else []
    limit = config.max_doc_tokens
    for piece in read_corpus_task(task, errors=config.errors, stats=stats):
        part = piece.part
        for text in piece.texts:
            digest.update(text.encode("utf-8", "surrogatepass") + b"\n")
        out.input_documents += len(piece.texts)
        for text, ids in zip(piece.texts, _encode(tok, piece.texts, out, part.source), strict=True):
            if ids is None:
                continue
            doc = np.asarray(head + ids + tail, dtype=np.uint32)  # [n]
            pieces = [doc]
            if limit is not None and len(doc) > limit:
                if config.long_docs == "drop":
                    out.dropped_long += 1
                    continue
                out.split_long += 1
                pieces = [doc[i : i + limit] for i in range(0, len(doc), limit)]
            for k, p in enumerate(pieces):
                chunks.append(p)
                out.lengths.append(len(p))
                out.langs.append(part.lang)
                out.scripts.append(part.script or "")
                out.sources.append(part.source)
                out.nbytes.append(len(text.encode("utf-8", "surrogatepass")) if k == 0 else 0)
    out.input_documents += stats.rejected
    out.rejected += stats.rejected
    out.reasons += [f"{r.where}: {r.reason}" for r in stats.rejects]
    out.read_bytes = stats.bytes
    out.digest = digest.hexdigest()
    out.tokens = np.concatenate(chunks) if chunks else out.tokens
    return out
