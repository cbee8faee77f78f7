#!/usr/bin/env bash
# A profile candidate against the shipped profile on the GPU at hand, in one device call (repo root):
#   CAND=path/to/candidate.yaml SHIPPED=h100 SETS="llm dlrm" MODELS_JOBS="vit-l16:prefill:bf16 ..." \
#     GIT_SHA=<sha> bash benchmarks/profile_candidate.sh
# 1. tritonblas calibrate --quick --base $CAND: the fields it measures on this GPU (clock, matrix rates,
#    bandwidths, L2, launch overhead) replace the candidate's; the model terms are kept
#    -> $OUT/candidate_calibrated.yaml
# 2. benchmarks/compare.py on each set of $SETS (--limit $LIMIT shapes, --budget-s $COMPARE_S each), once with
#    $SHIPPED and once with the calibrated candidate, the order alternating by set; the dispatcher runs the
#    profile named (TRITONBLAS_PROFILE) -> $OUT/cmp_<set>_{shipped,candidate}.csv, ours and torch.matmul in
#    each run
# 3. benchmarks/models.py $MODELS_JOBS under TRITONBLAS_PROFILE=<the calibrated candidate>
#    -> $OUT/models_candidate.csv (torch and enable() alternating, as always)
set -u -o pipefail
: "${GIT_SHA:?set GIT_SHA=<the commit of the tree you send>}" "${CAND:?set CAND=<candidate profile YAML>}"
export GIT_SHA
OUT=${OUT:-benchmarks/results}
mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 TRITONBLAS_SYSTEM=1
export NUMBA_CACHE_DIR=/tmp/numba_cache TRITON_CACHE_DIR=/tmp/triton_cache
SHIPPED=${SHIPPED:-h100}
source benchmarks/_gpu.sh
gpu_report "$OUT/gpu.txt"
cal="$OUT/candidate_calibrated.yaml"
start=$(date +%s)
timeout ${CALIBRATE_TIMEOUT:-180} python3 -m tritonblas calibrate --quick --base "$CAND" -o "$cal" > "$OUT/calibrate.log" 2>&1
echo "== calibrate: rc=$? in $(( $(date +%s) - start )) s"; tail -n 15 "$OUT/calibrate.log"
[ -s "$cal" ] || { echo "no calibrated candidate: comparing the candidate as given"; cal=$CAND; }
i=0
for s in ${SETS:-llm}; do
  order=$([ $((i % 2)) = 0 ] && echo "shipped candidate" || echo "candidate shipped"); i=$((i + 1))
  for side in $order; do
    prof=$([ $side = shipped ] && echo "$SHIPPED" || echo "$cal")
    start=$(date +%s)
    TRITONBLAS_PROFILE=$prof timeout $(( ${COMPARE_S:-80} + 60 )) python3 benchmarks/compare.py --set $s --profile "$prof" \
      --sweep none --no-nvmmh --limit ${LIMIT:-0} --rep-ms ${REP_MS:-5} --workers 14 --budget-s ${COMPARE_S:-80} \
      --out "$OUT/cmp_${s}_$side.csv" > "$OUT/cmp_${s}_$side.log" 2>&1
    echo "== compare $s $side: rc=$? in $(( $(date +%s) - start )) s"; tail -n 4 "$OUT/cmp_${s}_$side.log"
  done
done
if [ -n "${MODELS_JOBS:-}" ]; then
  start=$(date +%s)
  TRITONBLAS_PROFILE=$cal timeout $(( ${MODELS_S:-150} + 60 )) python3 benchmarks/models.py --jobs $MODELS_JOBS \
    --budget-s ${MODELS_S:-150} --out "$OUT/models_candidate.csv" > "$OUT/models_candidate.log" 2>&1
  echo "== models: rc=$? in $(( $(date +%s) - start )) s"; tail -n 12 "$OUT/models_candidate.log"
fi
