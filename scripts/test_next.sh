#!/usr/bin/env bash
# CI's second, shorter lane: the newest torch on the package index and the triton it pins, every
# other dependency unpinned within pyproject's ranges, running the kernels under the interpreter and
# the ops tests. API drift is handled in tritonblas/_compat.py.
#
# torch: $NEXT_TORCH (default 2.15.0, the newest release on the index, 2026-12-01; torch 2.15 pins
# triton ~=3.9.0). This machine's pip configuration (/etc/xdg/pip) caps torch at the releases on its
# disk (2.14.1); the lane reads no pip configuration file (PIP_CONFIG_FILE=/dev/null) so that it
# takes the newest release from the index. It is the CUDA build run on the CPU: the CPU-only builds
# are not on the reachable index. Cost measured 2026-12-01 on the 2-core machine: torch 2.15.0 with
# its CUDA libraries installed in 92 s (5 GB), tritonblas and the test tools in 11 s; tests 87 s.
# Also the AMD compile census (tests/benchmarks/test_amd_census.py: compiles for gfx942/gfx950 and
# checks origami's LDS, register and remap rules against this Triton; gfx950's LDS rule follows the
# release, origami/toolchain.py). Left out: tests/kernels/test_fuzz.py (the 300-case hypothesis
# fuzz, 51 s of one worker; the pinned lane runs it).
set -uo pipefail
cd "$(dirname "$0")/.."
PY=.venv-next/bin/python
if [ ! -x "$PY" ]; then python3 -m venv .venv-next || exit 1; fi
export PIP_CONFIG_FILE=/dev/null
"$PY" -m pip install -q --disable-pip-version-check "torch==${NEXT_TORCH:-2.15.0}" || exit 1
"$PY" -m pip install -q --disable-pip-version-check -e ".[kernels]" pytest pytest-xdist pytest-timeout hypothesis \
    || exit 1
"$PY" -c "import torch, triton, numpy, numba; print('next lane:', *(f'{m.__name__} {m.__version__}' for m in (torch, triton, numpy, numba)))" \
    || exit 1
NUMBA_CACHE_DIR="${NUMBA_CACHE_DIR:-$PWD/.numba_cache_next}" "$PY" -m pytest -q -n 2 -p no:cacheprovider \
    tests/kernels tests/dropin/test_ops_matmul.py tests/dropin/test_ops_addmm_linear.py tests/dropin/test_ops_errors.py \
    tests/benchmarks/test_amd_census.py --ignore tests/kernels/test_fuzz.py "$@"
rc=$?
if [ $rc -eq 5 ]; then echo "next lane: no tests were collected: failing" >&2; exit 1; fi
exit $rc
