"""The public API as type checkers and users see it: lazy tables and typed imports agree, names are typed.

Every package ``__init__`` with a lazy table (``_LAZY``: name -> defining module) also imports the same
names from the same modules under ``if TYPE_CHECKING:`` and lists them in a literal ``__all__``; these
tests keep the three in step, check each name resolves at run time to the object its module defines, run
the user-style example that uses every top-level name, and show that mypy sees concrete types (a wrong
annotation is an error, not silently ``Any``).
"""

from __future__ import annotations

import ast
import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tokenloom

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "tokenloom"
EXAMPLE = ROOT / "tests" / "typecheck" / "user_example.py"
LAZY_INITS = sorted(p for p in PACKAGE.rglob("__init__.py") if "_LAZY" in p.read_text(encoding="utf-8"))


def _module_name(init: Path) -> str:
    return ".".join(init.relative_to(PACKAGE.parent).parent.parts)


def _parts(init: Path) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """(lazy table, TYPE_CHECKING imports as name -> module, __all__) of one ``__init__.py``."""
    tree = ast.parse(init.read_text(encoding="utf-8"))
    lazy: dict[str, str] = {}
    typed: dict[str, str] = {}
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "_LAZY":
            lazy = ast.literal_eval(node.value)  # type: ignore[arg-type]
        elif isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "__all__":
            names = ast.literal_eval(node.value)  # a literal list: type checkers read it
        elif isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom) and imp.module, ast.dump(imp)
                typed.update({alias.name: imp.module for alias in imp.names})
    return lazy, typed, names


def test_there_are_lazy_packages() -> None:
    assert {_module_name(p) for p in LAZY_INITS} >= {
        "tokenloom", "tokenloom.encoder", "tokenloom.fertility", "tokenloom.text", "tokenloom.vision",
    }  # fmt: skip


@pytest.mark.parametrize("init", LAZY_INITS, ids=_module_name)
def test_typed_imports_match_the_lazy_table(init: Path) -> None:
    lazy, typed, names = _parts(init)
    assert lazy and typed == lazy  # the same names from the same modules
    assert set(lazy) <= set(names)
    package = importlib.import_module(_module_name(init))
    for name in names:
        value = getattr(package, name)
        if name in lazy:  # the defining module's own object, not a copy
            assert value is getattr(importlib.import_module(lazy[name]), name), name


def _names_used(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "tokenloom"
    }


def test_example_uses_every_public_name() -> None:
    missing = set(tokenloom.__all__) - {"__version__"} - _names_used(EXAMPLE)
    assert not missing, f"user_example.py does not use {sorted(missing)}"


@pytest.mark.slow
def test_example_runs() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    result = subprocess.run(
        [sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=600, check=False, env=env
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == "every public name used"


WRONG = """
import pandas
import torch
import tokenloom

def f(tok: tokenloom.Tokenizer, corpus: tokenloom.Corpus) -> None:
    a: int = tokenloom.fertility_report({"t": tok}, corpus)
    b: pandas.DataFrame = tokenloom.train_tokenizer("corpus.txt")
    c: str = tokenloom.load_tokenizer("tok").encode("x")
    d: torch.Tensor = tokenloom.encoder_params(tokenloom.EncoderConfig())
    e: int = tokenloom.Encoder(tokenloom.EncoderConfig())
    g: int = tokenloom.load_image(b"")
    h: str = tokenloom.from_timm
    i: int = tokenloom.LanguageModel(tokenloom.LanguageModelConfig(10)).generate(torch.zeros(1), 1)
    j: str = tokenloom.evaluate_bpb
"""


@pytest.mark.slow
def test_mypy_sees_concrete_types(tmp_path: Path) -> None:
    """Each wrong annotation below is an error: the names are typed, not ``Any``."""
    probe = tmp_path / "probe.py"
    probe.write_text(WRONG, encoding="utf-8")
    env = {**os.environ, "MYPYPATH": str(ROOT / "src")}
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), str(probe)],
        capture_output=True, text=True, timeout=900, check=False, env=env, cwd=ROOT,
    )  # fmt: skip
    if "No module named mypy" in result.stderr:
        pytest.skip("mypy is a dev extra and is not installed")
    wrong_lines = {i for i, line in enumerate(WRONG.splitlines(), start=1) if ": " in line and " = " in line}
    error_lines = {int(line.split(":")[1]) for line in result.stdout.splitlines() if ": error:" in line}
    assert error_lines == wrong_lines, result.stdout
