"""Where the embedded corpora are, in an installed wheel or in a source checkout.

The corpora live in the repository's top-level ``corpora/`` folder. A wheel ships that folder as the data
package ``tokenloom.corpora`` (``setup.py`` maps the package to the folder). From a source checkout
(``PYTHONPATH=src``, or an editable install of ``src/``) that package is not importable, so the checkout's
own ``corpora/`` beside ``src/`` is used. What it does not do: read the files (``tokenloom.corpus.load``).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

__all__ = ["corpora_root", "default_corpus", "slices_corpus"]


def corpora_root() -> Path:
    """The folder holding ``default/`` (parallel sentences) and ``slices/`` (code-mixed, romanized, code)."""
    package = Path(__file__).resolve().parent  # .../src/tokenloom or .../site-packages/tokenloom
    checkout = package.parent.parent / "corpora"
    if package.parent.name == "src" and (checkout / "default").is_dir():
        return checkout
    spec = importlib.util.find_spec("tokenloom.corpora")
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            if (Path(location) / "default").is_dir():
                return Path(location)
    raise FileNotFoundError(
        f"the embedded corpora are missing: neither {checkout} nor an installed tokenloom.corpora package "
        "holds default/; reinstall tokenloom (pip install .) from a complete checkout"
    )


def default_corpus() -> Path:
    """The parallel folder: line i of every ``<lang>_<Script>.txt`` file is the same sentence."""
    return corpora_root() / "default"


def slices_corpus() -> Path:
    """Code-mixed and romanized tables (``.jsonl``) and source files: the non-parallel slices."""
    return corpora_root() / "slices"
