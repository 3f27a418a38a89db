"""``from_timm``: our ImageEmbed + Encoder + head reproduce timm VisionTransformers (ViT-B/16 and variants).

Weights are random (no download); every parameter is perturbed away from its init (LayerNorm weights
away from 1, biases away from 0) so that a parameter copied to the wrong place cannot go unnoticed.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from tokenloom.encoder import ImageEmbed, from_timm
from tokenloom.encoder.model import ImageClassifier
from tokenloom.errors import ConfigError

timm = pytest.importorskip("timm")
from timm.models.vision_transformer import ResPostBlock, VisionTransformer  # noqa: E402


@torch.no_grad()
def _perturb(model: nn.Module, seed: int) -> nn.Module:
    g = torch.Generator().manual_seed(seed)
    for p in model.parameters():
        p.add_(torch.randn(p.shape, generator=g) * 0.02)
    return model.eval()


def _max_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).abs().max())


@pytest.fixture(scope="module")
def vit_b16() -> tuple[nn.Module, ImageClassifier]:
    torch.manual_seed(0)
    theirs = _perturb(timm.create_model("vit_base_patch16_224", pretrained=False), seed=1)
    return theirs, from_timm(theirs).eval()


@pytest.mark.slow
def test_vit_b16_features_and_logits_equal_timm(vit_b16: tuple[nn.Module, ImageClassifier]) -> None:
    theirs, ours = vit_b16
    images = torch.randn(2, 3, 224, 224, generator=torch.Generator().manual_seed(2))
    with torch.inference_mode():
        feats_t, feats_o = theirs.forward_features(images), ours.forward_features(images)
        assert feats_o.shape == (2, 197, 768)
        assert _max_diff(feats_o, feats_t) < 1e-5, f"features max |diff| = {_max_diff(feats_o, feats_t):.3g}"
        logits_t, logits_o = theirs.forward_head(feats_t), ours.forward_head(feats_o)
        assert logits_o.shape == (2, 1000)
        assert _max_diff(logits_o, logits_t) < 1e-5, (
            f"logits max |diff| = {_max_diff(logits_o, logits_t):.3g}"
        )
        assert _max_diff(ours(images), theirs(images)) < 1e-5


def test_vit_b16_structure_is_our_modules_with_the_same_parameter_count(
    vit_b16: tuple[nn.Module, ImageClassifier],
) -> None:
    theirs, ours = vit_b16
    assert isinstance(ours.embed, ImageEmbed)
    assert ours.encoder.config.width == 768 and ours.encoder.config.depth == 12
    assert ours.encoder.config.heads == 12 and ours.encoder.config.norm_eps == 1e-6
    n_ours = sum(p.numel() for p in ours.parameters())
    assert n_ours == sum(p.numel() for p in theirs.parameters()) == 86_567_656
    assert torch.equal(ours.embed.patch_embed.conv_weight(), theirs.patch_embed.proj.weight)


def _tiny(**kwargs: object) -> VisionTransformer:
    fields: dict[str, object] = {
        "img_size": 32,
        "patch_size": 8,
        "embed_dim": 32,
        "depth": 2,
        "num_heads": 4,
        "num_classes": 7,
    }
    fields.update(kwargs)
    return VisionTransformer(**fields)  # type: ignore[arg-type]


TINY_VARIANTS = {
    "token": {},
    "no-qkv-bias": {"qkv_bias": False},
    "avg-fc-norm": {"global_pool": "avg"},
    "avg-no-fc-norm": {"global_pool": "avg", "fc_norm": False},
    "no-class-token": {"class_token": False, "global_pool": "avg"},
    "mlp-ratio-2-no-head": {"mlp_ratio": 2.0, "num_classes": 0},
    "no-final-norm": {"final_norm": False},
}


@pytest.mark.parametrize("variant", list(TINY_VARIANTS))
def test_tiny_vit_variants_equal_timm(variant: str) -> None:
    torch.manual_seed(3)
    theirs = _perturb(_tiny(**TINY_VARIANTS[variant]), seed=4)
    ours = from_timm(theirs).eval()
    images = torch.randn(3, 3, 32, 32)
    with torch.no_grad():
        assert _max_diff(ours.forward_features(images), theirs.forward_features(images)) < 1e-5
        out_o, out_t = ours(images), theirs(images)
        assert out_o.shape == out_t.shape
        assert _max_diff(out_o, out_t) < 1e-5
    assert sum(p.numel() for p in ours.parameters()) == sum(p.numel() for p in theirs.parameters())


def test_other_image_sizes_resample_positions_like_timm_dynamic_img_size() -> None:
    torch.manual_seed(5)
    theirs = _perturb(_tiny(dynamic_img_size=True), seed=6)
    ours = from_timm(theirs).eval()
    with torch.no_grad():
        for size in [(32, 32), (48, 40), (16, 24)]:
            images = torch.randn(2, 3, *size)
            assert _max_diff(ours(images), theirs(images)) < 1e-5, size


def test_from_timm_keeps_mode_and_gives_gradients() -> None:
    theirs = _tiny().train()
    ours = from_timm(theirs)
    assert ours.training
    ours(torch.randn(1, 3, 32, 32)).sum().backward()
    assert all(p.grad is not None for p in ours.parameters())


@pytest.mark.parametrize(
    ("kwargs", "feature"),
    [
        ({"init_values": 1e-5}, "layer scale"),
        ({"reg_tokens": 2}, "register tokens"),
        ({"qk_norm": True}, "qk-norm"),
        ({"no_embed_class": True}, "no_embed_class"),
        ({"global_pool": "map"}, "attention pooling"),
        ({"pre_norm": True}, "norm_pre"),
        ({"block_fn": ResPostBlock}, "res-post-norm"),
        ({"dynamic_img_size": True, "dynamic_img_pad": True}, "dynamic_img_pad"),
    ],
)
def test_unsupported_timm_features_raise_naming_the_feature(kwargs: dict[str, object], feature: str) -> None:
    with pytest.raises(ConfigError, match=feature):
        from_timm(_tiny(**kwargs))


def test_from_timm_rejects_other_models() -> None:
    from timm.models.deit import VisionTransformerDistilled

    with pytest.raises(TypeError, match="VisionTransformer"):
        from_timm(nn.Linear(3, 3))
    distilled = VisionTransformerDistilled(img_size=32, patch_size=8, embed_dim=32, depth=1, num_heads=4)
    with pytest.raises(ConfigError, match="VisionTransformerDistilled"):
        from_timm(distilled)


@pytest.mark.gpu
def test_tiny_vit_on_cuda_equals_timm() -> None:
    torch.manual_seed(7)
    theirs = _perturb(_tiny(), seed=8).cuda()
    ours = from_timm(theirs).eval()
    assert next(ours.parameters()).device.type == "cuda"
    images = torch.randn(3, 3, 32, 32, device="cuda")
    saved = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = (
        False  # exact fp32 on both sides
    )
    try:
        with torch.no_grad():
            diff = _max_diff(ours(images), theirs(images))
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved
    assert diff < 1e-4, diff
