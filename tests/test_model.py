"""Encoder, TextEmbed, ImageEmbed and the KV cache: shapes, masks, causality, cache equivalence and size."""

from __future__ import annotations

import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st

import tokenloom
from tokenloom.encoder import Encoder, EncoderConfig, ImageClassifier, ImageEmbed, KVCache, TextEmbed
from tokenloom.errors import ConfigError

WIDTH = 32


def small(**overrides: object) -> EncoderConfig:
    fields: dict[str, object] = {"width": WIDTH, "depth": 2, "heads": 4}
    fields.update(overrides)
    return EncoderConfig(**fields)  # type: ignore[arg-type]


def test_public_names_are_reexported() -> None:
    import tokenloom.encoder as enc

    for name in ("Encoder", "TextEmbed", "ImageEmbed", "from_timm"):
        assert getattr(tokenloom, name) is getattr(enc, name)


def test_encoder_package_import_does_not_import_torch() -> None:
    import subprocess
    import sys

    code = "import sys, tokenloom.encoder, tokenloom.encoder.config; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_encoder_forward_shape_and_width_check() -> None:
    enc = Encoder(small()).eval()
    x = torch.randn(2, 5, WIDTH)
    assert enc(x).shape == (2, 5, WIDTH)
    with pytest.raises(ValueError, match=rf"\[B, N, {WIDTH}\]"):
        enc(torch.randn(2, 5, WIDTH + 1))
    with pytest.raises(TypeError, match="EncoderConfig"):
        Encoder({"width": 32})  # type: ignore[arg-type]


def test_same_encoder_runs_text_and_image_batches() -> None:
    torch.manual_seed(0)
    enc = Encoder(small()).eval()
    text = TextEmbed(100, WIDTH, max_len=16, pad_id=0)
    image = ImageEmbed(image_size=32, patch_size=8, width=WIDTH)
    ids = torch.tensor([[5, 6, 7, 8, 9], [11, 12, 13, 0, 0]])
    images = torch.randn(3, 3, 32, 32)
    with torch.no_grad():
        img_out = enc(image(images))
        x, mask = text(ids)
        txt_out = enc(x, mask)
        assert img_out.shape == (3, 1 + 16, WIDTH)
        assert txt_out.shape == (2, 5, WIDTH)
        # no state carried between modalities: the image batch gives the same result again
        assert torch.equal(enc(image(images)), img_out)
        # padding is ignored: the padded sequence's real tokens equal the unpadded sequence alone
        alone_x, _ = text(ids[1:, :3])
        alone = enc(alone_x)
        assert torch.allclose(txt_out[1, :3], alone[0], atol=1e-5)
        # and an image's tokens do not depend on the other images in the batch
        assert torch.allclose(enc(image(images[1:2]))[0], img_out[1], atol=1e-5)


def test_text_embed_masks_from_lengths_or_pad_id_and_positions() -> None:
    text = TextEmbed(50, WIDTH, max_len=8, pad_id=1)
    ids = torch.tensor([[4, 5, 6, 1], [7, 1, 1, 1]])
    x, mask = text(ids)
    assert mask is not None and mask.shape == (2, 1, 1, 4) and mask.dtype == torch.bool
    assert mask[:, 0, 0].tolist() == [[True, True, True, False], [True, False, False, False]]
    _, by_len = text(ids, lengths=[2, 3])
    assert by_len[:, 0, 0].tolist() == [[True, True, False, False], [True, True, True, False]]
    # token embedding + learned position rows
    assert torch.allclose(x, text.tok(ids) + text.pos.weight[:, :4])
    x_late, _ = text(ids[:, :1], start=5)
    assert torch.allclose(x_late, text.tok(ids[:, :1]) + text.pos.weight[:, 5:6])
    assert TextEmbed(50, WIDTH)(ids).mask is None


def test_text_embed_errors_name_the_bad_value() -> None:
    text = TextEmbed(50, WIDTH, max_len=8)
    with pytest.raises(ValueError, match="token id 50 is outside the vocabulary"):
        text(torch.tensor([[1, 50]]))
    with pytest.raises(ValueError, match="max_len=8"):
        text(torch.zeros(1, 9, dtype=torch.long))
    with pytest.raises(ValueError, match="lengths"):
        text(torch.zeros(2, 4, dtype=torch.long), lengths=[1, 5])
    with pytest.raises(ValueError, match="integer ids"):
        text(torch.zeros(1, 4))
    with pytest.raises(ConfigError, match="pad_id=60"):
        TextEmbed(50, WIDTH, pad_id=60)
    with pytest.raises(ConfigError, match="RoPE"):
        TextEmbed(50, WIDTH, position="rope")  # type: ignore[arg-type]


def test_text_embed_sinusoidal_positions() -> None:
    from tokenloom.encoder.positions import sinusoidal_1d

    text = TextEmbed(20, WIDTH, position="sinusoidal")
    ids = torch.tensor([[3, 4, 5]])
    assert list(text.parameters()) == [text.tok.weight]
    assert torch.allclose(text(ids).x, text.tok(ids) + sinusoidal_1d(3, WIDTH))


def test_image_embed_layout_and_other_sizes() -> None:
    torch.manual_seed(0)
    image = ImageEmbed(image_size=32, patch_size=8, width=WIDTH)
    images = torch.randn(2, 3, 32, 32)
    out = image(images)
    expected_patches = image.patch_embed(images) + image.pos.weight[:, 1:]
    assert torch.allclose(out[:, 1:], expected_patches)
    assert torch.allclose(out[:, 0], (image.cls_token + image.pos.weight[:, :1])[:, 0].expand(2, -1))
    # another image size: positions are resampled to the 6 x 5 grid
    assert image(torch.randn(1, 3, 48, 40)).shape == (1, 1 + 30, WIDTH)
    with pytest.raises(ValueError, match="not divisible by patch_size=8"):
        image(torch.randn(1, 3, 30, 32))
    # ViT-B/16 sizes: 224 x 224 -> 196 patches + class token
    assert ImageEmbed()(torch.randn(1, 3, 224, 224)).shape == (1, 197, 768)


def test_image_embed_sinusoidal_without_class_token() -> None:
    from tokenloom.encoder.positions import sinusoidal_2d

    image = ImageEmbed(image_size=16, patch_size=8, width=WIDTH, class_token=False, position="sinusoidal")
    images = torch.randn(2, 3, 16, 24)
    assert torch.allclose(image(images), image.patch_embed(images) + sinusoidal_2d((2, 3), WIDTH))
    with pytest.raises(ConfigError, match="pool='avg'"):
        ImageClassifier(image, Encoder(small()), torch.nn.Identity())
    clf = ImageClassifier(image, Encoder(small()), torch.nn.Linear(WIDTH, 5), pool="avg").eval()
    assert clf(images).shape == (2, 5)


# ----------------------------------------------------------------------------- causal and KV cache

CACHE_CONFIGS = [
    small(causal=True),
    small(causal=True, position="rope", kv_heads=2),
    small(causal=True, position="rope", kv_heads=1, mlp="swiglu", norm="rmsnorm"),
    small(causal=True, placement="post", final_norm=False, qkv_bias=False, proj_bias=False),
]


@pytest.mark.parametrize("config", CACHE_CONFIGS, ids=["mha", "rope-gqa", "rope-mqa-swiglu-rms", "post"])
def test_token_by_token_decode_equals_full_causal_forward(config: EncoderConfig) -> None:
    torch.manual_seed(0)
    enc = Encoder(config).eval()
    x = torch.randn(2, 9, WIDTH)
    with torch.no_grad():
        full = enc(x)
        cache = enc.prefill(x[:, :1])
        steps = [cache.output] + [enc.decode_step(x[:, t], cache)[:, None] for t in range(1, 9)]
        stepped = torch.cat(steps, dim=1)
        diff = (stepped - full).abs().max()
        assert diff < 1e-5, diff
        # a longer prefill, then chunks of 2 tokens, gives the same too
        cache = enc.prefill(x[:, :4])
        assert torch.allclose(cache.output, full[:, :4], atol=1e-5)
        chunked = torch.cat(
            [cache.output, enc.decode_step(x[:, 4:6], cache), enc.decode_step(x[:, 6:], cache)], 1
        )
        assert (chunked - full).abs().max() < 1e-5
        assert cache.length == 9


@settings(max_examples=10, deadline=None)
@given(n=st.integers(2, 10), cut=st.integers(0, 9), seed=st.integers(0, 1000))
def test_causal_outputs_do_not_depend_on_later_tokens(n: int, cut: int, seed: int) -> None:
    cut = min(cut, n - 1)
    torch.manual_seed(seed)
    enc = Encoder(small(causal=True, position="rope")).eval()
    x = torch.randn(1, n, WIDTH)
    y = x.clone()
    y[:, cut + 1 :] = torch.randn_like(y[:, cut + 1 :])
    with torch.no_grad():
        assert torch.allclose(enc(x)[:, : cut + 1], enc(y)[:, : cut + 1], atol=1e-5)


@pytest.mark.parametrize(("dtype", "size"), [(torch.float32, 4), (torch.bfloat16, 2)])
def test_kv_cache_bytes_follow_the_formula(dtype: torch.dtype, size: int) -> None:
    config = small(causal=True, depth=3, heads=4, kv_heads=2, head_dim=8)
    enc = Encoder(config).to(dtype).eval()
    b, n = 2, 5
    with torch.no_grad():
        cache = enc.prefill(torch.randn(b, n, WIDTH, dtype=dtype))
        L, hkv, d = config.depth, config.resolved_kv_heads, config.resolved_head_dim
        assert isinstance(cache, KVCache)
        assert cache.nbytes == 2 * L * b * n * hkv * d * size
        enc.decode_step(torch.randn(b, WIDTH, dtype=dtype), cache)
        assert cache.nbytes == 2 * L * b * (n + 1) * hkv * d * size
        assert cache.layers[0].k.shape == (b, hkv, n + 1, d)


def test_cache_requires_a_causal_encoder_and_matching_shapes() -> None:
    enc = Encoder(small()).eval()
    with pytest.raises(ConfigError, match="causal=True"):
        enc.prefill(torch.randn(1, 3, WIDTH))
    causal = Encoder(small(causal=True)).eval()
    cache = causal.prefill(torch.randn(2, 3, WIDTH))
    with pytest.raises(ValueError, match="batch"):
        causal.decode_step(torch.randn(1, WIDTH), cache)
    with pytest.raises(ValueError, match="layers"):
        Encoder(small(causal=True, depth=3)).decode_step(torch.randn(2, WIDTH), cache)


def test_decode_with_text_positions_matches_full_text_forward() -> None:
    torch.manual_seed(0)
    enc = Encoder(small(causal=True)).eval()
    text = TextEmbed(30, WIDTH, max_len=10)
    ids = torch.randint(0, 30, (2, 6))
    with torch.no_grad():
        full = enc(text(ids).x)
        cache = enc.prefill(text(ids[:, :3]).x)
        outs = [cache.output]
        for t in range(3, 6):
            outs.append(enc.decode_step(text(ids[:, t : t + 1], start=t).x, cache))
        assert (torch.cat(outs, dim=1) - full).abs().max() < 1e-5


@settings(max_examples=12, deadline=None)
@given(
    depth=st.integers(1, 3),
    heads_kv=st.sampled_from([(4, 4), (4, 2), (4, 1), (2, 2)]),
    position=st.sampled_from(["rope", "none"]),
    mlp=st.sampled_from(["gelu", "swiglu"]),
    norm=st.sampled_from(["layernorm", "rmsnorm"]),
    placement=st.sampled_from(["pre", "post"]),
    n=st.integers(1, 8),
    prefill=st.integers(1, 8),
    chunk=st.integers(1, 3),
    seed=st.integers(0, 1000),
)
def test_prefill_then_chunked_decode_equals_full_causal_forward(
    depth, heads_kv, position, mlp, norm, placement, n, prefill, chunk, seed
) -> None:
    heads, kv = heads_kv
    prefill = min(prefill, n)
    torch.manual_seed(seed)
    config = small(
        depth=depth,
        heads=heads,
        kv_heads=kv,
        position=position,
        mlp=mlp,
        norm=norm,
        placement=placement,
        causal=True,
    )
    enc = Encoder(config).eval()
    x = torch.randn(2, n, WIDTH)
    with torch.no_grad():
        full = enc(x)
        cache = enc.prefill(x[:, :prefill])
        outs = [cache.output]
        for t in range(prefill, n, chunk):
            outs.append(enc.decode_step(x[:, t : t + chunk], cache))
        diff = (torch.cat(outs, dim=1) - full).abs().max()
        assert diff < 1e-5, f"max |diff| = {diff:.3g}"
        assert cache.length == n
        assert cache.nbytes == 2 * depth * 2 * n * kv * (WIDTH // heads) * 4


@pytest.mark.gpu
def test_kv_cache_decode_on_cuda_equals_full_forward() -> None:
    torch.manual_seed(0)
    enc = Encoder(small(causal=True, position="rope", kv_heads=2)).cuda().eval()
    x = torch.randn(2, 7, WIDTH, device="cuda")
    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        with torch.no_grad():
            full = enc(x)
            cache = enc.prefill(x[:, :3])
            outs = [cache.output] + [enc.decode_step(x[:, t], cache)[:, None] for t in range(3, 7)]
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved
    assert cache.layers[0].k.device.type == "cuda"
    assert (torch.cat(outs, dim=1) - full).abs().max() < 1e-4


# ----------------------------------------------------------------------------- ragged rows


def test_decode_step_on_an_empty_cache_keeps_padding_out_of_the_cache() -> None:
    torch.manual_seed(0)
    enc = Encoder(EncoderConfig(width=32, depth=1, heads=4, causal=True, position="rope")).eval()
    with torch.no_grad():
        c = enc.prefill(torch.randn(2, 0, 32))
        new, last = torch.randn(2, 3, 32), torch.randn(2, 32)
        enc.decode_step(new, c, key_lengths=torch.tensor([1, 3]))
        assert c.lengths.tolist() == [1, 3]
        out = enc.decode_step(last, c)
        alone0 = enc(torch.cat([new[:1, :1], last[:1, None]], 1))[0, -1]
        alone1 = enc(torch.cat([new[1:], last[1:, None]], 1))[0, -1]
    assert (out[0] - alone0).abs().max() < 1e-5, (out[0] - alone0).abs().max()
    assert (out[1] - alone1).abs().max() < 1e-5
    assert c.lengths.tolist() == [2, 4]


def test_cache_lengths_and_per_row_text_positions() -> None:
    enc = Encoder(small(causal=True)).eval()
    with torch.no_grad():
        cache = enc.prefill(torch.randn(2, 3, WIDTH))
        assert cache.lengths.tolist() == [3, 3]
        cache = enc.prefill(torch.randn(2, 3, WIDTH), key_lengths=torch.tensor([3, 1]))
        assert cache.lengths.tolist() == [3, 1]
    with pytest.raises(ValueError, match="prefill"):
        KVCache(2).lengths  # noqa: B018
    text = TextEmbed(10, WIDTH, max_len=8)
    ids = torch.tensor([[1, 2], [3, 4]])
    per_row = text(ids, start=torch.tensor([0, 5])).x
    assert torch.equal(per_row[0], text(ids[:1], start=0).x[0])
    assert torch.equal(per_row[1], text(ids[1:], start=5).x[0])
    with pytest.raises(ValueError, match="max_len=8"):
        text(ids, start=torch.tensor([0, 7]))
    with pytest.raises(ValueError, match=r"\[B=2\]"):
        text(ids, start=torch.tensor([0, 1, 2]))


ROWS = 3
lengths_or_none = st.none() | st.lists(st.integers(0, 3), min_size=ROWS, max_size=ROWS)


@settings(max_examples=30, deadline=None)
@given(
    position=st.sampled_from(["rope", "learned", "sinusoidal", "none"]),
    kv_heads=st.sampled_from([4, 2]),
    depth=st.integers(1, 2),
    prefill=st.integers(0, 3),
    prefill_lengths=lengths_or_none,
    steps=st.lists(st.tuples(st.integers(1, 3), lengths_or_none, st.booleans()), min_size=1, max_size=4),
    seed=st.integers(0, 1000),
)
# an empty cache, then ragged steps; a full prefill that turns ragged; a ragged prefill, then uneven steps
@pytest.mark.slow
@example("rope", 4, 1, 0, None, [(3, [1, 3, 0], False), (1, None, True)], 0)
@example("learned", 2, 2, 2, None, [(2, [2, 0, 1], False), (3, [1, 3, 2], False), (1, None, True)], 1)
@example("sinusoidal", 4, 2, 3, [3, 0, 1], [(1, None, True), (2, [0, 2, 1], False)], 2)
def test_ragged_prefill_and_decode_steps_equal_each_row_run_alone(
    position, kv_heads, depth, prefill, prefill_lengths, steps, seed
) -> None:
    """Any sequence of ragged prefill / decode_step calls: every row's real outputs equal the full causal
    forward of that row's own real tokens (RoPE in the encoder, absolute positions from TextEmbed)."""
    torch.manual_seed(seed)
    rope = position == "rope"
    enc = Encoder(small(depth=depth, kv_heads=kv_heads, causal=True, position=position)).eval()
    text = TextEmbed(50, WIDTH, max_len=32, position="none" if rope else position)
    real: list[list[int]] = [[] for _ in range(ROWS)]  # each row's real token ids so far
    got: list[tuple[int, int, torch.Tensor]] = []  # (row, position, output row)

    def record(out: torch.Tensor, ids: torch.Tensor, lengths: list[int] | None) -> None:
        for b in range(ROWS):
            for t in range(ids.shape[1] if lengths is None else min(lengths[b], ids.shape[1])):
                real[b].append(int(ids[b, t]))
                got.append((b, len(real[b]) - 1, out[b, t]))

    with torch.no_grad():
        ids = torch.randint(0, 50, (ROWS, prefill))
        lengths = None if prefill_lengths is None else [min(n, prefill) for n in prefill_lengths]
        key_lengths = None if lengths is None else torch.tensor(lengths)
        cache = enc.prefill(text(ids).x, key_lengths=key_lengths)
        assert cache.output is not None
        record(cache.output, ids, lengths)
        for t, step_lengths, single in steps:
            lengths = None if step_lengths is None else [min(n, t) for n in step_lengths]
            ids = torch.randint(0, 50, (ROWS, t))
            x = text(ids, start=cache.lengths).x  # each row continues at its own position
            if single and t == 1 and lengths is None:
                out = enc.decode_step(x[:, 0], cache)[:, None]
            else:
                key_lengths = None if lengths is None else torch.tensor(lengths)
                out = enc.decode_step(x, cache, key_lengths=key_lengths)
            record(out, ids, lengths)
        assert cache.lengths.tolist() == [len(r) for r in real]
        alone = [enc(text(torch.tensor([r])).x)[0] if r else None for r in real]
    for b, pos, row in got:
        expected = alone[b]
        assert expected is not None
        diff = (row - expected[pos]).abs().max()
        assert diff < 1e-5, f"row {b} position {pos}: max |diff| = {diff:.3g}"


@pytest.mark.gpu
def test_ragged_decode_on_cuda_takes_key_lengths_from_the_cpu() -> None:
    torch.manual_seed(0)
    enc = Encoder(small(causal=True, position="rope", kv_heads=2)).cuda().eval()
    x, nxt = torch.randn(2, 4, WIDTH, device="cuda"), torch.randn(2, 2, WIDTH, device="cuda")
    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        with torch.no_grad():
            cache = enc.prefill(x, key_lengths=torch.tensor([4, 1]))  # lengths on the CPU, model on CUDA
            out = enc.decode_step(nxt, cache, key_lengths=torch.tensor([2, 1]))
            alone = enc(torch.cat([x[1:, :1], nxt[1:, :1]], 1))[0, -1]
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved
    assert cache.lengths.tolist() == [6, 2] and cache.lengths.device.type == "cuda"
    assert (out[1, 0] - alone).abs().max() < 1e-4
