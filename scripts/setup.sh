#!/usr/bin/env bash
# Create .venv (if absent) and install tritonblas with the exact versions CI uses.
# On a machine where torch/triton are already installed system-wide (the H200 image), set
# TRITONBLAS_SYSTEM=1 to skip the venv and run from the source tree.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${TRITONBLAS_SYSTEM:-0}" = 1 ]; then exit 0; fi
if [ ! -x .venv/bin/python ]; then python3 -m venv .venv; fi
# torch is installed first and explicitly: `pip install torch==2.13.0` takes the local CPU build,
# while a loose torch requirement resolved from nothing would pull a multi-GB CUDA build.
.venv/bin/python -m pip install -q --disable-pip-version-check torch==2.13.0 -c constraints-ci.txt
.venv/bin/python -m pip install -q --disable-pip-version-check -c constraints-ci.txt -e ".[kernels,test]"
