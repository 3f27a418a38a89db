"""Optimizer and learning-rate schedule shared by the trainers (ViT classifier, language model).

* :func:`param_groups`: AdamW groups with decoupled weight decay (Loshchilov & Hutter 2019) on weight
  matrices only; no decay on norms, biases (1-D parameters), position embeddings and class tokens
  (as in timm / DeiT, and nanoGPT for language models).
* :func:`cosine_warmup`: the LR multiplier of step ``t``: linear warmup ``(t + 1) / warmup``, then a cosine
  from 1 down to ``min_ratio`` at ``total`` steps (Loshchilov & Hutter 2017, without restarts).
* :func:`build_optimizer` / :func:`build_scheduler`: AdamW on those groups and a ``LambdaLR`` of that
  multiplier; :func:`optimizer_step`: backward, optional global-norm clipping, step.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
    from torch import nn

__all__ = [
    "build_optimizer",
    "build_scheduler",
    "cosine_warmup",
    "no_decay",
    "optimizer_step",
    "param_groups",
    "schedule_at",
]


def no_decay(name: str, param: torch.Tensor) -> bool:
    """True for parameters trained without weight decay: 1-D (norms, biases), positions, class tokens."""
    leaf = name.rsplit(".", 1)[-1]
    return param.ndim <= 1 or leaf in ("cls_token", "pos_embed") or ".pos." in f".{name}"


def param_groups(model: nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    """Two AdamW groups: ``weight_decay`` on weight matrices, 0 on :func:`no_decay` parameters."""
    decay: list[nn.Parameter] = []
    keep: list[nn.Parameter] = []
    for name, p in model.named_parameters():
        if p.requires_grad:
            (keep if no_decay(name, p) else decay).append(p)
    return [
        {"params": decay, "weight_decay": weight_decay},
        {"params": keep, "weight_decay": 0.0},
    ]


def cosine_warmup(step: int, *, warmup: int, total: int, min_ratio: float) -> float:
    """LR multiplier of (0-based) ``step``: linear warmup over ``warmup`` steps, then cosine to ``min_ratio``."""
    if step < warmup:
        return (step + 1) / warmup
    span = max(1, total - warmup)
    progress = min(1.0, (step - warmup) / span)
    return min_ratio + (1.0 - min_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress))


def build_optimizer(model: nn.Module, *, lr: float, weight_decay: float) -> torch.optim.AdamW:
    """AdamW over :func:`param_groups` of ``model`` at peak learning rate ``lr``."""
    import torch

    return torch.optim.AdamW(param_groups(model, weight_decay), lr=lr)


def build_scheduler(optimizer: Any, *, warmup: int, total: int, min_ratio: float) -> Any:
    """``LambdaLR`` of :func:`cosine_warmup` over ``total`` steps."""
    import torch

    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: cosine_warmup(s, warmup=warmup, total=total, min_ratio=min_ratio)
    )


def schedule_at(optimizer: Any, scheduler: Any, step: int) -> None:
    """Move ``scheduler`` to ``step`` and set each group's learning rate there (a resumed run whose steps
    were resized)."""
    scheduler.last_epoch = step
    for group, base, lr_at in zip(
        optimizer.param_groups, scheduler.base_lrs, scheduler.lr_lambdas, strict=True
    ):
        group["lr"] = base * lr_at(step)


def optimizer_step(
    loss: torch.Tensor, module: nn.Module, optimizer: Any, scheduler: Any, *, clip_grad: float | None
) -> None:
    """Zero the gradients, ``loss.backward()``, clip the global norm to ``clip_grad`` (None: no clipping),
    step the optimizer and the schedule."""
    import torch

    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if clip_grad is not None:
        torch.nn.utils.clip_grad_norm_(module.parameters(), clip_grad)
    optimizer.step()
    scheduler.step()
