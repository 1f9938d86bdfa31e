#!/usr/bin/env bash
# The GPU checks (tests/test_gpu.py) on a machine with a CUDA GPU and PyTorch but none of our
# other dependencies and no network: installs the wheels in .whl/ (downloaded beforehand on a
# machine with network: see docs/src/parallel-evals.md, "Checked on a GPU") and this checkout
# (no dependencies fetched), then runs the GPU tests. Output: $OUT/gpu-check.log when OUT is set.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
log=${OUT:-/tmp}/gpu-check.log
{
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
    python3 -m pip install -q --no-index --no-deps --no-compile .whl/*.whl &&
        python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . || exit 1
    python3 -c "import torch, mpi4py; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())"
    PYTHONUNBUFFERED=1 timeout "${GPU_CHECK_TIMEOUT:-420}" python3 -m pytest -p no:cacheprovider \
        -v -rs tests/test_gpu.py "$@"
} 2>&1 | tee "$log"
