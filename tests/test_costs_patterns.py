"""Cost model of sparse attention patterns: attention_edges, attention_flops(pattern=), and the CLI."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tokenloom import cli, costs
from tokenloom.encoder import patterns as P
from tokenloom.errors import ConfigError


def _out(capsys: pytest.CaptureFixture[str], argv: list[str], status: int = 0) -> str:
    assert cli.main(argv) == status
    captured = capsys.readouterr()
    return captured.out if status == 0 else captured.err


def test_attention_edges_accepts_patterns_and_specs() -> None:
    assert costs.attention_edges("dense", 4096) == 4096 * 4096
    assert costs.attention_edges("causal", 4, 4) == 10  # 1 + 2 + 3 + 4
    assert costs.attention_edges("window:512", 16384) == P.window(256, 255).edges(16384)
    assert costs.attention_edges(P.global_tokens(2), 10) == 2 * 10 + 8 * 2
    assert costs.attention_edges("causal", 2, 6) == 5 + 6  # queries are the last 2 of 6 positions
    # a causal sliding window: row i sees min(i, 8) earlier keys and itself
    assert costs.attention_edges("causal&window:8,0", 100) == sum(range(1, 9)) + 92 * 9
    assert costs.attention_edges("causal&global:2", 10) == 1 + 2 + 8 * 2  # the global rows see only j ≤ p
    with pytest.raises(ConfigError, match="window:W"):
        costs.attention_edges("window", 10)
    with pytest.raises(ConfigError, match=r"invalid attention pattern 'window:0' in 'causal&window:0'"):
        costs.attention_edges("causal&window:0", 10)
    with pytest.raises(ConfigError, match="q_len"):
        costs.attention_edges("dense", -1)


def test_window_edges_grow_linearly_and_dense_quadratically() -> None:
    for n in (4096, 8192, 16384):
        w = costs.attention_edges("window:512", n)
        assert w == 512 * n - 256 * 257 // 2 - 255 * 256 // 2  # N·W less the two cut-off corners
        assert costs.attention_edges("window:512", 2 * n) - w == 512 * n  # doubling N adds N·W
        assert costs.attention_edges("dense", 2 * n) == 4 * costs.attention_edges("dense", n)


def test_attention_flops_with_pattern_is_4_b_h_d_edges() -> None:
    edges = costs.attention_edges("bigbird:192,128,3", 4096)
    assert costs.attention_flops(2, 8, 4096, 4096, 64, pattern="bigbird:192,128,3") == 4 * 2 * 8 * 64 * edges
    assert costs.attention_flops(1, 1, 64, 64, 8, pattern="dense") == costs.attention_flops(1, 1, 64, 64, 8)
    with pytest.raises(ConfigError, match="part of the pattern"):
        costs.attention_flops(1, 1, 8, 8, 8, True, pattern="window:4")


def test_cli_attention_pattern_prints_edges_flops_memory_ratio(capsys: pytest.CaptureFixture[str]) -> None:
    out = _out(capsys, ["costs", "attention", "--heads", "32", "--seq-len", "4k", "--pattern", "window:512"])
    edges = costs.attention_edges("window:512", 4096)
    assert f"edges (allowed query-key pairs): {edges:,} of {4096 * 4096:,} dense" in out
    assert "1.0 GiB dense" in out  # the lesson's score memory: 32 heads, N=4096, 2 bytes
    assert f"ratio {edges / 4096**2:.4f}" in out
    flops = costs.format_count(4 * 32 * 128 * edges)
    assert f"attention FLOPs QKᵀ + PV: {flops}" in out
    union = _out(
        capsys, ["costs", "attention", "--heads", "1", "--seq-len", "64", "--pattern", "global:2+window:8"]
    )
    assert f"{costs.attention_edges('global:2+window:8', 64):,} of 4,096" in union
    both = _out(
        capsys, ["costs", "attention", "--heads", "1", "--seq-len", "64", "--pattern", "causal&window:8,0"]
    )
    assert "pattern causal&window:8,0: N=64" in both and f"{36 + 56 * 9:,} of 4,096" in both
    try:  # a usage error (status 2), naming the spec and the accepted forms
        status = cli.main(["costs", "attention", "--heads", "1", "--seq-len", "64", "--pattern", "bogus"])
    except SystemExit as exit_:
        status = exit_.code  # type: ignore[assignment]
    assert status == 2
    assert "invalid attention pattern 'bogus'" in capsys.readouterr().err


def test_cli_sweep_patterns_table_and_chart(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    png = tmp_path / "patterns.png"
    argv = ["costs", "sweep", "--preset", "vit-b16", "--seq-len", "1k,4k", "--patterns",
            "dense,window:512,bigbird:192,128,3", "--png", str(png)]  # fmt: skip
    out = _out(capsys, argv)
    for n in (1024, 4096):
        for spec in ("dense", "window:512", "bigbird:192,128,3"):
            edges = costs.attention_edges(spec, n)
            row = re.search(rf"^{n:,}\s+{re.escape(spec)}\s+{edges:,}\s", out, re.MULTILINE)
            assert row, (n, spec, out)
    assert png.read_bytes().startswith(b"\x89PNG")
