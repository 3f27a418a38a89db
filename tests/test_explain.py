"""``tokenloom explain``: each lesson's --json output holds the lesson's numbers."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tokenloom import cli, costs

SRC = Path(__file__).resolve().parent.parent / "src"


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    assert cli.main(["explain", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _close(got: list[float], want: list[float], tol: float = 5e-5) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert math.isclose(g, w, abs_tol=tol), (got, want)


def test_attention_default_walkthrough(capsys: pytest.CaptureFixture[str]) -> None:
    r = _json(capsys, "attention")
    row = r["row"]
    _close(row["dot_products"], [1.0, 0.0])
    _close(row["scaled_scores"], [0.7071, 0.0])
    _close(row["weights"], [0.6698, 0.3302])
    _close(row["weighted_values"][0], [1.3395, 0.0])
    _close(row["weighted_values"][1], [0.0, 1.3210])
    _close(row["output"], [1.3395, 1.3210])
    assert math.isclose(r["scale"], 1 / math.sqrt(2))


def test_attention_without_scaling_and_with_causal_mask(capsys: pytest.CaptureFixture[str]) -> None:
    r = _json(capsys, "attention", "--no-scale")
    _close(r["row"]["weights"], [0.7311, 0.2689])
    _close(r["row"]["output"], [1.4621, 1.0758])
    r = _json(capsys, "attention", "--causal")
    _close(r["weights"][0], [1.0, 0.0])
    _close(r["output"][0], [2.0, 0.0])
    assert r["scaled_scores"][0][1] == "-inf"


def test_attention_equal_scores_and_doubled_values(capsys: pytest.CaptureFixture[str]) -> None:
    r = _json(capsys, "attention", "--q", "0,0", "--k", "1,0;0,1", "--v", "2,0;0,4")
    _close(r["row"]["weights"], [0.5, 0.5])
    _close(r["row"]["output"], [1.0, 2.0])  # equal scores average the values
    doubled = _json(capsys, "attention", "--v", "4,0;0,8")
    _close(doubled["row"]["output"], [2 * 1.3395, 2 * 1.3210], tol=2e-4)


def test_attention_random_tokens_and_picture(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    png = tmp_path / "weights.png"
    r = _json(capsys, "attention", "--n", "5", "--d", "8", "--seed", "3", "--query", "4", "--png", str(png))
    assert len(r["weights"]) == 5
    for row in r["weights"]:
        assert math.isclose(sum(row), 1.0, abs_tol=1e-12)
    out = [sum(w * v[c] for w, v in zip(r["row"]["weights"], r["v"], strict=True)) for c in range(8)]
    _close(r["row"]["output"], out, tol=1e-12)
    assert png.read_bytes().startswith(b"\x89PNG")
    assert cli.main(["explain", "attention", "--query", "9"]) == 2
    assert "out of range" in capsys.readouterr().err


def test_rope_score_depends_on_the_gap_only(capsys: pytest.CaptureFixture[str]) -> None:
    r = _json(capsys, "rope")
    assert math.isclose(r["score"], 0.7071, abs_tol=5e-5)
    by_shift = {x["shift"]: x for x in r["shifts"]}
    assert by_shift[4]["positions"] == [5, 6]
    for x in r["shifts"]:
        assert math.isclose(x["score"], 0.7071, abs_tol=5e-5)
    gaps = {x["gap"]: x["score"] for x in r["gaps"]}
    _close([gaps[1], gaps[2], gaps[4]], [0.7071, 0.0, -1.0])
    for row in r["table"]["scores"]:
        _close(row, [0.7071, 0.0, -1.0])
    r = _json(capsys, "rope", "--positions", "0,3", "--shifts", "0,7", "--gaps", "3")
    _close([x["score"] for x in r["shifts"]], [math.cos(3 * math.pi / 4)] * 2)


def test_complexity_counts_and_pictures(capsys: pytest.CaptureFixture[str]) -> None:
    r = _json(capsys, "complexity")
    rows = {(x["n"], x["pattern"]): x for x in r["rows"]}
    assert set(rows) == {
        (n, p) for n in (1024, 4096, 16384) for p in ("dense", "causal", "window:256", "bigbird:192,128,3")
    }
    dense = rows[4096, "dense"]
    assert dense["edges"] == 4096**2
    assert dense["dense_score_bytes"] == 32 * 2**20  # one head, N=4096, 2 bytes: 32 MiB
    assert rows[16384, "causal"]["edges"] == 16384 * 16385 // 2
    for (n, spec), x in rows.items():
        assert x["edges"] == costs.attention_edges(spec, n)
        assert x["flops"] == 4 * 64 * x["edges"]
        assert x["ratio_to_dense"] == x["edges"] / n**2
    assert rows[16384, "window:256"]["ratio_to_dense"] < 0.02 < rows[1024, "window:256"]["ratio_to_dense"]
    assert r["pictures"] == []  # no pictures above N = 32
    r = _json(capsys, "complexity", "--n", "6", "--patterns", "causal,window:3")
    causal, window = r["pictures"]
    assert causal["mask"] == ["#.....", "##....", "###...", "####..", "#####.", "######"]
    assert window["mask"][2] == ".###.."


def test_scaling_variance_grows_with_d(capsys: pytest.CaptureFixture[str]) -> None:
    r = _json(capsys, "scaling", "--dims", "4,64,1024")
    for x in r["rows"]:
        assert abs(x["var_qk"] / x["d"] - 1) < 0.15, x  # var(q·k) ≈ d
        assert abs(x["var_qk_scaled"] - 1) < 0.15, x  # var(q·k/√d) ≈ 1
        assert x["max_weight_scaled"] < x["max_weight_unscaled"]
    big = r["rows"][-1]
    assert big["max_weight_unscaled"] > 0.8  # unscaled softmax at d=1024 is nearly one-hot
    assert big["max_weight_scaled"] < 0.3


def test_pitfalls(capsys: pytest.CaptureFixture[str]) -> None:
    r = _json(capsys, "pitfalls")
    a, p, z = r["mask_after_softmax"], r["mask_polarity"], r["all_masked"]
    _close(a["masked_after"], [0.6698, 0.0])
    assert math.isclose(a["row_sum"], 0.6698, abs_tol=5e-5)
    _close(a["masked_before"], [1.0, 0.0])
    _close(a["output_right"], [2.0, 0.0])
    _close(p["tokenloom_output"], [2.0, 0.0])
    _close(p["mha_same_tensor_output"], [0.0, 4.0])  # the same tensor read as True = ignore
    _close(p["mha_converted_output"], [2.0, 0.0])
    assert z["naive_softmax"] == ["nan", "nan"]
    _close(z["tokenloom_weights"], [0.0, 0.0])
    _close(z["tokenloom_output"], [0.0, 0.0])


def test_text_output_shows_the_steps(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["explain", "attention"]) == 0
    out = capsys.readouterr().out
    assert "3. softmax weights:" in out and "[0.6698, 0.3302]" in out
    assert "5. output Σ_j w_j·v_j:" in out and "[1.3395, 1.3210]" in out


def test_help_imports_no_torch() -> None:
    code = "import sys; from tokenloom import cli; cli.build_parser(); print('torch' in sys.modules)"
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert result.stdout.strip() == "False"
