"""``from_timm``: rebuild a timm ``VisionTransformer`` as our ``ImageEmbed`` + ``Encoder`` + head, same weights.

Supported: the classic ViT family (``vit_*_patch*``, DeiT without distillation) — a class token whose
row is part of the learned position table (or no class token), LayerNorm, exact-GELU MLP, pre-norm
``Block``, qkv bias on or off, ``global_pool`` ``"token"`` or ``"avg"``
with or without ``fc_norm``, ``dynamic_img_size`` (our ``ImageEmbed`` always resamples the position grid
bicubically for other image sizes, as timm does). Anything else (register tokens, layer scale, qk-norm,
``no_embed_class`` with a class token, attention pooling, patch-embed norm, ``norm_pre``, dynamic padding)
raises ``ConfigError`` naming the feature, rather than producing a model that silently computes something
else. Equivalence is for inference: dropout rates and stochastic depth are not carried over.

The copy is exact: timm's fused ``qkv`` rows ``[q | k | v]`` have our layout, the stride-P conv
becomes ``PatchEmbed.load_conv_weights``. This module imports timm only to recognise its classes and
never downloads weights.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from tokenloom.encoder.config import EncoderConfig
from tokenloom.encoder.embed import ImageEmbed
from tokenloom.encoder.model import Encoder, ImageClassifier, Pool
from tokenloom.errors import ConfigError

__all__ = ["from_timm"]


def _unsupported(feature: str) -> ConfigError:
    return ConfigError(
        f"from_timm: this timm model uses {feature}, which tokenloom's Encoder does not reproduce; "
        "only classic ViT/DeiT models (class token, LayerNorm, GELU MLP, no layer scale) convert exactly"
    )


def _is_identity(module: nn.Module | None) -> bool:
    return module is None or isinstance(module, nn.Identity)


def _config_from_timm(model: Any) -> tuple[EncoderConfig, Pool]:
    from timm.models.vision_transformer import Block, ResPostBlock

    blocks = list(model.blocks)
    if not blocks:
        raise _unsupported("zero blocks")
    kinds = {type(b) for b in blocks}
    if ResPostBlock in kinds:
        # x + norm(f(x)) (Swin-v2 style) is neither our pre-norm nor our post-norm norm(x + f(x))
        raise _unsupported("res-post-norm blocks (ResPostBlock: x + norm(f(x)))")
    if kinds != {Block}:
        raise _unsupported(f"block classes {sorted(k.__name__ for k in kinds)}")
    first = blocks[0]
    attn, mlp = first.attn, first.mlp
    if not isinstance(first.norm1, nn.LayerNorm):
        raise _unsupported(f"norm layer {type(first.norm1).__name__}")
    for block in blocks:
        if not (_is_identity(getattr(block, "ls1", None)) and _is_identity(getattr(block, "ls2", None))):
            raise _unsupported("layer scale (init_values)")
        a = block.attn
        if not (_is_identity(a.q_norm) and _is_identity(a.k_norm) and _is_identity(getattr(a, "norm", None))):
            raise _unsupported("qk-norm or attention scale-norm")
        if getattr(a, "gate", None) is not None:
            raise _unsupported("gated attention")
        if not _is_identity(getattr(block.mlp, "norm", None)):
            raise _unsupported("MLP scale-norm")
        if not isinstance(block.mlp.act, nn.GELU) or block.mlp.act.approximate != "none":
            raise _unsupported(f"MLP activation {block.mlp.act!r} (only exact GELU is supported)")
    if getattr(model, "reg_token", None) is not None:
        raise _unsupported("register tokens")
    if model.num_prefix_tokens != (0 if model.cls_token is None else 1):
        raise _unsupported(f"{model.num_prefix_tokens} prefix tokens (e.g. a distillation token)")
    if model.cls_token is not None and getattr(model, "no_embed_class", False):
        raise _unsupported("no_embed_class=True (positions without a class-token row)")
    if model.pos_embed is None:
        raise _unsupported("no position embedding")
    if getattr(model.patch_embed, "dynamic_img_pad", False):
        raise _unsupported("dynamic_img_pad=True")
    if getattr(model, "attn_pool", None) is not None:
        raise _unsupported("attention pooling")
    if not _is_identity(getattr(model, "norm_pre", None)):
        raise _unsupported("norm_pre")
    fc_norm = getattr(model, "fc_norm", None)
    if not (_is_identity(fc_norm) or isinstance(fc_norm, nn.LayerNorm)):
        raise _unsupported(f"fc_norm {type(fc_norm).__name__}")
    if not _is_identity(getattr(model.patch_embed, "norm", None)):
        raise _unsupported("a norm in the patch embedding")
    if model.global_pool not in ("token", "avg") or (
        model.global_pool == "token" and model.cls_token is None
    ):
        raise _unsupported(f"global_pool={model.global_pool!r}")
    proj_biases = {attn.proj.bias is not None, mlp.fc1.bias is not None, mlp.fc2.bias is not None}
    if len(proj_biases) != 1:
        raise _unsupported("biases on some output/MLP projections but not others")
    config = EncoderConfig(
        width=model.embed_dim,
        depth=len(blocks),
        heads=attn.num_heads,
        head_dim=attn.head_dim,
        mlp="gelu",
        mlp_hidden=mlp.fc1.out_features,
        norm="layernorm",
        norm_eps=first.norm1.eps,
        placement="pre",
        final_norm=not _is_identity(model.norm),
        position="learned",
        qkv_bias=attn.qkv.bias is not None,
        proj_bias=proj_biases.pop(),
    )
    return config, model.global_pool


@torch.no_grad()
def from_timm(model: nn.Module) -> ImageClassifier:
    """Our ``ImageClassifier`` (``ImageEmbed`` + ``Encoder`` + head) carrying a timm ViT's weights.

    The result maps images ``[B, 3, H, W]`` to the same logits as ``model(images)`` and, through
    ``forward_features``, to the same tokens as ``model.forward_features(images)``. It is returned on the
    model's device and dtype, in the model's train/eval mode.
    """
    try:
        from timm.models.vision_transformer import VisionTransformer
    except ImportError as exc:  # pragma: no cover - timm is a dev extra
        raise ConfigError("from_timm needs timm installed: pip install timm") from exc
    if not isinstance(model, VisionTransformer):
        raise TypeError(f"from_timm expects a timm VisionTransformer, got {type(model).__name__}")
    if type(model) is not VisionTransformer:
        # subclasses (e.g. DeiT's VisionTransformerDistilled) change the forward pass
        raise _unsupported(f"the VisionTransformer subclass {type(model).__name__}")
    vit: Any = model  # timm's submodules are typed Tensor | Module: read its attribute tree dynamically
    config, pool = _config_from_timm(vit)
    pe = vit.patch_embed
    conv = pe.proj
    patch = conv.kernel_size[0]
    if conv.kernel_size != conv.stride or conv.kernel_size[0] != conv.kernel_size[1]:
        raise _unsupported(
            f"patch conv kernel {conv.kernel_size} / stride {conv.stride} (square, non-overlapping only)"
        )
    embed = ImageEmbed(
        image_size=tuple(pe.img_size),
        patch_size=patch,
        in_chans=conv.in_channels,
        width=config.width,
        class_token=vit.cls_token is not None,
        position="learned",
        patch_bias=conv.bias is not None,
    )
    if embed.grid != tuple(pe.grid_size):
        raise _unsupported(f"patch grid {tuple(pe.grid_size)} different from image_size / patch_size")
    embed.patch_embed.load_conv_weights(conv.weight, conv.bias)
    if embed.cls_token is not None:
        embed.cls_token.copy_(vit.cls_token)
    assert embed.pos is not None  # position="learned" above
    embed.pos.weight.copy_(vit.pos_embed)

    encoder = Encoder(config)
    for ours, theirs in zip(encoder.blocks, vit.blocks, strict=True):
        ours.load_state_dict(
            {
                "norm1.weight": theirs.norm1.weight,
                "norm1.bias": theirs.norm1.bias,
                "norm2.weight": theirs.norm2.weight,
                "norm2.bias": theirs.norm2.bias,
                **{f"attn.{k}": v for k, v in theirs.attn.qkv.state_dict(prefix="qkv.").items()},
                **{f"attn.{k}": v for k, v in theirs.attn.proj.state_dict(prefix="proj.").items()},
                **theirs.mlp.fc1.state_dict(prefix="mlp.fc1."),
                **theirs.mlp.fc2.state_dict(prefix="mlp.fc2."),
            }
        )
    if config.final_norm:
        encoder.norm.load_state_dict(vit.norm.state_dict())

    if isinstance(vit.head, nn.Linear):
        head: nn.Module = nn.Linear(
            vit.head.in_features, vit.head.out_features, bias=vit.head.bias is not None
        )
        head.load_state_dict(vit.head.state_dict())
    elif _is_identity(vit.head):
        head = nn.Identity()
    else:
        raise _unsupported(f"head {type(vit.head).__name__}")
    head_norm = None
    if isinstance(vit.fc_norm, nn.LayerNorm):
        head_norm = nn.LayerNorm(config.width, eps=vit.fc_norm.eps)
        head_norm.load_state_dict(vit.fc_norm.state_dict())
    out = ImageClassifier(embed, encoder, head, pool=pool, head_norm=head_norm)
    ref = vit.pos_embed
    return out.to(device=ref.device, dtype=ref.dtype).train(vit.training)
