"""``ReportConfig``: the statistical, slicing and encoding knobs of a fertility report, checked once.

What it does not hold: the tokenizers, corpus, pivot, transliteration switch and segmenter (arguments of
:func:`~tokenloom.fertility.report.fertility_report`) or how the work is run (``runner.RunConfig``).
"""

from __future__ import annotations

from dataclasses import InitVar, dataclass

from tokenloom.errors import ConfigError
from tokenloom.fertility.counting import Metrics
from tokenloom.fertility.lengths import DEFAULT_CONTEXTS, validate_contexts
from tokenloom.fertility.slices import SliceConfig

__all__ = ["ReportConfig"]


@dataclass(frozen=True)
class ReportConfig:
    """Statistical and slicing knobs of a report (the pivot, translit and segmenter are arguments)."""

    n_boot: int = 1000  # bootstrap resamples behind every interval
    seed: int = 0  # bootstrap seed: the same inputs give the same report
    level: float = 0.95  # interval coverage
    renyi_alpha: float = 2.5  # Rényi order α (Zouhar et al. 2023 find 2.5 correlates best with BLEU)
    batch_size: int = 256  # texts per engine call; its Python lists are turned into arrays per batch
    roundtrip: bool = True  # decode every text for the round-trip exact rate (NaN when off)
    prefetch: bool = True  # encode on two background workers while words are segmented and counted
    chunk_size: int = 1024  # texts counted at once: bounds memory, whatever the size of a language part
    translit_ascii: bool = False  # transliterated slices: Any-Latin, then Latin-ASCII
    mixed_min_share: float = 0.1  # code-mixed: every script counted holds at least this share of letters
    metrics: Metrics = "full"  # "lengths": documents, bytes, characters, tokens and their lengths only (no code-mixed slices)
    contexts: tuple[int, ...] = DEFAULT_CONTEXTS  # context lengths of the share columns (tokens, increasing)
    max_unk_chars: float = 0.1  # a pair is invalid above this share of unknown characters (Petrov et al.)
    encode_path: InitVar[str | None] = None  # removed: giving it is an error that says what to do instead

    def __post_init__(self, encode_path: str | None) -> None:
        if encode_path is not None:
            raise ConfigError(
                f"ReportConfig.encode_path={encode_path!r}: there is no encode_path any more; reports always "
                "encode with Tokenizer.encode_flat, which tests compare against the per-text definition "
                "(tokenloom.fertility.reference.encode_flat); drop the argument"
            )
        if not isinstance(self.n_boot, int) or self.n_boot < 0:
            raise ConfigError(
                f"ReportConfig.n_boot must be an int >= 0 (0 = no intervals), got {self.n_boot!r}"
            )
        if not 0.0 < self.level < 1.0:
            raise ConfigError(f"ReportConfig.level must be in (0, 1), e.g. 0.95, got {self.level!r}")
        if not self.renyi_alpha > 0:
            raise ConfigError(f"ReportConfig.renyi_alpha must be > 0, got {self.renyi_alpha!r}")
        if not isinstance(self.batch_size, int) or self.batch_size <= 0:
            raise ConfigError(f"ReportConfig.batch_size must be a positive int, got {self.batch_size!r}")
        if not isinstance(self.chunk_size, int) or self.chunk_size <= 0:
            raise ConfigError(f"ReportConfig.chunk_size must be a positive int, got {self.chunk_size!r}")
        SliceConfig(mixed_min_share=self.mixed_min_share)  # validates the share
        if self.metrics not in ("full", "lengths"):
            raise ConfigError(f"ReportConfig.metrics must be 'full' or 'lengths', got {self.metrics!r}")
        object.__setattr__(self, "contexts", validate_contexts(self.contexts))
        if not 0.0 <= self.max_unk_chars <= 1.0:
            raise ConfigError(
                f"ReportConfig.max_unk_chars must be a share in [0, 1], got {self.max_unk_chars!r}"
            )
