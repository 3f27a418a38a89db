"""The hypothesis profiles of tests/conftest.py: derandomized under CI=true, random elsewhere, and no test
module's settings undo that."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

# load conftest.py, then a test module, as pytest does; report the settings its property tests run with
PROBE = """
import json, runpy, sys
sys.path.insert(0, {tests!r})
runpy.run_path({conftest!r})
import test_costs, test_masks
used = [f._hypothesis_internal_use_settings for f in (
    test_costs.test_scaling_invariants, test_masks.test_causal_definition)]
print(json.dumps({{key: [getattr(s, key) for s in used] for key in (
    "derandomize", "print_blob", "deadline", "max_examples")}} | {{"database": [s.database is None for s in used]}}))
"""


def _probe(env: dict[str, str]) -> dict[str, list[object]]:
    code = PROBE.format(tests=str(TESTS), conftest=str(TESTS / "conftest.py"))
    clean = {k: v for k, v in os.environ.items() if k not in ("CI", "HYPOTHESIS_PROFILE")}
    out = subprocess.run(
        [sys.executable, "-c", code], env={**clean, **env}, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_ci_derandomizes_and_local_runs_draw_new_examples() -> None:
    ci = _probe({"CI": "true"})
    assert ci["derandomize"] == [True, True] and ci["database"] == [True, True]
    assert ci["print_blob"] == [True, True] and ci["deadline"] == [None, None]
    assert ci["max_examples"] == [60, 60]  # the modules' own sizes are kept
    local = _probe({})
    assert local["derandomize"] == [False, False]
    assert local["print_blob"] == [True, True] and local["deadline"] == [None, None]
    assert _probe({"CI": "true", "HYPOTHESIS_PROFILE": "dev"})["derandomize"] == [False, False]


def _hypothesis_overrides(path: Path) -> list[str]:
    """``settings(...)`` keywords and decorators in a test module that would undo the profile."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name == "settings":
                found += [
                    f"settings({k.arg}=...)" for k in node.keywords if k.arg in ("derandomize", "database")
                ]
            if name in ("seed", "reproduce_failure", "load_profile"):
                found.append(f"{name}(...)")
    return found


@pytest.mark.parametrize("path", sorted(TESTS.glob("test_*.py")), ids=lambda p: p.name)
def test_no_test_module_overrides_derandomize(path: Path) -> None:
    assert _hypothesis_overrides(path) == [], path.name


def test_the_override_scan_finds_overrides(tmp_path: Path) -> None:
    bad = tmp_path / "test_bad.py"
    bad.write_text(
        "from hypothesis import seed, settings\n"
        "@settings(max_examples=5, derandomize=False)\n@seed(1)\ndef test_x(): ...\n",
        encoding="utf-8",
    )
    assert _hypothesis_overrides(bad) == ["settings(derandomize=...)", "seed(...)"]
