"""Where :mod:`tokenloom.unicode` was defined in earlier versions; its public names stay importable from here."""

from tokenloom.unicode import *  # noqa: F403
from tokenloom.unicode import __all__ as __all__
