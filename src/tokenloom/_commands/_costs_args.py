"""Options and argument readers shared by the ``tokenloom costs`` sub-commands.

The model options (a preset, optionally overridden, or ``--width --depth --heads``) and the
:class:`~tokenloom.encoder.config.EncoderConfig` they describe, ``--dtype``, ``--units`` / ``--bytes``
and the ViT token options. Cheap to import: the config class is imported when a command runs.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from tokenloom._commands._args import positive as _positive

if TYPE_CHECKING:
    from tokenloom.costs.tables import Units
    from tokenloom.encoder.config import EncoderConfig

__all__ = ["add_dtype", "add_model", "add_units", "add_vit", "memory_units", "model_config"]


def add_vit(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-class-token", action="store_true", help="ViT tokens without the class token")
    p.add_argument("--pad", action="store_true", help="pad images up to a multiple of the patch size")


def add_dtype(p: argparse.ArgumentParser, default: str) -> None:
    p.add_argument(
        "--dtype",
        default=default,
        help=f"fp32, bf16, fp16, fp8, int8, int4 or bytes per element as a number (default {default})",
    )


def add_units(p: argparse.ArgumentParser, *, both: bool = False) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--bytes", action="store_true", help="print exact bytes instead of human units")
    if both:  # weights: decimal first (how model sizes are quoted), binary in parentheses
        g.add_argument(
            "--units",
            choices=("binary", "decimal", "both"),
            default="both",
            help="binary (GiB: powers of 1024), decimal (GB: powers of 1000) or both (default: both)",
        )
        return
    g.add_argument(
        "--units",
        choices=("binary", "decimal"),
        default="binary",
        help="binary (MiB, GiB: powers of 1024) or decimal (MB, GB: powers of 1000) (default: binary)",
    )


def add_model(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("model (a preset, optionally overridden, or --width --depth --heads)")
    g.add_argument("--preset", default=None, help="encoder preset, e.g. vit-b16 (default: vit-b16)")
    g.add_argument("--width", type=_positive, help="model width d")
    g.add_argument("--depth", type=_positive, help="number of blocks L")
    g.add_argument("--heads", type=_positive, help="query heads H")
    g.add_argument("--kv-heads", type=_positive, help="key/value heads Hkv (default H)")
    g.add_argument("--head-dim", type=_positive, help="head width D (default d / H)")
    g.add_argument("--mlp", choices=("gelu", "swiglu"), help="MLP kind (default gelu)")
    g.add_argument("--mlp-hidden", type=_positive, help="MLP hidden width f (default 4d; swiglu 8d/3)")
    g.add_argument("--norm", choices=("layernorm", "rmsnorm"), help="norm kind (default layernorm)")
    g.add_argument("--no-bias", action="store_true", help="no biases in projections and MLP")
    g.add_argument(
        "--causal", action="store_true", help="causal self-attention (N(N+1)/2 pairs: about half the N² work)"
    )
    p.add_argument("--batch", type=_positive, default=1, help="batch size B (default 1)")


def memory_units(args: argparse.Namespace) -> Units:
    """How to print memory: the ``--units`` system, or exact ``"bytes"`` with ``--bytes``."""
    return "bytes" if args.bytes else args.units


def model_config(args: argparse.Namespace) -> tuple[EncoderConfig, str]:
    """The EncoderConfig the model options describe, and a name for it."""
    from tokenloom.encoder.config import EncoderConfig
    from tokenloom.errors import ConfigError

    overrides: dict[str, Any] = {}
    for name in ("width", "depth", "heads", "kv_heads", "head_dim", "mlp", "mlp_hidden", "norm"):
        if getattr(args, name) is not None:
            overrides[name] = getattr(args, name)
    if args.no_bias:
        overrides.update(qkv_bias=False, proj_bias=False)
    if args.causal:
        overrides["causal"] = True
    if args.preset is None and any(k in overrides for k in ("width", "depth", "heads")):
        shape = [k for k in ("width", "depth", "heads") if k not in overrides]
        if shape:
            flags = ", ".join("--" + k for k in shape)
            raise ConfigError(f"give {flags} too (or --preset NAME to start from a preset's shape)")
        return EncoderConfig(**overrides), "custom"
    name = args.preset or "vit-b16"
    return EncoderConfig.preset(name, **overrides), name + (" (modified)" if overrides else "")
