#!/usr/bin/env bash
# One H200 session (run through the `device` tool from the repo root): GPU test suite, kernel
# performance check, a calibration sweep and the demo. Everything lands in $OUT.
#   STEPS="tests kernel sweep demo" SWEEP_ARGS="--set calib --max-configs 48" bash benchmarks/gpu_session.sh
set -u -o pipefail
OUT=${OUT:-benchmarks/results}
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TRITONBLAS_SYSTEM=1
export NUMBA_CACHE_DIR=/tmp/numba_cache TRITON_CACHE_DIR=/tmp/triton_cache
STEPS=${STEPS:-"tests kernel sweep demo"}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv | tee "$OUT/gpu.txt"
python3 -c "import torch, triton, numba, numpy; print('torch', torch.__version__, 'triton', triton.__version__, 'numba', numba.__version__, 'numpy', numpy.__version__)" | tee -a "$OUT/gpu.txt"
for step in $STEPS; do
  start=$(date +%s)
  case $step in
    tests)  timeout ${TESTS_TIMEOUT:-240} python3 -m pytest tests -q -n 8 --timeout 240 -p no:cacheprovider ${TEST_ARGS:-} 2>&1 | tail -n 60 > "$OUT/pytest.log" ;;
    kernel) timeout ${KERNEL_TIMEOUT:-200} python3 benchmarks/kernel_check.py --out "$OUT" --budget-s ${KERNEL_BUDGET:-150} 2>&1 | tail -n 80 > "$OUT/kernel_check.log" ;;
    sweep)  timeout ${SWEEP_TIMEOUT:-200} python3 benchmarks/sweep.py ${SWEEP_ARGS:---set calib --max-configs 48} --out "$OUT/sweep.csv" 2>&1 | tail -n 40 > "$OUT/sweep.log" ;;
    dispatch) timeout ${DISPATCH_TIMEOUT:-120} python3 benchmarks/bench_dispatch.py --out "$OUT/bench_dispatch.csv" 2>&1 | tail -n 40 > "$OUT/dispatch.log" ;;
    demo)   timeout ${DEMO_TIMEOUT:-120} python3 -m tritonblas demo --profile h200 2>&1 | tail -n 60 > "$OUT/demo.log" ;;
    *) python3 $step 2>&1 | tail -n 80 > "$OUT/$(basename $step).log" ;;
  esac
  echo "== $step: rc=$? in $(( $(date +%s) - start )) s"; tail -n ${SHOW_LINES:-25} "$OUT/$( [ $step = tests ] && echo pytest || echo $step ).log" 2>/dev/null
done
