"""``Tokenizer``: one interface over any tokenizer engine, through the engine's ``EngineBackend``.

What it does: encode / decode / batch encode / offsets / tokens / normalization / losslessness check;
:meth:`Tokenizer.save` writes a folder (the backend's files — ``tokenizer.json``, plus ``tokenizer.model``
for sentencepiece — and ``tokenloom.json`` with the training record) atomically; :func:`load_tokenizer`
reads our folder, any ``tokenizer.json``, any sentencepiece ``.model`` or our ``tokenizer.tiktoken``, turning
every engine failure
(including Rust panics) into :class:`~tokenloom.errors.TokenizerError`. The engines themselves live in
:mod:`tokenloom.text.backends`, one module each; this class never asks which engine it holds.

A sentencepiece tokenizer is saved with an exported ``tokenizer.json`` too (see ``_hf_build.export_spm``);
before writing, the export is checked id-for-id against sentencepiece on the training sample kept by the
trainer plus built-in probe strings. A byte-level BPE tokenizer can also be saved in tiktoken's format
(``formats=("tokenizer.json", "tiktoken")``, :mod:`tokenloom.text.tiktoken_export`), checked the same way
against the ``tokenizer.json``. The engine's own file is always written; an export that fails its check is
left out with a warning and recorded in ``tokenloom.json`` (``"skipped_formats"``), or with
``save(..., strict=True)`` the save raises ``TokenizerError`` and writes nothing (:mod:`tokenloom.text.saving`).

Losslessness: with normalization "none" and byte fallback, ``decode(encode(s)) == s`` for any string,
except that the meta-symbol U+2581 ``▁`` in the input stands for a space in both engines and decodes as
``" "``; byte-level BPE has no such exception. Special tokens decode as their text.
:meth:`Tokenizer.is_lossless` tells, per text, whether the round trip is exact.
Offsets are ``[start, end)`` in code points of the input; the byte pieces of one character all carry
that character's span (:mod:`tokenloom.text.offsets`; the definition they are tested against is
:mod:`tokenloom.fertility.reference`). :meth:`Tokenizer.encode_flat` gives a whole batch as flat arrays.

What it does not do: train (``train.py``), read corpora (``sources.py``) or measure fertility
(``tokenloom.fertility``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tokenloom.errors import TokenizerError
from tokenloom.text import tiktoken_export as tk
from tokenloom.text.backends.base import Capabilities, EngineBackend, Offsets, clear_input_errors
from tokenloom.text.backends.dispatch import EncodeEngine, EngineDispatch, EngineUse
from tokenloom.text.backends.hf import load_hf_file
from tokenloom.text.backends.sentencepiece import PROBES, load_sp_file
from tokenloom.text.backends.tiktoken import load_tiktoken_file
from tokenloom.text.offsets import FlatBatch, PieceWidths, encode_flat
from tokenloom.text.saving import SAVE_FORMATS, SaveFormat, write_folder

__all__ = ["PROBES", "SAVE_FORMATS", "EncodeEngine", "EngineUse", "SaveFormat", "Tokenizer", "load_tokenizer"]

_SAMPLE_PROBES = 200  # training-sample lines added to the probe set of the ids engine


class Tokenizer:
    """A trained or loaded tokenizer over one engine backend (see module docstring).

    Attributes: ``name``, ``backend`` (the :class:`~tokenloom.text.backends.EngineBackend`), ``engine``
    (its kind: "hf" | "sentencepiece" | "tiktoken" | "transformers" | "callable"), ``algorithm`` ("bpe" |
    "bytelevel-bpe" | "unigram" | "wordpiece" | "unknown"), ``vocab_size`` (0 when the engine does not say),
    ``byte_fallback_ids`` (ids of the 256 ``<0xNN>`` pieces; empty when none), ``unk_id``, ``capabilities``
    (what the engine can answer: :class:`~tokenloom.text.backends.base.Capabilities`), ``record`` (the
    ``tokenloom.json`` content: config, corpus statistics; empty for foreign files).

    ``engine``: which engine computes ids for the ids-only jobs (:meth:`encode_batch`, :meth:`count_tokens`,
    the flat ids of :meth:`encode_flat`): ``"auto"`` — the fast engine (gigatoken) where it serves this
    tokenizer and gives identical ids on a probe set, checked on first use, else the reference engine, the
    reason logged; ``"gigatoken"`` — that engine or a TokenizerError; ``"reference"`` — the backend's own
    engine for every job (:mod:`tokenloom.text.backends.dispatch`). :meth:`engine_info` says which engine
    serves which job and why. The ids are the same whichever engine computes them.
    """

    def __init__(
        self,
        *,
        name: str,
        backend: EngineBackend,
        record: dict[str, Any] | None = None,
        verify_texts: Sequence[str] = (),
        engine: EncodeEngine = "auto",
    ) -> None:
        self.name = name
        self.backend = backend
        self.engine: str = backend.kind
        self.vocab_size: int = backend.vocab_size
        self.byte_fallback_ids: frozenset[int] = backend.byte_ids
        self.unk_id: int | None = backend.unk_id
        self.capabilities: Capabilities = backend.capabilities
        self.record: dict[str, Any] = dict(record or {})
        self._verify_texts = list(verify_texts)
        self._engines = EngineDispatch(backend, engine, extra_probes=self._verify_texts[:_SAMPLE_PROBES])

    def with_engine(self, engine: EncodeEngine) -> Tokenizer:
        """This tokenizer with ids computed by ``engine`` (``"auto"``, ``"gigatoken"``, ``"reference"``)."""
        return Tokenizer(
            name=self.name,
            backend=self.backend,
            record=self.record,
            verify_texts=self._verify_texts,
            engine=engine,
        )

    @property
    def engine_choice(self) -> EncodeEngine:
        """The ``engine`` this tokenizer was given: ``"auto"``, ``"gigatoken"`` or ``"reference"``."""
        return self._engines.engine

    @property
    def ids_flat(self) -> bool:
        """Whether the engine that serves ids gives them as flat arrays, no per-text lists (gigatoken): its
        ids-only calls then build no lists a batch size would bound, and one call for a whole batch saves
        the engine's cost per call (the reference engine's offsets, where it gives them, are still lists)."""
        return self._engines.ids_backend().capabilities.flat

    def engine_info(self) -> dict[str, EngineUse]:
        """Which engine serves which job (``"ids"``, ``"offsets"``, ``"decode"``, ``"normalize"``,
        ``"export"``) and why; the first call decides (and verifies) the ids engine."""
        return self._engines.info()

    @property
    def algorithm(self) -> str:
        """``"bpe"`` | ``"bytelevel-bpe"`` | ``"unigram"`` | ``"wordpiece"`` | ``"unknown"`` (read from the model)."""
        return self.backend.algorithm

    @property
    def fallback_ids(self) -> frozenset[int]:
        """Ids the byte-fallback rate counts: the ``<0xNN>`` pieces, or in a byte-level vocabulary the tokens
        that are not whole UTF-8 characters (see :attr:`definitions`)."""
        if self.backend.byte_fallback == "byte_level":
            return self.backend.partial_ids
        return self.byte_fallback_ids

    @property
    def definitions(self) -> dict[str, str]:
        """How this tokenizer's byte-fallback and unknown-token rates are defined (``"missing: ..."`` when
        they cannot be measured: the engine gives no vocabulary)."""
        family = self.backend.byte_fallback
        if not self.capabilities.vocabulary:
            return {"byte_fallback": "missing: no vocabulary", "unk": "missing: no vocabulary"}
        fallback = {
            "byte_pieces": "byte pieces <0xNN>",
            "byte_level": "partial-character tokens (byte-level)",
            None: "none: no byte fallback",
        }[family]
        if self.unk_id is not None:
            unk = f"unknown-token id {self.unk_id}"
        else:
            unk = "0 by construction (byte-level)" if family == "byte_level" else "none: no unknown token"
        return {"byte_fallback": fallback, "unk": unk}

    # ---------------------------------------------------------------- encoding
    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (no BOS/EOS or other post-processing)."""
        return self.encode_batch([text])[0]

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of each text, encoded in parallel by the engine."""
        texts = list(texts)
        with clear_input_errors(texts):
            return self._engines.ids_backend().encode_batch(texts)

    def count_tokens(self, texts: Sequence[str], *, batch_size: int | None = None) -> np.ndarray:
        """[n] tokens per text: the lengths of :meth:`encode_batch`'s id lists, from the engine's ids-only
        batch call (no offsets, no decoding, no id lists where the engine counts), ``batch_size`` texts per
        call (``None``: one call)."""
        texts = list(texts)
        step = batch_size or max(len(texts), 1)
        with clear_input_errors(texts):
            ids = self._engines.ids_backend()
            parts = [ids.count_batch(texts[s : s + step]) for s in range(0, len(texts), step)]
        return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, dtype=np.int64)

    def encode_ids_flat(
        self, texts: Sequence[str], *, batch_size: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """([n] tokens per text, [T] ids, texts one after another): :meth:`encode_batch`'s ids as two flat
        arrays from the engine's ids-only batch call (no offsets, no lists of Python ints), ``batch_size``
        texts per call (``None``: one call)."""
        texts = list(texts)
        step = batch_size or max(len(texts), 1)
        with clear_input_errors(texts):
            ids = self._engines.ids_backend()
            parts = [ids.encode_batch_flat(texts[s : s + step]) for s in range(0, len(texts), step)]
        if not parts:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])

    def encode_with_offsets(self, text: str) -> tuple[list[int], Offsets]:
        """Ids and per-token ``[start, end)`` code-point offsets into ``text`` (see module docstring)."""
        return self.encode_batch_with_offsets([text])[0]

    def encode_batch_with_offsets(self, texts: Sequence[str]) -> list[tuple[list[int], Offsets]]:
        """:meth:`encode_with_offsets` for many texts (:meth:`encode_flat`, per text)."""
        return self.encode_flat(texts).pairs()

    def encode_flat(
        self, texts: Sequence[str], *, decode: bool = False, batch_size: int | None = None
    ) -> FlatBatch:
        """A batch as flat arrays (:class:`~tokenloom.text.offsets.FlatBatch`): ids, tokens per text and
        offsets in the whole-batch coordinates of :mod:`tokenloom.unicode.flat` (text j starts at ``bases[j]``
        in ``"\\n".join(texts)``); with ``decode``, also whether each text decodes back to itself (``None``
        when the engine has no decoder). ``batch_size``: texts per engine call (``None``: one call)."""
        texts = list(texts)
        with clear_input_errors(texts):
            return encode_flat(self._engines.ids_backend(), texts, decode=decode, batch_size=batch_size)

    def engine_offsets(self, texts: Sequence[str]) -> list[tuple[list[int], Offsets]]:
        """The engine's own ids and offsets per text, byte pieces as the engine gives them (not yet given
        their character's span); TokenizerError when the engine gives no offsets."""
        encode = self.backend.encode_batch_with_offsets
        if encode is None:
            raise TokenizerError(f"tokenizer {self.name!r} ({self.engine}) gives no token offsets")
        texts = list(texts)
        with clear_input_errors(texts):
            return encode(texts)

    def _check_ids(self, batch: list[list[int]]) -> None:
        for ids in batch:
            if ids and (min(ids) < 0 or max(ids) >= self.vocab_size):
                bad = next(i for i in ids if not 0 <= i < self.vocab_size)
                raise TokenizerError(f"token id {bad} is out of range for vocabulary size {self.vocab_size}")

    def decode(self, ids: Sequence[int]) -> str:
        """Text of ``ids``; byte pieces are joined back into UTF-8 (invalid sequences become U+FFFD)."""
        return self.decode_batch([ids])[0]

    def decode_batch(self, batch: Sequence[Sequence[int]]) -> list[str]:
        """:meth:`decode` of each id sequence, in one engine call (the same strings as ``decode`` one by one)."""
        if not self.capabilities.decode:
            raise TokenizerError(f"tokenizer {self.name!r} ({self.engine}) has no decoder")
        lists = [[int(i) for i in ids] for ids in batch]
        if self.capabilities.vocabulary:
            self._check_ids(lists)
        return self.backend.decode_batch(lists) if lists else []

    def engine_handle(self) -> Any:
        """The engine object itself (``SentencePieceProcessor``, ``tokenizers.Tokenizer``); read-only use."""
        return self.backend.handle

    def piece_widths(self) -> PieceWidths | None:
        """Per-id width tables (:class:`tokenloom.text.offsets.PieceWidths`) when this tokenizer's offsets are
        the running sum of its pieces' lengths (no normalization, no prefix space); ``None`` otherwise."""
        return self.backend.piece_widths()

    def tokens(self, text: str) -> list[str]:
        """The token strings (pieces) of ``text``."""
        pieces = [self.backend.id_to_piece(i) for i in self.encode(text)]
        return [p if p is not None else "" for p in pieces]

    def normalize(self, text: str) -> str:
        """``text`` after the tokenizer's normalization (NFC/NFKC/the model's rule), spaces kept as spaces.

        For a lossless tokenizer this is what ``decode(encode(text))`` returns (U+2581 becomes a space, except
        in byte-level tokenizers, which spell it with its bytes).
        """
        return self.normalize_batch([text])[0]

    def normalize_batch(self, texts: Sequence[str]) -> list[str]:
        """:meth:`normalize` of each text (one engine call for the batch where the engine has one)."""
        normalized = self.backend.normalize_batch(list(texts))
        if self.backend.byte_fallback == "byte_level":  # bytes decode as themselves: U+2581 stays U+2581
            return normalized
        return [t.replace("\u2581", " ") for t in normalized]

    def is_lossless(self, text: str) -> bool:
        """True when ``decode(encode(text)) == text`` (false e.g. for U+2581 in the input, NFKC changes)."""
        return self.decode(self.encode(text)) == text

    def __repr__(self) -> str:
        return (
            f"Tokenizer(name={self.name!r}, engine={self.engine!r}, algorithm={self.algorithm!r}, "
            f"vocab_size={self.vocab_size}, byte_fallback={bool(self.byte_fallback_ids)})"
        )

    # ---------------------------------------------------------------- export and save
    def hf_export(self) -> Any:
        """The ``tokenizers.Tokenizer`` (for sentencepiece: the exported equivalent, built once)."""
        return self.backend.hf_export()

    def verify_export(self, texts: Sequence[str] | None = None) -> int:
        """Check that the exported ``tokenizer.json`` encodes ``texts`` (default: the training sample) and
        the built-in probes id-for-id like the engine; returns the number checked (0 when the engine's file
        is a ``tokenizer.json`` already), TokenizerError otherwise."""
        return self.backend.verify_export(self._verify_texts if texts is None else list(texts))

    def save(
        self,
        path: str | os.PathLike[str],
        *,
        overwrite: bool = False,
        formats: Sequence[SaveFormat] = ("tokenizer.json",),
        strict: bool = False,
    ) -> Path:
        """Write the tokenizer folder atomically; refuses an existing ``path`` unless ``overwrite``.

        The engine's own files are always written (``tokenizer.json`` for the tokenizers engine,
        ``tokenizer.model`` for sentencepiece), so the folder loads again. ``formats``: ``"tokenizer.json"``
        — for sentencepiece an exported ``tokenizer.json``, always attempted — and ``"tiktoken"``:
        ``tokenizer.tiktoken`` plus the pattern, special tokens and ``n_vocab`` under ``"tiktoken"`` in
        ``tokenloom.json`` (byte-level BPE only, :mod:`tokenloom.text.tiktoken_export`).

        Every export is verified id-for-id before it is written. One that fails verification is skipped:
        a warning names the first differing text and token, and ``tokenloom.json`` records the reason under
        ``"skipped_formats"`` (format -> reason), as does :attr:`record`. A loaded folder that records a
        skipped format keeps skipping it (the training sample that showed the difference is not saved).
        With ``strict=True`` such a failure raises :class:`~tokenloom.errors.TokenizerError` instead and
        nothing is written. Asking for a format this tokenizer has no form in (tiktoken for a unigram
        tokenizer) raises in either case.
        """

        self.record = write_folder(self, Path(path), self._verify_texts, overwrite, formats, strict)
        return Path(path)


def _load_sp_folder(model: Path, hf_json: Path) -> EngineBackend:

    hf = load_hf_file(hf_json).handle if hf_json.is_file() else None
    return load_sp_file(model, hf=hf)


_RANKS_LINE = re.compile(rb"[A-Za-z0-9+/]+={0,2} \d+\r?\n")  # the first line of a tiktoken ranks file


def _load_ranks_file(path: Path) -> Tokenizer:
    """A ``.tiktoken`` ranks file with the pattern that the ``tokenloom.json`` beside it records (a byte-level
    BPE saved with ``formats=(..., "tiktoken")``); without one, the error says how to give the pattern."""

    entry = tk.saved_tiktoken_entry(path)
    if entry is None:
        raise TokenizerError(
            f"{path}: a tiktoken ranks file needs its split pattern and no tokenloom.json beside it records one; "
            f"load it as load_tokenizer_spec('tiktoken:{path}', pattern=NAME_OR_REGEX) (command line: "
            f"--tokenizer tiktoken:{path} --pattern NAME|REGEX)"
        )
    backend = load_tiktoken_file(
        path, entry["pattern"], special_tokens=dict(entry.get("special_tokens") or {})
    )
    return Tokenizer(name=path.stem, backend=backend)


def load_tokenizer(path: str | os.PathLike[str], *, engine: EncodeEngine = "auto") -> Tokenizer:
    """Load our saved folder, any HF ``tokenizer.json``, any sentencepiece ``.model`` file, or the
    ``tokenizer.tiktoken`` of a folder saved with ``formats=(..., "tiktoken")`` (its pattern is in the
    ``tokenloom.json`` beside it; other ranks files: ``load_tokenizer_spec("tiktoken:FILE", pattern=...)``).
    ``engine``: which engine computes ids (see :class:`Tokenizer`)."""
    tok = _load(Path(path))
    return tok if engine == tok.engine_choice else tok.with_engine(engine)


def _load(path: Path) -> Tokenizer:
    if not path.exists():
        raise TokenizerError(
            f"tokenizer path {str(path)!r} does not exist; give a folder written by Tokenizer.save or "
            "`tokenloom train`, a tokenizer.json or a sentencepiece .model, and check the spelling and the "
            "working folder"
        )
    if not path.is_dir():
        with path.open("rb") as f:
            head = f.read(64).lstrip()
        if (
            head.startswith(b"{") or path.suffix.lower() == ".json"
        ):  # the suffix decides the error message too
            return Tokenizer(name=path.stem, backend=load_hf_file(path))
        if path.suffix.lower() == ".tiktoken" or _RANKS_LINE.match(head):
            return _load_ranks_file(path)
        return Tokenizer(name=path.stem, backend=load_sp_file(path))
    record: dict[str, Any] = {}
    meta = path / "tokenloom.json"
    if meta.is_file():
        try:
            record = json.loads(meta.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise TokenizerError(f"{meta}: corrupt tokenloom.json ({exc})") from None
    model, hf_json = path / "tokenizer.model", path / "tokenizer.json"
    if record.get("engine") == "sentencepiece" or (not record and model.is_file()):
        if not model.is_file():
            raise TokenizerError(f"{path}: tokenloom.json says sentencepiece but tokenizer.model is missing")
        return Tokenizer(name=path.name, backend=_load_sp_folder(model, hf_json), record=record)
    if hf_json.is_file():
        return Tokenizer(name=path.name, backend=load_hf_file(hf_json), record=record)
    raise TokenizerError(
        f"{path}: no tokenizer.json or tokenizer.model in this folder; pass a saved tokenizer folder "
        "or a tokenizer file"
    )
