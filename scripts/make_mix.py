"""Write a pretraining-style corpus mix from the shared FLORES texts: every format, every codec, broken files.

``write_mix(out_dir, shared, ...)`` takes ``lines`` sentences of each language in ``langs`` from
``<shared>/corpora/flores200/devtest`` (rows: ``text``, ``language`` = ``"rus"``, ``language_script`` =
``"Cyrl"``, the FineWeb-2 columns) and writes them in each (format, codec) of ``formats``: ``txt`` (the
texts only, one per line), ``jsonl``, ``json`` (JSON Lines), ``csv``, ``tsv``, ``parquet`` (row groups of
``row_group_rows``), each uncompressed (``none``) or ``gz``, ``zst``, ``xz``, ``bz2``. With ``size_bytes``
the rows are repeated (documents of ``sentences_per_doc`` sentences) until each format holds about that many
bytes of text, spread over ``shards`` files — the benchmark mix; without it every file holds the rows once.
``broken=True`` adds files with known defects (see :data:`BROKEN`). The returned :class:`Mix` says which
documents each file holds, so readers can be checked against it.

    python scripts/make_mix.py OUT_DIR [--shared ../shared] [--size-mb 1024] [--formats jsonl:zst,parquet:none]
"""

from __future__ import annotations

import argparse
import bz2
import csv
import gzip
import io
import json
import lzma
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import cycle, islice
from pathlib import Path
from typing import IO, Any

FORMATS = ("txt", "jsonl", "json", "csv", "tsv", "parquet")
CODECS = ("none", "gz", "zst", "xz", "bz2")
ALL = tuple((fmt, codec) for fmt in FORMATS for codec in CODECS)
LANGS = ("eng_Latn", "rus_Cyrl", "hin_Deva", "arb_Arab", "zho_Hans")
COLUMNS = ("text", "language", "language_script")
# file name -> what is wrong with it
BROKEN = {
    "broken-truncated.jsonl.gz": "a gzip stream cut in the middle",
    "broken-truncated.jsonl.zst": "a zstd stream cut in the middle",
    "broken-rows.jsonl": "a malformed JSON line, a row without text, a non-string text, invalid UTF-8",
    "broken-schema.parquet": "a Parquet file whose text column is called 'body'",
    "broken-unreadable.parquet": "bytes that are not Parquet",
}
BAD_ROWS = 4  # rows of broken-rows.jsonl that are rejected (the others are read)


@dataclass
class Mix:
    """What was written: each file's documents (rows, in order) and the broken files' expectations."""

    out_dir: Path
    rows: list[dict[str, str]]  # the base rows every (unsized) file holds
    files: dict[Path, list[dict[str, str]]] = field(default_factory=dict)  # file -> its documents (unsized)
    counts: dict[Path, int] = field(default_factory=dict)  # file -> how many documents (sized mixes)
    broken: dict[Path, list[dict[str, str]]] = field(default_factory=dict)  # broken file -> rows written


def flores_rows(shared: Path, langs: Sequence[str] = LANGS, lines: int = 100) -> list[dict[str, str]]:
    """``lines`` sentences of each language, interleaved language by language."""
    folder = shared / "corpora" / "flores200" / "devtest"
    texts = {}
    for lang in langs:
        with (folder / f"{lang}.txt").open(encoding="utf-8") as f:
            texts[lang] = [line.rstrip("\n") for line in islice(f, lines)]
    rows = []
    for i in range(lines):
        for lang in langs:
            code, script = lang.split("_")
            rows.append({"text": texts[lang][i], "language": code, "language_script": script})
    return rows


def _open(path: Path, codec: str) -> IO[bytes]:
    if codec == "gz":
        return gzip.open(path, "wb", compresslevel=1)  # type: ignore[return-value]
    if codec == "xz":
        return lzma.open(path, "wb", preset=0)  # type: ignore[return-value]
    if codec == "bz2":
        return bz2.open(path, "wb", compresslevel=1)  # type: ignore[return-value]
    if codec == "zst":
        import zstandard

        return zstandard.ZstdCompressor(level=3).stream_writer(path.open("wb"), closefd=True)  # type: ignore[return-value]
    return path.open("wb")


def write_rows(
    path: Path, fmt: str, codec: str, rows: Iterable[dict[str, Any]], *, row_group_rows: int = 64
) -> int:
    """``rows`` streamed to ``path`` in ``fmt`` compressed with ``codec``; returns how many were written."""
    n = 0
    with _open(path, codec) as out:
        if fmt == "parquet":
            n = _write_parquet(out, rows, row_group_rows)
            return n
        with io.TextIOWrapper(out, encoding="utf-8", newline="") as text:
            writer = None
            for row in rows:
                if fmt == "txt":
                    text.write(row["text"] + "\n")
                elif fmt in ("jsonl", "json"):
                    text.write(json.dumps(row, ensure_ascii=False) + "\n")
                else:
                    if writer is None:
                        delimiter = "\t" if fmt == "tsv" else ","
                        # CR LF row ends (the default) make the writer quote a field holding \r or \n
                        writer = csv.DictWriter(text, fieldnames=list(row), delimiter=delimiter)
                        writer.writeheader()
                    writer.writerow(row)
                n += 1
    return n


def _write_parquet(out: IO[bytes], rows: Iterable[dict[str, Any]], row_group_rows: int) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    n, writer = 0, None
    rows = iter(rows)
    while batch := list(islice(rows, row_group_rows)):
        table = pa.Table.from_pylist(batch)
        if writer is None:
            writer = pq.ParquetWriter(out, table.schema)
        writer.write_table(table, row_group_size=row_group_rows)
        n += len(batch)
    if writer is not None:
        writer.close()
    return n


def file_name(stem: str, fmt: str, codec: str) -> str:
    """``stem.fmt``, with the codec's suffix unless uncompressed: ``mix.jsonl.zst``, ``mix.csv``."""
    return f"{stem}.{fmt}" + ("" if codec == "none" else f".{codec}")


def _documents(
    rows: list[dict[str, str]], size_bytes: int, per_doc: int, *, start: int = 0
) -> Iterator[dict[str, str]]:
    """Documents of ``per_doc`` consecutive same-language sentences (from sentence ``start`` on), repeated
    until ``size_bytes`` of text."""
    by_lang: dict[tuple[str, str], list[str]] = {}
    for row in rows:
        by_lang.setdefault((row["language"], row["language_script"]), []).append(row["text"])
    streams = {key: islice(cycle(texts), start, None) for key, texts in by_lang.items()}
    written = 0
    for key in cycle(list(streams)):
        text = " ".join(islice(streams[key], per_doc))
        written += len(text.encode("utf-8"))
        yield {"text": text, "language": key[0], "language_script": key[1]}
        if written >= size_bytes:
            return


def write_mix(
    out_dir: Path,
    shared: Path,
    *,
    size_bytes: int | None = None,
    formats: Sequence[tuple[str, str]] = ALL,
    broken: bool = False,
    langs: Sequence[str] = LANGS,
    lines: int = 100,
    shards: int = 1,
    sentences_per_doc: int = 1,
    row_group_rows: int = 64,
) -> Mix:
    """Write the mix into ``out_dir`` (see the module docstring) and say what each file holds."""
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = flores_rows(shared, langs, lines)
    mix = Mix(out_dir, rows)
    for fmt, codec in formats:
        for k in range(shards):
            path = out_dir / file_name("mix" if shards == 1 else f"mix-{k:05d}", fmt, codec)
            if size_bytes is None:  # the rows once, in full, remembered for checks
                part = rows[k::shards]
                kept = [{"text": r["text"]} for r in part] if fmt == "txt" else part
                mix.files[path] = kept
                write_rows(path, fmt, codec, kept, row_group_rows=row_group_rows)
                continue
            docs = _documents(rows, size_bytes // shards, sentences_per_doc, start=k)
            kept_docs = ({"text": d["text"]} for d in docs) if fmt == "txt" else docs
            mix.counts[path] = write_rows(path, fmt, codec, kept_docs, row_group_rows=row_group_rows)
    if broken:
        _write_broken(out_dir, rows, mix)
    return mix


def _write_broken(out_dir: Path, rows: list[dict[str, str]], mix: Mix) -> None:
    many = (rows * 20)[:4000]
    for name in ("broken-truncated.jsonl.gz", "broken-truncated.jsonl.zst"):
        path = out_dir / name
        write_rows(path, "jsonl", name.rsplit(".", 1)[1], many)
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
        mix.broken[path] = many
    good = rows[:6]
    lines = [json.dumps(good[0], ensure_ascii=False).encode(), b'{"text": "unterminated', b'{"body": "no text"}',
             json.dumps(good[1], ensure_ascii=False).encode(), b'{"text": 42, "language": "eng"}',
             b'{"text": "bad \xff byte"}', json.dumps(good[2], ensure_ascii=False).encode()]  # fmt: skip
    path = out_dir / "broken-rows.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    mix.broken[path] = [good[0], {}, {}, good[1], {}, {}, good[2]]
    path = out_dir / "broken-schema.parquet"
    write_rows(path, "parquet", "none", [{"body": r["text"]} for r in good])
    mix.broken[path] = good
    path = out_dir / "broken-unreadable.parquet"
    path.write_bytes(b"PAR1 this is not a parquet file")
    mix.broken[path] = []


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--shared", type=Path, default=Path(__file__).resolve().parents[1] / ".." / "shared")
    parser.add_argument(
        "--size-mb", type=float, default=None, help="text bytes per format (default: rows once)"
    )
    parser.add_argument("--formats", default="jsonl:zst,jsonl:gz,parquet:none", help="FORMAT:CODEC,...")
    parser.add_argument("--shards", type=int, default=1)
    parser.add_argument("--sentences-per-doc", type=int, default=8)
    parser.add_argument("--broken", action="store_true")
    args = parser.parse_args(argv)
    formats = [tuple(item.split(":")) for item in args.formats.split(",")]
    size = None if args.size_mb is None else int(args.size_mb * 1e6)
    mix = write_mix(args.out_dir, args.shared, size_bytes=size, formats=formats, broken=args.broken,  # type: ignore[arg-type]
                    shards=args.shards, sentences_per_doc=args.sentences_per_doc, lines=1012)  # fmt: skip
    counts = mix.counts or {path: len(docs) for path, docs in mix.files.items()}
    for path, n in sorted(counts.items()):
        print(f"{path}  {n} documents  {path.stat().st_size / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
