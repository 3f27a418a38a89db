"""Image patches for the image pipeline: ``patchify`` / ``unpatchify`` / ``grid_size``.

The operation is defined in :mod:`tokenloom.encoder.patches` (its contract — row-major grid order, values in
``(c, p_h, p_w)`` order, exact round trip with ``pad=True`` — is documented there), where the encoder's
``PatchEmbed`` uses it too; this module re-exports the same functions.
"""

from __future__ import annotations

from tokenloom.encoder.patches import grid_size, patchify, unpatchify

__all__ = ["grid_size", "patchify", "unpatchify"]
