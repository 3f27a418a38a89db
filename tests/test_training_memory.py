"""training_memory() against the bytes autograd actually saves; grouped weight bytes; `costs train`."""

from __future__ import annotations

import pytest
import torch

from tokenloom import cli, costs
from tokenloom.encoder.config import EncoderConfig
from tokenloom.encoder.model import Encoder
from tokenloom.errors import ConfigError


def _saved_activation_bytes(model: torch.nn.Module, x: torch.Tensor) -> tuple[int, torch.Tensor]:
    """Bytes of every distinct storage autograd saves for backward in one forward, parameters excluded."""
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    storages: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in params:
            storages[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = model(x)
    return sum(storages.values()), out


@pytest.mark.parametrize(
    ("impl", "attention", "mlp"),
    [("reference", "materialized", "gelu"), ("tiled", "flash", "gelu"), ("tiled", "flash", "swiglu")],
)
def test_activation_estimate_matches_saved_tensors(impl: str, attention: str, mlp: str) -> None:
    torch.manual_seed(0)
    cfg = EncoderConfig(width=64, depth=2, heads=4, mlp=mlp, attn_impl=impl)  # type: ignore[arg-type]
    model = Encoder(cfg)
    batch, tokens = 3, 65
    x = torch.randn(batch, tokens, cfg.width, requires_grad=True)
    measured, out = _saved_activation_bytes(model, x)
    out.square().mean().backward()  # one full training step's backward works on what was saved
    estimate = costs.training_memory(cfg, batch, tokens, "fp32", attention=attention)  # type: ignore[arg-type]
    ratio = estimate.activations / measured
    print(f"{impl}/{mlp}: estimated {estimate.activations} B, saved {measured} B, ratio {ratio:.4f}")
    assert 0.9 <= ratio <= 1.1
    if attention == "materialized":
        assert estimate.scores == 2 * 3 * batch * 4 * tokens * tokens * 4  # L · 3 buffers · B·H·N² · 4 B
    else:
        assert estimate.scores == 0


def test_training_memory_parts() -> None:
    cfg = EncoderConfig.preset("vit-b16")
    mem = costs.training_memory(cfg, 1, 197, "fp32")
    assert mem.parameters == costs.encoder_params(cfg) * 4 == 340_224_000
    assert mem.gradients == mem.parameters and mem.optimizer == 2 * mem.parameters
    assert costs.training_memory(cfg, 1, 197, "fp32", optimizer="sgd").optimizer == 0
    assert costs.training_memory(cfg, 1, 197, "fp32", optimizer="momentum").optimizer == mem.parameters
    assert mem.total == mem.parameters * 4 + mem.activations
    double = costs.training_memory(cfg, 2, 197, "fp32")
    assert double.activations == 2 * mem.activations  # activations grow with the batch, weights do not
    flash = costs.training_memory(cfg, 1, 4096, "bf16")
    full = costs.training_memory(cfg, 1, 4096, "bf16", attention="materialized")
    assert full.scores == 12 * 3 * costs.score_bytes(1, 12, 4096, 4096, "bf16")  # the N² term, every layer
    ckpt = costs.training_memory(cfg, 1, 4096, "bf16", checkpointing=True)
    assert ckpt.activations < flash.activations / 5
    with pytest.raises(ConfigError, match="optimizer"):
        costs.training_memory(cfg, 1, 197, optimizer="lion")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="attention"):
        costs.training_memory(cfg, 1, 197, attention="paged")  # type: ignore[arg-type]


def test_weight_bytes_include_group_scales() -> None:
    assert (
        costs.weight_bytes(70e9, "int4", group_size=128, scale_dtype="fp16") == 35_000_000_000 + 1_093_750_000
    )
    assert costs.weight_bytes(70e9, dtype="int4") == 35_000_000_000  # no groups: no scales
    assert costs.weight_bytes(129, "int4", group_size=128, scale_dtype="fp32") == 65 + 2 * 4  # 2 groups
    bits = costs.weight_bytes(128 * 1000, "int4", group_size=128, scale_dtype="fp16") * 8 / (128 * 1000)
    assert bits == 4.125
    with pytest.raises(ConfigError, match="group_size"):
        costs.weight_bytes(1000, "int4", group_size=0)


def test_cli_costs_train(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["costs", "train", "--preset", "vit-b16", "--batch", "8", "--bytes"]) == 0
    text = capsys.readouterr().out
    mem = costs.training_memory(EncoderConfig.preset("vit-b16"), 8, 197, "fp32")
    assert f"total {mem.total} 100.0%" in " ".join(text.split())
    assert "optimizer state" in text and "N=197" in text
    assert cli.main(["costs", "train", "--width", "64", "--depth", "2", "--heads", "4", "--seq-len", "1k",
                     "--attention", "materialized", "--dtype", "bf16"]) == 0  # fmt: skip
    assert "∝N² (scores)" in capsys.readouterr().out
