"""``ReportConfig``: what a fertility report measures — pivot, slices, segmenter, statistics, how its
corpus is read — checked once.

:func:`~tokenloom.fertility.report.fertility_report`'s keyword conveniences (``pivot=``, ``translit=``,
``segmenter=``, ``errors=``, the column names, ``perturbations=``, ``numbers=``) are mapped into it in one
place, :meth:`ReportConfig.given`; what the report derives from it (the generated slices of
:meth:`ReportConfig.slice_config`, the premium pivot, the corpus columns) is derived here too. What it does
not hold: the tokenizers, the reference tokenizer and the corpus (arguments) or how the work is run
(``runner.RunConfig``).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import InitVar, dataclass, replace
from typing import Any, Final

from tokenloom.corpus.records import BATCH_ERRORS, Columns, Errors, check_errors
from tokenloom.errors import ConfigError
from tokenloom.fertility.counting import Metrics
from tokenloom.fertility.lengths import DEFAULT_CONTEXTS, validate_contexts
from tokenloom.fertility.perturb import Perturbation, parse_perturbations
from tokenloom.fertility.slices import SliceConfig
from tokenloom.unicode import Segmenter, SegmenterName

__all__ = ["KEEP", "Keep", "ReportConfig"]


class Keep(enum.Enum):
    """The default of a keyword convenience of ``fertility_report``: left out, the config's value stands."""

    KEEP = "keep"


KEEP: Final = Keep.KEEP


@dataclass(frozen=True)
class ReportConfig:
    """What a report measures (see the module docstring); every field has the default the report uses."""

    pivot: str | None = "eng_Latn"  # the language slice premiums are measured against (None: no premiums)
    translit: bool = True  # add generated <lang>_<Script>_Latn-translit slices (metrics="full")
    segmenter: SegmenterName | Segmenter = "icu"  # word segmenter: "icu", "whitespace" or a Segmenter
    numbers: bool = True  # add <lang>_<Script>_numbers slices of digit runs (metrics="full")
    perturbations: tuple[Perturbation, ...] = ()  # perturbed slices (metrics="full"); "a,b" or "all" parsed
    errors: Errors = BATCH_ERRORS  # bad input in corpus files: "skip" (set aside), "strict" or "replace"
    text_column: str | None = None  # a table row's text cell (None: "text")
    lang_column: str | None = None  # its language cell (None: "lang", else "language")
    script_column: str | None = None  # its script cell (None: "script", else "language_script")
    align_column: str | None = None  # a translation key aligning table rows across languages (None: none)
    n_boot: int = 1000  # bootstrap resamples behind every interval
    seed: int = 0  # bootstrap seed: the same inputs give the same report
    level: float = 0.95  # interval coverage
    renyi_alpha: float = 2.5  # Rényi order α (Zouhar et al. 2023 find 2.5 correlates best with BLEU)
    batch_size: int = 256  # texts per call of an engine that builds lists (one that gives arrays: a chunk)
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
        given = self.perturbations
        object.__setattr__(
            self, "perturbations", parse_perturbations(given if isinstance(given, str) else list(given))
        )
        check_errors(self.errors)
        if not 0.0 <= self.max_unk_chars <= 1.0:
            raise ConfigError(
                f"ReportConfig.max_unk_chars must be a share in [0, 1], got {self.max_unk_chars!r}"
            )

    def given(
        self,
        *,
        pivot: str | Keep | None = KEEP,
        translit: bool | Keep = KEEP,
        segmenter: SegmenterName | Segmenter | Keep = KEEP,
        errors: Errors | Keep = KEEP,
        text_column: str | Keep | None = KEEP,
        lang_column: str | Keep | None = KEEP,
        script_column: str | Keep | None = KEEP,
        align_column: str | Keep | None = KEEP,
        perturbations: str | Sequence[Perturbation] | Keep = KEEP,
        numbers: bool | Keep = KEEP,
    ) -> ReportConfig:
        """This config with the keyword conveniences of ``fertility_report`` that were given (not
        :data:`KEEP`): the one place they are mapped into the config."""
        values = dict(
            pivot=pivot, translit=translit, segmenter=segmenter, errors=errors, text_column=text_column,
            lang_column=lang_column, script_column=script_column, align_column=align_column,
            perturbations=perturbations, numbers=numbers,
        )  # fmt: skip
        changes: dict[str, Any] = {k: v for k, v in values.items() if v is not KEEP}
        return replace(self, **changes) if changes else self

    @property
    def columns(self) -> Columns:
        """The table cells the corpus is read with."""
        return Columns.of(self.text_column, self.lang_column, self.script_column, self.align_column)

    @property
    def premium_pivot(self) -> str | None:
        """The pivot premiums are measured against: none with ``metrics="lengths"``."""
        return self.pivot if self.metrics == "full" else None

    def slice_config(self) -> SliceConfig:
        """The generated slices: none with ``metrics="lengths"`` (no transliterated, code-mixed, numbers or
        perturbed slices)."""
        full = self.metrics == "full"
        return SliceConfig(
            translit=self.translit and full, translit_ascii=self.translit_ascii,
            mixed_min_share=self.mixed_min_share, code_mixed=full, numbers=self.numbers and full,
            perturbations=self.perturbations if full else (), seed=self.seed,
        )  # fmt: skip
