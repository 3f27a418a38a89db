"""scripts/bench_lm.py: its --cuda mode without a GPU (one line, exit 3) and the pieces its tables rest on.

(The timings themselves are not checkable in a test; the helpers are: the plain peer has the model's
parameter count, packing never splits a document, and both batchings hold every document token once.)
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def bench():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import bench_lm
    finally:
        sys.path.pop(0)
    return bench_lm


def test_cuda_mode_without_cuda_says_so_and_exits_3() -> None:
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", PYTHONPATH=str(ROOT / "src"))
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench_lm.py"), "--cuda", "--markdown"],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 3, (result.returncode, result.stdout, result.stderr)
    assert result.stdout.strip().count("\n") == 0 and "no CUDA device" in result.stdout


def test_plain_peer_has_the_models_parameters_and_gpt2_small_defaults(bench) -> None:  # type: ignore[no-untyped-def]
    from tokenloom import costs

    setup = bench.make_setup(
        bench.parse_args(["--width", "32", "--depth", "2", "--heads", "4", "--vocab", "50"])
    )
    plain = bench.PlainGPT(setup.vocab, setup.context, setup.width, setup.depth, setup.heads)
    assert sum(p.numel() for p in plain.parameters()) == costs.lm_params(setup.config)
    gpu = bench.make_setup(bench.parse_args(["--cuda"]))
    assert (gpu.width, gpu.depth, gpu.heads, gpu.context, gpu.bf16) == (768, 12, 12, 1024, True)


def test_packing_keeps_documents_whole_and_both_batchings_hold_every_token(bench) -> None:  # type: ignore[no-untyped-def]
    lengths = [5, 9, 3, 16, 1, 7, 8, 8]
    rows = bench.packed_rows(lengths, 16)
    assert [i for row in rows for i in row] == list(range(len(lengths)))
    assert all(sum(lengths[i] for i in row) <= 16 for row in rows)
    setup = bench.make_setup(bench.parse_args(["--context", "16", "--batch", "3", "--vocab", "50"]))
    for packed in (True, False):
        batches, total = bench.make_batches(lengths, setup, packed=packed)
        targets = sum(int((t != -100).sum()) for _, t, _ in batches)
        assert targets == sum(n - 1 for n in lengths)  # every next token inside a document, once
        assert total == sum(ids.numel() for ids, _, _ in batches) >= sum(lengths)
