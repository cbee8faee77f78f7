#!/usr/bin/env bash
# CI's second, shorter lane: the newest torch this machine can install and the triton pip resolves
# for it, every other dependency unpinned within pyproject's ranges, running the kernels under the
# interpreter and the ops tests. API drift is handled in tritonblas/_compat.py.
#
# torch: $NEXT_TORCH (default 2.14.1, the newest release pip may take here: /etc/xdg/pip caps it,
# and it lies on this disk with its CUDA libraries). It is the CUDA build run on the CPU: the
# CPU-only builds are not on the reachable index. triton is what torch pins (2.14.1: ~=3.8.0).
# Cost measured 2026-12-01 on the 2-core CI machine: venv ~80 s (56 MB downloaded, the rest from
# disk; 5.4 GB installed), tests 77 s with the fuzz (~25 s less without it); with another test
# suite running beside it, the whole lane took 289 s.
# Left out: tests/kernels/test_fuzz.py (the 300-case hypothesis fuzz, 51 s of one worker; the
# pinned lane runs it) and tests/kernels/test_amd_census.py, which compiles for gfx942/gfx950 and
# checks the LDS and register rules origami fits to the pinned compiler (Triton 3.6): on Triton 3.8,
# gfx950 allocates stages x (A + B) + padding instead (CHANGELOG, issue 22), a model question, not
# API drift.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=.venv-next/bin/python
if [ ! -x "$PY" ]; then python3 -m venv .venv-next || exit 1; fi
"$PY" -m pip install -q --disable-pip-version-check "torch==${NEXT_TORCH:-2.14.1}" || exit 1
"$PY" -m pip install -q --disable-pip-version-check -e ".[kernels]" pytest pytest-xdist pytest-timeout hypothesis \
    || exit 1
"$PY" -c "import torch, triton, numpy, numba; print('next lane:', *(f'{m.__name__} {m.__version__}' for m in (torch, triton, numpy, numba)))" \
    || exit 1
NUMBA_CACHE_DIR="${NUMBA_CACHE_DIR:-$PWD/.numba_cache_next}" "$PY" -m pytest -q -n 2 -p no:cacheprovider \
    tests/kernels tests/dropin/test_ops_matmul.py tests/dropin/test_ops_addmm_linear.py tests/dropin/test_ops_errors.py \
    --ignore tests/kernels/test_amd_census.py --ignore tests/kernels/test_fuzz.py "$@"
rc=$?
if [ $rc -eq 5 ]; then echo "next lane: no tests were collected: failing" >&2; exit 1; fi
exit $rc
