"""Cross-attention: equal to torch.nn.MultiheadAttention (kdim/vdim) and nn.TransformerDecoderLayer."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from tokenloom.costs import encoder_params
from tokenloom.encoder.config import EncoderConfig
from tokenloom.encoder.layers import Block, CrossAttention
from tokenloom.encoder.model import Encoder


def _copy_from_mha(ours: CrossAttention, mha: nn.MultiheadAttention) -> None:
    with torch.no_grad():
        d = ours.q.out_features
        if mha._qkv_same_embed_dim:
            q_w, k_w, v_w = mha.in_proj_weight.split(d)
        else:
            q_w, k_w, v_w = mha.q_proj_weight, mha.k_proj_weight, mha.v_proj_weight
        ours.q.weight.copy_(q_w)
        ours.k.weight.copy_(k_w)
        ours.v.weight.copy_(v_w)
        q_b, k_b, v_b = mha.in_proj_bias.split(d)
        ours.q.bias.copy_(q_b)
        ours.k.bias.copy_(k_b)
        ours.v.bias.copy_(v_b)
        ours.proj.weight.copy_(mha.out_proj.weight)
        ours.proj.bias.copy_(mha.out_proj.bias)


@pytest.mark.parametrize("impl", ["reference", "sdpa", "tiled"])
def test_equals_multihead_attention_with_kdim_vdim_and_padding(impl: str) -> None:
    torch.manual_seed(0)
    d, dm, heads = 32, 48, 4
    cfg = EncoderConfig(width=d, depth=1, heads=heads, cross_attention=True, cross_width=dm, attn_impl=impl)
    ours = CrossAttention(cfg).double().eval()
    mha = nn.MultiheadAttention(d, heads, kdim=dm, vdim=dm, batch_first=True).double().eval()
    _copy_from_mha(ours, mha)
    x = torch.randn(3, 7, d, dtype=torch.float64)  # text tokens
    memory = torch.randn(3, 11, dm, dtype=torch.float64)  # e.g. image patch tokens
    lengths = torch.tensor([11, 5, 1])
    padding = torch.arange(11)[None, :] >= lengths[:, None]  # PyTorch polarity: True = ignore
    expected, _ = mha(x, memory, memory, key_padding_mask=padding, need_weights=False)
    got = ours(x, memory, key_lengths=lengths)
    print("max |Δ| vs nn.MultiheadAttention:", float((got - expected).detach().abs().max()))
    torch.testing.assert_close(got, expected, rtol=1e-10, atol=1e-10)


def test_grouped_query_heads_equal_mha_with_repeated_kv_weights() -> None:
    torch.manual_seed(1)
    d, dm, heads, kv_heads = 32, 24, 4, 2
    cfg = EncoderConfig(
        width=d, depth=1, heads=heads, kv_heads=kv_heads, cross_attention=True, cross_width=dm
    )
    ours = CrossAttention(cfg).double().eval()
    mha = nn.MultiheadAttention(d, heads, kdim=dm, vdim=dm, batch_first=True).double().eval()
    hd, group = d // heads, heads // kv_heads
    with torch.no_grad():  # query head h uses kv head h // group: repeat each kv head's rows
        for ours_lin, name in ((ours.k, "k"), (ours.v, "v")):
            w = ours_lin.weight.view(kv_heads, hd, dm).repeat_interleave(group, 0).reshape(d, dm)
            b = ours_lin.bias.view(kv_heads, hd).repeat_interleave(group, 0).reshape(d)
            getattr(mha, f"{name}_proj_weight").copy_(w)
            mha.in_proj_bias[(1 if name == "k" else 2) * d : (2 if name == "k" else 3) * d].copy_(b)
        mha.q_proj_weight.copy_(ours.q.weight)
        mha.in_proj_bias[:d].copy_(ours.q.bias)
        mha.out_proj.weight.copy_(ours.proj.weight)
        mha.out_proj.bias.copy_(ours.proj.bias)
    x, memory = torch.randn(2, 5, d, dtype=torch.float64), torch.randn(2, 9, dm, dtype=torch.float64)
    expected, _ = mha(x, memory, memory, need_weights=False)
    torch.testing.assert_close(ours(x, memory), expected, rtol=1e-10, atol=1e-10)
    assert ours.k.weight.shape == (kv_heads * hd, dm)  # fewer key/value parameters than MHA


@pytest.mark.parametrize("norm_first", [True, False])
def test_block_with_cross_attention_equals_transformer_decoder_layer(norm_first: bool) -> None:
    torch.manual_seed(2)
    d, heads, f = 32, 4, 64
    cfg = EncoderConfig(
        width=d, depth=1, heads=heads, mlp_hidden=f, norm_eps=1e-5, placement="pre" if norm_first else "post",
        cross_attention=True, attn_impl="reference",
    )  # fmt: skip
    ours = Block(cfg).double().eval()
    ref = nn.TransformerDecoderLayer(
        d, heads, dim_feedforward=f, dropout=0.0, activation="gelu", batch_first=True, norm_first=norm_first
    ).double().eval()  # fmt: skip
    with torch.no_grad():
        ours.attn.qkv.weight.copy_(ref.self_attn.in_proj_weight)
        ours.attn.qkv.bias.copy_(ref.self_attn.in_proj_bias)
        ours.attn.proj.weight.copy_(ref.self_attn.out_proj.weight)
        ours.attn.proj.bias.copy_(ref.self_attn.out_proj.bias)
        for our_norm, their_norm in (
            (ours.norm1, ref.norm1),
            (ours.norm_cross, ref.norm2),
            (ours.norm2, ref.norm3),
        ):
            our_norm.weight.copy_(their_norm.weight)
            our_norm.bias.copy_(their_norm.bias)
        ours.mlp.fc1.weight.copy_(ref.linear1.weight)
        ours.mlp.fc1.bias.copy_(ref.linear1.bias)
        ours.mlp.fc2.weight.copy_(ref.linear2.weight)
        ours.mlp.fc2.bias.copy_(ref.linear2.bias)
    assert ours.cross is not None
    _copy_from_mha(ours.cross, ref.multihead_attn)
    x, memory = torch.randn(2, 6, d, dtype=torch.float64), torch.randn(2, 10, d, dtype=torch.float64)
    lengths = torch.tensor([10, 3])
    padding = torch.arange(10)[None, :] >= lengths[:, None]
    expected = ref(x, memory, memory_key_padding_mask=padding)
    got = ours(x, memory=memory, memory_lengths=lengths)
    print("max |Δ| vs nn.TransformerDecoderLayer:", float((got - expected).detach().abs().max()))
    torch.testing.assert_close(got, expected, rtol=1e-10, atol=1e-10)


def test_parameters_counted_by_the_cost_model() -> None:
    cfg = EncoderConfig(width=64, depth=2, heads=4, kv_heads=2, cross_attention=True, cross_width=96)
    model = Encoder(cfg)
    assert sum(p.numel() for p in model.parameters()) == encoder_params(cfg)
    plain = EncoderConfig(width=64, depth=2, heads=4, kv_heads=2)
    assert encoder_params(cfg) > encoder_params(plain)


def test_memory_and_block_must_agree() -> None:
    torch.manual_seed(3)
    with_cross = Block(EncoderConfig(width=16, depth=1, heads=2, cross_attention=True))
    plain = Block(EncoderConfig(width=16, depth=1, heads=2))
    x = torch.randn(1, 3, 16)
    with pytest.raises(ValueError, match="needs memory"):
        with_cross(x)
    with pytest.raises(ValueError, match="no cross-attention"):
        plain(x, memory=torch.randn(1, 4, 16))
    with pytest.raises(ValueError, match="cross_width"):
        with_cross(x, memory=torch.randn(1, 4, 8))
    # a query that sees only padding-free memory ignores what lies in the padding
    memory = torch.randn(1, 6, 16)
    changed = memory.clone()
    changed[:, 4:] = 100.0
    lengths = torch.tensor([4])
    torch.testing.assert_close(
        with_cross(x, memory=memory, memory_lengths=lengths),
        with_cross(x, memory=changed, memory_lengths=lengths),
    )


def test_encoder_text_tokens_attend_to_image_patch_tokens() -> None:
    from tokenloom.encoder.embed import ImageEmbed, TextEmbed

    torch.manual_seed(4)
    image_cfg = EncoderConfig(width=32, depth=1, heads=2)
    text_cfg = EncoderConfig(width=24, depth=2, heads=2, cross_attention=True, cross_width=32)
    images = ImageEmbed(image_size=32, patch_size=16, width=32)(torch.randn(2, 3, 32, 32))  # [2, 5, 32]
    patches = Encoder(image_cfg).eval()(images)  # [2, 5, 32]: the memory
    text = TextEmbed(100, 24)(torch.randint(0, 100, (2, 7))).x  # [2, 7, 24]
    encoder = Encoder(text_cfg).eval()
    lengths = torch.tensor([5, 3])  # the second image's last two tokens are padding
    got = encoder(text, memory=patches, memory_lengths=lengths)
    by_hand = text
    for block in encoder.blocks:
        by_hand = block(by_hand, memory=patches, memory_lengths=lengths)
    torch.testing.assert_close(got, encoder.norm(by_hand))
    changed = patches.clone()
    changed[1, 3:] = 100.0  # what lies in the padding does not matter
    torch.testing.assert_close(encoder(text, memory=changed, memory_lengths=lengths)[1], got[1])
    with pytest.raises(ValueError, match="needs memory"):
        encoder(text)
