"""``python -m tokenloom``: the same as the ``tokenloom`` console script."""

from __future__ import annotations

import sys

from tokenloom.cli import main

if __name__ == "__main__":
    sys.exit(main())
