"""``tokenize_corpus``: every document of a corpus as token ids in shards, on the corpus plan and the executor.

1. The corpus is planned into tasks (:func:`~tokenloom.corpus.plan.plan_corpus_tasks`, the one way
   tokenloom reads a corpus) and each task is tokenized (``encode.py``) on
   :func:`tokenloom.execute.run_tasks`: in this process, ``workers`` processes or Ray tasks. Each finished
   task's result is kept under ``OUT/.state`` (fingerprinted by the settings and the tokenizer), so
   ``resume=True`` after a crash (``kill -9``) tokenizes only the tasks not yet finished.
2. The documents, in plan order, are split into validation (a ``validation`` share, drawn per document
   with ``seed``) and train; train documents are sampled by language (``sample``: a rate below 1 keeps a
   drawn share, above 1 repeats: ``floor(rate)`` copies plus one more with probability ``rate % 1``) and
   shuffled across the whole corpus with ``seed`` (``documents.py``, on arrays of every kept document).
3. Each split is cut into shards of whole documents of at most ``max_tokens_per_shard`` tokens
   (``documents.py``, ``writer.py``) and the manifest is written last (``manifest.py``).

Nothing in the outputs depends on the worker count, the distributor or an interruption: they are
byte-identical. Memory: each finished task's token ids are kept beside its result under ``OUT/.state``
and read back by memory map, so the run holds the documents' sidecar values, not their tokens.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import signal
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tokenloom._atomic import atomic_open
from tokenloom.corpus.plan import CorpusTask, plan_corpus_tasks
from tokenloom.errors import ConfigError
from tokenloom.execute import Distributor, Progress, ResultStore, run_tasks
from tokenloom.text.tokenizer import Tokenizer, load_tokenizer
from tokenloom.tokens.config import TokenizeConfig
from tokenloom.tokens.documents import Documents, language_counts, order_documents, write_split
from tokenloom.tokens.encode import Framing, TaskTokens, tokenize_task
from tokenloom.tokens.manifest import read_manifest, tokenizer_fingerprint, write_manifest
from tokenloom.tokens.writer import token_dtype

__all__ = ["TokenizeSummary", "tokenize_corpus"]

_KILL_AFTER = "TOKENLOOM_TEST_KILL_AFTER_TASKS"  # tests: SIGKILL this process after N tasks are kept
_EOS_NAMES = ("<|endoftext|>", "</s>", "<eos>", "<|end_of_text|>", "[SEP]", "<|eos|>")


@dataclass(frozen=True)
class TokenizeSummary:
    """What a run wrote (the manifest holds the same counts) and how much of it was resumed."""

    out: Path
    documents: int
    tokens: int
    rejected: int
    input_documents: int
    shards: int
    tasks: int
    resumed_tasks: int


def _token_id(tok: Tokenizer, token: str) -> int | None:
    handle = tok.engine_handle()
    for method in ("token_to_id", "piece_to_id", "convert_tokens_to_ids"):
        find = getattr(handle, method, None)
        if find is not None:
            found = find(token)
            return found if isinstance(found, int) and found >= 0 and found != tok.unk_id else None
    return None


def _special(tok: Tokenizer, value: int | str | None, what: str) -> int | None:
    """Resolve ``eos``/``bos`` (an id, a token, ``"auto"`` or None) to an id inside the vocabulary."""
    if value is None:
        return None
    if value == "auto":
        for name in _EOS_NAMES:
            found = _token_id(tok, name)
            if found is not None:
                return found
        raise ConfigError(
            f"tokenizer {tok.name!r} has no end-of-text token ({', '.join(_EOS_NAMES)}); pass --{what} ID "
            f"or --{what} none"
        )
    ident = _token_id(tok, value) if isinstance(value, str) else value
    if ident is None:
        raise ConfigError(
            f"{what} token {value!r} is not in tokenizer {tok.name!r}; pass an id with --{what} ID"
        )
    if not 0 <= ident < tok.vocab_size:
        raise ConfigError(
            f"{what} id {ident} is outside the vocabulary of {tok.name!r} (0..{tok.vocab_size - 1}); pass an "
            f"id below {tok.vocab_size} with --{what}"
        )
    return ident


_WORKER: dict[str, Any] = {}


def _init(payload: bytes) -> None:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    _WORKER["args"] = pickle.loads(payload)


def _run(task: CorpusTask) -> TaskTokens:
    tok, framing, config = _WORKER["args"]
    return tokenize_task(task, tok, framing, config)


def _fingerprint(task: CorpusTask) -> str:
    """What decides a task's ids besides the settings: the task and its files' sizes and mtimes."""
    paths = [task.piece.path] if task.piece is not None else list(task.part.paths if task.part else ())
    stamp = []
    for p in paths:
        with contextlib.suppress(OSError):
            st = p.stat()
            stamp.append((str(p), st.st_size, st.st_mtime_ns))
    return repr((task, stamp))


def _mapped(result: TaskTokens, path: Path) -> TaskTokens:
    """``result`` with its token ids moved to ``path`` (written once, atomically) and read back by memory
    map, so the run holds one task's ids in memory at a time, not the corpus's."""
    if not path.is_file():
        with atomic_open(path) as f:
            np.save(f, result.tokens, allow_pickle=False)
    result.tokens = np.load(path, mmap_mode="r")
    return result


def _measure(result: TaskTokens) -> tuple[float, int]:
    return result.read_bytes, len(result.lengths)


def tokenize_corpus(
    corpus: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    tokenizer: Tokenizer | str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    config: TokenizeConfig | None = None,
    workers: int = 1,
    distributor: Distributor = "local",
    resume: bool = False,
    quiet: bool = True,
) -> TokenizeSummary:
    """Tokenize every document of ``corpus`` into token shards under ``out`` (see the module docstring)."""
    config = config or TokenizeConfig()
    tok_path = None if isinstance(tokenizer, Tokenizer) else Path(tokenizer)
    tok = tokenizer if isinstance(tokenizer, Tokenizer) else load_tokenizer(tokenizer)
    dtype = token_dtype(tok.vocab_size)
    framing = Framing(_special(tok, config.bos, "bos"), _special(tok, config.eos, "eos"), dtype.str)
    fingerprint = tokenizer_fingerprint(tok, tok_path)
    settings = {**config.as_dict(), "dtype": dtype.str, "bos_id": framing.bos, "eos_id": framing.eos}
    out = Path(out)
    if (out / "manifest.json").is_file():
        old = read_manifest(out)
        if old["tokenizer"]["fingerprint"] != fingerprint["fingerprint"] or old["settings"] != settings:
            raise ConfigError(
                f"{out} holds token shards of another tokenizer or other settings; pass a new --out folder "
                "(or delete this one)"
            )
    out.mkdir(parents=True, exist_ok=True)
    tasks = plan_corpus_tasks(corpus, errors=config.errors)
    key = hashlib.sha256(repr((settings, fingerprint["fingerprint"])).encode()).digest()
    store = ResultStore(out / ".state", key, resume=resume)
    keys = [_fingerprint(t) for t in tasks]
    for stale in (out / ".state").glob("*.npy") if not resume else ():
        stale.unlink()
    payload = pickle.dumps((tok, framing, config)) if workers > 1 or distributor == "ray" else b""
    initargs: tuple[bytes, ...] = (payload,) if payload else ()
    initializer = _init if payload else None
    if not payload:  # this process runs the tasks
        _WORKER["args"] = (tok, framing, config)
    shown = Progress[TaskTokens](
        desc="tokenize", total=sum(t.bytes for t in tasks), measure=_measure, quiet=quiet
    )
    kill_after = int(os.environ.get(_KILL_AFTER, "0"))
    results: list[TaskTokens] = []
    resumed = fresh = 0
    for result, was_resumed in run_tasks(
        _run, tasks, workers=workers, distributor=distributor, initializer=initializer, initargs=initargs,
        store=store, keys=keys, resume=resume, progress=shown,
    ):  # fmt: skip
        results.append(_mapped(result, store.path(keys[len(results)]).with_suffix(".npy")))
        resumed += was_resumed
        fresh += not was_resumed
        if kill_after and fresh >= kill_after:
            os.kill(os.getpid(), signal.SIGKILL)
    docs = Documents.of(results)
    train, val, drawn = order_documents(docs, config)
    shards = write_split(out, "train", train, docs, dtype, config.max_tokens_per_shard)
    shards += write_split(out, "validation", val, docs, dtype, config.max_tokens_per_shard)
    corpus_digest = hashlib.sha256("".join(r.digest for r in results).encode()).hexdigest()
    tokens = {s: sum(sh["tokens"] for sh in shards if sh["split"] == s) for s in ("train", "validation")}
    rejected = sum(r.rejected for r in results)
    input_documents = sum(r.input_documents for r in results)
    counts: dict[str, Any] = {
        "input_documents": input_documents,
        "rejected": rejected,
        "dropped_long": sum(r.dropped_long for r in results),
        "split_long": sum(r.split_long for r in results),
        "documents": {"train": len(train), "validation": len(val)},
        "tokens": tokens,
        "languages": language_counts(docs, train, val),
        "sampled": dict(sorted(drawn.items())),
    }
    rejects = [line for r in results for line in r.reasons]
    write_manifest(out, {
        "tokenizer": fingerprint, "corpus": {"fingerprint": corpus_digest, "tasks": len(tasks), "read_bytes": sum(r.read_bytes for r in results)},
        "settings": settings, "counts": counts, "sources": docs.sources, "shards": shards, "rejects": rejects[:1000],
    })  # fmt: skip
    return TokenizeSummary(
        out, len(train) + len(val), sum(tokens.values()), rejected, input_documents,
        len(shards), len(tasks), resumed,
    )  # fmt: skip
