"""Optimizer, learning-rate schedule, loss and batch mixing for :mod:`tokenloom.vision.train`.

* :func:`param_groups`, :func:`no_decay`, :func:`cosine_warmup`: AdamW groups with decoupled weight decay
  and the warmup + cosine schedule, shared with every trainer (they live in ``tokenloom.training.optim``).
* :func:`mix_batch`: mixup (Zhang et al. 2018) or cutmix (Yun et al. 2019) with a per-step seed, so a
  resumed run mixes exactly as an uninterrupted one; :func:`soft_cross_entropy` takes the mixed targets.

Shape legend: ``B`` batch, ``K`` classes, ``C, H, W`` image.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from tokenloom.training.optim import cosine_warmup, no_decay, param_groups

if TYPE_CHECKING:
    import torch

__all__ = ["cosine_warmup", "mix_batch", "no_decay", "param_groups", "soft_cross_entropy", "soft_targets"]


def soft_targets(labels: torch.Tensor, classes: int, smoothing: float) -> torch.Tensor:
    """One-hot ``[B, K]`` with label smoothing: ``1 - ε + ε/K`` on the label, ``ε/K`` elsewhere."""
    import torch.nn.functional as F

    onehot = F.one_hot(labels, classes).float()  # [B, K]
    return onehot * (1.0 - smoothing) + smoothing / classes


def soft_cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean over the batch of ``-Σ_k t_k · log softmax(logits)_k`` (``targets [B, K]`` rows sum to 1)."""
    return -(targets * logits.float().log_softmax(dim=-1)).sum(dim=-1).mean()


def mix_batch(
    images: torch.Tensor,
    targets: torch.Tensor,
    *,
    mixup: float,
    cutmix: float,
    seed: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Mixup (``mixup`` = Beta α) or cutmix (``cutmix`` = Beta α) of a batch with its reversed order.

    With both on, each step picks one with probability 1/2. ``images [B, C, H, W]``, ``targets [B, K]``.
    Random draws come from ``numpy.random.default_rng(seed)`` only (no global RNG).
    """

    if mixup <= 0 and cutmix <= 0:
        return images, targets
    rng = np.random.default_rng(seed)
    use_cutmix = cutmix > 0 and (mixup <= 0 or rng.random() < 0.5)
    lam = float(rng.beta(cutmix, cutmix) if use_cutmix else rng.beta(mixup, mixup))
    flipped = images.flip(0)  # [B, C, H, W]: sample i mixes with sample B-1-i
    if use_cutmix:
        h, w = images.shape[-2:]
        cut_h, cut_w = int(h * math.sqrt(1 - lam)), int(w * math.sqrt(1 - lam))
        cy, cx = int(rng.integers(h)), int(rng.integers(w))
        y0, y1 = max(cy - cut_h // 2, 0), min(cy + cut_h // 2, h)
        x0, x1 = max(cx - cut_w // 2, 0), min(cx + cut_w // 2, w)
        images = images.clone()
        images[..., y0:y1, x0:x1] = flipped[..., y0:y1, x0:x1]
        lam = 1.0 - (y1 - y0) * (x1 - x0) / (h * w)  # the area actually kept
    else:
        images = images * lam + flipped * (1.0 - lam)
    return images, targets * lam + targets.flip(0) * (1.0 - lam)
