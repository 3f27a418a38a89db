"""patchify / unpatchify / PatchEmbed: worked example, round trips, reference path, conv and timm oracles."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from tokenloom.encoder import patches as encoder_patches
from tokenloom.encoder.embed import PatchEmbed
from tokenloom.vision.patches import grid_size, patchify, unpatchify


def test_the_image_side_and_the_encoder_share_one_patchify() -> None:
    import tokenloom
    from tokenloom.vision import patches as vision_patches

    for name in ("grid_size", "patchify", "unpatchify"):
        assert getattr(vision_patches, name) is getattr(encoder_patches, name), name
    assert tokenloom.patchify is encoder_patches.patchify  # the public API's name is the same function


def test_vit_worked_example_196_patches_of_768() -> None:
    images = torch.randn(2, 3, 224, 224)
    tokens = patchify(images)
    assert tokens.shape == (2, 196, 768)
    assert tokens.is_contiguous()


def test_patch_vector_order_is_c_ph_pw_and_grid_row_major() -> None:
    images = torch.arange(2 * 3 * 32 * 48, dtype=torch.float32).reshape(2, 3, 32, 48)
    tokens = patchify(images, 16)  # grid 2 x 3
    assert tokens.shape == (2, 6, 768)
    for b in range(2):
        for n in range(6):
            row, col = divmod(n, 3)  # row-major grid
            patch = images[b, :, row * 16 : (row + 1) * 16, col * 16 : (col + 1) * 16]  # [C, P, P]
            assert torch.equal(tokens[b, n], patch.reshape(-1))  # (c, p_h, p_w) flattening


def test_unbatched_input_gives_unbatched_output() -> None:
    image = torch.randint(0, 256, (3, 32, 32), dtype=torch.uint8)
    tokens = patchify(image, 16)
    assert tokens.shape == (4, 768) and tokens.dtype == torch.uint8
    assert torch.equal(unpatchify(tokens, 16, (32, 32)), image)


@settings(max_examples=60, deadline=None)
@given(
    b=st.integers(1, 3),
    c=st.integers(1, 4),
    p=st.integers(1, 9),
    gh=st.integers(1, 5),
    gw=st.integers(1, 5),
    dtype=st.sampled_from([torch.float32, torch.uint8, torch.float64, torch.int16]),
)
def test_round_trip_and_fast_equals_reference(
    b: int, c: int, p: int, gh: int, gw: int, dtype: torch.dtype
) -> None:
    h, w = gh * p, gw * p
    x = (torch.rand(b, c, h, w) * 200).to(dtype)
    fast = patchify(x, p)
    ref = patchify(x, p, impl="reference")
    assert fast.shape == (b, gh * gw, c * p * p) and fast.dtype == dtype
    assert torch.equal(fast, ref)
    assert torch.equal(unpatchify(fast, p, (h, w), channels=c), x)


@settings(max_examples=60, deadline=None)
@given(c=st.integers(1, 3), p=st.integers(2, 8), h=st.integers(1, 40), w=st.integers(1, 40))
def test_padded_round_trip_is_exact_for_any_size(c: int, p: int, h: int, w: int) -> None:
    x = torch.randn(2, c, h, w)
    tokens = patchify(x, p, pad=True)
    gh, gw = -(-h // p), -(-w // p)
    assert tokens.shape == (2, gh * gw, c * p * p)
    assert torch.equal(tokens, patchify(x, p, pad=True, impl="reference"))
    assert torch.equal(unpatchify(tokens, p, (h, w), channels=c), x)
    # the padding is zeros: the padded image's sum equals the original's
    assert torch.allclose(tokens.sum(), x.sum(), atol=1e-3)


def test_not_divisible_raises_naming_size_and_fix() -> None:
    with pytest.raises(ValueError, match=r"\(230, 224\).*patch_size=16.*pad=True"):
        patchify(torch.zeros(1, 3, 230, 224))
    with pytest.raises(ValueError, match="dimensions"):
        patchify(torch.zeros(224, 224))
    with pytest.raises(ValueError, match="patch_size"):
        patchify(torch.zeros(1, 3, 16, 16), 0)
    with pytest.raises(ValueError, match="impl"):
        patchify(torch.zeros(1, 3, 16, 16), impl="nope")  # type: ignore[arg-type]


def test_unpatchify_rejects_inconsistent_shapes() -> None:
    tokens = patchify(torch.zeros(1, 3, 32, 32), 16)
    with pytest.raises(ValueError, match=r"N=4 patches.*image_size"):
        unpatchify(tokens, 16, (48, 32))
    with pytest.raises(ValueError, match="channels"):
        unpatchify(tokens, 16, (32, 32), channels=1)


def test_grid_size() -> None:
    assert grid_size((224, 224)) == (14, 14)
    assert grid_size((225, 17), 16, pad=True) == (15, 2)
    with pytest.raises(ValueError, match="positive"):
        grid_size((0, 16))


def _conv_pair(c: int = 3, d: int = 32, p: int = 16, bias: bool = True) -> tuple[nn.Conv2d, PatchEmbed]:
    torch.manual_seed(0)
    conv = nn.Conv2d(c, d, kernel_size=p, stride=p, bias=bias)
    embed = PatchEmbed(p, c, d, bias=bias).load_conv_weights(conv.weight, conv.bias)
    return conv, embed


@pytest.mark.parametrize("bias", [True, False])
def test_patch_embed_equals_stride_p_conv(bias: bool) -> None:
    conv, embed = _conv_pair(bias=bias)
    x = torch.randn(2, 3, 64, 48)
    expected = conv(x).flatten(2).transpose(1, 2)  # [B, d, gh, gw] -> [B, N, d]
    got = embed(x)
    print("max |PatchEmbed - Conv2d| =", (got - expected).abs().max().item())
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    assert torch.equal(embed.proj.weight, conv.weight.reshape(32, -1))
    assert torch.equal(embed.conv_weight(), conv.weight)


def test_patch_embed_gradients_match_conv() -> None:
    conv, embed = _conv_pair(d=8)
    x1 = torch.randn(2, 3, 32, 32, requires_grad=True)
    x2 = x1.detach().clone().requires_grad_(True)
    conv(x1).flatten(2).transpose(1, 2).square().sum().backward()
    embed(x2).square().sum().backward()
    torch.testing.assert_close(x2.grad, x1.grad, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(embed.proj.weight.grad, conv.weight.grad.reshape(8, -1), rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(embed.proj.bias.grad, conv.bias.grad, rtol=1e-4, atol=1e-4)


def test_patch_embed_equals_timm_patch_embed() -> None:
    from timm.layers import PatchEmbed as TimmPatchEmbed

    torch.manual_seed(1)
    timm_embed = TimmPatchEmbed(img_size=224, patch_size=16, in_chans=3, embed_dim=768).eval()
    ours = PatchEmbed(16, 3, 768).load_conv_weights(timm_embed.proj.weight, timm_embed.proj.bias).eval()
    x = torch.randn(2, 3, 224, 224)
    with torch.no_grad():
        expected = timm_embed(x)
        got = ours(x)
    assert got.shape == expected.shape == (2, 196, 768)
    print("max |ours - timm| =", (got - expected).abs().max().item())
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)


def test_patch_embed_input_and_weight_errors() -> None:
    embed = PatchEmbed(16, 3, 8)
    with pytest.raises(ValueError, match=r"\[B, 3, H, W\]"):
        embed(torch.zeros(1, 1, 16, 16))
    with pytest.raises(TypeError, match="float"):
        embed(torch.zeros(1, 3, 16, 16, dtype=torch.uint8))
    with pytest.raises(ValueError, match=r"\(8, 3, 16, 16\)"):
        embed.load_conv_weights(torch.zeros(8, 3, 8, 8))
    with pytest.raises(ValueError, match="bias=False"):
        PatchEmbed(16, 3, 8, bias=False).load_conv_weights(torch.zeros(8, 3, 16, 16), torch.zeros(8))
    assert embed.num_patches((224, 224)) == 196
    padded = PatchEmbed(16, 3, 8, pad=True)
    assert padded(torch.zeros(1, 3, 20, 20)).shape == (1, 4, 8)


def test_fast_path_is_bit_exact_for_any_bit_pattern() -> None:
    # float32 values built from random bits (NaN payloads, infinities, denormals) survive the wide-word copy
    bits = torch.randint(-(2**31), 2**31 - 1, (2, 3, 32, 48), dtype=torch.int32)
    floats = bits.view(torch.float32)
    got = patchify(floats, 16).view(torch.int32)
    assert torch.equal(got, patchify(bits, 16, impl="reference"))
    for dtype in (torch.float16, torch.bfloat16, torch.float64, torch.int8):
        x = torch.randn(1, 3, 16, 32).to(dtype)
        assert torch.equal(patchify(x, 8), patchify(x, 8, impl="reference")), dtype
    view = torch.randint(0, 256, (2, 3, 33, 32), dtype=torch.uint8)[
        :, :, 1:
    ]  # offset storage, not contiguous
    assert torch.equal(patchify(view, 16), patchify(view, 16, impl="reference"))
    odd = torch.randint(0, 256, (1, 3, 12, 12), dtype=torch.uint8)  # P=3: no wide word fits
    assert torch.equal(patchify(odd, 3), patchify(odd, 3, impl="reference"))


@pytest.mark.gpu
def test_patchify_and_patch_embed_on_cuda() -> None:
    x = torch.randint(0, 256, (4, 3, 224, 224), dtype=torch.uint8, device="cuda")
    tokens = patchify(x)
    assert tokens.device.type == "cuda"
    assert torch.equal(tokens.cpu(), patchify(x.cpu()))
    assert torch.equal(unpatchify(tokens, 16, (224, 224)), x)
    conv, embed = _conv_pair()
    conv, embed = conv.cuda(), embed.cuda()
    images = torch.randn(2, 3, 64, 64, device="cuda")
    torch.testing.assert_close(embed(images), conv(images).flatten(2).transpose(1, 2), rtol=1e-4, atol=1e-4)
