#!/usr/bin/env bash
# Quick start, command 1: set up and run the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
PY=.venv/bin/python; [ "${TRITONBLAS_SYSTEM:-0}" = 1 ] && PY=python3
exec "$PY" -m tritonblas demo "$@"
