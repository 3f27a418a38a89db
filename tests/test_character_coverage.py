"""``character_coverage`` on the tokenizers engine: the alphabet the engine keeps is exactly the most
frequent characters covering that share (a Python ``Counter`` is the oracle), the rest spelled by bytes."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tokenloom.text._coverage import covering_alphabet
from tokenloom.text._hf_build import BYTE_PIECES
from tokenloom.text.train import TrainerConfig, train_tokenizer

LANGS = ("eng_Latn", "zho_Hans", "jpn_Jpan", "tha_Thai", "hin_Deva")


@pytest.fixture(scope="module")
def mixed(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("coverage")
    for lang in LANGS:
        lines = (shared_dir / "corpora" / "flores200" / "dev" / f"{lang}.txt").read_text("utf-8").splitlines()
        (out / f"{lang}.txt").write_text("\n".join(lines[:200]) + "\n", "utf-8")
    return out


def _alphabet(tok: object) -> set[str]:
    hf = tok.hf_export()  # type: ignore[attr-defined]
    fixed = set(BYTE_PIECES) | {"<unk>", "<s>", "</s>", "<pad>"}
    return {p for p in hf.get_vocab() if len(p) == 1 and p not in fixed}


def test_the_engine_keeps_the_covering_characters(mixed: Path) -> None:
    lines = [ln for p in sorted(mixed.iterdir()) for ln in p.read_text("utf-8").split("\n") if ln]
    counts = Counter("".join(lines).replace(" ", "\u2581"))
    ranked = sorted(counts.values(), reverse=True)
    tok = train_tokenizer(mixed, engine="hf", vocab_size=3000, character_coverage=0.99, heldout=0)
    kept = _alphabet(tok)
    cut = min(counts[c] for c in kept if c in counts)
    assert {c for c, n in counts.items() if n >= cut} == {
        c for c in kept if c in counts
    }  # whole count groups
    assert sum(counts[c] for c in kept if c in counts) >= 0.99 * sum(ranked)
    without_cut = sum(n for n in ranked if n > cut)
    assert without_cut < 0.99 * sum(ranked)  # the smallest such set: dropping the last count falls short
    assert kept == covering_alphabet(counts, 0.99, TrainerConfig(engine="hf").required_chars)
    full = train_tokenizer(mixed, engine="hf", vocab_size=3000, character_coverage=1.0, heldout=0)
    assert _alphabet(full) >= set(counts) and len(kept) < len(_alphabet(full))
    rare = next(c for c, _ in sorted(counts.items(), key=lambda kv: kv[1]) if c not in kept)
    text = f"a{rare}b"
    assert tok.decode(tok.encode(text)) == text
    assert any(t.startswith("<0x") for t in tok.tokens(text))  # spelled by byte fallback


def test_same_settings_give_identical_files(mixed: Path, tmp_path: Path) -> None:
    runs = []
    for run in range(2):
        tok = train_tokenizer(mixed, engine="hf", vocab_size=3000, character_coverage=0.995, heldout=0)
        runs.append((tok.save(tmp_path / str(run)) / "tokenizer.json").read_bytes())
    assert runs[0] == runs[1]
