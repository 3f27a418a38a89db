"""Writing a tokenizer folder: the engine's own files, the verified exports, and ``tokenloom.json``.

:func:`write_folder` is :meth:`Tokenizer.save <tokenloom.text.tokenizer.Tokenizer.save>` (its docstring
says what is written and when an export is skipped); ``_Checks`` runs each export's id-for-id check and
records, logs or raises a failure.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from tokenloom._atomic import atomic_dir
from tokenloom.errors import ConfigError, TokenizerError
from tokenloom.text import tiktoken_export as tk

if TYPE_CHECKING:
    from tokenloom.text.tokenizer import Tokenizer

__all__ = ["SAVE_FORMATS", "SaveFormat", "write_folder"]

log = logging.getLogger("tokenloom.text.tokenizer")  # the save's warnings, where users have found them

SaveFormat = Literal["tokenizer.json", "tiktoken"]
SAVE_FORMATS: tuple[str, ...] = ("tokenizer.json", "tiktoken")


def write_folder(
    tok: Tokenizer,
    path: Path,
    verify_texts: list[str],
    overwrite: bool,
    formats: Sequence[SaveFormat] | str,
    strict: bool,
) -> dict[str, Any]:
    """Write ``tok``'s folder at ``path`` atomically (:meth:`Tokenizer.save`); returns its ``tokenloom.json``
    record. ``verify_texts``: the training sample the exports are checked on (empty for a loaded folder)."""

    wanted = (formats,) if isinstance(formats, str) else tuple(formats)
    unknown = [f for f in wanted if f not in SAVE_FORMATS]
    if unknown:
        raise ConfigError(f"unknown save format {unknown[0]!r}; choose from {SAVE_FORMATS}")
    record = dict(tok.record)
    for stale in ("tiktoken", "export", "skipped_formats"):  # a loaded folder's entries describe files
        record.pop(stale, None)  # this save may not write
    with atomic_dir(path, overwrite=overwrite) as tmp:
        record.update(tok.backend.save(tmp))  # the engine's own files: always
        native = ", ".join(sorted(p.name for p in tmp.iterdir()))
        earlier = {} if verify_texts else dict(tok.record.get("skipped_formats") or {})
        checks = _Checks(path, native, strict, earlier)
        checked = checks.run("tokenizer.json", tok.verify_export)
        if checked:  # an export beside the engine's file (0: the engine's file is the tokenizer.json)
            (tmp / "tokenizer.json").write_text(tok.hf_export().to_str(pretty=True), encoding="utf-8")
            record["export"] = {"verified_texts": checked, "identical": True}
        if "tiktoken" in wanted:
            hf = tok.hf_export()
            export = tk.tiktoken_export(hf)  # no tiktoken form: raises, whatever strict says
            verify = functools.partial(tk.verify_tiktoken, export, hf, verify_texts)
            checked = checks.run("tiktoken", verify)
            if checked:
                record.update(tk.write_tiktoken(export, tmp, checked))
        if checks.skipped:
            record["skipped_formats"] = checks.skipped
        record.setdefault("format", "tokenloom-tokenizer/1")
        record["engine"] = tok.engine
        record["algorithm"] = tok.algorithm
        record["vocab_size"] = tok.vocab_size
        (tmp / "tokenloom.json").write_text(
            json.dumps(record, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8"
        )
    return record


@dataclass
class _Checks:
    """The export checks of one :meth:`Tokenizer.save`: what failed, logged or raised (``strict``).

    ``earlier``: formats a loaded folder's ``tokenloom.json`` records as skipped, with the reason; they are
    skipped again without a new check (without the training sample it could only use the probe strings)."""

    path: Path
    native: str  # the engine's own files, already written
    strict: bool
    earlier: dict[str, str]
    skipped: dict[str, str] = field(default_factory=dict)

    def run(self, fmt: str, verify: Callable[[], int]) -> int:
        """``verify()``: the number of texts checked; 0 when ``fmt`` is not to be written."""
        try:
            if fmt in self.earlier:
                raise TokenizerError(f"{self.earlier[fmt]} (found when this tokenizer was first saved)")
            return int(verify())
        except TokenizerError as exc:
            if self.strict:
                raise TokenizerError(f"{exc}; nothing was saved (strict=True)") from None
            self.skipped[fmt] = str(exc) if fmt not in self.earlier else self.earlier[fmt]
            log.warning(
                "%s: %s not written: %s; the folder (%s) loads without it (strict=True makes this an error)",
                self.path, fmt, exc, self.native,
            )  # fmt: skip
            return 0
