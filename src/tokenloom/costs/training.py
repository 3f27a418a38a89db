"""What one training step of an encoder holds in memory: parameters, gradients, optimizer state, activations.

The attention-score matrix is not the whole training-memory budget: parameters, their gradients, the
optimizer's state and every activation saved for the backward pass count too. :func:`training_memory`
adds them up for ``Encoder(config)`` (the block stack; front ends and heads are not counted) on ``batch``
sequences of ``tokens`` tokens. Pure integer arithmetic; no torch.

Activations saved for backward, per block (``T = B·N`` tokens, ``s`` bytes per element), as this project's
blocks save them (checked against ``torch.autograd.graph.saved_tensors_hooks`` in the tests, within 10%):

- the block input, the first norm's output, the attention output projection's input, the residual after
  attention, the second norm's output: ``5·T·d``; q, k and v: ``T·(H + 2·Hkv)·D``;
- MLP: GELU keeps ``fc1``'s output and the activation's output (``2·T·f``); SwiGLU keeps both up projections,
  the SiLU output and the gated product (``4·T·f``);
- each norm keeps fp32 statistics (LayerNorm mean and 1/std: ``2·T``; RMSNorm ``T``) — small;
- attention ``"flash"`` (tiled, SDPA's fused kernels, Triton: nothing of size N²): its output ``T·H·D`` and the
  row log-sum-exp ``B·H·N`` in fp32; ``"materialized"`` (the reference path): three ``B·H·N·M`` buffers (the
  scaled scores, their exponentials and the normalized weights; cf. Korthikanti et al. 2023, "Reducing
  Activation Recomputation in Large Transformer Models", §4.1, whose count also keeps dropout masks) plus
  fp32 row statistics;
- the final norm keeps its input ``T·d``.

``checkpointing=True`` (activation recomputation per block): only each block's input ``T·d`` is kept, plus
one block's full activations while it is recomputed during backward.

Optimizer state: AdamW / Adam keep two moments per parameter, SGD with momentum one, plain SGD none, all in
the parameters' dtype (as ``torch.optim`` does). Gradients are one copy of the parameters.
Not counted: framework workspace, allocator fragmentation, the loss and logits, temporaries freed within
the step. Shape letters: ``B`` batch, ``N`` tokens, ``d`` width, ``H``/``Hkv`` heads, ``D`` head width,
``f`` MLP hidden width, ``L`` blocks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from tokenloom.costs._check import check_count
from tokenloom.costs.formulas import tensor_bytes
from tokenloom.costs.weights import encoder_params
from tokenloom.errors import ConfigError

if TYPE_CHECKING:
    from tokenloom.encoder.config import EncoderConfig

__all__ = ["TrainingMemory", "block_activation_bytes", "training_memory"]

Optimizer = Literal["adamw", "adam", "sgd", "momentum"]
AttentionMemory = Literal["flash", "materialized"]

OPTIMIZER_STATES: dict[str, int] = {"adamw": 2, "adam": 2, "momentum": 1, "sgd": 0}


@dataclass(frozen=True)
class TrainingMemory:
    """Bytes of one training step, by kind; ``scores`` is the part of ``activations`` that grows with N²."""

    parameters: int
    gradients: int
    optimizer: int
    activations: int  # all saved activations, scores included
    scores: int  # N² buffers kept by a materializing attention path (0 for "flash")

    @property
    def total(self) -> int:
        return self.parameters + self.gradients + self.optimizer + self.activations

    def rows(self) -> list[tuple[str, int]]:
        """``(what, bytes)`` rows for a table, total last."""
        return [
            ("parameters", self.parameters),
            ("gradients", self.gradients),
            ("optimizer state", self.optimizer),
            ("activations ∝N", self.activations - self.scores),
            ("activations ∝N² (scores)", self.scores),
            ("total", self.total),
        ]


def block_activation_bytes(
    config: EncoderConfig, batch: int, tokens: int, dtype: str | float, attention: AttentionMemory
) -> tuple[int, int]:
    """``(bytes, score_bytes)`` one block saves for backward (see the module docstring)."""
    b, n = check_count("batch", batch), check_count("tokens", tokens)
    t, d, f = b * n, config.width, config.resolved_mlp_hidden
    h, hkv, hd = config.heads, config.resolved_kv_heads, config.resolved_head_dim
    elements = 4 * t * d + t * h * hd  # input, norm1 out, residual, norm2 out; output projection input
    elements += t * (h + 2 * hkv) * hd  # q, k, v
    elements += (2 if config.mlp == "gelu" else 4) * t * f
    stats = (2 if config.norm == "layernorm" else 1) * 2 * t  # fp32 norm statistics, two norms
    if attention == "flash":
        elements += t * h * hd  # the attention output, kept by the fused path
        stats += b * h * n  # row log-sum-exp
        scores = 0
    elif attention == "materialized":
        scores = tensor_bytes(3 * b * h * n * n, dtype)
        stats += 2 * b * h * n  # row max and row sum
    else:
        raise ConfigError(f"attention must be 'flash' or 'materialized', got {attention!r}")
    return tensor_bytes(elements, dtype) + tensor_bytes(stats, "fp32") + scores, scores


def training_memory(
    config: EncoderConfig,
    batch: int,
    tokens: int,
    dtype: str | float = "fp32",
    *,
    optimizer: Optimizer = "adamw",
    attention: AttentionMemory = "flash",
    checkpointing: bool = False,
) -> TrainingMemory:
    """Bytes one training step of ``Encoder(config)`` holds at its peak, by kind (see the module docstring).

    Worked example: ViT-B/16 blocks (85,056,000 parameters) at fp32 with AdamW hold 340.2 MB of
    parameters, as much in gradients and twice that in optimizer state (1.36 GB before any activation).
    """
    if optimizer not in OPTIMIZER_STATES:
        raise ConfigError(f"optimizer must be one of {sorted(OPTIMIZER_STATES)}, got {optimizer!r}")
    params = encoder_params(config)
    weights = tensor_bytes(params, dtype)
    per_block, scores = block_activation_bytes(config, batch, tokens, dtype, attention)
    final = tensor_bytes(batch * tokens * config.width, dtype) if config.final_norm else 0
    if checkpointing:
        kept = tensor_bytes(config.depth * batch * tokens * config.width, dtype)  # each block's input
        activations, score_total = kept + per_block + final, scores
    else:
        activations, score_total = config.depth * per_block + final, config.depth * scores
    return TrainingMemory(
        parameters=weights,
        gradients=weights,
        optimizer=OPTIMIZER_STATES[optimizer] * weights,
        activations=activations,
        scores=score_total,
    )
