"""Every code block of README.md and docs/*.md runs, so the documentation cannot rot.

The convention (docs/index.md states it for writers):

- ```` ```python ```` blocks of one page run in order in one shared namespace, in-process;
- ```` ```bash ```` blocks run with ``bash -e``, in the same folder;
- both run in a fresh temporary working directory per page, prepared with the fixtures below; the
  ``tokenloom`` command and ``python`` of the running interpreter come first on ``PATH`` (with this
  checkout's ``src/`` on ``PYTHONPATH``), and ``TOKENLOOM_SHARED`` names the external data folder (the
  ``shared_dir`` fixture) on pages that mention it — those pages skip where the data is absent, except in CI;
- the line ``<!-- skip: REASON -->`` directly above an opening fence skips that block, with the reason;
- any other fence (```` ```text ````, ```` ```toml ````, untagged) is not run.

Fixtures in every page's folder: ``corpus/`` (a copy of the embedded parallel corpus, ``corpora/default``),
``slices/`` (its code-mixed, romanized and source-code texts, ``corpora/slices``) and ``photos/`` (JPEGs
generated here, 320×240, in the class folders ``cat/`` and ``dog/``, three each).

Pages are parametrized, so a failure names the page and the block's line; pages other than the fast ones
carry the ``slow`` marker (they train tokenizers or build models; they still run in CI).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
PAGES = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
FAST_PAGES = {"docs/index.md"}  # every other page trains, builds models or runs the CLI: slow
RUN_LANGS = ("python", "bash")
README_LIMIT = 10 * 1024  # bytes

_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})\s*(?P<lang>[^\s`]*)[^`]*$")
_SKIP = re.compile(r"^\s*<!--\s*skip:\s*(?P<reason>.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    lang: str  # the info string's first word ("" when untagged)
    line: int  # 1-based line of the opening fence
    code: str  # the content, fence indentation removed
    skip: str | None  # the reason of a `<!-- skip: REASON -->` directly above, else None


def parse_blocks(text: str, *, where: str = "page") -> list[Block]:
    """The fenced code blocks of a Markdown page, in order (CommonMark fences: ``` or ~~~, ≤ 3 spaces)."""
    lines = text.split("\n")
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if m is None:
            skip = _SKIP.match(lines[i])
            if skip and (i + 1 >= len(lines) or _FENCE.match(lines[i + 1]) is None):
                raise ValueError(
                    f"{where}:{i + 1}: a skip marker must stand directly above an opening fence; "
                    "move it to the line just before the block it skips"
                )
            i += 1
            continue
        indent, fence, lang = len(m["indent"]), m["fence"], m["lang"].lower()
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines) and not re.match(
            rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*$", lines[i]
        ):
            body.append(lines[i][indent:] if lines[i][:indent].strip() == "" else lines[i].lstrip())
            i += 1
        if i == len(lines):
            raise ValueError(
                f"{where}:{start + 1}: the ```{lang} block is never closed; add the closing fence"
            )
        skip_reason = None
        if start > 0 and (skip := _SKIP.match(lines[start - 1])):
            skip_reason = skip["reason"]
            if not skip_reason:
                raise ValueError(f"{where}:{start}: `<!-- skip: -->` needs a reason after 'skip:'")
        blocks.append(Block(lang, start + 1, "\n".join(body) + "\n", skip_reason))
        i += 1
    return blocks


def _rel(page: Path) -> str:
    return page.relative_to(REPO_ROOT).as_posix()


def _runnable(page: Path) -> list[Block]:
    blocks = parse_blocks(page.read_text(encoding="utf-8"), where=_rel(page))
    return [b for b in blocks if b.lang in RUN_LANGS and b.skip is None]


def _page_params() -> list[Any]:
    params = []
    for page in PAGES:
        if not _runnable(page):  # tables and prose only (e.g. benchmarks.md): nothing to run
            continue
        marks = [] if _rel(page) in FAST_PAGES else [pytest.mark.slow]
        params.append(pytest.param(page, id=_rel(page), marks=marks))
    return params


def _make_photos(folder: Path) -> None:
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    for label, tint in (("cat", (200, 120, 60)), ("dog", (60, 120, 200))):
        (folder / label).mkdir(parents=True)
        for k in range(3):
            ramp = np.linspace(0, 1, 320)[None, :, None] * np.linspace(0.3, 1, 240)[:, None, None]
            pixels = ramp * np.array(tint) + rng.integers(0, 40, (240, 320, 3))
            image = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))
            image.save(folder / label / f"{label}{k}.jpg", quality=90)


def _prepare(workdir: Path) -> None:
    shutil.copytree(REPO_ROOT / "corpora" / "default", workdir / "corpus")
    shutil.copytree(REPO_ROOT / "corpora" / "slices", workdir / "slices")
    _make_photos(workdir / "photos")


def _env(shared: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(REPO_ROOT / "src"), env.get("PYTHONPATH", "")] if p)
    env["MPLBACKEND"] = "Agg"
    if shared is not None:
        env["TOKENLOOM_SHARED"] = str(shared)
    return env


def _run_python(page: Path, block: Block, namespace: dict[str, Any]) -> None:
    # leading newlines make the traceback's line numbers the page's line numbers
    code = compile("\n" * block.line + block.code, str(page), "exec")
    try:
        exec(code, namespace)
    except Exception:
        pytest.fail(f"{_rel(page)}:{block.line}: the ```python block raised:\n{traceback.format_exc()}")


def _run_bash(page: Path, block: Block, workdir: Path, env: dict[str, str]) -> None:
    result = subprocess.run(
        ["bash", "-e", "-c", block.code],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if result.returncode != 0:
        pytest.fail(
            f"{_rel(page)}:{block.line}: the ```bash block exited with {result.returncode}\n"
            f"--- stdout (end)\n{result.stdout[-3000:]}\n--- stderr (end)\n{result.stderr[-3000:]}"
        )


@pytest.mark.parametrize("page", _page_params())
def test_page_code_runs(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    text = page.read_text(encoding="utf-8")
    runnable = _runnable(page)
    shared = request.getfixturevalue("shared_dir") if "TOKENLOOM_SHARED" in text else None
    workdir = tmp_path / "work"
    workdir.mkdir()
    _prepare(workdir)
    env = _env(shared)
    monkeypatch.chdir(workdir)
    if shared is not None:
        monkeypatch.setenv("TOKENLOOM_SHARED", str(shared))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    for block in runnable:
        if block.lang == "python":
            _run_python(page, block, namespace)
        else:
            _run_bash(page, block, workdir, env)


def test_parse_blocks_finds_languages_lines_and_skips() -> None:
    page = "\n".join(
        [
            "# Title",  # 1
            "```python",  # 2
            "x = 1",  # 3
            "```",  # 4
            "<!-- skip: needs a GPU -->",  # 5
            "```bash",  # 6
            "nvidia-smi",  # 7
            "```",  # 8
            "- item",  # 9
            "   ```text",  # 10
            "   output",  # 11
            "   ```",  # 12
            "````python",  # 13
            "s = '```'",  # 14
            "````",  # 15
        ]
    )
    blocks = parse_blocks(page)
    assert [(b.lang, b.line, b.skip) for b in blocks] == [
        ("python", 2, None),
        ("bash", 6, "needs a GPU"),
        ("text", 10, None),
        ("python", 13, None),
    ]
    assert blocks[0].code == "x = 1\n" and blocks[2].code == "output\n" and blocks[3].code == "s = '```'\n"


@pytest.mark.parametrize(
    ("page", "message"),
    [
        ("```python\nx = 1\n", "never closed"),
        ("<!-- skip: why -->\n\n```bash\nls\n```\n", "directly above"),
        ("<!-- skip: -->\n```bash\nls\n```\n", "needs a reason"),
    ],
)
def test_parse_blocks_rejects_broken_pages(page: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_blocks(page)


def test_python_tracebacks_name_the_page_line(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# t\n\n```python\nx = 1\nraise RuntimeError('boom')\n```\n", encoding="utf-8")
    (block,) = parse_blocks(page.read_text(encoding="utf-8"))
    code = compile("\n" * block.line + block.code, str(page), "exec")
    with pytest.raises(RuntimeError) as info:
        exec(code, {})
    assert info.traceback[-1].lineno + 1 == 5  # pytest's lineno is 0-based; the raise is on line 5


def test_every_page_parses() -> None:
    """Unclosed fences, stray skip markers and skips without a reason fail here, page by page."""
    for page in PAGES:
        blocks = parse_blocks(page.read_text(encoding="utf-8"), where=_rel(page))
        assert all(b.skip is None or b.skip.strip() for b in blocks)


def test_readme_is_short_and_links_the_docs() -> None:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.encode("utf-8")) <= README_LIMIT
    assert "docs/index.md" in readme


def test_docs_index_lists_every_page() -> None:
    index = (REPO_ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    for page in sorted((REPO_ROOT / "docs").glob("*.md")):
        if page.name != "index.md":
            assert f"]({page.name})" in index, f"docs/index.md does not link {page.name}"


def test_relative_links_to_existing_files_resolve() -> None:
    """Links to repository files (not to pages still being written elsewhere) point at real paths."""
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if "://" in target or target.startswith("mailto:") or target.endswith(".md"):
                continue
            assert (page.parent / target).exists(), f"{_rel(page)} links {target}, which does not exist"
