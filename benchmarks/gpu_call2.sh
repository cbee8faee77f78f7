#!/usr/bin/env bash
# One-off H200 call of session 10: tracebacks of the 17 GPU-only failures of 36cc947's suite, the
# Gluon kernel's correctness and probe after the TMA-store and raw-launch fixes, and models with and
# without TRITONBLAS_GLUON=1. Everything is tarred into $OUT/call2.tgz (the device returns 8 files).
set -u -o pipefail
W=$OUT/w; mkdir -p $W
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TRITONBLAS_SYSTEM=1 NUMBA_CACHE_DIR=/tmp/numba_cache TRITON_CACHE_DIR=/tmp/triton_cache
timeout 120 python3 -m pytest -p no:cacheprovider -q --tb=short -n 8 --timeout 110 \
  tests/dropin/test_device.py::test_bad_env_profile_error_names_the_variable tests/dropin/test_compile.py \
  tests/dropin/test_scaled_mm.py::test_bad_input_raises_what_torch_raises \
  tests/dropin/test_inductor_provider.py::test_installs_through_inductors_hooks \
  tests/kernels/test_special_values.py > $W/failed17.log 2>&1; echo "failed17 rc=$?"; tail -22 $W/failed17.log
tar czf $OUT/call2.tgz -C $W .
OUT=$W STEPS=gluon GLUON_TEST_TIMEOUT=150 GLUON_PROBE_TIMEOUT=80 SHOW_LINES=40 bash benchmarks/gpu_session.sh
tar czf $OUT/call2.tgz -C $W .
JOBS="bert-large:prefill:bf16 vit-l16:prefill:bf16 llama3.2-1b:prefill:bf16 llama3.2-1b:train:bf16"
TRITONBLAS_GLUON=1 timeout 190 python3 benchmarks/models.py --jobs $JOBS --budget-s 130 --out $W/models_gluon.csv > $W/models_gluon.log 2>&1
echo "models gluon rc=$?"; grep -v "^#" $W/models_gluon.csv | cut -d, -f1-8,16-17
tar czf $OUT/call2.tgz -C $W .
timeout 190 python3 benchmarks/models.py --jobs $JOBS --budget-s 130 --out $W/models_plain.csv > $W/models_plain.log 2>&1
echo "models plain rc=$?"; grep -v "^#" $W/models_plain.csv | cut -d, -f1-8,16-17
tar czf $OUT/call2.tgz -C $W .
