"""A language model's bits per byte on a held-out corpus, per language and per script: one table.

:func:`read_documents` reads a corpus through the corpus reader the reports use
(:func:`tokenloom.corpus.load.load_corpus`: FLORES-style folders, JSONL / CSV / Parquet tables, plain text),
so every document carries the same language and script labels as in a fertility report (a part without a
declared script gets each text's dominant script). :func:`evaluate_documents` encodes the documents with
the tokenizer, scores each one whole (:func:`tokenloom.lm.scoring.document_bits`: a start token before it,
a sliding window beyond the context, the end token scored only when asked) and aggregates bits per byte per
slice with bootstrap intervals over documents (:func:`tokenloom.lm.bpb.bits_per_byte`), beside the
order-0 byte baseline of each slice's own text (:func:`tokenloom.lm.baseline.byte_entropy`). The rows are
a pandas DataFrame (columns in :data:`COLUMNS`); the writers are in :mod:`tokenloom.lm.writers`.

What it does not do: train, or load a run folder (:func:`tokenloom.lm.evaluate_run` does, through
:mod:`tokenloom.lm.runs`). torch is reached only through ``document_bits``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from tokenloom.corpus.load import load_corpus
from tokenloom.corpus.records import BATCH_ERRORS, Errors
from tokenloom.errors import ConfigError, CorpusError
from tokenloom.lm.baseline import byte_entropy
from tokenloom.lm.bpb import ALL, BpbRow, Encodes, bits_per_byte
from tokenloom.unicode.scripts import dominant_script

if TYPE_CHECKING:
    import pandas as pd

    from tokenloom.lm.scoring import Scorer

__all__ = ["COLUMNS", "Documents", "LmEvalConfig", "evaluate_documents", "read_documents"]

# the columns of an evaluation table, in order (compare-lm adds its own in front)
COLUMNS = (
    "slice_kind", "slice", "documents", "tokens", "bytes", "bits", "bpb", "bpb_lo", "bpb_hi",
    "bits_per_token", "order0",
)  # fmt: skip


@dataclass(frozen=True)
class LmEvalConfig:
    """How held-out text is scored and summarised (the model's context and start token come with it)."""

    stride: int | None = None  # tokens scored per window after the first; None = context // 2
    score_eos: bool = False  # False: the text's bits only; True: add -log2 p(end token | document)
    batch_size: int = 32  # windows per forward pass
    max_docs: int | None = None  # score only the first N documents of each language slice (None: all)
    n_boot: int = 1000  # bootstrap resamples of documents per interval (0: no interval)
    level: float = 0.95  # coverage of the intervals
    seed: int = 0  # seed of the bootstrap draws (the same for every slice: a paired bootstrap)

    def __post_init__(self) -> None:
        if self.max_docs is not None and (not isinstance(self.max_docs, int) or self.max_docs < 1):
            raise ConfigError(f"max_docs must be a positive int or None, got {self.max_docs!r} (--max-docs)")
        if not isinstance(self.n_boot, int) or self.n_boot < 0:
            raise ConfigError(f"n_boot must be an int >= 0, got {self.n_boot!r} (--n-boot)")
        if not 0 < self.level < 1:
            raise ConfigError(f"level must be in (0, 1), got {self.level!r} (--level)")
        if not isinstance(self.batch_size, int) or self.batch_size < 1:
            raise ConfigError(f"batch_size must be a positive int, got {self.batch_size!r} (--batch-size)")


@dataclass(frozen=True)
class Documents:
    """Held-out documents with their labels, one entry per document."""

    texts: list[str]
    languages: list[str]  # the language slice label (``eng_Latn``), as in a fertility report
    scripts: list[str]  # ISO 15924 script (declared by the part, else the text's dominant script)

    def __len__(self) -> int:
        return len(self.texts)


def read_documents(
    corpus: str | os.PathLike[str] | Iterable[Any],
    *,
    max_docs: int | None = None,
    errors: Errors = BATCH_ERRORS,
    text_column: str | None = None,
    lang_column: str | None = None,
    script_column: str | None = None,
) -> Documents:
    """Every document of ``corpus`` (anything :func:`~tokenloom.corpus.load.load_corpus` reads) with its
    language slice and script; ``max_docs``: the first N of each slice. Code and generated slices are read
    as they come (a code slice is labelled by its programming language)."""
    loaded = load_corpus(
        corpus, errors=errors, text_column=text_column, lang_column=lang_column, script_column=script_column
    )
    texts: list[str] = []
    languages: list[str] = []
    scripts: list[str] = []
    for part in loaded:
        part_texts, _ = part.load()
        if max_docs is not None:
            part_texts = part_texts[:max_docs]
        texts += part_texts
        languages += [part.slice] * len(part_texts)
        scripts += [part.script or dominant_script(text, default="Zyyy") for text in part_texts]
    if not texts:
        raise CorpusError(f"no documents in {corpus!r}; pass a corpus with at least one text")
    return Documents(texts, languages, scripts)


def _rows(kind: str, rows: Sequence[BpbRow], docs: Documents, labels: Sequence[str]) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        members = [t for t, label in zip(docs.texts, labels, strict=True) if row.slice in (label, ALL)]
        nbytes = sum(len(t.encode("utf-8")) for t in members)
        out.append(
            {
                "slice_kind": "all" if row.slice == ALL else kind,
                "slice": row.slice,
                "documents": row.documents,
                "tokens": row.tokens,
                "bytes": row.bytes,
                "bits": row.bits,
                "bpb": row.bpb,
                "bpb_lo": row.lo,
                "bpb_hi": row.hi,
                "bits_per_token": row.bits_per_token,
                "order0": byte_entropy(members) if nbytes else float("nan"),
            }
        )
    return out


def evaluate_documents(
    model: Scorer,
    tokenizer: Encodes,
    docs: Documents,
    *,
    context: int,
    bos_id: int,
    eos_id: int | None = None,
    config: LmEvalConfig | None = None,
) -> pd.DataFrame:
    """Bits per byte of ``docs`` under ``model``, one row per language slice, per script and over all.

    ``context``: the window (the model's context); ``bos_id``: the start token put before every document
    (the separator the model was trained with); ``eos_id``: the end token, scored only with
    ``config.score_eos``. The tokenizer must add no special tokens of its own (``tokenloom.Tokenizer``
    adds none). The DataFrame's ``attrs`` record every setting.
    """
    import pandas as pd

    from tokenloom.lm.scoring import ScoreConfig, document_bits

    config = config or LmEvalConfig()
    if config.score_eos and eos_id is None:
        raise ConfigError("score_eos needs the end token's id; pass eos_id (or do not score the end)")
    score = ScoreConfig(
        context=context, bos_id=bos_id, stride=config.stride, batch_size=config.batch_size,
        eos_id=eos_id if config.score_eos else None,
    )  # fmt: skip
    ids = tokenizer.encode_batch(docs.texts)
    bits = document_bits(model, ids, score)
    tokens = [len(doc) for doc in ids]
    common = {"tokens": tokens, "n_boot": config.n_boot, "seed": config.seed, "level": config.level}
    by_language = bits_per_byte(bits, docs.texts, docs.languages, **common)  # type: ignore[arg-type]
    by_script = bits_per_byte(bits, docs.texts, docs.scripts, **common)[:-1]  # type: ignore[arg-type]
    rows = [*_rows("language", by_language[:-1], docs, docs.languages)]
    if len(set(docs.scripts)) > 1 or set(docs.scripts) != set(docs.languages):
        rows += _rows("script", by_script, docs, docs.scripts)
    rows += _rows("all", by_language[-1:], docs, docs.languages)
    df = pd.DataFrame(rows, columns=list(COLUMNS))
    df.attrs.update(
        {**asdict(config), "context": context, "bos_id": bos_id, "eos_id": eos_id,
         "stride_used": score.resolved_stride},
    )  # fmt: skip
    return df
