"""Training a ``LanguageModel`` on token shards: the run's settings, the run folder, and loading it back.

:func:`train_lm` trains on a :class:`~tokenloom.tokens.TokenShardDataset` (packed rows of whole documents
by default, or nanoGPT-style windows) with the machinery every tokenloom trainer shares
(``tokenloom.training``): AdamW with decoupled weight decay, warmup + cosine, gradient clipping, bf16
autocast on CUDA, optional ``torch.compile``, atomic checkpoints with exact resume (bitwise on CPU), and
DDP under ``torchrun`` (a changed global batch or process count is refused unless ``allow_resize``).

The budget is ``budget`` tokens or UTF-8 bytes of training text (``budget_unit``). Bytes are converted
to tokens through the shards' per-document sidecars (``NAME.ds.docs.npy``: bytes and tokens of every
training document), so models trained with different tokenizers on a byte budget see the same amount of
text. The run takes ``ceil(budget_tokens / (batch_size · tokens per row))`` optimizer steps, where a
packed row holds ``total train tokens / rows`` tokens on average (a window ``seq_len + 1``); the tokens
actually read (padding excluded) are counted and reported.

The run folder ``out`` holds ``checkpoint.pt`` (the final weights at the end), ``train_log.csv`` and
``train_log.png`` (loss against tokens), and ``run.json``: the settings (:meth:`LmTrainConfig.to_dict`,
read back by :func:`load_run`), the shards' tokenizer entry and folder, steps, tokens and bytes seen,
wall seconds, training FLOPs (3 × the cost model's forward FLOPs) and the final loss.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokenloom.errors import ConfigError
from tokenloom.lm.run_config import RUN_FILE, LmTrainConfig
from tokenloom.training import distribute
from tokenloom.training.checkpoint import CHECKPOINT_NAME

if TYPE_CHECKING:
    from tokenloom.encoder.lm import LanguageModel

__all__ = ["RUN_FILE", "LmTrainConfig", "load_run", "train_lm"]


def train_lm(
    config: LmTrainConfig,
    *,
    progress: Callable[[dict[str, Any]], None] | None = None,
    resume: bool = False,
    allow_resize: bool = False,
    quiet: bool = False,
    evaluate: Callable[[LanguageModel, int], dict[str, float]] | None = None,
    on_step: Callable[[int], None] | None = None,
) -> Path:
    """Train as ``config`` says; returns the run folder ``config.out`` (see the module docstring).

    ``progress(row)``: called on rank 0 with every log row (``kind``, ``step``, ``tokens``, ``loss``,
    ``tokens_per_s``, ``mfu`` ...); without it each row is printed as a line unless ``quiet``.
    ``resume``: continue from ``out/checkpoint.pt`` (same settings, global batch and process count unless
    ``allow_resize``). ``evaluate(model, step) -> {"loss": ..., ...}``: a held-out evaluation run every
    ``eval_every`` steps and at the end, logged as an ``eval`` row. ``on_step(step)`` runs after each step
    and checkpoint (a hook for tests and fault injection).
    """
    rank, world, local_rank = distribute.join()  # the process group lives until this call returns
    try:  # the model and its DDP wrapper live in _run's frame, gone before the group is left
        _run(config, (rank, world, local_rank), progress if rank == 0 else None, quiet=quiet, resume=resume,
             allow_resize=allow_resize, evaluate=evaluate, on_step=on_step)  # fmt: skip
    finally:
        distribute.leave(world)
    return Path(config.out)


def _run(
    config: LmTrainConfig,
    place: tuple[int, int, int],
    progress: Callable[[dict[str, Any]], None] | None,
    *,
    quiet: bool,
    resume: bool,
    allow_resize: bool,
    evaluate: Any,
    on_step: Any,
) -> None:
    """One process's run, ``place`` = (rank, world, local rank) in a joined process group."""
    from tokenloom.lm._loop import LmLoop

    rank, world, local_rank = place
    loop = LmLoop(config, rank=rank, world=world, device=distribute.pick_device(config.device, local_rank))
    loop.printing = progress is None and not quiet and rank == 0
    loop.progress = progress
    loop.evaluate = evaluate
    if resume:
        loop.resume(allow_resize=allow_resize)
    loop.run(on_step=on_step)


def load_run(run_dir: str | os.PathLike[str]) -> tuple[LanguageModel, dict[str, Any]]:
    """The trained model of ``run_dir`` (in eval mode, on the CPU) and its ``run.json`` as a dict."""
    import torch

    from tokenloom.encoder.lm import LanguageModel

    folder = Path(run_dir)
    path = folder / RUN_FILE
    if not path.is_file():
        raise ConfigError(f"{path}: no run record; train into {folder} with `tokenloom train-lm` first")
    info = json.loads(path.read_text(encoding="utf-8"))
    config = LmTrainConfig.from_dict(info["config"])
    model = LanguageModel(config.model)
    state = torch.load(folder / CHECKPOINT_NAME, map_location="cpu", weights_only=False)
    model.load_state_dict(state["model"])
    return model.eval(), info
