"""Layers: parameter structure (contract 7), norms, MLPs, attention vs torch.nn oracles, dropout, pre/post Block."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from tokenloom.encoder import masks
from tokenloom.encoder.config import EncoderConfig
from tokenloom.encoder.layers import Block, GeluMlp, RMSNorm, SelfAttention, SwiGLU, make_norm
from tokenloom.encoder.model import Encoder


def contract_params(c: EncoderConfig) -> int:
    """The parameter count of the block layout (two norms, fused qkv, output projection, MLP), written out
    independently of the model code."""
    d, h, hkv, dh, f = c.width, c.heads, c.resolved_kv_heads, c.resolved_head_dim, c.resolved_mlp_hidden
    norm = 2 * d if c.norm == "layernorm" else d
    attn = d * h * dh + 2 * d * hkv * dh + ((h * dh + 2 * hkv * dh) if c.qkv_bias else 0)
    attn += h * dh * d + (d if c.proj_bias else 0)
    if c.mlp == "gelu":
        mlp = 2 * d * f + ((f + d) if c.proj_bias else 0)
    else:
        mlp = 3 * d * f + ((2 * f + d) if c.proj_bias else 0)
    return c.depth * (2 * norm + attn + mlp) + (norm if c.final_norm else 0)


@settings(max_examples=30, deadline=None)
@given(
    width=st.sampled_from([32, 48, 64]),
    depth=st.integers(1, 3),
    heads_kv=st.sampled_from([(4, 4), (4, 2), (4, 1), (2, 1)]),
    head_dim=st.sampled_from([None, 8, 12]),
    mlp=st.sampled_from(["gelu", "swiglu"]),
    mlp_hidden=st.sampled_from([None, 40]),
    norm=st.sampled_from(["layernorm", "rmsnorm"]),
    final_norm=st.booleans(),
    qkv_bias=st.booleans(),
    proj_bias=st.booleans(),
    position=st.sampled_from(["learned", "rope", "none"]),
)
def test_parameter_count_matches_the_cost_model_contract(
    width, depth, heads_kv, head_dim, mlp, mlp_hidden, norm, final_norm, qkv_bias, proj_bias, position
) -> None:
    heads, kv = heads_kv
    c = EncoderConfig(
        width=width,
        depth=depth,
        heads=heads,
        kv_heads=kv,
        head_dim=head_dim,
        mlp=mlp,
        mlp_hidden=mlp_hidden,
        norm=norm,
        final_norm=final_norm,
        qkv_bias=qkv_bias,
        proj_bias=proj_bias,
        position=position,
    )
    model = Encoder(c)
    assert sum(p.numel() for p in model.parameters()) == contract_params(c)


def test_vit_b16_encoder_has_85m_parameters() -> None:
    # ViT-B/16 blocks + final norm: 12 × 7,087,872 + 1,536 (the patch embedding, class token and positions,
    # 742,656 more, belong to the front end)
    c = EncoderConfig.preset("vit-b16")
    assert contract_params(c) == 85_056_000
    with torch.device("meta"):  # shapes only, no memory or init work
        model = Encoder(c)
    assert sum(p.numel() for p in model.parameters()) == 85_056_000


def test_swiglu_default_hidden_is_8d_over_3_rounded_to_64() -> None:
    assert EncoderConfig(width=768, mlp="swiglu").resolved_mlp_hidden == 2048
    assert EncoderConfig(width=512, heads=8, mlp="swiglu").resolved_mlp_hidden == 1408  # 1365.3 -> 1408
    block = Block(EncoderConfig(width=512, heads=8, mlp="swiglu"))
    assert isinstance(block.mlp, SwiGLU) and block.mlp.w1.out_features == 1408
    assert isinstance(Block(EncoderConfig(width=64, heads=4)).mlp, GeluMlp)


def test_rmsnorm_formula_and_torch_oracle() -> None:
    torch.manual_seed(0)
    x = torch.randn(3, 5, 16) * 3
    norm = RMSNorm(16, eps=1e-6)
    with torch.no_grad():
        norm.weight.copy_(torch.randn(16))
    expected = x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * norm.weight
    assert torch.allclose(norm(x), expected, atol=1e-5)
    if hasattr(nn, "RMSNorm"):
        oracle = nn.RMSNorm(16, eps=1e-6)
        with torch.no_grad():
            oracle.weight.copy_(norm.weight)
        assert torch.allclose(norm(x), oracle(x), atol=1e-5)
    assert isinstance(make_norm("layernorm", 8, eps=1e-5), nn.LayerNorm)
    with pytest.raises(ValueError, match="norm kind"):
        make_norm("batchnorm", 8, eps=1e-5)  # type: ignore[arg-type]


def test_swiglu_formula() -> None:
    torch.manual_seed(0)
    mlp = SwiGLU(8, 24)
    x = torch.randn(2, 3, 8)
    expected = mlp.w2(torch.nn.functional.silu(mlp.w1(x)) * mlp.w3(x))
    assert torch.allclose(mlp(x), expected)


# ----------------------------------------------------------------------------- attention oracles


def _mha_from(attn: SelfAttention, width: int, heads: int) -> nn.MultiheadAttention:
    mha = nn.MultiheadAttention(width, heads, batch_first=True)
    with torch.no_grad():
        mha.in_proj_weight.copy_(attn.qkv.weight)
        mha.in_proj_bias.copy_(attn.qkv.bias)
        mha.out_proj.weight.copy_(attn.proj.weight)
        mha.out_proj.bias.copy_(attn.proj.bias)
    return mha.eval()


@pytest.mark.parametrize("causal", [False, True])
def test_self_attention_equals_nn_multihead_attention(causal: bool) -> None:
    torch.manual_seed(0)
    c = EncoderConfig(width=32, depth=1, heads=4, causal=causal)
    attn = SelfAttention(c).eval()
    mha = _mha_from(attn, 32, 4)
    x = torch.randn(3, 7, 32)
    lengths = torch.tensor([7, 4, 1])
    ours = attn(x, masks.key_padding(lengths, 7))
    kpm = ~masks.key_padding(lengths, 7)[:, 0, 0]  # PyTorch polarity: True = ignore
    theirs, _ = mha(
        x,
        x,
        x,
        key_padding_mask=kpm,
        attn_mask=~masks.causal(7) if causal else None,
        need_weights=False,
    )
    assert torch.allclose(ours, theirs, atol=1e-5), (ours - theirs).abs().max()


def test_grouped_query_attention_equals_mha_with_repeated_kv_heads() -> None:
    torch.manual_seed(0)
    d, h, hkv, dh = 32, 4, 2, 8
    gqa = SelfAttention(EncoderConfig(width=d, heads=h, kv_heads=hkv)).eval()
    mha = SelfAttention(EncoderConfig(width=d, heads=h)).eval()
    with torch.no_grad():
        wq, wk, wv = gqa.qkv.weight.split((h * dh, hkv * dh, hkv * dh))
        bq, bk, bv = gqa.qkv.bias.split((h * dh, hkv * dh, hkv * dh))

        def rep(
            t: torch.Tensor,
        ) -> torch.Tensor:  # [Hkv*D, ...] -> [H*D, ...], query head i uses kv head i // 2
            return t.unflatten(0, (hkv, dh)).repeat_interleave(h // hkv, dim=0).flatten(0, 1)

        mha.qkv.weight.copy_(torch.cat((wq, rep(wk), rep(wv))))
        mha.qkv.bias.copy_(torch.cat((bq, rep(bk), rep(bv))))
        mha.proj.load_state_dict(gqa.proj.state_dict())
    x = torch.randn(2, 5, d)
    assert torch.allclose(gqa(x), mha(x), atol=1e-6)


def test_attention_dropout_is_passed_only_in_training(monkeypatch: pytest.MonkeyPatch) -> None:
    import tokenloom.encoder.layers as layers

    seen: list[float] = []
    real = layers.attention

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(kwargs["dropout_p"])
        return real(*args, **kwargs)

    monkeypatch.setattr(layers, "attention", spy)
    attn = SelfAttention(EncoderConfig(width=16, heads=2, attn_dropout=0.3))
    x = torch.randn(1, 4, 16)
    attn.train()(x)
    attn.eval()(x)
    assert seen == [0.3, 0.0]


def test_dropout_makes_training_random_and_eval_deterministic() -> None:
    torch.manual_seed(0)
    block = Block(EncoderConfig(width=16, heads=2, attn_dropout=0.5, dropout=0.5))
    plain = Block(EncoderConfig(width=16, heads=2))
    plain.load_state_dict(block.state_dict())
    x = torch.randn(2, 6, 16)
    block.eval(), plain.eval()
    assert torch.equal(block(x), plain(x))
    block.train()
    assert not torch.allclose(block(x), block(x))


# ----------------------------------------------------------------------------- torch.nn.TransformerEncoderLayer


def _copy_from_torch_layer(block: Block, layer: nn.TransformerEncoderLayer) -> None:
    block.load_state_dict(
        {
            "norm1.weight": layer.norm1.weight,
            "norm1.bias": layer.norm1.bias,
            "norm2.weight": layer.norm2.weight,
            "norm2.bias": layer.norm2.bias,
            "attn.qkv.weight": layer.self_attn.in_proj_weight,
            "attn.qkv.bias": layer.self_attn.in_proj_bias,
            "attn.proj.weight": layer.self_attn.out_proj.weight,
            "attn.proj.bias": layer.self_attn.out_proj.bias,
            "mlp.fc1.weight": layer.linear1.weight,
            "mlp.fc1.bias": layer.linear1.bias,
            "mlp.fc2.weight": layer.linear2.weight,
            "mlp.fc2.bias": layer.linear2.bias,
        }
    )


@pytest.mark.parametrize("norm_first", [True, False])
def test_block_equals_torch_transformer_encoder_layer(norm_first: bool) -> None:
    torch.manual_seed(0)
    d, h, f = 64, 4, 96
    layer = nn.TransformerEncoderLayer(
        d, h, dim_feedforward=f, dropout=0.0, activation="gelu", batch_first=True, norm_first=norm_first
    ).eval()
    config = EncoderConfig(
        width=d, depth=1, heads=h, mlp_hidden=f, norm_eps=1e-5, placement="pre" if norm_first else "post"
    )
    block = Block(config).eval()
    _copy_from_torch_layer(block, layer)
    x = torch.randn(3, 10, d)
    lengths = torch.tensor([10, 6, 2])
    with torch.no_grad():
        assert torch.allclose(block(x), layer(x), atol=1e-5), (block(x) - layer(x)).abs().max()
        ours = block(x, masks.key_padding(lengths, 10))
        theirs = layer(x, src_key_padding_mask=~masks.key_padding(lengths, 10)[:, 0, 0])
        # torch's fast path may return zeros at padded positions; compare the real tokens
        for b, n in enumerate(lengths.tolist()):
            diff = (ours[b, :n] - theirs[b, :n]).abs().max()
            assert diff < 1e-5, diff


@pytest.mark.parametrize("norm_first", [True, False])
def test_encoder_equals_torch_transformer_encoder_stack(norm_first: bool) -> None:
    torch.manual_seed(1)
    d, h, f, depth = 32, 4, 64, 3
    layer = nn.TransformerEncoderLayer(
        d, h, dim_feedforward=f, dropout=0.0, activation="gelu", batch_first=True, norm_first=norm_first
    )
    stack = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False).eval()
    config = EncoderConfig(
        width=d,
        depth=depth,
        heads=h,
        mlp_hidden=f,
        norm_eps=1e-5,
        placement="pre" if norm_first else "post",
        final_norm=False,
    )
    enc = Encoder(config).eval()
    for ours, theirs in zip(enc.blocks, stack.layers, strict=True):
        _copy_from_torch_layer(ours, theirs)
    x = torch.randn(2, 9, d)
    with torch.no_grad():
        assert torch.allclose(enc(x), stack(x), atol=1e-5), (enc(x) - stack(x)).abs().max()


def test_block_gradients_match_torch_layer() -> None:
    torch.manual_seed(2)
    layer = nn.TransformerEncoderLayer(
        16, 2, 32, dropout=0.0, activation="gelu", batch_first=True, norm_first=True
    )
    block = Block(EncoderConfig(width=16, heads=2, mlp_hidden=32, norm_eps=1e-5))
    _copy_from_torch_layer(block, layer)
    x1 = torch.randn(2, 5, 16, requires_grad=True)
    x2 = x1.detach().clone().requires_grad_(True)
    block(x1).pow(2).sum().backward()
    layer(x2).pow(2).sum().backward()
    assert torch.allclose(x1.grad, x2.grad, atol=1e-5)
    assert torch.allclose(block.attn.qkv.weight.grad, layer.self_attn.in_proj_weight.grad, atol=1e-5)


def test_rope_attention_equals_manual_rotation_and_reference_softmax() -> None:
    from tokenloom.encoder.positions import apply_rope_reference, rope_inv_freq

    torch.manual_seed(3)
    d, h, hkv, dh, n = 32, 4, 2, 8, 6
    attn = SelfAttention(EncoderConfig(width=d, heads=h, kv_heads=hkv, position="rope", causal=True)).eval()
    x = torch.randn(2, n, d)
    q, k, v = attn.qkv(x).split((h * dh, hkv * dh, hkv * dh), dim=-1)
    q = q.view(2, n, h, dh).transpose(1, 2)  # [B, H, N, D]
    k = k.view(2, n, hkv, dh).transpose(1, 2).repeat_interleave(h // hkv, dim=1)  # [B, H, N, D]
    v = v.view(2, n, hkv, dh).transpose(1, 2).repeat_interleave(h // hkv, dim=1)
    angles = torch.arange(n, dtype=torch.float64)[:, None] * rope_inv_freq(dh).double()[None, :]  # [N, D/2]
    q, k = apply_rope_reference(q, angles), apply_rope_reference(k, angles)
    scores = q @ k.transpose(-1, -2) / dh**0.5  # [B, H, N, N]
    scores = scores.masked_fill(~torch.ones(n, n, dtype=torch.bool).tril(), float("-inf"))
    out = (scores.softmax(-1) @ v).transpose(1, 2).reshape(2, n, h * dh)  # [B, N, H*D]
    expected = attn.proj(out)
    with torch.no_grad():
        assert torch.allclose(attn(x), expected, atol=1e-5), (attn(x) - expected).abs().max()
