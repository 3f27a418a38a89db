"""Which engine computes a tokenizer's ids, verified at dispatch with the reference engine beside it.

A :class:`~tokenloom.text.tokenizer.Tokenizer` holds its reference backend (the engine its files belong to)
and one :class:`EngineDispatch`. Jobs that need ids only — ``encode_batch``, ``count_tokens``, the flat
batches of ``encode_flat`` (the lengths report, and the full report where offsets come from piece widths)
— go to the fast engine (:mod:`~tokenloom.text.backends.gigatoken`) when it serves the tokenizer and has
been verified; everything else (offsets from the engine, decoding, normalization, exports) stays with the
reference.

``engine``:

- ``"auto"`` (default): on the first ids-only job, the fast engine is built and the fixed probe set
  (:func:`probe_texts`: a few lines of every script of the embedded corpus, combining marks, ZWJ emoji,
  NUL, whitespace runs, a 100 kB line of one repeated character, numbers, special-token text, the
  tokenizer's own training sample when it has one) is encoded by both engines. One differing id — or an
  engine that is missing, or that does not serve this tokenizer — and the reference keeps the job; the
  reason is logged (a warning for a difference, info otherwise) and :meth:`EngineDispatch.info` says it.
- ``"gigatoken"``: the fast engine or an error: :class:`~tokenloom.errors.TokenizerError` where ``auto``
  would fall back (missing, not served, a probe that differs).
- ``"reference"``: the reference engine does every job.

The decision is made once per tokenizer (per process: an unpickled copy decides again). What it does not
do: encode (the backends do) or name engines in results — reports and exports are the same whichever engine
computed the ids.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from tokenloom._corpora import default_corpus
from tokenloom.errors import ConfigError, TokenizerError
from tokenloom.text.algorithms import ENCODE_ENGINES, EncodeEngine
from tokenloom.text.backends.base import EngineBackend, first_difference
from tokenloom.text.backends.gigatoken import EngineUnavailable, gigatoken_backend
from tokenloom.text.backends.sentencepiece import PROBES

__all__ = ["ENCODE_ENGINES", "EncodeEngine", "EngineDispatch", "EngineUse", "probe_texts"]

log = logging.getLogger(__name__)

Candidate = Callable[[EngineBackend], EngineBackend]  # builds the fast engine, or raises EngineUnavailable

_LINES_PER_SCRIPT = 3  # lines of every embedded corpus file in the probe set
_LONG_LINE = 100_000  # characters of the one-character line


@dataclass(frozen=True)
class EngineUse:
    """Which engine does one job of a tokenizer, and why."""

    job: str  # "ids" | "offsets" | "decode" | "normalize" | "export"
    engine: str  # an engine kind: "gigatoken", "hf", "sentencepiece", "tiktoken", ...
    reason: str


@cache
def _fixed_probes() -> tuple[str, ...]:
    texts: list[str] = []
    for path in sorted(default_corpus().glob("*.txt")):
        lines = path.read_text(encoding="utf-8").splitlines()
        texts += [line for line in lines[:_LINES_PER_SCRIPT] if line]
    texts += [
        "e\u0301 o\u0308\u0304 a\u0307\u0323 \u0915\u093f \u0301\u0301\u0301 Z\u0351\u0352\u0353\u0354 \u05e9\u05c1\u05b8",
        "\U0001f469\u200d\U0001f4bb \U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466 \U0001f3f3\ufe0f\u200d\U0001f308 \U0001f44b\U0001f3fd",
        "\x00",
        "a\x00b\x00\x00 \x00",
        "   ",
        "\t\t \n\n\r\n   \u00a0\u2028\u3000  x  \n",
        "x" * _LONG_LINE,
        "0 7 42 2016 1234567 3.14159 -1e-10 1,000,000 \u0663\u0664 \u096a\u096b \U0001d7d8 \u00bd \u00b2",
        "<|endoftext|> <s>x</s> <unk><pad> <0x41> <|im_start|>",
        "I'M HERE, it's they'LL we'd you've",
    ]
    return tuple(texts)


def probe_texts(extra: Sequence[str] = ()) -> list[str]:
    """The probe set (module docstring) plus ``extra`` texts."""
    return list(_fixed_probes()) + list(PROBES) + list(extra)


class EngineDispatch:
    """Routes a tokenizer's jobs to engines (see the module docstring)."""

    def __init__(
        self,
        reference: EngineBackend,
        engine: str = "auto",
        *,
        extra_probes: Sequence[str] = (),
        candidate: Candidate = gigatoken_backend,
    ) -> None:
        if engine not in ENCODE_ENGINES:
            raise ConfigError(f"engine={engine!r}; choose one of {ENCODE_ENGINES}")
        self.reference = reference
        self.engine: EncodeEngine = engine  # type: ignore[assignment]  # checked above
        self._extra = list(extra_probes)
        self._candidate = candidate
        self._lock = threading.Lock()
        self._ids: EngineBackend | None = None
        self._why = ""

    def __getstate__(self) -> dict[str, Any]:
        """Pickled undecided: the copy builds and verifies its engine where it is first used."""
        state = dict(self.__dict__)
        state.update(_lock=None, _ids=None, _why="")
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def ids_backend(self) -> EngineBackend:
        """The backend that computes ids (decided, and verified, on the first call)."""
        if self._ids is None:
            with self._lock:
                if self._ids is None:
                    self._ids, self._why = self._decide()
        return self._ids

    def _decide(self) -> tuple[EngineBackend, str]:
        ref = self.reference
        if self.engine == "reference":
            return ref, "engine='reference' asked"
        try:
            fast = self._candidate(ref)
        except EngineUnavailable as exc:
            return self._fall_back(str(exc), warn=False)
        texts = probe_texts(self._extra)
        want = ref.encode_batch_flat(texts)
        got = fast.encode_batch_flat(texts)
        problem = _difference(texts, want, got)
        if problem is None:  # one text per call too: an engine may take another path for small batches
            one = [fast.encode_batch_flat([text]) for text in texts]
            got = (np.concatenate([n for n, _ in one]), np.concatenate([i for _, i in one]))
            problem = _difference(texts, want, got)
        if problem is not None:
            return self._fall_back(
                f"{fast.kind} differs from {ref.kind} on the probe set: {problem}", warn=True
            )
        forced = " (engine='gigatoken' asked)" if self.engine == "gigatoken" else ""
        return fast, f"verified: identical ids to {ref.kind} on {len(texts)} probe texts{forced}"

    def _fall_back(self, reason: str, *, warn: bool) -> tuple[EngineBackend, str]:
        if self.engine == "gigatoken":
            raise TokenizerError(f"engine='gigatoken' cannot be used: {reason}")
        (log.warning if warn else log.info)("%s engine keeps the ids: %s", self.reference.kind, reason)
        return self.reference, reason

    def info(self) -> dict[str, EngineUse]:
        """Which engine serves which job and why (decides the ids engine if not decided yet)."""
        ids = self.ids_backend()
        ref = self.reference.kind
        fast = ids is not self.reference
        if fast and self.reference.piece_widths() is not None:
            offsets = EngineUse(
                "offsets",
                ids.kind,
                f"piece widths over {ids.kind} ids where the pieces spell the text, else {ref}'s",
            )
        else:
            offsets = EngineUse("offsets", ref, f"the {ref} engine's offsets, or piece widths over its ids")
        return {
            "ids": EngineUse("ids", ids.kind, self._why if fast else f"reference engine: {self._why}"),
            "offsets": offsets,
            "decode": EngineUse("decode", ref, "the reference engine's decoder"),
            "normalize": EngineUse("normalize", ref, "the reference engine's normalizer"),
            "export": EngineUse("export", ref, "files are the reference engine's"),
        }


def _difference(
    texts: Sequence[str], want: tuple[np.ndarray, np.ndarray], got: tuple[np.ndarray, np.ndarray]
) -> str | None:
    """Where two flat encodings of ``texts`` differ first; ``None`` when identical."""
    (want_n, want_ids), (got_n, got_ids) = want, got
    if np.array_equal(want_n, got_n) and np.array_equal(want_ids, got_ids):
        return None
    want_end, got_end = np.cumsum(want_n), np.cumsum(got_n)
    for j, text in enumerate(texts):
        a = want_ids[want_end[j] - want_n[j] : want_end[j]].tolist()
        b = got_ids[got_end[j] - got_n[j] : got_end[j]].tolist() if j < len(got_n) else []
        if a != b:
            return f"text #{j} {text[:60]!r}: {first_difference(a, b)}"
    return f"{len(got_n)} texts encoded for {len(want_n)}"
