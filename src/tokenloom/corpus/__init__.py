"""Reading corpora at any size: sources → plan → tasks → records.

Every input — files, folders, globs (any format: text, JSON Lines, CSV/TSV, Parquet; any compression), and
in-memory tables, datasets or iterables — becomes a stream of labelled records, read by line or row group,
never whole. Submodules, in the order data flows:

- ``sources`` (which files an input names, "is this a path?"), ``lines`` (a file's bytes as UTF-8 lines),
  ``compression`` (codecs by magic bytes), ``formats`` (one reader per file format), ``records``
  (``Record``, columns, rejects, and the records of a row or of an in-memory table or iterable);
- ``parts`` (labels: language, script, slice, alignment; a table's rows grouped into parts), ``load`` (``load_corpus``:
  labelled parts for evaluation);
- ``tasks`` and ``plan`` (the corpus cut into tasks any process can read — a file, a row-group range, a
  line-aligned byte range — and read; ``tasks.plan_files`` is the plan every consumer starts from,
  ``plan`` labels it for reports and token shards);
- ``stream`` and ``sampling`` (the training-line stream; language sampling and byte budgets).

What it does not do: tokenize (``tokenloom.text``), count (``tokenloom.fertility``) or run tasks
(``tokenloom.execute``). Names are imported lazily: ``import tokenloom.corpus`` pulls in neither pandas nor
pyarrow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tokenloom._lazy import lazy_exports

# public name -> module that defines it (imported on first access)
_LAZY: dict[str, str] = {
    "resolve_inputs": "tokenloom.corpus.sources",
    "iter_lines": "tokenloom.corpus.sources",
    "SourceStats": "tokenloom.corpus.records",
    "Record": "tokenloom.corpus.records",
    "Columns": "tokenloom.corpus.records",
    "load_corpus": "tokenloom.corpus.load",
    "Corpus": "tokenloom.corpus.parts",
    "CorpusPart": "tokenloom.corpus.parts",
    "CorpusTask": "tokenloom.corpus.plan",
    "plan_corpus_tasks": "tokenloom.corpus.plan",
    "read_corpus_task": "tokenloom.corpus.columnar",
}

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time _LAZY imports each name on first use
    from tokenloom.corpus.columnar import read_corpus_task
    from tokenloom.corpus.load import load_corpus
    from tokenloom.corpus.parts import Corpus, CorpusPart
    from tokenloom.corpus.plan import CorpusTask, plan_corpus_tasks
    from tokenloom.corpus.records import Columns, Record, SourceStats
    from tokenloom.corpus.sources import iter_lines, resolve_inputs

__all__ = [
    "Columns",
    "Corpus",
    "CorpusPart",
    "CorpusTask",
    "Record",
    "SourceStats",
    "iter_lines",
    "load_corpus",
    "plan_corpus_tasks",
    "read_corpus_task",
    "resolve_inputs",
]


__getattr__, __dir__ = lazy_exports(globals(), _LAZY)
