"""Shared fixtures and markers.

Markers (declared in pyproject.toml): ``gpu`` tests are skipped when CUDA is absent; ``slow`` tests take
more than a few seconds and still run in CI.

``shared_dir`` finds the external test data (../shared beside the checkout, described by DATA.md there,
or the folder named by $TOKENLOOM_SHARED). Tests that need it skip with a reason when it is absent,
except under CI=true, where its absence is a failure.

Hypothesis profiles, loaded here before any test module builds its ``@settings``: ``ci`` (when CI=true)
derandomizes, so every CI run tries the same examples and a failure reproduces on the next run; ``dev``
(elsewhere) draws new examples each run (``--hypothesis-seed=N`` replays one run). Both print the
``@reproduce_failure`` blob of a failing example, and neither has a deadline: tests never assert on
wall-clock time, and a busy machine must not turn a slow example into a failure. ``HYPOTHESIS_PROFILE``
(or ``--hypothesis-profile``) picks one explicitly. Test modules' ``@settings`` set only ``max_examples``,
``deadline`` and health checks, never ``derandomize``, ``database`` or a ``@seed``
(``tests/test_hypothesis_profiles.py`` checks it).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

REPO_ROOT = Path(__file__).resolve().parent.parent
IN_CI = os.environ.get("CI", "").lower() == "true"

# both from hypothesis' own defaults (not from whatever profile hypothesis loaded on import)
_BASE = settings.get_profile("default")
settings.register_profile(
    "ci", parent=_BASE, derandomize=True, database=None, print_blob=True, deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)  # fmt: skip
settings.register_profile("dev", parent=_BASE, derandomize=False, print_blob=True, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if IN_CI else "dev"))


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
        if IN_CI:
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
