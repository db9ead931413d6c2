#!/usr/bin/env bash
# Runs the GPU tests on a machine with an NVIDIA GPU: installs CuPy into the
# test venv, checks CuPy sees a device, and runs tests/runtime/test_gpu.py
# (which skip only when no GPU is visible) and the GPU tutorial notebook, which
# must then take its GPU branch.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/venv.sh dev
.venv/bin/python -m pip install -q "cupy-cuda12x"
.venv/bin/python -c "import cupy; n = cupy.cuda.runtime.getDeviceCount(); print('GPUs:', n); assert n > 0"
NBCLUSTER_EXPECT_GPU=1 exec .venv/bin/python -m pytest -q -rs tests/runtime/test_gpu.py \
  "tests/notebooks/test_notebooks.py::test_notebook_runs_and_shows_what_it_says[06_gpu_placement]" "$@"
