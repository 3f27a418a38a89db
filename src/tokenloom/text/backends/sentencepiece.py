"""The sentencepiece backend: a ``SentencePieceProcessor`` and its serialized ``ModelProto``.

What it does: ids, offsets, decoding and normalization by the C++ engine (batch calls run on all cores);
the model's settings (read by ``tokenloom.text._spm_model``, with the ``sentencepiece_model_pb2`` module sentencepiece ships);
the piece-width tables when the model's offsets are running sums of piece lengths (identity
normalization, no dummy prefix, no whitespace removal); the ``tokenizer.json`` export
(``_hf_build.export_spm``) and its id-for-id check against the engine (``Tokenizer.save`` writes it only
when the check passes); reading a
``.model`` file (:func:`load_sp_file`). The model bytes are saved exactly as trained or read.
What it does not do: train (``_engines.py``).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tokenloom.errors import TokenizerError
from tokenloom.text._hf_build import export_spm
from tokenloom.text._spm_model import model_type, read_model
from tokenloom.text.backends.base import (
    ByteFallback,
    Capabilities,
    OffsetsFn,
    first_difference,
    list_lengths,
    panic_safe,
)
from tokenloom.text.offsets import PieceWidths, piece_widths

__all__ = ["PROBES", "SentencePieceBackend", "load_sp_file", "model_type", "read_model"]

# strings every export is checked on, besides the caller's texts
PROBES: tuple[str, ...] = (
    "",
    " ",
    "  two  spaces  ",
    "tab\there\r\nCRLF\x00NUL\x7f",
    "e\u0301 \u0301 combining",
    "a\u0307\u0323 marks out of canonical order",  # tokenizers' Precompiled normalizer drops marks here
    "\U0001f468\u200d\U0001f469\u200d\U0001f467 family emoji",
    "\u13a0\u13a1 Cherokee, \ua500 Vai, \U0001e900 Adlam",
    "<s> </s> <unk> <pad> <0x41> literal specials",
    "mixed हिन्दी and 中文 and العربية",
)


class SentencePieceBackend:
    """A sentencepiece model (see module docstring); ``hf``: its verified export when already at hand."""

    kind = "sentencepiece"
    capabilities = Capabilities()
    partial_ids: frozenset[int] = frozenset()  # byte pieces, never byte-level tokens

    def __init__(self, sp: Any, model: bytes, *, hf: Any = None) -> None:
        self._sp = sp
        self.model = model  # the serialized ModelProto, saved as tokenizer.model
        self.vocab_size: int = int(sp.get_piece_size())
        self.byte_ids: frozenset[int] = frozenset(i for i in range(self.vocab_size) if sp.is_byte(i))
        self.byte_fallback: ByteFallback | None = "byte_pieces" if self.byte_ids else None
        unk = int(sp.unk_id())
        self.unk_id: int | None = unk if 0 <= unk < self.vocab_size else None
        self._hf = hf
        self._widths: PieceWidths | bool | None = False  # False: not built yet

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without the parsed ``proto`` (parsed again on first use where it is unpickled)."""
        return {k: v for k, v in self.__dict__.items() if k != "proto"}

    @functools.cached_property
    def proto(self) -> Any:
        """The model's ``ModelProto`` (parsed on first use: training and encoding never need it)."""
        return read_model(self.model)

    @property
    def algorithm(self) -> str:
        kind = model_type(self.proto)
        return kind if kind in ("bpe", "unigram") else "unknown"

    @property
    def handle(self) -> Any:
        return self._sp

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [list(ids) for ids in self._sp.encode(list(texts))] if texts else []

    def count_batch(self, texts: Sequence[str]) -> np.ndarray:
        return list_lengths(self._sp.encode(list(texts))) if texts else np.zeros(0, dtype=np.int64)

    def encode_batch_flat(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:

        arrays = self._sp.encode(list(texts), out_type="numpy") if texts else []  # [n] int32 arrays
        lengths = np.fromiter(map(len, arrays), dtype=np.int64, count=len(arrays))
        ids = np.concatenate(arrays).astype(np.int64) if arrays else np.zeros(0, np.int64)
        return lengths, ids

    @property
    def encode_batch_with_offsets(self) -> OffsetsFn:
        return self._with_offsets

    def _with_offsets(self, texts: Sequence[str]) -> list[tuple[list[int], list[tuple[int, int]]]]:
        raw = self._sp.encode(list(texts), out_type="offset_mapping") if texts else []  # one batch call
        return [(list(r["ids"]), [tuple(o) for o in r["offsets"]]) for r in raw]

    def decode_batch(self, batch: Sequence[Sequence[int]]) -> list[str]:
        return [str(t) for t in self._sp.decode([list(ids) for ids in batch])] if batch else []

    def id_to_piece(self, token_id: int) -> str | None:
        return str(self._sp.id_to_piece(token_id))

    def normalize_batch(self, texts: Sequence[str]) -> list[str]:
        if not texts:
            return []
        if self._plain_normalizer:  # what the engine returns, without a call per text
            escape = self.proto.normalizer_spec.escape_whitespaces
            return [t.replace(" ", "\u2581") for t in texts] if escape else list(texts)
        return [str(t) for t in self._sp.normalize(list(texts))]

    @functools.cached_property
    def _plain_normalizer(self) -> bool:
        """The ``identity`` rule without a character map, dummy prefix or whitespace removal: sentencepiece's
        normalizer then only writes each space as U+2581 when it escapes whitespace (``normalize_batch``
        skips the engine; ``tests/test_fertility_encoding.py`` checks it against the engine's)."""
        norm = self.proto.normalizer_spec
        plain = norm.name == "identity" and not norm.precompiled_charsmap
        return bool(plain and not norm.add_dummy_prefix and not norm.remove_extra_whitespaces)

    def piece_widths(self) -> PieceWidths | None:
        if self._widths is False:
            self._widths = self._build_widths()
        return self._widths  # type: ignore[return-value]

    def _build_widths(self) -> PieceWidths | None:

        if not self._plain_normalizer:
            return None
        sp = self._sp
        unsafe = [i for i in range(self.vocab_size) if sp.is_unknown(i) or sp.is_control(i)]
        return piece_widths(
            [sp.id_to_piece(i) for i in range(self.vocab_size)],
            byte_ids=self.byte_ids,
            unsafe_ids=unsafe,
            plain_decoder=True,  # sentencepiece strips a leading space only with a dummy prefix or
            # whitespace removal (both ruled out above); otherwise it joins pieces, "▁" as " ", bytes as UTF-8
        )

    def hf_export(self) -> Any:
        """The equivalent ``tokenizers.Tokenizer`` (built once)."""
        if self._hf is None:
            self._hf = export_spm(self._sp, self.proto)
        return self._hf

    def verify_export(self, texts: Sequence[str]) -> int:
        """Check the export id-for-id against sentencepiece on :data:`PROBES` and ``texts``."""
        hf = self.hf_export()
        texts = list(PROBES) + list(texts)
        expected = self._sp.encode(texts) if texts else []
        got = hf.encode_batch(texts, add_special_tokens=False)
        for number, (text, want, enc) in enumerate(zip(texts, expected, got, strict=True)):
            if list(want) != list(enc.ids):
                raise TokenizerError(
                    f"exported tokenizer.json differs from sentencepiece on text #{number} {text[:80]!r}: "
                    f"{first_difference(list(want), list(enc.ids))} (sentencepiece vs tokenizer.json)"
                )
        return len(texts)

    def save(self, folder: Path) -> dict[str, Any]:
        """``tokenizer.model``, the model bytes as trained or read (``Tokenizer.save`` adds the verified
        ``tokenizer.json`` export beside it)."""
        (folder / "tokenizer.model").write_bytes(self.model)
        return {}


def load_sp_file(path: Path, *, hf: Any = None) -> SentencePieceBackend:
    """A sentencepiece ``.model`` file; ``hf``: its saved export, if any. TokenizerError naming the file."""
    import sentencepiece as spm

    data = path.read_bytes()
    if not data:
        raise TokenizerError(f"{path}: empty file, not a sentencepiece model")
    sp = spm.SentencePieceProcessor()
    panic_safe(f"{path}: not a valid sentencepiece model", sp.LoadFromSerializedProto, data)
    if sp.get_piece_size() <= 0:
        raise TokenizerError(f"{path}: sentencepiece model without pieces")
    backend = SentencePieceBackend(sp, data, hf=hf)
    try:
        backend.proto  # noqa: B018  # a file the engine loads but protobuf cannot read fails here, named
    except TokenizerError as exc:
        raise TokenizerError(f"{path}: {exc}") from None
    return backend
