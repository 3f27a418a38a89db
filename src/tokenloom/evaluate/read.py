"""A labelled table file read whole into a DataFrame: CSV, TSV, JSON Lines or Parquet, compressed too.

An evaluation needs every column of its table (labels, predictions, scores, propensities), while the
corpus reader (:mod:`tokenloom.corpus.tasks`) streams text and language labels only; so tables are read
here with pandas, the format told by :func:`tokenloom.corpus.formats.file_format` (the suffix, a
compression suffix removed) and the compression by pandas from the suffix (``.gz``, ``.zst``, ``.xz``,
``.bz2``). JSON Lines keep their values' types; CSV/TSV cells are read as pandas reads them (``1`` an
integer, empty a missing value). What it does not do: check columns (``items``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from tokenloom.corpus.formats import file_format
from tokenloom.errors import CorpusError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["read_table"]


def read_table(path: str | os.PathLike[str]) -> pd.DataFrame:
    """The rows of one table file (module docstring); a one-line error for a missing, unknown or broken file."""
    import pandas as pd

    file = Path(path)
    if not file.is_file():
        raise CorpusError(f"{file}: no such file; give a .csv, .tsv, .jsonl or .parquet table")
    fmt = file_format(file)
    try:
        if fmt in ("csv", "tsv"):
            return pd.read_csv(file, sep="\t" if fmt == "tsv" else ",")
        if fmt == "jsonl":
            return pd.read_json(file, lines=True, dtype=False)
        if fmt == "parquet":
            return pd.read_parquet(file)
    except (ValueError, OSError) as exc:
        raise CorpusError(f"{file}: cannot read it as {fmt}: {str(exc).splitlines()[0]}") from None
    raise CorpusError(
        f"{file}: not a table; tokenloom evaluate reads .csv, .tsv, .jsonl and .parquet files (compressed too)"
    )
