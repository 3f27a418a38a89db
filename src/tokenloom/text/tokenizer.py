"""``Tokenizer``: one interface over a Hugging Face ``tokenizers`` pipeline or a sentencepiece model.

What it does: encode / decode / batch encode / offsets / tokens / normalization / losslessness check over
either engine; :meth:`Tokenizer.save` writes a folder (``tokenizer.json``, plus ``tokenizer.model`` for
sentencepiece, plus ``tokenloom.json`` with the training record) atomically; :func:`load_tokenizer` reads
our folder, any ``tokenizer.json`` or any sentencepiece ``.model``, turning every engine failure (including
Rust panics) into :class:`~tokenloom.errors.TokenizerError`.

A sentencepiece tokenizer is saved with an exported ``tokenizer.json`` too (see ``_hf_build.export_spm``);
before writing, the export is checked id-for-id against sentencepiece on the training sample kept by the
trainer plus built-in probe strings, and the save fails with ``TokenizerError`` on any difference.

Losslessness: with normalization "none" and byte fallback, ``decode(encode(s)) == s`` for any string,
except that the meta-symbol U+2581 ``▁`` in the input stands for a space in both engines and decodes as
``" "``. :meth:`Tokenizer.is_lossless` tells, per text, whether the round trip is exact.
Offsets are ``[start, end)`` in code points of the input; the byte pieces of one character all carry
that character's span.

What it does not do: train (``train.py``) or read corpora (``sources.py``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

from tokenloom.errors import TokenizerError

__all__ = ["Tokenizer", "load_tokenizer"]

log = logging.getLogger(__name__)

Engine = Literal["hf", "sentencepiece"]
Offsets = list[tuple[int, int]]

_BYTE_RE = re.compile(r"^<0x[0-9A-F]{2}>$")
_HF_ALGOS = {"BPE": "bpe", "Unigram": "unigram", "WordPiece": "wordpiece"}
PROBES: tuple[str, ...] = (
    "",
    " ",
    "  two  spaces  ",
    "tab\there\r\nCRLF\x00NUL\x7f",
    "e\u0301 \u0301 combining",
    "\U0001f468\u200d\U0001f469\u200d\U0001f467 family emoji",
    "\u13a0\u13a1 Cherokee, \ua500 Vai, \U0001e900 Adlam",
    "<s> </s> <unk> <pad> <0x41> literal specials",
    "mixed हिन्दी and 中文 and العربية",
)


def _panic_safe(what: str, func: Any, *args: Any, **kwargs: Any) -> Any:
    """Call an engine function; any failure (Rust panics derive from BaseException) → TokenizerError."""
    try:
        return func(*args, **kwargs)
    except (KeyboardInterrupt, SystemExit, TokenizerError):
        raise
    except BaseException as exc:  # pyo3 PanicException is a BaseException
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TokenizerError(f"{what}: {first}") from None


def _byte_runs_fix(ids: Sequence[int], offsets: Offsets, text: str, byte_ids: frozenset[int]) -> Offsets:
    """Give every byte piece the span of the one character its byte belongs to (engines differ here).

    A text without byte pieces (``isdisjoint`` runs in C) is returned as is; otherwise only the byte pieces'
    positions are visited, run by run.
    """
    out = list(offsets)
    if byte_ids.isdisjoint(ids):
        return out
    where = [k for k, i in enumerate(ids) if i in byte_ids]  # positions of byte pieces, in order
    r = 0
    while r < len(where):
        i = j = where[r]
        while r < len(where) and where[r] == j:  # a run: consecutive byte pieces [i, j)
            j += 1
            r += 1
        start = min(s for s, _ in offsets[i:j])
        end = max(e for _, e in offsets[i:j])
        lengths = [len(ch.encode("utf-8")) for ch in text[start:end]]
        if sum(lengths) == j - i:
            k = i
            for pos, n in enumerate(lengths, start=start):
                for _ in range(n):
                    out[k] = (pos, pos + 1)
                    k += 1
        else:  # normalization changed the text: every piece of the run gets the run's span
            out[i:j] = [(start, end)] * (j - i)
    return out


_SURROGATE = re.compile("[\ud800-\udfff]")


@contextlib.contextmanager
def _clear_input_errors(texts: Sequence[str]) -> Iterator[None]:
    """Engines reject lone surrogates with cryptic binding errors: name the text and index instead."""
    try:
        yield
    except (TypeError, RuntimeError, UnicodeEncodeError):
        for number, text in enumerate(texts):
            if not isinstance(text, str):
                raise TokenizerError(f"text #{number} is {type(text).__name__}, not str") from None
            bad = _SURROGATE.search(text)
            if bad:
                raise TokenizerError(
                    f"text #{number} has a lone surrogate U+{ord(bad.group()):04X} at index {bad.start()}, which "
                    "is not Unicode text and cannot be encoded as UTF-8; decode your input with "
                    "errors='replace' or 'surrogatepass' handling first"
                ) from None
        raise


class Tokenizer:
    """A trained or loaded tokenizer over the ``hf`` or ``sentencepiece`` engine (see module docstring).

    Attributes: ``name``, ``engine``, ``algorithm`` ("bpe" | "unigram" | "wordpiece" | "unknown"),
    ``vocab_size``, ``byte_fallback_ids`` (ids of the 256 ``<0xNN>`` pieces; empty when none), ``unk_id``,
    ``record`` (the ``tokenloom.json`` content: config, corpus statistics; empty for foreign files).
    """

    def __init__(
        self,
        *,
        name: str,
        engine: Engine,
        hf: Any = None,
        sp: Any = None,
        sp_model: bytes | None = None,
        record: dict[str, Any] | None = None,
        verify_texts: Sequence[str] = (),
    ) -> None:
        if engine == "hf" and hf is None:
            raise ValueError("engine 'hf' needs a tokenizers.Tokenizer")
        if engine == "sentencepiece" and (sp is None or sp_model is None):
            raise ValueError("engine 'sentencepiece' needs a SentencePieceProcessor and its model bytes")
        self.name = name
        self.engine: Engine = engine
        self._hf = hf  # for sentencepiece: the export, built lazily by hf_export()
        self._sp = sp
        self._sp_model = sp_model
        self.record: dict[str, Any] = dict(record or {})
        self._verify_texts = list(verify_texts)
        self.fertility: Any = None  # held-out fertility table (pandas DataFrame) from training, if any
        if engine == "sentencepiece":
            from tokenloom.text._spm_proto import read_spec

            self._spec = _panic_safe("cannot read the sentencepiece model", read_spec, sp_model)
            self.algorithm = (
                self._spec.model_type if self._spec.model_type in ("bpe", "unigram") else "unknown"
            )
            self.vocab_size = int(sp.get_piece_size())
            self.byte_fallback_ids = frozenset(i for i in range(self.vocab_size) if sp.is_byte(i))
            unk = int(sp.unk_id())
            self.unk_id: int | None = unk if 0 <= unk < self.vocab_size else None
        else:
            model = json.loads(hf.to_str())["model"]
            self.algorithm = _hf_algorithm(model.get("type"))
            self.vocab_size = int(hf.get_vocab_size(with_added_tokens=True))
            if model.get("byte_fallback"):
                vocab = hf.get_vocab(with_added_tokens=False)
                found = {p: i for p, i in vocab.items() if _BYTE_RE.match(p)}
                self.byte_fallback_ids = frozenset(found.values()) if len(found) == 256 else frozenset()
            else:
                self.byte_fallback_ids = frozenset()
            unk_token = model.get("unk_token")
            if model.get("type") == "Unigram":
                self.unk_id = model.get("unk_id")
            else:
                self.unk_id = hf.token_to_id(unk_token) if unk_token else None

    # ---------------------------------------------------------------- encoding
    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (no BOS/EOS or other post-processing)."""
        with _clear_input_errors([text]):
            if self.engine == "sentencepiece":
                return list(self._sp.encode(text))
            return list(self._hf.encode(text, add_special_tokens=False).ids)

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of each text, encoded in parallel by the engine."""
        texts = list(texts)
        with _clear_input_errors(texts):
            if self.engine == "sentencepiece":
                return [list(ids) for ids in self._sp.encode(texts)] if texts else []
            return [list(e.ids) for e in self._hf.encode_batch(texts, add_special_tokens=False)]

    def encode_with_offsets(self, text: str) -> tuple[list[int], Offsets]:
        """Ids and per-token ``[start, end)`` code-point offsets into ``text`` (see module docstring)."""
        return self.encode_batch_with_offsets([text])[0]

    def encode_batch_with_offsets(self, texts: Sequence[str]) -> list[tuple[list[int], Offsets]]:
        """:meth:`encode_with_offsets` for many texts.

        For two or more texts where :meth:`piece_widths` applies, the engine is asked for ids only and the
        offsets are running sums of piece widths (checked per text); otherwise (and for one text: the
        reference) the engine's own offsets, byte runs fixed."""
        texts = list(texts)
        widths = self.piece_widths() if len(texts) > 1 else None
        if widths is not None:
            from tokenloom.text._widths import encode_by_widths

            with _clear_input_errors(texts):
                fast = encode_by_widths(self.engine_handle(), self.engine, texts, widths)
            if fast is not None:
                return fast
        out: list[tuple[list[int], Offsets]] = []
        with _clear_input_errors(texts):
            if self.engine == "sentencepiece":
                raw = self._sp.encode(texts, out_type="offset_mapping") if texts else []  # one batch call
                pairs = [(list(r["ids"]), [tuple(o) for o in r["offsets"]]) for r in raw]
            else:
                encs = self._hf.encode_batch(texts, add_special_tokens=False)
                pairs = [(list(e.ids), [tuple(o) for o in e.offsets]) for e in encs]
        for text, (ids, offsets) in zip(texts, pairs, strict=True):
            if self.byte_fallback_ids:
                offsets = _byte_runs_fix(ids, offsets, text, self.byte_fallback_ids)
            out.append((ids, offsets))
        return out

    def decode(self, ids: Sequence[int]) -> str:
        """Text of ``ids``; byte pieces are joined back into UTF-8 (invalid sequences become U+FFFD)."""
        ids = [int(i) for i in ids]
        bad = [i for i in ids if not 0 <= i < self.vocab_size]
        if bad:
            raise TokenizerError(f"token id {bad[0]} is out of range for vocabulary size {self.vocab_size}")
        if self.engine == "sentencepiece":
            return str(self._sp.decode(ids))
        return str(self._hf.decode(ids))

    def decode_batch(self, batch: Sequence[Sequence[int]]) -> list[str]:
        """:meth:`decode` of each id sequence, in one engine call (the same strings as ``decode`` one by one)."""
        lists = [list(map(int, ids)) for ids in batch]
        for ids in lists:
            if ids and (min(ids) < 0 or max(ids) >= self.vocab_size):
                bad = next(i for i in ids if not 0 <= i < self.vocab_size)
                raise TokenizerError(f"token id {bad} is out of range for vocabulary size {self.vocab_size}")
        if not lists:
            return []
        if self.engine == "sentencepiece":
            return [str(t) for t in self._sp.decode(lists)]
        return [str(t) for t in self._hf.decode_batch(lists)]

    def engine_handle(self) -> Any:
        """The engine object itself, for native batch calls by fast paths (``tokenloom.fertility.encoding``):
        the ``SentencePieceProcessor`` for sentencepiece, the ``tokenizers.Tokenizer`` for hf. Read-only use."""
        return self._sp if self.engine == "sentencepiece" else self._hf

    def piece_widths(self) -> Any | None:
        """Per-id width tables (``tokenloom.text._widths.PieceWidths``) when this tokenizer's offsets are the
        running sum of its pieces' lengths (no normalization, no prefix space); ``None`` otherwise. Built once."""
        if not hasattr(self, "_widths"):
            from tokenloom.text._widths import engine_widths

            spec = getattr(self, "_spec", None)
            self._widths = engine_widths(
                sp=self._sp if self.engine == "sentencepiece" else None, spec=spec, hf=self._hf,
                vocab_size=self.vocab_size, byte_ids=self.byte_fallback_ids, unk_id=self.unk_id,
            )  # fmt: skip
        return self._widths

    def tokens(self, text: str) -> list[str]:
        """The token strings (pieces) of ``text``."""
        with _clear_input_errors([text]):
            if self.engine == "sentencepiece":
                return list(self._sp.encode(text, out_type=str))
            return list(self._hf.encode(text, add_special_tokens=False).tokens)

    def normalize(self, text: str) -> str:
        """``text`` after the tokenizer's normalization (NFC/NFKC/the model's rule), spaces kept as spaces.

        For a lossless tokenizer this is what ``decode(encode(text))`` returns (U+2581 becomes a space).
        """
        if self.engine == "sentencepiece":
            normalized = str(self._sp.normalize(text))
        else:
            normalizer = self._hf.normalizer
            normalized = normalizer.normalize_str(text) if normalizer is not None else text
        return normalized.replace("\u2581", " ")

    def normalize_batch(self, texts: Sequence[str]) -> list[str]:
        """:meth:`normalize` of each text (sentencepiece: one engine call for the batch)."""
        texts = list(texts)
        if self.engine == "sentencepiece" and texts:
            return [str(t).replace("\u2581", " ") for t in self._sp.normalize(texts)]
        normalizer = None if self.engine == "sentencepiece" else self._hf.normalizer
        if normalizer is None:
            return [t.replace("\u2581", " ") for t in texts]
        return [normalizer.normalize_str(t).replace("\u2581", " ") for t in texts]

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
        if self._hf is None:
            from tokenloom.text._hf_build import export_spm

            self._hf = export_spm(self._sp, self._spec)
        return self._hf

    def verify_export(self, texts: Sequence[str] | None = None) -> int:
        """Check that the exported ``tokenizer.json`` encodes ``texts`` (default: the training sample and
        built-in probes) id-for-id like sentencepiece; returns the number checked, TokenizerError otherwise."""
        if self.engine != "sentencepiece":
            return 0
        hf = self.hf_export()
        texts = list(PROBES) + (self._verify_texts if texts is None else list(texts))
        expected = self._sp.encode(texts) if texts else []
        got = hf.encode_batch(texts, add_special_tokens=False)
        for number, (text, want, enc) in enumerate(zip(texts, expected, got, strict=True)):
            if list(want) != list(enc.ids):
                raise TokenizerError(
                    f"exported tokenizer.json differs from sentencepiece on text #{number} {text[:80]!r}: "
                    f"sentencepiece {list(want)[:20]} vs tokenizer.json {list(enc.ids)[:20]}; the export "
                    "cannot be trusted, so nothing was saved (report this model and text as a bug)"
                )
        return len(texts)

    def save(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Write the tokenizer folder atomically; refuses an existing ``path`` unless ``overwrite``."""
        from tokenloom._atomic import atomic_dir

        path = Path(path)
        record = dict(self.record)
        with atomic_dir(path, overwrite=overwrite) as tmp:
            if self.engine == "sentencepiece":
                checked = self.verify_export()
                record["export"] = {"verified_texts": checked, "identical": True}
                assert self._sp_model is not None
                (tmp / "tokenizer.model").write_bytes(self._sp_model)
            (tmp / "tokenizer.json").write_text(self.hf_export().to_str(pretty=True), encoding="utf-8")
            if self.fertility is not None:
                (tmp / "fertility.csv").write_text(self.fertility.to_csv(index=False), encoding="utf-8")
            record.setdefault("format", "tokenloom-tokenizer/1")
            record["engine"] = self.engine
            record["algorithm"] = self.algorithm
            record["vocab_size"] = self.vocab_size
            (tmp / "tokenloom.json").write_text(
                json.dumps(record, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8"
            )
        self.record = record
        return path


def _hf_algorithm(kind: Any) -> str:
    return _HF_ALGOS.get(str(kind), "unknown")


def _load_hf_file(path: Path, name: str, record: dict[str, Any] | None = None) -> Tokenizer:
    from tokenizers import Tokenizer as HFTokenizer

    try:
        text = path.read_text(encoding="utf-8")
        json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TokenizerError(f"{path}: not a tokenizer.json (not valid UTF-8 JSON: {exc})") from None
    hf = _panic_safe(f"{path}: not a valid tokenizer.json", HFTokenizer.from_str, text)
    return Tokenizer(name=name, engine="hf", hf=hf, record=record)


def _load_sp_file(
    path: Path, name: str, record: dict[str, Any] | None = None, hf_json: Path | None = None
) -> Tokenizer:
    import sentencepiece as spm

    data = path.read_bytes()
    if not data:
        raise TokenizerError(f"{path}: empty file, not a sentencepiece model")
    sp = spm.SentencePieceProcessor()
    _panic_safe(f"{path}: not a valid sentencepiece model", sp.LoadFromSerializedProto, data)
    if sp.get_piece_size() <= 0:
        raise TokenizerError(f"{path}: sentencepiece model without pieces")
    hf = None
    if hf_json is not None and hf_json.is_file():
        hf = _load_hf_file(hf_json, name)._hf
    return Tokenizer(name=name, engine="sentencepiece", sp=sp, sp_model=data, hf=hf, record=record)


def load_tokenizer(path: str | os.PathLike[str]) -> Tokenizer:
    """Load our saved folder, any HF ``tokenizer.json`` or any sentencepiece ``.model`` file."""
    path = Path(path)
    if not path.exists():
        raise TokenizerError(f"tokenizer path {str(path)!r} does not exist")
    if path.is_dir():
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
                raise TokenizerError(
                    f"{path}: tokenloom.json says sentencepiece but tokenizer.model is missing"
                )
            return _load_sp_file(model, path.name, record, hf_json)
        if hf_json.is_file():
            return _load_hf_file(hf_json, path.name, record)
        raise TokenizerError(
            f"{path}: no tokenizer.json or tokenizer.model in this folder; pass a saved tokenizer folder "
            "or a tokenizer file"
        )
    with path.open("rb") as f:
        head = f.read(64).lstrip()
    if head.startswith(b"{") or path.suffix.lower() == ".json":  # the suffix decides the error message too
        return _load_hf_file(path, path.stem)
    return _load_sp_file(path, path.stem)
