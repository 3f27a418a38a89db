"""tokenloom.costs: DESIGN.md worked examples, known answers, invariants, and oracles (torch's FLOP counter, timm).

Oracles: ``torch.utils.flop_counter.FlopCounterMode`` counts the matmul FLOPs torch actually runs (2 per
multiply-add, like the model); timm's ViT gives reference parameter counts; the model's
``Encoder`` / ``KVCache`` and the vision package's ``patchify`` are the built objects the formulas describe.
"""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenloom import costs
from tokenloom.encoder.config import EncoderConfig
from tokenloom.errors import ConfigError

MiB, GiB = 2**20, 2**30


# --------------------------------------------------------------------------- DESIGN.md worked examples


def test_score_memory_worked_examples() -> None:
    assert costs.score_bytes(1, 1, 4096, 4096, 2) == 32 * MiB
    assert costs.score_bytes(1, 32, 4096, 4096, 2) == 1 * GiB
    assert costs.format_bytes(costs.score_bytes(1, 1, 4096, 4096, "bf16")) == "32.0 MiB"
    assert costs.format_bytes(costs.score_bytes(1, 32, 4096, 4096, "fp16")) == "1.0 GiB"


def test_kv_cache_worked_examples() -> None:
    base = costs.kv_cache_bytes(32, 1, 4096, 8, 128, "bf16")
    assert base == 512 * MiB
    assert costs.format_bytes(base) == "512.0 MiB"
    assert costs.kv_cache_bytes(32, 1, 4096, 32, 128, 2) == 2 * GiB
    assert costs.kv_cache_bytes(32, 2, 8192, 8, 128, 2) == 4 * base  # doubling N and B -> x4


def test_weights_worked_example_is_decimal() -> None:
    n = costs.weight_bytes(70e9, "bf16")
    assert n == 140 * 10**9
    assert costs.format_bytes(n, system="decimal") == "140.0 GB"
    assert costs.format_bytes(n) == "130.4 GiB"  # the same bytes in binary units


def test_vit_worked_example_and_patchify_agree() -> None:
    assert costs.vit_tokens(224, 16, class_token=False) == 196
    assert costs.vit_tokens(224, 16) == 197
    assert costs.vit_patch_dim(16) == 768
    import torch

    from tokenloom.vision.patches import patchify

    for size, p in [((224, 224), 16), ((384, 320), 32), ((64, 48), 8)]:
        shape = patchify(torch.zeros(1, 3, *size), p).shape
        assert tuple(shape) == (1, costs.vit_tokens(size, p, class_token=False), costs.vit_patch_dim(p))
    padded = patchify(torch.zeros(1, 3, 230, 225), 16, pad=True).shape
    assert padded[1] == costs.vit_tokens((230, 225), 16, class_token=False, pad=True) == 15 * 15


def test_vit_attention_cost_grows_with_resolution_and_patch() -> None:
    n224, n448 = costs.vit_tokens(224, 16, False), costs.vit_tokens(448, 16, False)
    n_p8 = costs.vit_tokens(224, 8, False)
    assert n448 == n_p8 == 4 * n224
    a = costs.attention_flops(1, 12, n224, n224, 64)
    assert costs.attention_flops(1, 12, n448, n448, 64) == 16 * a  # side x2 -> tokens x4 -> attention x16
    with pytest.raises(ConfigError, match=r"225x224 is not a multiple of patch_size=16.*pad=True"):
        costs.vit_tokens((225, 224), 16)


# --------------------------------------------------------------------------- dtypes and units


@pytest.mark.parametrize(
    ("name", "size"), [("fp32", 4), ("bf16", 2), ("fp16", 2), ("fp8", 1), ("int4", 0.5), ("BF16", 2)]
)
def test_dtype_names(name: str, size: float) -> None:
    assert costs.bytes_per_element(name) == size
    assert costs.kv_cache_bytes(1, 1, 8, 1, 2, name) == math.ceil(2 * 8 * 2 * size)


def test_int4_rounds_up_to_whole_bytes_and_numbers_are_accepted() -> None:
    assert costs.weight_bytes(3, "int4") == 2  # 1.5 bytes of values need 2 bytes
    assert costs.weight_bytes(1000, "0.5") == costs.weight_bytes(1000, 0.5) == 500
    assert costs.score_bytes(1, 1, 3, 3, 2.5) == 23  # ceil(22.5)
    assert costs.tensor_bytes(0, "fp32") == 0 and costs.tensor_bytes(7, "int4") == 4
    assert costs.tensor_bytes(2**60 + 1, "int4") == 2**59 + 1  # exact beyond float precision


@pytest.mark.parametrize("bad", ["bf17", "float", "", "-2", "0", "nan", True, None])
def test_bad_dtype_lists_the_choices(bad: object) -> None:
    with pytest.raises(ConfigError) as exc:
        costs.bytes_per_element(bad)  # type: ignore[arg-type]
    message = str(exc.value)
    assert repr(bad) in message or str(bad) in message
    if isinstance(bad, str) and bad in ("bf17", "float", ""):
        assert "fp32, bf16, fp16, fp8, int8, int4" in message


def test_bad_counts_name_the_argument() -> None:
    with pytest.raises(ConfigError, match="kv_heads must be a positive int, got 0"):
        costs.kv_cache_bytes(32, 1, 4096, 0, 128, 2)
    with pytest.raises(ConfigError, match=r"q_len must be a positive int, got 1\.5"):
        costs.score_bytes(1, 1, 1.5, 4, 2)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"head_dim must be a positive int, got 0"):
        costs.attention_flops(1, 1, 8, 4, 0, causal=True)
    with pytest.raises(ConfigError, match="MLP kind must be one of"):
        costs.mlp_flops(1, 1, 8, 32, "relu")  # type: ignore[arg-type]


def test_human_units() -> None:
    assert costs.format_bytes(1023) == "1023 B"
    assert costs.format_bytes(1536) == "1.5 KiB"
    assert costs.format_bytes(1500, system="decimal") == "1.5 kB"
    assert costs.format_count(2.749e11) == "274.9 GFLOP"
    assert costs.format_count(999) == "999 FLOP"
    with pytest.raises(ConfigError, match="'binary' or 'decimal'"):
        costs.format_bytes(1, system="si")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- FLOPs: known answers and invariants


def test_attention_flops_known_answers() -> None:
    assert costs.attention_flops(1, 32, 4096, 4096, 128) == 4 * 32 * 4096 * 4096 * 128
    full = costs.attention_flops(2, 8, 1024, 1024, 64)
    # causal counts the allowed pairs exactly: N(N+1)/2, half of N² plus half the diagonal
    causal = costs.attention_flops(2, 8, 1024, 1024, 64, causal=True)
    assert causal == 4 * 2 * 8 * 64 * (1024 * 1025 // 2) == full // 2 + 2 * 2 * 8 * 64 * 1024
    # decode: one query against M cached keys sees all M of them
    assert costs.attention_flops(1, 1, 1, 100, 1, causal=True) == 4 * 100
    # queries are the last N of M keys: 3 queries, 5 keys see 3 + 4 + 5 keys
    assert costs.attention_flops(1, 1, 3, 5, 1, causal=True) == 4 * (3 + 4 + 5)
    # more queries than keys: the first N − M queries see none (masks.causal), the rest 1, 2, ..., M
    assert costs.attention_flops(1, 1, 8, 4, 2, causal=True) == 4 * 2 * (1 + 2 + 3 + 4)
    for n, m in [(1, 1), (7, 7), (3, 9), (9, 3), (1024, 4096)]:  # one definition: the causal pattern's edges
        assert costs.attention_flops(2, 3, n, m, 4, causal=True) == costs.attention_flops(
            2, 3, n, m, 4, pattern="causal"
        )


def test_megatron_per_layer_formula() -> None:
    """Narayanan et al. 2021: 24·B·N·d² + 4·B·N²·d per layer for MHA with f = 4d."""
    for d, heads, b, n in [(768, 12, 1, 197), (1024, 16, 4, 512), (64, 4, 3, 7)]:
        cfg = EncoderConfig(width=d, heads=heads, depth=5)
        fl = costs.encoder_flops(cfg, b, n)
        assert fl.per_layer == 24 * b * n * d * d + 4 * b * n * n * d
        assert fl.total == 5 * fl.per_layer and fl.training == 3 * fl.total


configs = st.builds(
    lambda heads, group, hd, depth, mlp, norm, bias, final: EncoderConfig(
        width=heads * hd, depth=depth, heads=heads, kv_heads=heads // group if heads % group == 0 else heads,
        mlp=mlp, norm=norm, qkv_bias=bias, proj_bias=bias, final_norm=final,
    ),
    st.integers(1, 8), st.sampled_from([1, 2, 4]), st.sampled_from([8, 16, 24]), st.integers(1, 4),
    st.sampled_from(["gelu", "swiglu"]), st.sampled_from(["layernorm", "rmsnorm"]), st.booleans(), st.booleans(),
)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(cfg=configs, batch=st.integers(1, 4), n=st.integers(1, 300))
def test_linear_flops_are_two_per_weight_per_token(cfg: EncoderConfig, batch: int, n: int) -> None:
    """Kaplan et al. 2020: the N-linear part is 2 FLOPs per matmul weight per token (biases, norms excluded)."""
    unbiased = dataclasses.replace(cfg, qkv_bias=False, proj_bias=False)
    parts = costs.encoder_param_breakdown(unbiased)
    matmul_weights = parts["qkv"] + parts["out"] + parts["mlp"]
    fl = costs.encoder_flops(cfg, batch, n)
    assert fl.linear == 2 * matmul_weights * batch * n
    assert fl.attention == cfg.depth * costs.attention_flops(batch, cfg.heads, n, n, cfg.resolved_head_dim)
    assert fl.total == fl.linear + fl.attention


@settings(max_examples=60, deadline=None)
@given(
    b=st.integers(1, 8), h=st.integers(1, 64), n=st.integers(1, 5000), m=st.integers(1, 5000),
    d=st.integers(1, 256), s=st.sampled_from(["fp32", "bf16", "fp8"]),
)  # fmt: skip
def test_scaling_invariants(b: int, h: int, n: int, m: int, d: int, s: str) -> None:
    assert costs.score_bytes(b, h, 2 * n, 2 * m, s) == 4 * costs.score_bytes(b, h, n, m, s)
    assert costs.score_bytes(2 * b, h, n, m, s) == 2 * costs.score_bytes(b, h, n, m, s)
    assert costs.attention_flops(b, h, 2 * n, 2 * m, d) == 4 * costs.attention_flops(b, h, n, m, d)
    assert costs.kv_cache_bytes(3, b, 2 * n, h, d, s) == 2 * costs.kv_cache_bytes(3, b, n, h, d, s)
    assert costs.score_bytes(b, h, n, m, "int4") == math.ceil(b * h * n * m / 2)  # two values per byte
    full, causal = costs.attention_flops(b, h, n, m, d), costs.attention_flops(b, h, n, m, d, causal=True)
    if n <= m:
        assert full // 2 <= causal <= full
        assert causal == 4 * b * h * d * (n * m - n * (n - 1) // 2)  # row i sees i + M − N + 1 keys
        assert causal == (4 * b * h * d * n * (n + 1) // 2 if n == m else causal)
    else:
        assert causal == 4 * b * h * d * m * (m + 1) // 2  # the first N − M rows see no key


def test_projection_and_mlp_flops() -> None:
    import torch
    from torch import nn
    from torch.utils.flop_counter import FlopCounterMode

    cfg = EncoderConfig(width=96, depth=2, heads=6, kv_heads=2, mlp="swiglu")
    fl = costs.encoder_flops(cfg, 2, 10)
    assert costs.projection_flops(2, 10, 96, 6, 16, kv_heads=2) == fl.qkv + fl.out
    assert costs.projection_flops(1, 1, 96, 6, 16) == 2 * 4 * 96 * 96  # MHA: four d×d matrices
    assert costs.mlp_flops(2, 10, 96, cfg.resolved_mlp_hidden, "swiglu") == fl.mlp
    mlp = nn.Sequential(nn.Linear(96, 384), nn.GELU(), nn.Linear(384, 96))
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        mlp(torch.randn(3, 7, 96))
    assert costs.mlp_flops(3, 7, 96, 384, "gelu") == counter.get_total_flops() == 2 * 21 * 2 * 96 * 384


def test_gqa_saves_kv_memory_not_attention_flops() -> None:
    mha = EncoderConfig(width=1024, depth=4, heads=16)
    gqa = dataclasses.replace(mha, kv_heads=4)
    assert costs.encoder_kv_cache_bytes(gqa, 1, 4096, 2) * 4 == costs.encoder_kv_cache_bytes(mha, 1, 4096, 2)
    a, g = costs.encoder_flops(mha, 1, 4096), costs.encoder_flops(gqa, 1, 4096)
    assert a.attention == g.attention and g.qkv < a.qkv


# --------------------------------------------------------------------------- parameters: known answers and oracles


def test_vit_b16_hand_counted() -> None:
    cfg = EncoderConfig.preset("vit-b16")
    parts = costs.encoder_param_breakdown(cfg)
    assert parts["final_norm"] == 1536
    assert costs.encoder_params(cfg) - parts["final_norm"] == 12 * 7_087_872 == 85_054_464
    assert costs.encoder_params(cfg) == 85_056_000
    assert costs.encoder_params(dataclasses.replace(cfg, final_norm=False)) == 85_054_464


def test_swiglu_at_8d_over_3_matches_the_4d_mlp() -> None:
    d = 768
    gelu = costs.encoder_param_breakdown(EncoderConfig(width=d, proj_bias=False))["mlp"]
    swiglu = costs.encoder_param_breakdown(EncoderConfig(width=d, mlp="swiglu", proj_bias=False))["mlp"]
    assert swiglu == gelu  # f = 2048 = 8d/3 exactly at d = 768


@pytest.mark.parametrize(
    ("timm_name", "preset"), [("vit_tiny_patch16_224", "vit-ti16"), ("vit_base_patch16_224", "vit-b16")]
)
@pytest.mark.slow
def test_params_match_timm_vit(timm_name: str, preset: str) -> None:
    timm = pytest.importorskip("timm")
    model = timm.create_model(timm_name, pretrained=False)
    stack = sum(p.numel() for n, p in model.named_parameters() if n.startswith(("blocks.", "norm.")))
    assert costs.encoder_params(EncoderConfig.preset(preset)) == stack


@pytest.mark.slow
def test_flops_match_torch_flop_counter_on_timm_blocks() -> None:
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    timm = pytest.importorskip("timm")
    model = timm.create_model("vit_small_patch16_224", pretrained=False).eval()
    for block in model.blocks:
        block.attn.fused_attn = False  # explicit q @ kᵀ and attn @ v: the counter does not see CPU fused SDPA
    x = torch.randn(2, 197, 384)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model.norm(model.blocks(x))
    assert costs.encoder_flops(EncoderConfig.preset("vit-s16"), 2, 197).total == counter.get_total_flops()


def test_attention_flops_match_flop_counter_on_reference_attention() -> None:
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from tokenloom.encoder.attention import attention

    q, k, v = torch.randn(2, 8, 96, 32), torch.randn(2, 2, 160, 32), torch.randn(2, 2, 160, 32)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        attention(q, k, v, impl="reference")
    assert costs.attention_flops(2, 8, 96, 160, 32) == counter.get_total_flops()


ENCODER_CONFIGS = [
    pytest.param(EncoderConfig(width=96, depth=2, heads=4), id="mha-gelu-layernorm"),
    pytest.param(EncoderConfig(width=96, depth=3, heads=6, kv_heads=2, position="rope"), id="gqa-rope"),
    pytest.param(EncoderConfig(width=128, depth=2, heads=4, kv_heads=1, mlp="swiglu"), id="mqa-swiglu"),
    pytest.param(EncoderConfig(width=64, depth=2, heads=4, norm="rmsnorm", qkv_bias=False, proj_bias=False),
                 id="rmsnorm-nobias"),
    pytest.param(EncoderConfig(width=80, depth=1, heads=2, head_dim=24, mlp="swiglu", mlp_hidden=100,
                               final_norm=False, placement="post", qkv_bias=False), id="headdim-post-nofinal"),
]  # fmt: skip


@pytest.mark.parametrize("cfg", ENCODER_CONFIGS)
def test_params_and_flops_match_built_encoder(cfg: EncoderConfig) -> None:
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from tokenloom.encoder.model import Encoder

    model = Encoder(dataclasses.replace(cfg, attn_impl="reference")).eval()
    assert costs.encoder_params(cfg) == sum(p.numel() for p in model.parameters())
    x = torch.randn(2, 17, cfg.width)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(x)
    assert costs.encoder_flops(cfg, 2, 17).total == counter.get_total_flops()


def test_kv_cache_bytes_match_built_cache() -> None:
    import torch

    from tokenloom.encoder.model import Encoder

    cfg = EncoderConfig(width=96, depth=3, heads=6, kv_heads=2, causal=True)
    model = Encoder(cfg).eval()
    with torch.no_grad():
        cache = model.prefill(torch.randn(2, 11, 96))
        model.decode_step(torch.randn(2, 96), cache)
    assert cache.nbytes == costs.encoder_kv_cache_bytes(cfg, 2, 12, "fp32")
    assert cache.nbytes == costs.kv_cache_bytes(3, 2, 12, 2, 16, 4)


@settings(max_examples=10, deadline=None)
@given(cfg=configs, n=st.integers(1, 12))
def test_params_and_flops_match_built_encoder_property(cfg: EncoderConfig, n: int) -> None:
    """Any small config (MHA/GQA/MQA, gelu/swiglu, layernorm/rmsnorm, biases or not): formula == built model."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from tokenloom.encoder.model import Encoder

    model = Encoder(dataclasses.replace(cfg, attn_impl="reference")).eval()
    assert costs.encoder_params(cfg) == sum(p.numel() for p in model.parameters())
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(torch.randn(1, n, cfg.width))
    assert costs.encoder_flops(cfg, 1, n).total == counter.get_total_flops()


# --------------------------------------------------------------------------- language model

LM_CONFIGS = [
    pytest.param(dict(position="learned"), True, id="learned-tied"),
    pytest.param(dict(position="rope", kv_heads=2, mlp="swiglu"), False, id="rope-gqa-untied"),
    pytest.param(dict(position="sinusoidal", norm="rmsnorm", qkv_bias=False), True, id="sinusoidal-tied"),
]


@pytest.mark.parametrize(("fields", "tied"), LM_CONFIGS)
def test_lm_params_and_flops_match_built_model(fields: dict[str, object], tied: bool) -> None:
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from tokenloom.encoder import LanguageModel, LanguageModelConfig

    enc = EncoderConfig(width=64, depth=2, heads=4, causal=True, attn_impl="reference", **fields)  # type: ignore[arg-type]
    cfg = LanguageModelConfig(vocab_size=300, encoder=enc, context=40, tie_embeddings=tied)
    model = LanguageModel(cfg).eval()
    assert costs.lm_params(cfg) == sum(p.numel() for p in model.parameters())
    embedding = {model.embed.tok.weight, model.output_weight} | set(
        model.embed.pos.parameters() if model.embed.pos else ()
    )
    non_embedding = sum(p.numel() for p in model.parameters() if p not in embedding)
    assert costs.lm_params(cfg, embedding=False) == non_embedding == costs.encoder_params(enc)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(torch.randint(0, 300, (2, 23)))
    # the reference path multiplies every (query, key) pair, the masked half too: the dense count
    assert costs.lm_flops(cfg, 2, 23, causal=False).total == counter.get_total_flops()


def test_lm_flops_known_answers() -> None:
    from tokenloom.encoder import LanguageModelConfig

    enc = EncoderConfig(width=64, depth=2, heads=4, causal=True)
    cfg = LanguageModelConfig(vocab_size=1000, encoder=enc, context=128)
    flops = costs.lm_flops(cfg, 3, 128)
    assert flops.head == 2 * 3 * 128 * 64 * 1000
    assert flops.total == costs.encoder_flops(enc, 3, 128).total + flops.head
    assert flops.training == 3 * flops.total
    # Kaplan et al. 2020, Table 1: per token ≈ 2·(non-embedding params + de-embedding) + 2·L·n_ctx·d (causal: half)
    weights_only = 2 * (12 * 64 * 64 * 2 + 64 * 1000)
    attention = 4 * 2 * 64 * 129 / 2  # 4·L·d per attended pair, (N + 1) / 2 pairs per query on average
    assert flops.per_token == pytest.approx(weights_only + attention)
    gpt2 = LanguageModelConfig(vocab_size=50257)
    assert costs.lm_params(gpt2) == 124_439_808  # GPT-2 small with tied head (Hugging Face's count)
