"""Slices of a corpus: which report rows each text counts toward, and generated transliterated parts.

Every input text belongs to several slices at once (the report is a tidy table, so users regroup freely):

- ``("all", "all")``: every text read from the input (generated transliterations excluded);
- its part's own slice: ``("language", "eng_Latn")``, a labelled ``("code_mixed", ...)`` /
  ``("transliterated", ...)`` slice, or ``("code", "python")``;
- ``("script", S)``: natural-language texts by script — the part's labelled script (``Deva``, ``Jpan``,
  ``Hans``) or, when unlabelled, the dominant script of the text (:func:`tokenloom.unicode.dominant_script`);
- ``("code_mixed", "<lang>_<S1>+<S2>")``: natural-language texts whose letters come from two or more
  scripts, each holding at least ``mixed_min_share`` of the letters (so a stray acronym in a Hindi sentence
  does not make it code-mixed; Japanese kana + Han and Korean Hangul + Han are one writing system each).
  The scripts are named as the text's script slice names them: a labelled part's own script stands for the
  Unicode scripts that write it (Chinese ``zho_Hans`` with Latin letters is ``zho_Hans+Latn``, not
  ``Hani+Latn``; ``jpn_Jpan+Latn``, ``kor_Hang+Latn``), an unlabelled part's detected scripts as they are;
  the codes are sorted and joined with ``+``;
- ``("transliterated", "<lang>_<Script>_Latn-translit")``: generated with ICU ``Any-Latin`` (optionally
  then ``Latin-ASCII``) from each natural-language part not written in Latin; same ids, so it keeps its
  alignment with the pivot;
- ``("numbers", "<lang>_<Script>_numbers")``: generated from each natural-language part: per text, its
  runs of decimal digits joined by spaces (:func:`number_texts`; a text without digits becomes empty); not
  aligned with the pivot;
- ``("perturbed", "<lang>_<Script>_<perturbation>-perturbed")``: generated from each language part by a
  perturbation of :mod:`tokenloom.fertility.perturb`; aligned with its clean part, against which its
  premium is measured.

What it does not do: count tokens or words (``metrics``), or aggregate (``report``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, get_args

import numpy as np

from tokenloom.corpus.load import CorpusPart
from tokenloom.errors import ConfigError
from tokenloom.fertility.metrics import digit_runs
from tokenloom.fertility.perturb import PERTURBATIONS, Perturbation, perturb
from tokenloom.unicode import code_mixed_scripts, dominant_script, transliterate

__all__ = [
    "KIND_ORDER",
    "Generated",
    "Membership",
    "ReportKind",
    "SliceConfig",
    "SliceKey",
    "generated_parts",
    "memberships",
    "mixed_name",
    "number_texts",
    "numbers_target",
    "part_script",
    "perturb_target",
    "translit_part",
    "translit_target",
]

SliceKey = tuple[str, str]  # (slice_kind, slice)
# the slice kinds of a report's rows, in the order reports list them
ReportKind = Literal[
    "all", "language", "script", "code_mixed", "transliterated", "code", "numbers", "perturbed"
]
KIND_ORDER: tuple[ReportKind, ...] = get_args(ReportKind)
_NO_TRANSLIT = frozenset({"Latn", "Zyyy", "Zinh", "Zzzz"})


@dataclass(frozen=True)
class SliceConfig:
    """How texts are assigned to the generated slices."""

    translit: bool = True  # generate <lang>_<Script>_Latn-translit slices from non-Latin language parts
    translit_ascii: bool = False  # after Any-Latin, also apply Latin-ASCII (drops diacritics)
    mixed_min_share: float = 0.1  # a script counts toward code-mixing when it holds >= this share of letters
    code_mixed: bool = True  # look for code-mixed texts (a per-letter script analysis of every text)
    numbers: bool = False  # generate <lang>_<Script>_numbers slices from the digit runs of each part
    perturbations: tuple[Perturbation, ...] = ()  # generate one perturbed slice per language part and name
    seed: int = 0  # seed of the random perturbations

    def __post_init__(self) -> None:
        bad = [p for p in self.perturbations if p not in PERTURBATIONS]
        if bad:
            raise ConfigError(f"unknown perturbation {bad[0]!r}; choose from {', '.join(PERTURBATIONS)}")
        if not 0.0 <= self.mixed_min_share <= 0.5:
            raise ConfigError(
                f"SliceConfig.mixed_min_share must be in [0, 0.5] (a share of letters), got {self.mixed_min_share!r}"
            )


@dataclass
class Membership:
    """Texts of one part that count toward one slice: ``indices`` None means all of them."""

    key: SliceKey
    indices: list[int] | None
    langs: Counter[str] = field(default_factory=Counter)  # language -> texts
    scripts: Counter[str] = field(default_factory=Counter)  # script -> texts


# ISO 15924 labels that Unicode's script property (letter_scripts) writes with other codes: Han is one
# Unicode script for simplified and traditional Chinese; Japanese and Korean letters merge into Jpan / Kore.
_LABEL_WRITTEN_AS: dict[str, frozenset[str]] = {
    "Hans": frozenset({"Hani"}),
    "Hant": frozenset({"Hani"}),
    "Jpan": frozenset({"Hani", "Hira", "Kana"}),
    "Hrkt": frozenset({"Hira", "Kana", "Jpan"}),
    "Kore": frozenset({"Hang", "Hani"}),
    "Hang": frozenset({"Kore"}),
}


def mixed_name(scripts: Sequence[str], label: str | None) -> str:
    """The ``S1+S2`` of a code-mixed slice: the detected letter ``scripts`` in the part's own naming —
    each that writes the part's script ``label`` is named ``label`` (``Hani`` in a ``Hans`` part is
    ``Hans``) — sorted and joined with ``+``."""
    own = _LABEL_WRITTEN_AS.get(label or "", frozenset())
    return "+".join(sorted({label if label and sc in own else sc for sc in scripts}))


def _natural(part: CorpusPart) -> bool:
    return part.slice_kind != "code"


def part_script(part: CorpusPart, texts: Sequence[str]) -> list[str]:
    """Script of every text: the part's label when it has one, else the text's dominant script."""
    if part.script:
        return [part.script] * len(texts)
    return [dominant_script(t) for t in texts]


def memberships(
    part: CorpusPart, texts: Sequence[str], *, config: SliceConfig = SliceConfig()
) -> list[Membership]:
    """The slices the texts of ``part`` count toward (see the module docstring)."""
    n = len(texts)
    scripts = part_script(part, texts)
    script_counts = Counter(scripts)
    own = Membership((part.slice_kind, part.slice), None, Counter({part.lang: n}), script_counts)
    if part.generated:
        return [own]
    out = [Membership(("all", "all"), None, Counter({part.lang: n}), script_counts), own]
    if not _natural(part):
        return out
    by_script: dict[str, list[int]] = {}
    for i, sc in enumerate(scripts):
        by_script.setdefault(sc, []).append(i)
    for sc, idx in by_script.items():
        whole = len(idx) == n
        out.append(
            Membership(
                ("script", sc),
                None if whole else idx,
                Counter({part.lang: len(idx)}),
                Counter({sc: len(idx)}),
            )
        )
    if part.slice_kind == "code_mixed" or not config.code_mixed:
        return out
    mixed: dict[str, list[int]] = {}
    # only texts whose letters come from 2+ scripts can be code-mixed
    for i, found in code_mixed_scripts(texts, min_share=config.mixed_min_share).items():
        name = mixed_name(found, part.script)
        if "+" in name:  # two or more scripts, also in the part's own naming
            mixed.setdefault(name, []).append(i)
    for combo, idx in mixed.items():
        out.append(
            Membership(
                ("code_mixed", f"{part.lang}_{combo}"),
                idx,
                Counter({part.lang: len(idx)}),
                Counter({combo: len(idx)}),
            )
        )
    return out


def translit_target(
    part: CorpusPart, texts: Sequence[str], *, config: SliceConfig = SliceConfig()
) -> CorpusPart | None:
    """The labels of the generated ``<slice>_Latn-translit`` part of a non-Latin natural-language part.

    Decided on all of ``part``'s texts (the most common script when the part has no label); the texts
    themselves are transliterated separately (:func:`tokenloom.unicode.transliterate`), so a caller
    may do it chunk by chunk. ``None`` when transliteration is off, the part is code / already
    transliterated / generated, or its (labelled or most common) script is Latin or has no letters.
    """
    if not config.translit or part.generated or part.slice_kind not in ("language", "code_mixed"):
        return None
    if not texts:
        return None
    script = part.script or Counter(part_script(part, texts)).most_common(1)[0][0]
    if script in _NO_TRANSLIT:
        return None
    return replace(
        part,
        source=f"{part.source} (ICU Any-Latin{'; Latin-ASCII' if config.translit_ascii else ''})",
        slice_kind="transliterated",
        slice=f"{part.slice}_Latn-translit",
        script="Latn",
        generated=True,
    )


def translit_part(
    part: CorpusPart, texts: Sequence[str], ids: Sequence[Any], *, config: SliceConfig = SliceConfig()
) -> tuple[CorpusPart, list[str]] | None:
    """The generated part of :func:`translit_target` with all its texts transliterated at once."""
    target = translit_target(part, texts, config=config)
    if target is None:
        return None
    out = transliterate(list(texts), ascii=config.translit_ascii)
    frozen_ids = list(ids)
    return replace(target, load=lambda: (out, frozen_ids)), out


def numbers_target(part: CorpusPart, texts: Sequence[str]) -> CorpusPart | None:
    """The labels of the generated ``<slice>_numbers`` part of a natural-language part (``None`` for code
    and generated parts), not aligned with the pivot; its texts are :func:`number_texts`. Decided on the
    labels alone, so every piece of a part spread over tasks decides alike."""
    if part.generated or part.slice_kind not in ("language", "code_mixed"):
        return None
    return replace(
        part, source=f"{part.source} (digit runs)", slice_kind="numbers", slice=f"{part.slice}_numbers",
        align=None, generated=True,
    )  # fmt: skip


def number_texts(texts: Sequence[str]) -> list[str]:
    """Per text, its runs of decimal digits joined by single spaces (``""`` when it has none)."""
    counts, spans = digit_runs(list(texts))
    joined = "\n".join(texts)
    runs = [joined[a:b] for a, b in spans.tolist()]
    ends = np.cumsum(counts).tolist()
    return [" ".join(runs[e - k : e]) for e, k in zip(ends, counts.tolist(), strict=True)]


def perturb_target(part: CorpusPart, name: str) -> CorpusPart | None:
    """The labels of the generated ``<slice>_<name>-perturbed`` part of a language part (``None`` for any
    other kind or a generated part); its texts are :func:`tokenloom.fertility.perturb.perturb` of the
    part's, aligned text by text with them."""
    if part.generated or part.slice_kind != "language":
        return None
    return replace(
        part, source=f"{part.source} ({name})", slice_kind="perturbed", slice=f"{part.slice}_{name}-perturbed",
        generated=True,
    )  # fmt: skip


@dataclass(frozen=True)
class Generated:
    """A generated part counted beside its source part: its labels, how a chunk's texts become its texts,
    and whether its premium is measured against the source chunk (perturbations) instead of the pivot."""

    part: CorpusPart
    make: Callable[[list[str]], list[str]]
    against_source: bool = False


def generated_parts(part: CorpusPart, texts: Sequence[str], *, config: SliceConfig) -> list[Generated]:
    """The generated parts of ``part`` (transliterated, numbers, perturbed; module docstring), in that
    order; their texts are made chunk by chunk from the source chunk's."""
    out: list[Generated] = []
    target = translit_target(part, texts, config=config)
    if target is not None:
        ascii_ = config.translit_ascii
        out.append(Generated(target, lambda chunk: transliterate(chunk, ascii=ascii_)))
    numbers = numbers_target(part, texts) if config.numbers else None
    if numbers is not None:
        out.append(Generated(numbers, number_texts))
    seed = config.seed
    for name in config.perturbations:
        perturbed = perturb_target(part, name)
        if perturbed is not None:

            def make(chunk: list[str], name: Perturbation = name) -> list[str]:
                return [perturb(t, name, seed=seed) for t in chunk]

            out.append(Generated(perturbed, make, against_source=True))
    return out
