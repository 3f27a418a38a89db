"""The embedded corpora (top-level corpora/): their promises, how the library finds them, and the wheel.

The parallel folder must stay parallel and broad (>= 30 languages, >= 15 scripts, >= 60 sentences, the same
numbers / URL / e-mail / emoji on the same line everywhere); the slices folder must read as code-mixed,
transliterated and code slices; a built wheel must carry every file and the installed package must find them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import unicodedata
import zipfile
from pathlib import Path

import pytest

from tokenloom import _corpora
from tokenloom.corpus.load import load_corpus

REPO_ROOT = Path(__file__).resolve().parent.parent
CORPORA = REPO_ROOT / "corpora"

# line number -> strings every translation keeps verbatim (see corpora/README.md)
KEPT = {
    14: ["555-0134"],
    15: ["14", "30", "2026"],
    18: ["https://example.org/help"],
    19: ["info@example.com"],
    20: ["🎂🎉"],
    21: ["☀️", "🏖️"],
    22: ["100"],
    23: ["365"],
    45: ["20"],
    47: ["1889", "2015"],
    52: ["15"],
}


def test_library_finds_the_checkout_corpora() -> None:
    assert _corpora.corpora_root() == CORPORA
    assert _corpora.default_corpus() == CORPORA / "default"
    assert _corpora.slices_corpus() == CORPORA / "slices"


def test_parallel_folder_is_broad_and_parallel(embedded_corpus: Path) -> None:
    corpus = load_corpus(embedded_corpus)
    parts = list(corpus)
    assert all(p.slice_kind == "language" and p.align is not None for p in parts)
    assert len({p.align for p in parts}) == 1  # one parallel group: premiums against any pivot
    langs = {p.lang for p in parts}
    scripts = {p.script for p in parts}
    assert len(langs) >= 30, sorted(langs)
    assert len(scripts) >= 15, sorted(scripts)
    wanted = {"Latn", "Cyrl", "Grek", "Arab", "Hebr", "Deva", "Beng", "Taml", "Telu", "Thai", "Geor", "Armn"}
    wanted |= {"Ethi", "Hang", "Hans", "Jpan"}
    assert wanted <= scripts
    assert scripts & {"Khmr", "Mymr"}
    for part in parts:
        texts, ids = part.load()
        assert len(texts) >= 60 and ids == list(range(1, len(texts) + 1)), part.source


@pytest.mark.parametrize("path", sorted((CORPORA / "default").glob("*.txt")), ids=lambda p: p.stem)
def test_every_translation_keeps_numbers_links_and_emoji(path: Path) -> None:
    raw = path.read_bytes()
    assert raw.endswith(b"\n") and b"\r" not in raw and not raw.startswith(b"\xef\xbb\xbf"), path
    lines = raw.decode("utf-8").split("\n")[:-1]
    english = (path.parent / "eng_Latn.txt").read_text(encoding="utf-8").split("\n")[:-1]
    assert len(lines) == len(english), path
    for number, line in enumerate(lines, start=1):
        assert line.strip() == line and line, f"{path.name}:{number}: blank or padded line"
        assert unicodedata.normalize("NFC", line) == line, f"{path.name}:{number}: not NFC"
        for kept in KEPT.get(number, []):
            assert kept in line, f"{path.name}:{number}: {kept!r} missing from {line!r}"
    assert len(set(lines)) == len(lines), f"{path.name}: a sentence appears twice"


def test_the_scripts_in_the_names_are_the_scripts_of_the_text(embedded_corpus: Path) -> None:
    from tokenloom.unicode import dominant_script

    for path in sorted(embedded_corpus.glob("*.txt")):
        script = path.stem.split("_")[1]
        text = path.read_text(encoding="utf-8")
        found = dominant_script(text)
        # Japanese mixes Han and kana; simplified Chinese is Han
        expected = {"Jpan": {"Jpan", "Hani", "Hira", "Kana"}, "Hans": {"Hani", "Hans"}}.get(script, {script})
        assert found in expected, (path.name, found)


def test_slices_read_as_code_mixed_transliterated_and_code() -> None:
    corpus = load_corpus(_corpora.slices_corpus())
    kinds: dict[str, set[str]] = {}
    for part in corpus:
        kinds.setdefault(part.slice_kind, set()).add(part.slice)
        texts, _ = part.load()
        assert texts and all(t.strip() for t in texts), part.source
    assert {"hin-eng_mixed", "spa-eng_mixed", "tgl-eng_mixed"} <= kinds["code_mixed"]
    assert {"hin_Latn-translit", "apc_Latn-translit", "rus_Latn-translit"} <= kinds["transliterated"]
    assert len(kinds["code"]) >= 6, kinds["code"]
    assert set(kinds) == {"code_mixed", "transliterated", "code"}


def test_code_mixed_texts_mix_scripts_and_romanized_texts_are_latin() -> None:
    from tokenloom.unicode import dominant_script, letter_scripts

    rows = [
        json.loads(line)
        for name in ("code_mixed.jsonl", "romanized.jsonl")
        for line in (CORPORA / "slices" / name).read_text(encoding="utf-8").splitlines()
    ]
    for row in rows:
        if row["slice"] == "hin-eng_mixed":
            assert tuple(letter_scripts(row["text"], min_share=0.05)) == ("Deva", "Latn"), row
        if row["slice"].endswith("_Latn-translit"):
            assert dominant_script(row["text"]) == "Latn", row


def test_readme_lists_every_file() -> None:
    readme = (CORPORA / "README.md").read_text(encoding="utf-8")
    assert "CC0" in readme
    for path in sorted(CORPORA.rglob("*")):
        if path.is_file() and path.name != "README.md":
            assert path.name in readme, f"corpora/README.md does not describe {path.relative_to(CORPORA)}"


def test_corpora_stay_small() -> None:
    total = sum(p.stat().st_size for p in CORPORA.rglob("*") if p.is_file())
    assert total < 512 * 1024, total


def _copy_project(dest: Path) -> Path:
    """The files a source distribution holds, copied without build outputs."""
    dest.mkdir(parents=True)
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(REPO_ROOT / name, dest / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc")
    for name in ("src", "corpora"):
        shutil.copytree(REPO_ROOT / name, dest / name, ignore=ignore)
    return dest


@pytest.mark.slow
def test_wheel_ships_the_corpora_and_the_installed_package_finds_them(tmp_path: Path) -> None:
    project = _copy_project(tmp_path / "project")
    wheels = tmp_path / "wheels"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(wheels),
            ".",
        ],
        cwd=project,
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = wheels.glob("tokenloom-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {
        "tokenloom/corpora/" + p.relative_to(CORPORA).as_posix() for p in CORPORA.rglob("*") if p.is_file()
    }
    assert expected <= names, sorted(expected - names)[:5]
    assert "tokenloom/py.typed" in names and "tokenloom/_corpora.py" in names

    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    probe = (
        "from tokenloom._corpora import default_corpus, slices_corpus; "
        "print(default_corpus()); print(len(list(default_corpus().glob('*.txt')))); "
        "print(sum(p.is_file() for p in (slices_corpus() / 'code').iterdir()))"
    )
    env = {**os.environ, "PYTHONPATH": str(target)}
    out = subprocess.run(
        [sys.executable, "-c", probe],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.split("\n")
    assert Path(out[0]) == target / "tokenloom" / "corpora" / "default"
    assert int(out[1]) == len(list((CORPORA / "default").glob("*.txt")))
    assert int(out[2]) == len(list((CORPORA / "slices" / "code").iterdir()))
