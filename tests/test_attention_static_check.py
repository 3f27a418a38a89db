"""scripts/triton_static_check.py: the Triton kernels compile for sm_90 and sm_80 without spills, within
shared memory, and with tensor-core instructions (``wgmma`` / ``mma``), on CPU with Triton's compiler.

CI compiles every kernel × tuning row × mask variant × dtype for both architectures, as
``python scripts/triton_static_check.py --arch sm_90 sm_80`` does (396 kernels; about 1.5 minutes on two
cores with a warm Triton cache, a few more cold).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "triton_static_check.py"
KEYS = {"kernel", "arch", "config", "registers", "spill_bytes", "shared_bytes", "tensor_cores"}


def _load_script():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("triton_static_check", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["triton_static_check"] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


def test_problems_flag_spills_shared_memory_and_missing_tensor_cores() -> None:
    check = _load_script()
    ok = {"kernel": "attn_fwd", "arch": "sm_90", "config": "bf16 D128 full plain M128-N64-w8-s2",
          "registers": 184, "spill_bytes": 0, "shared_bytes": 98304, "tensor_cores": True}  # fmt: skip
    assert check.problems(ok) == []
    assert "spills 8 bytes" in check.problems({**ok, "spill_bytes": 8})[0]
    assert "shared memory" in check.problems({**ok, "shared_bytes": 240 * 1024})[0]
    assert "shared memory" in check.problems({**ok, "arch": "sm_80", "shared_bytes": 200 * 1024})[0]
    assert "wgmma" in check.problems({**ok, "tensor_cores": False})[0]
    fp32 = {**ok, "config": "fp32 D64 full plain M32-N32-w4-s2", "tensor_cores": False}
    assert check.problems(fp32) == [], "exact fp32 products have no tensor-core form"
    assert "does not compile" in check.problems({**ok, "error": "ptxas failed"})[0]


def test_every_table_row_is_scheduled_for_both_architectures() -> None:
    from tokenloom.encoder.attention import tuning

    check = _load_script()
    todo = check.jobs(["sm_90", "sm_80"], None, None)
    for kernel, table in (("attn_fwd", tuning.FORWARD), ("attn_bwd_dq", tuning.BACKWARD_DQ),
                          ("attn_bwd_dkdv", tuning.BACKWARD_DKDV)):  # fmt: skip
        for (d, dtype, _), rows in table.items():
            for _, config in rows:
                for arch in ("sm_90", "sm_80"):
                    assert any(j.kernel == kernel and j.arch == arch and j.d == d and j.dtype == dtype
                               and j.block_m == config.block_m and j.variant == "plain" for j in todo)  # fmt: skip


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton is not installed")
def test_every_kernel_compiles_clean_for_sm90_and_sm80() -> None:
    check = _load_script()
    env = dict(os.environ, PYTHONPATH=str(SCRIPT.parent.parent / "src"))
    env.pop("TRITON_INTERPRET", None)
    args = ["--json", "--arch", "sm_90", "sm_80", "--jobs", "2"]
    result = subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=1800
    )
    rows = json.loads(result.stdout)
    assert rows and all(set(row) >= KEYS for row in rows), rows[:1]
    assert {row["arch"] for row in rows} == {"sm_90", "sm_80"}
    assert {row["kernel"] for row in rows} == {"attn_fwd", "attn_bwd_dq", "attn_bwd_dkdv"}
    assert {row["config"].split()[0] for row in rows} == {"bf16", "fp16", "fp32"}
    assert all(row["tensor_cores"] for row in rows if not row["config"].startswith("fp32"))
    bad = [
        (row["kernel"], row["arch"], row["config"], problem)
        for row in rows
        for problem in check.problems(row)
    ]
    assert not bad, f"kernels that spill, fail, overflow shared memory or lack tensor cores: {bad}"
    assert result.returncode == 0, result.stderr[-2000:]
