"""The settings of a language-model training run: :class:`LmTrainConfig` and the budget's step count.

``LmTrainConfig`` round-trips through plain dicts (:meth:`~LmTrainConfig.to_dict` /
:meth:`~LmTrainConfig.from_dict`, as ``run.json`` stores it); :func:`steps_for_budget` turns a budget in
tokens into optimizer steps. The trainer is ``tokenloom.lm.train``; this module imports nothing heavy.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

from tokenloom.encoder.config import EncoderConfig, LanguageModelConfig
from tokenloom.errors import ConfigError

__all__ = ["RUN_FILE", "BudgetUnit", "LmTrainConfig", "steps_for_budget"]

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


def steps_for_budget(budget_tokens: float, batch_size: int, tokens_per_row: float) -> int:
    """Optimizer steps that read ``budget_tokens``: ``ceil(budget / (batch · tokens per row))``, ≥ 1."""
    return max(1, math.ceil(budget_tokens / (batch_size * tokens_per_row) - 1e-9))
