"""What every trainer shares: checkpoints with exact resume, the optimizer and schedule, DDP, the log.

- ``checkpoint``: :func:`save_checkpoint` / :func:`load_checkpoint` (atomic; refuses a changed batch or
  process count unless asked) and the RNG states;
- ``optim``: AdamW groups with decoupled weight decay, warmup + cosine, one optimizer step with clipping;
- ``distribute``: joining a ``torchrun`` process group, the device, DDP wrapping, sums, bf16 autocast;
- ``log``: the training log CSV and its PNG curves;
- ``throughput``: the model FLOP utilisation implied by a FLOP count and a chip's peak.

The trainers are ``tokenloom.vision.train`` (ViT classifier) and ``tokenloom.lm.train`` (language model).
"""

from __future__ import annotations

__all__: list[str] = []
