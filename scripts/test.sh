#!/usr/bin/env bash
# Quick start, command 2: set up and run the whole test suite (CPU: kernels via TRITON_INTERPRET=1).
# pytest exit code 5 ("no tests collected") is a failure here, never a silent pass.
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh || exit 1
PY=.venv/bin/python; [ "${TRITONBLAS_SYSTEM:-0}" = 1 ] && PY=python3
"$PY" -m pytest -n 2 "$@"
rc=$?
if [ $rc -eq 5 ]; then echo "no tests were collected: failing" >&2; exit 1; fi
exit $rc
