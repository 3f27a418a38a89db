"""A token shard folder's ``manifest.json``: what wrote it, from what, with which settings, and its files.

The manifest holds the tokenizer's fingerprint and files, the corpus fingerprint (SHA-256 over the texts
read, task by task in plan order), the settings (:class:`~tokenloom.tokens.config.TokenizeConfig` plus
the token dtype and resolved BOS/EOS ids), counts (input documents, rejected, dropped and split long
documents, documents and tokens per split and per language, the drawn sample counts) and the shard list
(per shard: split, documents, tokens and each file's size and SHA-256). :func:`read_manifest` reads it
and :func:`check_files` compares the files on disk with it (sizes always, checksums on request), so a
truncated ``.ds`` or ``.ds.index`` is found when a dataset opens the folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from tokenloom._atomic import atomic_write
from tokenloom.errors import ConfigError
from tokenloom.text.tokenizer import Tokenizer

__all__ = ["FORMAT", "check_files", "read_manifest", "tokenizer_fingerprint", "write_manifest"]

FORMAT = "tokenloom-token-shards/1"


def _hashes(folder: Path, *, engine_only: bool) -> list[dict[str, str]]:
    found = sorted(folder.rglob("*")) if folder.is_dir() else [folder]
    base = folder if folder.is_dir() else folder.parent
    return [
        {"name": f.relative_to(base).as_posix(), "sha256": hashlib.sha256(f.read_bytes()).hexdigest()}
        for f in found
        if f.is_file() and not (engine_only and f.name == "tokenloom.json")
    ]


def tokenizer_fingerprint(tok: Tokenizer, path: Path | None) -> dict[str, Any]:
    """Name, vocabulary size, files (name, SHA-256: the files given, else the saved ones) and one
    fingerprint: the SHA-256 of the engine files :meth:`Tokenizer.save` writes (not ``tokenloom.json``, a
    record of how it was trained), so a tokenizer given as a folder and the same one given as an object
    agree. An engine tokenloom cannot save (a callable) is fingerprinted by name and vocabulary size."""
    with tempfile.TemporaryDirectory() as tmp:
        try:
            saved = _hashes(tok.save(Path(tmp) / "tok"), engine_only=True)
        except Exception:  # an engine tokenloom cannot save: no files to hash
            saved = []
    files = _hashes(path, engine_only=False) if path is not None else saved
    digest = hashlib.sha256(json.dumps([tok.vocab_size, saved or tok.name]).encode())
    return {"name": tok.name, "vocab_size": tok.vocab_size, "files": files, "fingerprint": digest.hexdigest()}


def write_manifest(folder: Path, manifest: dict[str, Any]) -> Path:
    return atomic_write(folder / "manifest.json", json.dumps({"format": FORMAT, **manifest}, indent=2) + "\n")


def read_manifest(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """The manifest of a token shard folder, or a one-line error saying what the folder lacks."""
    path = Path(folder) / "manifest.json"
    try:
        manifest: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(
            f"{folder} has no manifest.json: it is not a finished token shard folder; write one with "
            "`tokenloom tokenize CORPUS --tokenizer T --out DIR` (or --resume the run that was interrupted)"
        ) from None
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"cannot read {path} ({exc}); write the folder again with tokenloom tokenize"
        ) from exc
    if manifest.get("format") != FORMAT:
        raise ConfigError(f"{path} is format {manifest.get('format')!r}, expected {FORMAT!r}; tokenize again")
    return manifest


def check_files(folder: Path, manifest: dict[str, Any], *, checksums: bool = False) -> None:
    """Every shard file listed is there with its size (and SHA-256 when ``checksums``), or a one-line error."""
    for shard in manifest["shards"]:
        for f in shard["files"]:
            path = folder / f["name"]
            size = path.stat().st_size if path.is_file() else None
            if size != f["bytes"]:
                raise ConfigError(
                    f"{path} is {'missing' if size is None else f'{size} bytes'} but the manifest says "
                    f"{f['bytes']} bytes (truncated or from another run); tokenize the corpus again into {folder}"
                )
            if checksums and hashlib.sha256(path.read_bytes()).hexdigest() != f["sha256"]:
                raise ConfigError(
                    f"{path} does not match the SHA-256 in the manifest; tokenize the corpus again into {folder}"
                )
