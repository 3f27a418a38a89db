#!/usr/bin/env bash
# One command for a GPU machine: the gpu-marked tests, the attention benchmark, then the language-model
# benchmark (GPT-2 small's shape, bf16, model FLOP utilisation).
#
#   scripts/gpu_check.sh [--quick]     (from the repository root; PYTHON=... to choose the interpreter)
#
# Exit status: 0 when every gpu test passed and both benchmarks ran, ours within the attention error bound;
# 1 on any test or benchmark failure; 3 when no CUDA device is visible (one line says so; nothing ran).
# Budget: under 6 minutes on one H200 (measured there: tests 1 min, attention 1.5 min, --quick 1 min;
# language model 1 min).
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python}"
export PYTHONPATH="${PWD}/src${PYTHONPATH:+:$PYTHONPATH}"

if ! "$PYTHON" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    echo "gpu_check: no CUDA device is visible (or torch is missing): nothing was checked (exit 3)"
    exit 3
fi
"$PYTHON" -c 'import torch, triton; print("gpu_check:", torch.cuda.get_device_name(), "torch", torch.__version__, "triton", triton.__version__)'

status=0
# only the modules that hold gpu tests: collecting all of them would need every dev extra installed
mapfile -t gpu_tests < <(grep -l "mark.gpu" tests/test_*.py)
if [ "${#gpu_tests[@]}" -eq 0 ]; then
    echo "gpu_check: no test module holds a gpu test (grep 'mark.gpu' tests/test_*.py found none)"
    exit 1
fi
timeout 240 "$PYTHON" -m pytest -q -m gpu -p no:cacheprovider "${gpu_tests[@]}" || status=1
timeout 360 "$PYTHON" scripts/bench_attention_gpu.py --markdown "$@" || status=1
timeout 240 "$PYTHON" scripts/bench_lm.py --cuda --markdown || status=1
if [ "$status" -ne 0 ]; then
    echo "gpu_check: FAILED (see above)"
fi
exit "$status"
