"""``EncoderConfig``: the one frozen description of an encoder stack, shared by the model and the cost model;
``LanguageModelConfig``: a causal language model built on such a stack.

The config describes the stack of blocks (attention + MLP + norms); front ends (token embedding,
patch embedding, class token, absolute positions) take their own arguments. Optional sizes default to
the usual choices and are read through the ``resolved_*`` properties, so ``dataclasses.replace``
never carries a stale derived value. This module imports no torch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, get_args

from tokenloom.errors import ConfigError

__all__ = ["PRESETS", "AttnImpl", "EncoderConfig", "LanguageModelConfig"]

# The attention paths (tokenloom.encoder.attention re-exports this as ``Impl``; defined here, torch-free,
# so that the config can validate against it without importing torch).
AttnImpl = Literal["auto", "reference", "sdpa", "tiled", "triton"]

MlpKind = Literal["gelu", "swiglu"]
NormKind = Literal["layernorm", "rmsnorm"]
Placement = Literal["pre", "post"]
PositionKind = Literal["learned", "sinusoidal", "rope", "none"]


@dataclass(frozen=True)
class EncoderConfig:
    """Shape and options of an encoder stack. Defaults are ViT-B/16's blocks."""

    width: int = 768  # model width d
    depth: int = 12  # number of blocks L
    heads: int = 12  # query heads H
    kv_heads: int | None = None  # key/value heads Hkv; None = heads (multi-head), 1 = multi-query
    head_dim: int | None = None  # per-head width D; None = width // heads
    mlp: MlpKind = "gelu"  # "gelu": Linear-GELU-Linear; "swiglu": SiLU(x W1) * (x W3), then W2
    mlp_hidden: int | None = None  # f; None = 4d for gelu, 8d/3 rounded up to a multiple of 64 for swiglu
    norm: NormKind = "layernorm"  # normalization layer kind
    norm_eps: float = 1e-6  # epsilon of every norm (timm ViT: 1e-6; torch.nn default: 1e-5)
    placement: Placement = "pre"  # "pre": x + f(norm(x)); "post": norm(x + f(x))
    final_norm: bool = True  # a norm after the last block (usual with pre-norm)
    position: PositionKind = "learned"  # learned / sinusoidal are added by the front end; rope acts on q, k
    rope_base: float = 10000.0  # RoPE base (theta)
    dropout: float = 0.0  # dropout after attention and MLP outputs (training only)
    attn_dropout: float = 0.0  # dropout on attention weights (training only; 0 is passed in eval)
    qkv_bias: bool = True  # bias in the q, k, v projections
    proj_bias: bool = True  # bias in the attention output projection and MLP layers
    causal: bool = False  # causal self-attention (decoder-style use with a KV cache)
    attn_impl: AttnImpl = "auto"  # attention path (see tokenloom.encoder.attention)
    cross_attention: bool = False  # a cross-attention sub-block in every block: self → cross → MLP
    cross_width: int | None = None  # width of the memory cross-attention reads (kdim = vdim); None = width

    def __post_init__(self) -> None:
        for name in ("width", "depth", "heads"):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0:
                raise ConfigError(f"EncoderConfig.{name} must be a positive int, got {value!r}")
        for name in ("kv_heads", "head_dim", "mlp_hidden", "cross_width"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value <= 0):
                raise ConfigError(f"EncoderConfig.{name} must be a positive int or None, got {value!r}")
        if self.heads % self.resolved_kv_heads:
            raise ConfigError(
                f"EncoderConfig.heads={self.heads} must be a multiple of kv_heads={self.resolved_kv_heads} "
                "(grouped-query attention shares each key/value head among heads // kv_heads query heads)"
            )
        if self.head_dim is None and self.width % self.heads:
            raise ConfigError(
                f"EncoderConfig.width={self.width} is not divisible by heads={self.heads}; "
                "set head_dim explicitly or choose another head count"
            )
        if self.position == "rope" and self.resolved_head_dim % 2:
            raise ConfigError(
                f"RoPE rotates pairs of coordinates: head_dim must be even, got {self.resolved_head_dim}"
            )
        choices = {
            "mlp": ("gelu", "swiglu"),
            "norm": ("layernorm", "rmsnorm"),
            "placement": ("pre", "post"),
            "position": ("learned", "sinusoidal", "rope", "none"),
            "attn_impl": get_args(AttnImpl),
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ConfigError(
                    f"EncoderConfig.{name} must be one of {allowed}, got {getattr(self, name)!r}"
                )
        for name in ("dropout", "attn_dropout"):
            p = getattr(self, name)
            if not 0.0 <= p < 1.0:
                raise ConfigError(f"EncoderConfig.{name} must be in [0, 1), got {p!r}")
        if not (self.rope_base > 0 and math.isfinite(self.rope_base)):  # also refuses NaN
            raise ConfigError(
                f"EncoderConfig.rope_base must be a positive finite number (RoPE's theta, e.g. 10000.0), "
                f"got {self.rope_base!r}"
            )
        if not self.norm_eps > 0:
            raise ConfigError(f"EncoderConfig.norm_eps must be positive, got {self.norm_eps!r}")

    @property
    def resolved_kv_heads(self) -> int:
        """Hkv: ``kv_heads`` or, when None, ``heads``."""
        return self.heads if self.kv_heads is None else self.kv_heads

    @property
    def resolved_head_dim(self) -> int:
        """D: ``head_dim`` or, when None, ``width // heads``."""
        return self.width // self.heads if self.head_dim is None else self.head_dim

    @property
    def resolved_mlp_hidden(self) -> int:
        """f: ``mlp_hidden`` or the default for the MLP kind (4d; SwiGLU 8d/3 up to a multiple of 64)."""
        if self.mlp_hidden is not None:
            return self.mlp_hidden
        if self.mlp == "gelu":
            return 4 * self.width
        return 64 * math.ceil(8 * self.width / 3 / 64)

    @classmethod
    def preset(cls, name: str, **overrides: object) -> EncoderConfig:
        """A named configuration (see ``PRESETS``), optionally with fields overridden."""
        try:
            base = PRESETS[name]
        except KeyError:
            raise ConfigError(f"unknown encoder preset {name!r}; choose one of {sorted(PRESETS)}") from None
        fields = {**base, **overrides}
        return cls(**fields)  # type: ignore[arg-type]


# Block shapes of well-known encoders (Dosovitskiy et al. 2021, Table 1; Touvron et al. 2021 for Ti/S).
PRESETS: dict[str, dict[str, object]] = {
    "vit-ti16": {"width": 192, "depth": 12, "heads": 3},
    "vit-s16": {"width": 384, "depth": 12, "heads": 6},
    "vit-b16": {"width": 768, "depth": 12, "heads": 12},
    "vit-l16": {"width": 1024, "depth": 24, "heads": 16},
    "vit-h14": {"width": 1280, "depth": 32, "heads": 16},
}


# GPT-2 small's blocks (Radford et al. 2019): 12 × 768 wide, 12 heads, LayerNorm eps 1e-5, causal.
GPT2_SMALL_BLOCKS = EncoderConfig(width=768, depth=12, heads=12, norm_eps=1e-5, causal=True)


@dataclass(frozen=True)
class LanguageModelConfig:
    """A causal language model on the shared encoder: ``TextEmbed`` + causal ``Encoder`` + output head.

    The absolute positions of the front end follow ``encoder.position`` (``"learned"`` / ``"sinusoidal"``
    are added to the token vectors; ``"rope"`` / ``"none"`` add none). The defaults are GPT-2 small's shape
    (Radford et al. 2019) with the vocabulary left to the tokenizer.
    """

    vocab_size: int  # V: the tokenizer's vocabulary size (ids 0..V-1)
    encoder: EncoderConfig = GPT2_SMALL_BLOCKS  # the block stack; must be causal
    context: int = 1024  # longest sequence trained on and scored at once (the learned position table)
    tie_embeddings: bool = True  # the output head reuses the token embedding matrix (GPT-2, T5)

    def __post_init__(self) -> None:
        for name in ("vocab_size", "context"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ConfigError(f"LanguageModelConfig.{name} must be a positive int, got {value!r}")
        if not isinstance(self.encoder, EncoderConfig):
            raise ConfigError(f"LanguageModelConfig.encoder must be an EncoderConfig, got {self.encoder!r}")
        if not self.encoder.causal:
            raise ConfigError(
                "a language model needs a causal encoder (each token predicts the next from its past); "
                "use dataclasses.replace(encoder, causal=True)"
            )
        if self.encoder.cross_attention:
            raise ConfigError("LanguageModelConfig.encoder must not have cross_attention (no memory to read)")
        if self.encoder.position == "sinusoidal" and self.encoder.width % 2:
            raise ConfigError(f"sinusoidal positions need an even width, got {self.encoder.width}")

    @property
    def front_position(self) -> Literal["learned", "sinusoidal", "none"]:
        """The absolute positions ``TextEmbed`` adds: ``encoder.position``, or ``"none"`` for RoPE."""
        position = self.encoder.position
        return "none" if position in ("rope", "none") else position  # type: ignore[return-value]
