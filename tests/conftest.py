"""Shared fixtures and markers.

Markers (declared in pyproject.toml): ``gpu`` tests are skipped when CUDA is absent; ``slow`` tests take
more than a few seconds and still run in CI.

``shared_dir`` finds the external test data (../shared beside the checkout, described by DATA.md there,
or the folder named by $TOKENLOOM_SHARED). Tests that need it skip with a reason when it is absent,
except under CI=true, where its absence is a failure.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


def _find_shared() -> Path | None:
    candidates = [os.environ.get("TOKENLOOM_SHARED"), REPO_ROOT.parent / "shared"]
    for candidate in candidates:
        if candidate and (Path(candidate) / "DATA.md").is_file():
            return Path(candidate)
    return None


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The ../shared data folder (see its DATA.md)."""
    found = _find_shared()
    if found is None:
        message = "external test data not found: expected ../shared/DATA.md beside the checkout or $TOKENLOOM_SHARED"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message + " (CI=true: missing data is a failure, not a skip)")
        pytest.skip(message)
    return found


@pytest.fixture(scope="session")
def default_corpus() -> Path:
    """A small parallel corpus for tests that train tokenizers: 12 languages × 12 sentences (tests/data/).

    Small so that many trainings stay fast and their known answers stay fixed; the shipped corpus is
    ``embedded_corpus``.
    """
    path = REPO_ROOT / "tests" / "data" / "parallel12"
    assert path.is_dir(), path
    return path


@pytest.fixture(scope="session")
def embedded_corpus() -> Path:
    """The shipped parallel corpus: top-level corpora/default/ (in the wheel as tokenloom.corpora.default)."""
    path = REPO_ROOT / "corpora" / "default"
    assert path.is_dir(), path
    return path


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if not gpu_items:
        return
    import torch  # only when GPU tests were collected

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device; none is present")
    for item in gpu_items:
        item.add_marker(skip)
