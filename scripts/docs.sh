#!/usr/bin/env bash
# Build (not deploy) the documentation site into build/site: mkdocs-material + mkdocstrings (API
# reference from the docstrings, read statically: nothing is imported). --strict: a warning fails.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
PY=.venv/bin/python; [ "${TRITONBLAS_SYSTEM:-0}" = 1 ] && PY=python3
"$PY" -m pip install -q --disable-pip-version-check -c constraints-ci.txt -e ".[docs]"
NO_MKDOCS_2_WARNING=1 "$PY" -m mkdocs build --strict
