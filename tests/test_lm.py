"""LanguageModel: packed rows equal their documents run alone, the KV cache equals recomputation, it learns.

Oracles: each document run alone through the same model (reference attention, float64) for packed rows;
greedy decoding by full recomputation (``forward`` on the whole prefix at every step) for the cache; the
cost model's ``kv_cache_bytes`` for the cache's measured size.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from tokenloom import costs
from tokenloom.encoder import EncoderConfig, LanguageModel, LanguageModelConfig
from tokenloom.encoder.lm import IGNORE_INDEX, next_token_targets
from tokenloom.encoder.positions import host_bounds, segment_positions
from tokenloom.errors import ConfigError

VOCAB = 61


def tiny(
    position: str = "learned", *, context: int = 32, tied: bool = True, **fields: object
) -> LanguageModel:
    enc = EncoderConfig(
        width=32,
        depth=2,
        heads=4,
        causal=True,
        position=position,
        **{"attn_impl": "reference", **fields},  # type: ignore[arg-type]
    )
    torch.manual_seed(0)
    return LanguageModel(
        LanguageModelConfig(vocab_size=VOCAB, encoder=enc, context=context, tie_embeddings=tied)
    )


def test_segment_positions_known_answer() -> None:
    ids = torch.tensor([[7, 7, 7, 3, 3, -1], [0, 1, 1, 1, 2, 2]])
    assert segment_positions(ids).tolist() == [[0, 1, 2, 0, 1, 0], [0, 0, 1, 2, 0, 1]]


def test_next_token_targets_stay_inside_documents() -> None:
    ids = torch.tensor([[10, 11, 12, 20, 21, 0]])
    seg = torch.tensor([[0, 0, 0, 1, 1, -1]])
    x = IGNORE_INDEX
    assert next_token_targets(ids).tolist() == [[11, 12, 20, 21, 0, x]]
    assert next_token_targets(ids, seg).tolist() == [[11, 12, x, 21, x, x]]


@pytest.mark.parametrize("position", ["learned", "sinusoidal", "rope"])
def test_packed_rows_equal_documents_run_alone(position: str) -> None:
    model = tiny(position, kv_heads=2).double().eval()
    g = torch.Generator().manual_seed(1)
    lengths = [[5, 9, 3], [11, 6]]  # documents of each row; row 1 ends in 3 padding tokens
    n = 17
    ids = torch.randint(0, VOCAB, (2, n), generator=g)
    seg = torch.full((2, n), -1)
    for row, docs in enumerate(lengths):
        start = 0
        for index, length in enumerate(docs):
            seg[row, start : start + length] = index
            start += length
    with torch.no_grad():
        packed = model(ids, segment_ids=seg)  # [2, N, V]
        worst = 0.0
        for row, docs in enumerate(lengths):
            start = 0
            for length in docs:
                alone = model(ids[row : row + 1, start : start + length])[0]  # [n, V]
                diff = (packed[row, start : start + length] - alone).abs().max().item()
                worst = max(worst, diff)
                start += length
    print(f"{position}: max |packed - alone| = {worst:.2e}")
    assert worst < 1e-10
    # the loss of the packed batch is the token-weighted mean of the documents' own losses
    with torch.no_grad():
        total, count = 0.0, 0
        for row, docs in enumerate(lengths):
            start = 0
            for length in docs:
                total += model.loss(ids[row : row + 1, start : start + length]).item() * (length - 1)
                count += length - 1
                start += length
        assert model.loss(ids, segment_ids=seg).item() == pytest.approx(total / count, rel=1e-12)


@pytest.mark.parametrize("position", ["learned", "sinusoidal", "rope"])
def test_greedy_generation_with_cache_equals_recomputation(position: str) -> None:
    model = tiny(position, tied=position != "rope").double().eval()
    prompt = torch.tensor([[3, 14, 15, 9], [2, 6, 5, 35]])
    out = model.generate(prompt, 12, temperature=0)
    ids = prompt
    with torch.no_grad():
        for _ in range(12):
            ids = torch.cat((ids, model(ids)[:, -1].argmax(-1, keepdim=True)), dim=1)
    assert torch.equal(out, ids)
    assert torch.equal(model.generate(prompt[0], 12, temperature=0), ids[0])  # [P] in, [P + T] out


def test_decode_steps_equal_forward_logits_and_cache_bytes_match_cost_model() -> None:
    model = tiny("rope", kv_heads=2).double().eval()
    ids = torch.randint(0, VOCAB, (3, 10), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        full = model(ids)  # [3, 10, V]
        logits, cache = model.prefill(ids[:, :7])
        steps = [model.decode_step(ids[:, t], cache) for t in range(7, 10)]
    torch.testing.assert_close(logits, full[:, :7], rtol=0, atol=1e-10)
    torch.testing.assert_close(torch.stack(steps, dim=1), full[:, 7:], rtol=0, atol=1e-10)
    assert cache.nbytes == costs.encoder_kv_cache_bytes(model.config.encoder, 3, 10, "fp64")
    assert cache.nbytes == costs.kv_cache_bytes(2, 3, 10, 2, 8, 8)


def test_sampling_is_seeded_and_top_k_1_is_greedy() -> None:
    model = tiny().eval()
    prompt = torch.tensor([[1, 2, 3]])
    a = model.generate(prompt, 10, temperature=1.0, seed=7)
    assert torch.equal(a, model.generate(prompt, 10, temperature=1.0, seed=7))
    assert torch.equal(model.generate(prompt, 10, top_k=1, seed=3), model.generate(prompt, 10, temperature=0))
    assert int(a.max()) < VOCAB and a.shape == (1, 13)


def test_bad_configs_and_inputs_are_refused() -> None:
    enc = EncoderConfig(width=32, depth=1, heads=4)
    with pytest.raises(ConfigError, match="causal=True"):
        LanguageModelConfig(vocab_size=10, encoder=enc)
    with pytest.raises(ConfigError, match="vocab_size"):
        LanguageModelConfig(vocab_size=0, encoder=dataclasses.replace(enc, causal=True))
    model = tiny(context=8)
    with pytest.raises(ValueError, match="context of 8"):
        model(torch.zeros(1, 9, dtype=torch.long))
    with pytest.raises(ValueError, match="at most 5 new tokens"):
        model.generate(torch.zeros(1, 3, dtype=torch.long), 6)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        model(torch.full((1, 3), VOCAB))
    with pytest.raises(ValueError, match="segment_ids"):
        model(torch.zeros(1, 3, dtype=torch.long), segment_ids=torch.zeros(1, 4, dtype=torch.long))


def test_range_checks_read_the_host_only_where_that_costs_no_sync() -> None:
    ids = torch.tensor([[3, 0, 9]])
    assert host_bounds(ids) == (0, 9)
    assert host_bounds(ids[:, :0]) is None
    assert host_bounds(ids.to("meta")) is None  # an accelerator's tensor: no host read, no stalled queue
    # the plain training path compiles into one graph: no id or position check reads the device, no
    # SDPA backend is probed, no log level is asked
    for impl in ("reference", "auto", "sdpa"):
        explained = torch._dynamo.explain(tiny(attn_impl=impl))(torch.zeros(2, 8, dtype=torch.long))
        assert explained.graph_break_count == 0, (impl, explained.break_reasons)


@pytest.mark.gpu
@pytest.mark.parametrize("packed", [False, True], ids=["rows", "packed"])
def test_a_training_step_on_cuda_never_waits_for_the_device(packed: bool) -> None:
    model = tiny(attn_impl="auto", context=64).cuda()
    ids = torch.randint(0, VOCAB, (2, 64), device="cuda")
    segments = (torch.arange(64, device="cuda") >= 20).long().expand(2, 64).contiguous() if packed else None
    targets = next_token_targets(ids, segments)

    def step() -> torch.Tensor:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model.loss(ids, targets, segment_ids=segments)
        loss.backward()
        return loss

    step()  # kernels built and chosen
    torch.cuda.set_sync_debug_mode("error")  # any host read of a device value raises
    try:
        loss = step()
    finally:
        torch.cuda.set_sync_debug_mode(0)
    assert torch.isfinite(loss).item()


def test_loss_decreases_on_a_small_text() -> None:
    text = ("the quick brown fox jumps over the lazy dog. " * 8).encode()
    data = torch.tensor(list(text))  # bytes as token ids
    enc = EncoderConfig(width=32, depth=1, heads=4, causal=True, position="rope")
    torch.manual_seed(0)
    model = LanguageModel(LanguageModelConfig(vocab_size=256, encoder=enc, context=32))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(0)
    losses = []
    for _ in range(30):
        starts = torch.randint(0, len(data) - 32, (8,), generator=g)
        batch = torch.stack([data[s : s + 32] for s in starts.tolist()])  # [8, 32]
        loss = model.loss(batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f}")
    assert losses[0] == pytest.approx(torch.log(torch.tensor(256.0)).item(), abs=0.5)
    assert sum(losses[-5:]) / 5 < 0.5 * losses[0]


def test_explicit_positions_equal_the_derived_ones_and_bad_positions_are_refused() -> None:
    model = tiny("sinusoidal").eval()
    ids = torch.randint(0, VOCAB, (2, 9), generator=torch.Generator().manual_seed(4))
    seg = torch.tensor([[0, 0, 0, 1, 1, 1, 1, 2, 2], [5, 5, 5, 5, 5, 5, -1, -1, -1]])
    with torch.no_grad():
        derived = model(ids, segment_ids=seg)
        explicit = model(ids, segment_ids=seg, positions=segment_positions(seg))
    assert torch.equal(derived, explicit)
    with pytest.raises(ValueError, match=r"positions must have shape \[N=9\]"):
        model(ids, positions=torch.arange(8))
    with pytest.raises(ValueError, match="either start or positions"):
        model.embed(ids, start=1, positions=torch.arange(9))
    with pytest.raises(ValueError, match="non-negative"):
        model(ids, positions=torch.arange(9) - 1)
