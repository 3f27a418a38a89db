"""Corpus files as record streams: one small reader per format behind one protocol, each streaming (no
file is ever read whole).

The format comes from the file name with its compression suffix removed (``a.jsonl.zst`` is JSON Lines),
the compression from the file's magic bytes (``compression.py``). One module per format, each a
:class:`~tokenloom.corpus.formats.base.FormatReader`, registered here in this order:

- ``text`` (``.txt`` and anything unknown): one record per line; ``code`` (a programming language's
  extension): the whole file one record (``text.py``);
- ``jsonl`` (``.jsonl``, ``.json``, ``.ndjson``): one JSON object per line (``jsonl.py``);
- ``csv`` / ``tsv``: the standard ``csv`` module, RFC 4180 quoting; the first row is the header
  (``delimited.py``);
- ``parquet``: one row group at a time, only the columns used (``parquet.py``).

A new format is one module with a reader and one :func:`~tokenloom.corpus.formats.base.register` call
below: the folder search (``sources.corpus_suffixes``), the kind of a file (text, table or code) and how a
large file is cut into tasks (``tasks.py``) follow from the reader. The protocol, the registry and the one
entry, :func:`read_file_records`, are in ``base.py``; :func:`read_file_texts` gives the texts alone (a text
file's lines without building records, ``text.py``).

What round-trips: a table (JSON Lines, CSV/TSV with RFC 4180 quoting, Parquet) gives back every string
written to it, newlines and carriage returns included; a text file cannot hold a text with ``\\n`` or
``\\r`` (a line is a text; CR LF reads as LF) and drops a byte-order mark opening the file.

Why these libraries and not parsers of our own: ``json`` and ``csv`` are the standard library's C
parsers, exact to their specifications, with errors that say where; ``pyarrow`` is the reference Parquet
implementation and reads one row group's columns without touching the rest; none of them needs pandas.

Bad input — a malformed JSON line, a row without a string text, invalid UTF-8, a file with no text column,
a truncated or corrupt compressed stream, a file that cannot be opened — is a
:class:`~tokenloom.corpus.records.Reject` handled by ``errors`` (``records.reject``): raised under
``"strict"``, set aside and counted under ``"skip"``. ``byte_range`` (start, end, first line) reads the
lines of an uncompressed text or JSONL file that start in ``[start, end)``; ``row_groups`` reads some row
groups of a Parquet file (``tasks.py`` makes both).
"""

from __future__ import annotations

from tokenloom.corpus.formats.base import (
    Format,
    FormatReader,
    ReadRequest,
    file_format,
    read_file_records,
    reader_for,
    readers,
    register,
)
from tokenloom.corpus.formats.delimited import CSV, TSV
from tokenloom.corpus.formats.jsonl import JSON_LINES
from tokenloom.corpus.formats.parquet import PARQUET
from tokenloom.corpus.formats.text import CODE, CODE_EXTENSIONS, TEXT, read_file_texts
from tokenloom.corpus.records import record_of

__all__ = [
    "CODE_EXTENSIONS",
    "Format",
    "FormatReader",
    "ReadRequest",
    "file_format",
    "read_file_records",
    "read_file_texts",
    "reader_for",
    "readers",
    "record_of",
    "register",
]

for _reader in (TEXT, JSON_LINES, CSV, TSV, PARQUET, CODE):
    register(_reader)
