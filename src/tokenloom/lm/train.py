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
import math
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from tokenloom.encoder.config import EncoderConfig, LanguageModelConfig
from tokenloom.errors import ConfigError

if TYPE_CHECKING:
    from tokenloom.encoder.lm import LanguageModel

__all__ = ["RUN_FILE", "LmTrainConfig", "load_run", "train_lm"]

RUN_FILE = "run.json"
BudgetUnit = Literal["tokens", "bytes"]

# settings that may change between a run and its resumption (they do not change the weights)
RUNNING = ("out", "log_every", "checkpoint_every", "device")


def _tiny_model() -> LanguageModelConfig:
    blocks = EncoderConfig(width=64, depth=2, heads=2, causal=True)
    return LanguageModelConfig(vocab_size=256, encoder=blocks, context=128)


@dataclass(frozen=True)
class LmTrainConfig:
    """Settings of one language-model training run (see the module docstring).

    All but ``out``, ``log_every``, ``checkpoint_every`` and ``device`` must match when resuming;
    ``batch_size`` may change with ``allow_resize``.
    """

    shards: str  # token shard folder written by `tokenloom tokenize`
    out: str  # run folder
    model: LanguageModelConfig = field(default_factory=_tiny_model)  # vocab_size ≥ the tokenizer's
    seq_len: int = 128  # tokens per row N (≤ model.context)
    batch_size: int = 16  # global rows per optimizer step (split evenly across processes)
    budget: int = 1_000_000  # how much text to train on, in budget_unit
    budget_unit: BudgetUnit = "tokens"  # "bytes": UTF-8 bytes of text, the same for every tokenizer
    lr: float = 3e-3  # peak learning rate (after warmup)
    min_lr_ratio: float = 0.1  # cosine floor as a fraction of lr
    warmup_steps: int = 0  # linear warmup steps
    weight_decay: float = 0.1  # decoupled (AdamW), on weight matrices only
    clip_grad: float | None = 1.0  # max global gradient norm (None: no clipping)
    seed: int = 0  # model init and the order of rows
    packed: bool = True  # rows of whole documents (attention within each); False: windows across them
    compile: bool = False  # torch.compile the training step's model
    autocast: bool = True  # bf16 autocast on CUDA (CPU runs stay fp32)
    log_every: int = 10  # steps per progress line / CSV row
    checkpoint_every: int = 0  # steps between checkpoints (0: only at the end)
    eval_every: int = 0  # steps between calls of train_lm's evaluate hook (0: only at the end)
    device: str = "auto"  # "auto": cuda when available (cuda:LOCAL_RANK under torchrun), else cpu

    def __post_init__(self) -> None:
        if not isinstance(self.model, LanguageModelConfig):
            raise ConfigError(f"LmTrainConfig.model must be a LanguageModelConfig, got {self.model!r}")
        for name in ("seq_len", "batch_size", "budget", "log_every"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"LmTrainConfig.{name} must be a positive int, got {value!r}")
        for name in ("warmup_steps", "checkpoint_every", "eval_every"):
            if getattr(self, name) < 0:
                raise ConfigError(f"LmTrainConfig.{name} must be >= 0, got {getattr(self, name)!r}")
        if self.budget_unit not in ("tokens", "bytes"):
            raise ConfigError(f"budget_unit must be 'tokens' or 'bytes', got {self.budget_unit!r}")
        if self.seq_len > self.model.context:
            raise ConfigError(
                f"seq_len={self.seq_len} exceeds the model's context of {self.model.context}; "
                "lower --seq-len or raise --context"
            )
        if not (self.lr > 0 and 0 <= self.min_lr_ratio <= 1 and self.weight_decay >= 0):
            raise ConfigError("need lr > 0, 0 <= min_lr_ratio <= 1 and weight_decay >= 0")
        if self.clip_grad is not None and self.clip_grad <= 0:
            raise ConfigError(f"clip_grad must be positive or None, got {self.clip_grad}")

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able values (the model config nested); :meth:`from_dict` reads them back."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LmTrainConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"unknown LmTrainConfig settings {unknown}; known: {sorted(known)}")
        values = dict(data)
        if isinstance(values.get("model"), dict):
            model = dict(values["model"])
            encoder = model.pop("encoder")
            values["model"] = LanguageModelConfig(
                **model, encoder=EncoderConfig(**encoder) if isinstance(encoder, dict) else encoder
            )
        return cls(**values)

    def settings(self) -> dict[str, Any]:
        """What a resumed run must share with the run it continues."""
        out = self.to_dict()
        for key in RUNNING:
            out.pop(key)
        return out


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
    from tokenloom.lm._loop import LmLoop
    from tokenloom.training import distribute

    rank, world, local_rank = distribute.join()  # the process group lives until this call returns
    try:
        device = distribute.pick_device(config.device, local_rank)
        loop = LmLoop(config, rank=rank, world=world, device=device)
        loop.printing = progress is None and not quiet and rank == 0
        loop.progress = progress if rank == 0 else None
        loop.evaluate = evaluate
        if resume:
            loop.resume(allow_resize=allow_resize)
        loop.run(on_step=on_step)
    finally:
        distribute.leave(world)
    return Path(config.out)


def load_run(run_dir: str | os.PathLike[str]) -> tuple[LanguageModel, dict[str, Any]]:
    """The trained model of ``run_dir`` (in eval mode, on the CPU) and its ``run.json`` as a dict."""
    import torch

    from tokenloom.encoder.lm import LanguageModel
    from tokenloom.training.checkpoint import CHECKPOINT_NAME

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


def steps_for_budget(budget_tokens: float, batch_size: int, tokens_per_row: float) -> int:
    """Optimizer steps that read ``budget_tokens``: ``ceil(budget / (batch · tokens per row))``, ≥ 1."""
    return max(1, math.ceil(budget_tokens / (batch_size * tokens_per_row) - 1e-9))
