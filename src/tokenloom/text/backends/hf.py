"""The Hugging Face ``tokenizers`` backend: a ``tokenizers.Tokenizer`` pipeline behind ``EngineBackend``.

What it does: ids, offsets, decoding and normalization by the Rust pipeline (batch calls run on all
cores); the vocabulary facts tokenloom needs (algorithm, unknown id, the 256 ``<0xNN>`` byte pieces);
the piece-width tables when the pipeline's offsets are running sums of piece lengths; reading a
``tokenizer.json`` (:func:`load_hf_file`) and writing one. What it does not do: train (``_engines.py``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokenloom.errors import TokenizerError
from tokenloom.text.backends.base import (
    ByteFallback,
    Capabilities,
    OffsetsFn,
    byte_level_bytes,
    flat_ids,
    list_lengths,
    panic_safe,
    partial_char_ids,
)
from tokenloom.text.offsets import PieceWidths, piece_widths

if TYPE_CHECKING:
    import numpy as np

__all__ = ["HFBackend", "load_hf_file"]

_BYTE_RE = re.compile(r"^<0x[0-9A-F]{2}>$")
_HF_ALGOS = {"BPE": "bpe", "Unigram": "unigram", "WordPiece": "wordpiece"}
# the decoder tokenloom writes for Metaspace pipelines: "▁" -> " ", byte pieces -> UTF-8, join
_PLAIN_DECODER = {
    "type": "Sequence",
    "decoders": [
        {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
        {"type": "ByteFallback"},
        {"type": "Fuse"},
    ],
}


class HFBackend:
    """A ``tokenizers.Tokenizer`` (see module docstring)."""

    kind = "hf"
    capabilities = Capabilities()

    def __init__(self, hf: Any) -> None:
        self._hf = hf
        self._config: dict[str, Any] = json.loads(hf.to_str())
        model = self._config.get("model") or {}
        self.algorithm: str = _HF_ALGOS.get(str(model.get("type")), "unknown")
        self.vocab_size: int = int(hf.get_vocab_size(with_added_tokens=True))
        self.byte_ids: frozenset[int] = frozenset()
        if model.get("byte_fallback"):
            vocab = hf.get_vocab(with_added_tokens=False)
            found = {p: i for p, i in vocab.items() if _BYTE_RE.match(p)}
            self.byte_ids = frozenset(found.values()) if len(found) == 256 else frozenset()
        self.byte_fallback: ByteFallback | None = "byte_pieces" if self.byte_ids else None
        if self.byte_fallback is None and _has_byte_level(self._config.get("pre_tokenizer")):
            self.byte_fallback = "byte_level"
            if self.algorithm == "bpe":
                self.algorithm = "bytelevel-bpe"  # the name train_tokenizer uses for this family
        unk_token = model.get("unk_token")
        if model.get("type") == "Unigram":
            self.unk_id: int | None = model.get("unk_id")
        else:
            self.unk_id = hf.token_to_id(unk_token) if unk_token else None
        self._widths: PieceWidths | bool | None = False  # False: not built yet
        self._partial: frozenset[int] | None = None

    @property
    def handle(self) -> Any:
        return self._hf

    @property
    def partial_ids(self) -> frozenset[int]:
        if self._partial is None:
            if self.byte_fallback != "byte_level":
                self._partial = frozenset()
            else:
                vocab = self._hf.get_vocab(with_added_tokens=False)
                spelled = ((i, byte_level_bytes(p)) for p, i in vocab.items())
                self._partial = partial_char_ids((i, b) for i, b in spelled if b is not None)
        return self._partial

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [list(e.ids) for e in self._hf.encode_batch_fast(list(texts), add_special_tokens=False)]

    def count_batch(self, texts: Sequence[str]) -> np.ndarray:
        encs = self._hf.encode_batch_fast(list(texts), add_special_tokens=False)
        return list_lengths(encs)  # an Encoding's len() is its token count: no id lists built

    def encode_batch_flat(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        encs = self._hf.encode_batch_fast(list(texts), add_special_tokens=False)  # no offset tracking
        return flat_ids([e.ids for e in encs])

    @property
    def encode_batch_with_offsets(self) -> OffsetsFn:
        return self._with_offsets

    def _with_offsets(self, texts: Sequence[str]) -> list[tuple[list[int], list[tuple[int, int]]]]:
        encs = self._hf.encode_batch(list(texts), add_special_tokens=False)
        return [(list(e.ids), [tuple(o) for o in e.offsets]) for e in encs]

    def decode_batch(self, batch: Sequence[Sequence[int]]) -> list[str]:
        if not batch:
            return []
        # special tokens decode as their text: an id the text's own "<s>" became gives "<s>" back
        return [
            str(t) for t in self._hf.decode_batch([list(ids) for ids in batch], skip_special_tokens=False)
        ]

    def id_to_piece(self, token_id: int) -> str | None:
        piece = self._hf.id_to_token(token_id)
        return None if piece is None else str(piece)

    def normalize_batch(self, texts: Sequence[str]) -> list[str]:
        normalizer = self._hf.normalizer
        if normalizer is None:
            return list(texts)
        return [normalizer.normalize_str(t) for t in texts]

    def piece_widths(self) -> PieceWidths | None:
        if self._widths is False:
            self._widths = self._build_widths()
        return self._widths  # type: ignore[return-value]

    def _build_widths(self) -> PieceWidths | None:
        """Tables when the pipeline neither normalizes nor adds characters; ``None`` otherwise."""

        config = self._config
        model, pre = config.get("model") or {}, config.get("pre_tokenizer") or {}
        if config.get("normalizer") is not None or config.get("added_tokens"):
            return None  # normalization moves offsets; added tokens are matched before the model
        if pre.get("type") != "Metaspace" or pre.get("prepend_scheme") != "never":
            return None  # other pre-tokenizers may drop or add characters
        if model.get("type") not in ("BPE", "Unigram"):
            return None
        if model.get("continuing_subword_prefix") or model.get("end_of_word_suffix"):
            return None  # pieces spelled with characters that are not in the text
        pieces = [self._hf.id_to_token(i) for i in range(self.vocab_size)]
        if any(p is None for p in pieces):
            return None
        unsafe = [self.unk_id] if self.unk_id is not None else []
        plain = config.get("decoder") == _PLAIN_DECODER
        return piece_widths(pieces, byte_ids=self.byte_ids, unsafe_ids=unsafe, plain_decoder=plain)

    def hf_export(self) -> Any:
        return self._hf

    def verify_export(self, texts: Sequence[str]) -> int:
        return 0  # the tokenizer.json is the model itself

    def save(self, folder: Path) -> dict[str, Any]:
        (folder / "tokenizer.json").write_text(self._hf.to_str(pretty=True), encoding="utf-8")
        return {}


def _has_byte_level(pre: Any) -> bool:
    """Whether a pre-tokenizer (config dict) maps text to GPT-2-style byte characters."""
    if not isinstance(pre, dict):
        return False
    return pre.get("type") == "ByteLevel" or any(_has_byte_level(p) for p in pre.get("pretokenizers") or [])


def load_hf_file(path: Path) -> HFBackend:
    """A ``tokenizer.json``; TokenizerError naming the file when it is not valid JSON or not a tokenizer."""
    from tokenizers import Tokenizer as HFTokenizer

    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TokenizerError(f"{path}: not a tokenizer.json (not valid UTF-8 JSON: {exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("model"), dict):
        found = f"keys {sorted(data)[:6]}" if isinstance(data, dict) else f"a JSON {type(data).__name__}"
        raise TokenizerError(
            f"{path}: valid JSON but not a tokenizer.json (no 'model' object; found {found}); pass a file "
            "saved by a Hugging Face tokenizer (tokenizer.save) or a tokenloom tokenizer folder"
        )
    hf = panic_safe(f"{path}: not a valid tokenizer.json", HFTokenizer.from_str, text)
    return HFBackend(hf)
