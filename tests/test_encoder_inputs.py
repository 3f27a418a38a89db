"""What the encoder's config and front ends accept, and the errors for what they refuse."""

from __future__ import annotations

import math
import re

import pytest
import torch
from torch import nn

from tokenloom import ConfigError, EncoderConfig, TransformConfig, eval_transform
from tokenloom.encoder import Encoder, ImageEmbed, TextEmbed

SMALL = {"width": 32, "depth": 1, "heads": 2}


@pytest.mark.parametrize("base", [0.0, -10000.0, math.nan, math.inf, -math.inf])
def test_rope_base_must_be_positive_and_finite(base: float) -> None:
    with pytest.raises(ConfigError, match=re.escape("rope_base must be a positive finite number")) as exc:
        EncoderConfig(**SMALL, position="rope", rope_base=base)
    assert f"got {base!r}" in str(exc.value)


def test_a_valid_rope_base_gives_finite_outputs() -> None:
    torch.manual_seed(0)
    enc = Encoder(EncoderConfig(**SMALL, position="rope", rope_base=500.0)).eval()
    out = enc(torch.randn(2, 7, 32))
    assert out.shape == (2, 7, 32) and torch.isfinite(out).all()


INT_DTYPES = [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.uint16, torch.uint32,
              torch.uint64]  # fmt: skip


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=str)
def test_text_embed_takes_any_integer_dtype(dtype: torch.dtype) -> None:
    torch.manual_seed(0)
    embed = TextEmbed(100, 16, max_len=8, pad_id=0)
    ids = torch.tensor([[5, 99, 0], [1, 2, 3]])
    want_x, want_mask = embed(ids)  # int64, the reference
    x, mask = embed(ids.to(dtype))
    assert torch.equal(x, want_x) and mask is not None and torch.equal(mask, want_mask)
    assert embed.pos is not None
    assert torch.equal(x[0, 1], embed.tok.weight[99] + embed.pos.weight[0, 1])  # id 99 at position 1


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.uint16])
def test_text_embed_range_check_holds_for_narrow_dtypes(dtype: torch.dtype) -> None:
    embed = TextEmbed(100, 16)
    with pytest.raises(ValueError, match=r"token id 120 is outside the vocabulary \[0, 100\)"):
        embed(torch.tensor([[1, 120]], dtype=dtype))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bool, torch.complex64])
def test_text_embed_refuses_non_integer_ids(dtype: torch.dtype) -> None:
    with pytest.raises(ValueError, match=f"integer ids .* got {dtype}"):
        TextEmbed(10, 8)(torch.zeros(1, 3, dtype=dtype))


def test_image_embed_size_error_suggests_a_fix_that_exists() -> None:
    embed = ImageEmbed(image_size=224, patch_size=16, width=32)
    image = torch.randint(0, 256, (3, 250, 231), dtype=torch.uint8)
    with pytest.raises(ValueError) as exc:
        embed(image[None].float())
    message = str(exc.value)
    assert "(H, W) = (250, 231) is not divisible by patch_size=16" in message and "pad=True" not in message
    # the suggested call is real: it makes images ImageEmbed accepts
    size = int(re.search(r"TransformConfig\(size=(\d+)\)", message)[1])  # type: ignore[index]
    assert size % 16 == 0
    fixed = eval_transform(TransformConfig(size=size))(image)[None]  # [1, 3, S, S]
    assert embed(fixed).shape == (1, 1 + (size // 16) ** 2, 32)


def test_image_embed_bad_image_size_names_the_argument() -> None:
    with pytest.raises(
        ValueError, match=r"image_size \(H, W\) = \(230, 230\) .* choose an image_size that is"
    ):
        ImageEmbed(image_size=230, patch_size=16, width=32)
    with pytest.raises(ValueError, match="patch_size must be a positive int"):
        ImageEmbed(image_size=224, patch_size=0, width=32)


def test_dtype_mismatch_names_both_dtypes() -> None:
    enc = Encoder(EncoderConfig(**SMALL))
    with pytest.raises(
        TypeError, match=r"weights are torch\.float32 but x is torch\.float64.*x\.to\(torch\.float32\)"
    ):
        enc(torch.randn(1, 4, 32, dtype=torch.float64))
    # a front end in another dtype than the encoder: the same error, not a matmul failure deep inside
    images = torch.randn(1, 3, 32, 32)
    embed = ImageEmbed(image_size=32, patch_size=16, width=32).to(torch.bfloat16)
    with pytest.raises(TypeError, match=r"float32 but x is torch\.bfloat16"):
        enc(embed(images))
    assert enc.to(torch.bfloat16)(embed(images)).dtype == torch.bfloat16  # the suggested fix works
    causal = Encoder(EncoderConfig(**SMALL, causal=True))
    with pytest.raises(TypeError, match="float64"):
        causal.prefill(torch.randn(1, 4, 32, dtype=torch.float64))
    cache = causal.prefill(torch.randn(1, 4, 32))
    with pytest.raises(TypeError, match="float16"):
        causal.decode_step(torch.randn(1, 32, dtype=torch.float16), cache)


def test_matching_dtypes_agree_with_torch_layers() -> None:
    """The check does not get in the way: float64 end to end matches a float64 torch.nn oracle layer."""
    torch.manual_seed(0)
    enc = Encoder(EncoderConfig(width=32, depth=1, heads=2, final_norm=True)).double().eval()
    x = torch.randn(2, 5, 32, dtype=torch.float64)
    assert isinstance(enc.norm, nn.LayerNorm)
    want = enc.norm(enc.blocks[0](x))
    assert torch.allclose(enc(x), want)
