#!/usr/bin/env bash
# One H200 session (run through the `device` tool from the repo root). Everything lands in $OUT.
#   STEPS="tests serial dispatch calibrate compare" GIT_SHA=<sha> bash benchmarks/gpu_session.sh
# Steps:
#   tests     the whole suite in parallel (-n $TESTS_WORKERS, 14: 208 s on the H200 at 78339a9), minus the timing-sensitive files run by `serial`
#   serial    two-GPU checks and calibrate --quick, one at a time (timings undisturbed)
#   kernel    benchmarks/kernel_check.py (our kernels vs torch on the issue-4 shapes)
#   sweep     benchmarks/sweep.py $SWEEP_ARGS (default: the calib set, 48 configs per shape); with
#             --jobs the CSVs go to benchmarks/data/<profile>/ (resumed there) and come back in sweep_data.tgz
#   dispatch  benchmarks/bench_dispatch.py (host overhead, plan-miss cost)
#   calibrate python -m tritonblas calibrate --fit on the calib sweep -> $OUT/h200_calibrated.yaml
#   compare   benchmarks/compare.py $COMPARE_ARGS (needs the nvMMH wheel in .whl/, carried)
#   compares  compare.py over whole shape sets, one process per GPU in parallel: the sets of
#             $COMPARE_SETS0 on GPU 0, $COMPARE_SETS1 on GPU 1 (one deadline, $COMPARE_BUDGET s);
#             CSVs and logs tarred into $OUT/compares.tgz; $COMPARE_EXTRA is passed to every compare.py
#             (e.g. "--nvmmh-k 1 --gluon": nvMMH's top-1 and the Gluon kernel's column)
#   models    benchmarks/models.py $MODELS_ARGS (real models, torch vs enable()) -> $OUT/models_$GPU_TAG$MODELS_SUFFIX.csv ($GPU_TAG: h100, h200, ... from the GPU's name; $MODELS_ENV: variables for the run)
#   inductor  benchmarks/inductor_compare.py $INDUCTOR_ARGS (compile time + speed: default, max-autotune, origami provider)
#   fp8       benchmarks/scaled_mm_compare.py $FP8_ARGS (tritonblas.scaled_mm vs torch._scaled_mm) -> $OUT/scaled_mm_$GPU_TAG.csv
#   fp8_gluon scaled_mm_compare.py: the Triton pick with --fast-accum, and gluon_scaled_mm (TRITONBLAS_GLUON=1)
#             with and without it -> $OUT/fp8_gluon.tgz
#   fp8_promote  scaled_mm_compare.py on origami's Triton fp8 pick promoted every 32 / 128 of K and with fast
#             accumulation (--promote-k, --fast-accum) -> $OUT/fp8_promote.tgz
#   gluon     the experimental Gluon kernel (tritonblas/kernels/gluon_hopper.py): its sm_90 compile census,
#             its GPU correctness test (opt-in, TRITONBLAS_TEST_GLUON=1; a hang fails, per variant) and
#             benchmarks/gluon_probe.py (vs torch.matmul and tritonblas.matmul) -> $OUT/gluon_*.{jsonl,log,csv};
#             then benchmarks/gluon_host.py (host time per call) and gluon_ksweep.py (CUDA-graph times by K and grid)
#   gluon_models  models.py --gluon: torch, enable() and enable() with TRITONBLAS_GLUON=1 (plain 2-D GEMMs
#             and F.linear's bias add on the Gluon kernel: dispatch.gluon_eligible) alternating in one run
#             -> $OUT/models_gluon.csv
#   decode    the decode GEMMs of models.py's LLMs (benchmarks/shapes/decode.yaml, F.linear's K-major weight), cold L2:
#             sweep.py --timer cold into benchmarks/data/<profile>_cold/decode.csv (resumable, $DECODE_SWEEP_BUDGET s,
#             default 240; $DECODE_PROFILE, default the GPU's) -> $OUT/decode_data.tgz, then compare.py --timer cold:
#             ours, that sweep's best re-timed and torch per shape -> $OUT/compare_decode_$GPU_TAG.csv
#   retime    benchmarks/sweep.py --rows $RETIME_JOBS --retime: suspect recorded rows removed and timed again in full
#             -> $OUT/retime_data.tgz
#   training  the training sets' sampled sweep (the pick + uniform draws, $TRAINING_CONFIGS a shape) for the GPU's own
#             profile into benchmarks/data/<profile>/, resumable ($TRAINING_BUDGET s) -> $OUT/training_data.tgz
#   decode_probe  decode-shaped tiles outside origami's space on our kernels (benchmarks/decode_probe.py), cold L2, after
#             the decode step: their sweep -> $OUT/decode_probe_data.tgz, the best-tile table of both sweeps ->
#             $OUT/decode_best_$GPU_TAG.json, compare.py re-timing the fastest of both -> $OUT/compare_decode_probe_$GPU_TAG.csv,
#             then models.py's CUDA-graph decode rows ($PROBE_MODELS) with that table on the versus side ($PROBE_MODELS_BUDGET s,
#             default 200; 0 skips) -> $OUT/models_decode_best_$GPU_TAG.csv
#   train_gemms  compare.py on benchmarks/shapes/train.yaml (every GEMM of models.py's gpt2-medium, bert-large and
#             llama3.2-1b training steps, forward and backward layouts): ours vs torch -> $OUT/compare_train_$GPU_TAG.csv
#   vendor    benchmarks/vendor_times.py: torch's own GEMM time on every training and held-out shape
#             (the drop-in's ours-or-torch rule is fitted on it) -> benchmarks/data/h200_vendor{,_heldout}/torch.csv,
#             back in $OUT/vendor_data.tgz (resumable: commit it)
#   heldout   the held-out split's exhaustive sweeps (issue 19) under torchrun on every GPU, resumable
#             ($HELDOUT_PROFILE, default h200: the profile whose picks and <profile>_heldout/ data; h100 on an H100)
#             (rows already in benchmarks/data/h200_heldout/ are kept; every rank stops starting shapes
#             after $HELDOUT_BUDGET s, default 480, and the rows are merged; configs over
#             $HELDOUT_SCREEN x the shape's best, default 1.5, get sweep.py's quick time); then the
#             missing-picks report; the CSVs come back in $OUT/heldout_data.tgz (commit them to resume)
#   ws_sweep  the warp-specialised kernel (kind 'ws') on the training sweeps: sweep.py --rows on the job file of
#             benchmarks/ws_jobs.py (its 'ws' candidates + each shape's 3 fastest recorded configs, re-timed) with
#             the probe profile it writes -> benchmarks/data/h200_ws/*.csv, back in $OUT/ws_data.tgz; first the
#             'ws' route's GPU test (tests/dropin/test_ws_route_gpu.py)
#   ws_cold   the same for the cold-L2 sweeps: ws_jobs.py --cold's job (h200_cold -> h200_cold_ws) with --timer cold,
#             back in $OUT/ws_cold_data.tgz
#   repick    time the training sweeps' missing picks (benchmarks/missing_picks.py: origami.select()'s pick and,
#             with $REPICK_VARIANTS, e.g. "splitk_range_reads=1 staged_spill_rule=1" (set and empty: none), the picks of terms fitted
#             but not switched on), each with every config its shape already timed, in one run: the warm job, then
#             the cold-L2 one (--timer cold), under torchrun on every GPU, resumable ($REPICK_BUDGET s each,
#             default 240) -> benchmarks/data/*_repick/ ($REPICK_LEAN K: each pick with its shape's K fastest recorded
#             configs only, -> benchmarks/data/*_lean/), back in $OUT/repick_data.tgz; merge on the CPU with
#             missing_picks.py --apply
#   spill     the sm_90 census's spilling configs on $SPILL_PROFILE's (default h100) ragged training shapes, untimed there
#             (benchmarks/spill_jobs.py), beside each shape's timed configs -> benchmarks/data/<profile>_repick/, back in
#             $OUT/spill_data.tgz (resumable: commit it; merge with missing_picks.py --apply)
#   timeline  benchmarks/host_linear.py --timeline/--split $TIMELINE_MODELS (where eager decode's time goes)
#   train_host  benchmarks/host_linear.py --train $TRAIN_MODELS (a training step's host split: forward/backward
#             wall, host us per forward GEMM, triton_launches, descriptor re-encodes, a cProfile of ours)
#   demo      python -m tritonblas demo --profile h200
# Each step has its own timeout (env *_TIMEOUT) and log ($OUT/<step>.log); a step's failure does not
# stop the next.
set -u -o pipefail
# the device tree's git metadata is not the tree that was sent (session 11 recorded the session's first
# commit for later trees): every CSV's provenance comes from GIT_SHA, so it must be given
# (a commit's hex: a placeholder would stand in every CSV's provenance)
if ! [[ "${GIT_SHA:-}" =~ ^[0-9a-f]{7,40}$ ]]; then
  echo "gpu_session.sh: set GIT_SHA=<the commit of the tree you send>, 7-40 hex digits (got '${GIT_SHA:-}';" \
       "benchmarks/_harness.git_sha reads it)" >&2
  exit 2
fi
# the device copy's .git is the last landing, not the tree sent: GIT_SHA=$(git rev-parse HEAD) evaluated there names
# that commit (session 26's first run recorded b85bee9 for a9897a8's tree); a sha equal to this copy's HEAD while the
# tracked files differ from it is that mistake
if head=$(git rev-parse HEAD 2>/dev/null) && [[ "$head" == "$GIT_SHA"* ]] && ! git diff --quiet HEAD -- . 2>/dev/null; then
  echo "gpu_session.sh: GIT_SHA=$GIT_SHA is this copy's git HEAD, but the tracked files differ from it: this is not" \
       "the commit of the tree sent; paste the sha from the machine that sent it (git rev-parse HEAD there)" >&2
  exit 2
fi
export GIT_SHA
OUT=${OUT:-benchmarks/results}
mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 TRITONBLAS_SYSTEM=1
export NUMBA_CACHE_DIR=/tmp/numba_cache TRITON_CACHE_DIR=/tmp/triton_cache
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=$PYTHONPATH:/tmp/site
fi
STEPS=${STEPS:-"tests serial"}
# timing-sensitive GPU tests (bandwidth, sharded-vs-single sweep timings) run alone in `serial`
SERIAL="tests/dropin/test_multi_gpu.py tests/cli/test_calibrate_gpu.py::test_calibrate_quick_writes_a_plausible_profile"
# the device gets the tree without .git: the floors-history test needs the history (CI has it)
IGNORE="--ignore=tests/benchmarks/test_floors_history.py --ignore=tests/dropin/test_multi_gpu.py --deselect=tests/cli/test_calibrate_gpu.py::test_calibrate_quick_writes_a_plausible_profile"
source benchmarks/_gpu.sh
: > "$OUT/gpu.txt"; gpu_report "$OUT/gpu.txt"
# the part in result names (the device tool may answer an H200 call with an H100); the steps that write
# benchmarks/data/h200* (sweep, heldout, repick, vendor) refuse another part themselves (sweep.py --any-gpu)
GPU_TAG=$(gpu_name | grep -o -i -E "[HB][0-9]00|MI[0-9]{3}X?" | head -1 | tr 'A-Z' 'a-z')
GPU_TAG=${GPU_TAG:-gpu}
python3 -c "import torch, triton, numba, numpy; print('torch', torch.__version__, 'triton', triton.__version__, 'numba', numba.__version__, 'numpy', numpy.__version__, 'gpus', torch.cuda.device_count())" | tee -a "$OUT/gpu.txt"
for step in $STEPS; do
  start=$(date +%s)
  log="$OUT/$step.log"
  # a second models run in one call (MODELS_SUFFIX) keeps its own log, as it keeps its own CSV
  [ $step = models ] && log="$OUT/models${MODELS_SUFFIX:-}.log"
  case $step in
    tests)     timeout ${TESTS_TIMEOUT:-420} python3 -m pytest tests -q -n ${TESTS_WORKERS:-14} --timeout 400 -p no:cacheprovider $IGNORE ${TEST_ARGS:-} > "$log" 2>&1 ;;
    serial)    timeout ${SERIAL_TIMEOUT:-420} python3 -m pytest $SERIAL -m gpu -q -rs --timeout 400 -p no:cacheprovider -s > "$log" 2>&1 ;;
    kernel)    timeout ${KERNEL_TIMEOUT:-200} python3 benchmarks/kernel_check.py --out "$OUT" --budget-s ${KERNEL_BUDGET:-150} > "$log" 2>&1 ;;
    sweep)     timeout ${SWEEP_TIMEOUT:-200} python3 benchmarks/sweep.py ${SWEEP_ARGS:---set calib --max-configs 48 --out "$OUT/sweep.csv"} > "$log" 2>&1
               tar czf "$OUT/sweep_data.tgz" benchmarks/data/*/*.csv ;;  # --jobs write there: all of it comes back
    dispatch)  timeout ${DISPATCH_TIMEOUT:-150} python3 benchmarks/bench_dispatch.py --out "$OUT/bench_dispatch.csv" > "$log" 2>&1 ;;
    calibrate) timeout ${CALIBRATE_TIMEOUT:-240} python3 -m tritonblas calibrate ${CALIBRATE_ARGS:---base h200 --fit benchmarks/data/h200/calib.csv} -o "$OUT/h200_calibrated.yaml" > "$log" 2>&1 ;;
    compare)   timeout ${COMPARE_TIMEOUT:-420} python3 benchmarks/compare.py ${COMPARE_ARGS:---set calib --budget-s 380} --out "$OUT/compare.csv" > "$log" 2>&1 ;;
    compares)  end=$(( $(date +%s) + ${COMPARE_BUDGET:-400} )); mkdir -p "$OUT/cmp"
               for g in 0 1; do
                 sets=$([ $g = 0 ] && echo "${COMPARE_SETS0:-llm skinny longk square}" || echo "${COMPARE_SETS1:-grid dlrm}")
                 ( for s in $sets; do
                     left=$(( end - $(date +%s) )); [ $left -gt 5 ] || break
                     name=${s%%:*}; dt=$([ "$name" = "$s" ] || echo "--dtype ${s#*:}")   # SET or SET:DTYPE
                     CUDA_VISIBLE_DEVICES=$g timeout $(( left + 60 )) python3 benchmarks/compare.py --set $name $dt \
                       --limit ${COMPARE_LIMIT:-0} \
                       --rep-ms ${COMPARE_REP_MS:-5} --workers 14 --budget-s $left ${COMPARE_EXTRA:-} \
                       --out "$OUT/cmp/compare_${s/:/_}.csv"
                   done ) > "$OUT/cmp/compare_gpu$g.log" 2>&1 &
               done
               wait; tar czf "$OUT/compares.tgz" -C "$OUT" cmp && rm -rf "$OUT/cmp"; echo done > "$log" ;;
    models)    # MODELS_ENV (e.g. TRITONBLAS_EAGER_MIN_GFLOP=20): the process's environment, so the "ours" side runs
               # under it (the CSV's provenance records it); MODELS_SUFFIX keeps a second run's CSV apart
               env ${MODELS_ENV:-} timeout ${MODELS_TIMEOUT:-420} python3 benchmarks/models.py ${MODELS_ARGS:-} \
                 --budget-s ${MODELS_BUDGET:-360} --out "$OUT/models_$GPU_TAG${MODELS_SUFFIX:-}.csv" > "$log" 2>&1 ;;
    inductor)  timeout ${INDUCTOR_TIMEOUT:-420} python3 benchmarks/inductor_compare.py ${INDUCTOR_ARGS:-} --out "$OUT/inductor_$GPU_TAG.csv" > "$log" 2>&1 ;;
    fp8)       timeout ${FP8_TIMEOUT:-300} python3 benchmarks/scaled_mm_compare.py ${FP8_ARGS:-} --out "$OUT/scaled_mm_$GPU_TAG.csv" > "$log" 2>&1 ;;
    fp8_gluon) # the fp8 questions of issue 18: origami's Triton pick with fast accumulation (how much does
               # the promotion every 32 of K cost?), and gluon_scaled_mm (TRITONBLAS_GLUON=1) with and without it
               { mkdir -p "$OUT/f8"
                 timeout 120 python3 benchmarks/scaled_mm_compare.py --fast-accum --out "$OUT/f8/triton_fast.csv"
                 TRITONBLAS_GLUON=1 timeout 120 python3 benchmarks/scaled_mm_compare.py --out "$OUT/f8/gluon.csv"
                 TRITONBLAS_GLUON=1 timeout 120 python3 benchmarks/scaled_mm_compare.py --fast-accum --out "$OUT/f8/gluon_fast.csv"
                 tar czf "$OUT/fp8_gluon.tgz" -C "$OUT" f8 && rm -rf "$OUT/f8"
               } > "$log" 2>&1 ;;
    fp8_promote) # issue 18: what the promotion interval of origami's Triton fp8 kernel costs: every 32 of K
               # (the shipped plan._FP8_PROMOTE_K), every 128 (CUTLASS's), and never (fast accumulation)
               { mkdir -p "$OUT/fp"
                 for pk in 32 128 fast; do
                   timeout ${FP8_PROMOTE_TIMEOUT:-110} python3 benchmarks/scaled_mm_compare.py --rep-ms 10 \
                     $([ $pk = fast ] && echo --fast-accum || echo --promote-k $pk) --out "$OUT/fp/triton_$pk.csv"
                 done
                 tar czf "$OUT/fp8_promote.tgz" -C "$OUT" fp && rm -rf "$OUT/fp"
               } > "$log" 2>&1 ;;
    gluon)     { timeout 120 python3 tests/kernels/_gluon_compile.py > "$OUT/gluon_compile.jsonl" 2>&1
                 TRITONBLAS_TEST_GLUON=1 timeout ${GLUON_TEST_TIMEOUT:-300} python3 -m pytest -m gpu \
                   tests/kernels/test_gluon_hopper_gpu.py tests/dropin/test_gluon_route.py -n 4 -rs -p no:cacheprovider \
                   > "$OUT/gluon_gpu_test.log" 2>&1
                 echo "gpu test rc=$?"
                 timeout ${GLUON_PROBE_TIMEOUT:-280} python3 benchmarks/gluon_probe.py --out "$OUT/gluon_probe.csv"
                 timeout 90 python3 benchmarks/gluon_host.py
                 timeout 150 python3 benchmarks/gluon_ksweep.py
               } > "$log" 2>&1 ;;
    gluon_models)  # models.py --gluon: torch, origami's picks and TRITONBLAS_GLUON=1 alternating in one run
               { timeout ${GLUON_MODELS_TIMEOUT:-420} python3 benchmarks/models.py --gluon \
                   ${MODELS_ARGS:---jobs llama3.2-1b:prefill:bf16 bert-large:prefill:bf16 vit-l16:prefill:bf16 llama3.2-1b:train:bf16} \
                   --budget-s ${GLUON_MODELS_BUDGET:-360} --out "$OUT/models_gluon.csv"
               } > "$log" 2>&1 ;;
    decode)    # the decode GEMMs of models.py's LLMs (benchmarks/shapes/decode.yaml: F.linear's K-major weight), cold L2
               # as a decode step reads its weights: the space's sweep (resumable; DECODE_CONFIGS=0, the default: every
               # candidate), then ours (the drop-in's pick) against that sweep's best and torch in one run (compare.py)
               { dp=${DECODE_PROFILE:-$GPU_TAG}; dcsv=benchmarks/data/${dp}_cold/decode.csv
                 timeout $(( ${DECODE_SWEEP_BUDGET:-240} + 90 )) python3 benchmarks/sweep.py --set decode --profile $dp \
                   --timer cold --max-configs ${DECODE_CONFIGS:-0} --rep-ms 3 \
                   --budget-s ${DECODE_SWEEP_BUDGET:-240} --out $dcsv
                 echo "sweep rc=$?"; tar czf "$OUT/decode_data.tgz" $dcsv
                 timeout $(( ${DECODE_COMPARE_BUDGET:-120} + 90 )) python3 benchmarks/compare.py --set decode --profile $dp \
                   --timer cold --rep-ms 3 --no-nvmmh --sweep $dcsv --budget-s ${DECODE_COMPARE_BUDGET:-120} \
                   --out "$OUT/compare_decode_$GPU_TAG.csv"
                 echo "compare rc=$?"
               } > "$log" 2>&1 ;;
    retime)    # re-time suspect recorded rows (benchmarks/sweep.py --rows $RETIME_JOBS --retime: removed, then timed in full;
               # default benchmarks/data/jobs_heldout/h100_retime.csv, h100's held-out llm pick recorded at one screened quick
               # time; job files of held-out shapes live under a *_heldout folder, which no fit reads)
               # -> $OUT/retime_data.tgz (the job file's output CSVs)
               { rj=${RETIME_JOBS:-benchmarks/data/jobs_heldout/h100_retime.csv}
                 # the profile whose data the job re-times ($RETIME_PROFILE, default h100, the default job's): sweep.py
                 # refuses a GPU that profile does not name, so an H200 leaves the H100's file as it is
                 timeout 300 python3 benchmarks/sweep.py --rows $rj --retime --profile ${RETIME_PROFILE:-h100} --rep-ms 10
                 echo "sweep rc=$?"; tar czf "$OUT/retime_data.tgz" $(python3 -c "import csv,sys; print(' '.join(sorted({r['out'] for r in csv.DictReader(open(sys.argv[1]))})))" $rj)
               } > "$log" 2>&1 ;;
    training)  # the training sets' sampled sweep for the GPU's own profile ($TRAINING_PROFILE, default $GPU_TAG): the
               # model's pick plus uniform draws over the space ($TRAINING_CONFIGS a shape, default 32), warm timer,
               # into benchmarks/data/<profile>/ (resumable, $TRAINING_BUDGET s, default 400) -> $OUT/training_data.tgz:
               # training data for that profile's terms (the H100 had only the decode set, session 29); TRAINING_ARGS
               # adds sweep.py options (e.g. --also-pick mn_major_tile_cost=2: a candidate term's picks in the sample)
               { tp=${TRAINING_PROFILE:-$GPU_TAG}
                 timeout $(( ${TRAINING_BUDGET:-400} + 90 )) python3 benchmarks/sweep.py \
                   --jobs ${TRAINING_SETS:-llm skinny longk dlrm grid square ragged} --profile $tp \
                   --max-configs ${TRAINING_CONFIGS:-32} --rep-ms 3 --budget-s ${TRAINING_BUDGET:-400} ${TRAINING_ARGS:-}
                 echo "sweep rc=$?"; tar czf "$OUT/training_data.tgz" benchmarks/data/$tp
               } > "$log" 2>&1 ;;
    decode_probe)  # decode-shaped tiles outside origami's space (benchmarks/decode_probe.py: BLOCK_N 16-64, BLOCK_K to
               # 512, on the existing dp and split-K kernels), cold L2, after the decode step's sweep: the probe's rows
               # (resumable, $PROBE_BUDGET s, default 200) -> $OUT/decode_probe_data.tgz; the tile table of each shape's
               # fastest row over both sweeps -> $OUT/decode_best_$GPU_TAG.json (for models.py under TRITONBLAS_TABLE);
               # then compare.py re-timing the fastest of both sweeps beside ours and torch -> $OUT/compare_decode_probe_$GPU_TAG.csv
               { dp=${DECODE_PROFILE:-$GPU_TAG}; dcsv=benchmarks/data/${dp}_cold/decode.csv
                 pcsv=benchmarks/data/${dp}_probe/decode.csv
                 python3 benchmarks/decode_probe.py --profile $dp --out-jobs /tmp/decode_probe_jobs.csv
                 timeout $(( ${PROBE_BUDGET:-200} + 90 )) python3 benchmarks/sweep.py --rows /tmp/decode_probe_jobs.csv \
                   --profile $dp --timer cold --rep-ms 3 --budget-s ${PROBE_BUDGET:-200}
                 echo "sweep rc=$?"; tar czf "$OUT/decode_probe_data.tgz" $pcsv
                 python3 benchmarks/decode_probe.py --profile $dp --best-table "$OUT/decode_best_$GPU_TAG.json" \
                   --merged /tmp/decode_merged.csv $dcsv $pcsv
                 timeout $(( ${DECODE_COMPARE_BUDGET:-90} + 90 )) python3 benchmarks/compare.py --set decode --profile $dp \
                   --timer cold --rep-ms 3 --no-nvmmh --sweep /tmp/decode_merged.csv --budget-s ${DECODE_COMPARE_BUDGET:-90} \
                   --out "$OUT/compare_decode_probe_$GPU_TAG.csv"
                 echo "compare rc=$?"
                 if [ "${PROBE_MODELS_BUDGET:-200}" -gt 0 ]; then  # the decode steps with that table (models.py's versus side)
                   timeout $(( ${PROBE_MODELS_BUDGET:-200} + 60 )) python3 benchmarks/models.py \
                     --jobs ${PROBE_MODELS:-llama3.2-1b:decode_graph:bf16 llama3-8b:decode_graph:bf16} \
                     --versus-table "$OUT/decode_best_$GPU_TAG.json" --budget-s ${PROBE_MODELS_BUDGET:-200} \
                     --job-timeout-s 240 --out "$OUT/models_decode_best_$GPU_TAG.csv"
                   echo "models rc=$?"
                 fi
               } > "$log" 2>&1 ;;
    train_gemms)  # every GEMM of models.py's training steps as the aten layer runs it (benchmarks/shapes/train.yaml, forward
               # and backward layouts: benchmarks/gemm_census.py --problems): ours vs torch per shape, do_bench
               timeout $(( ${TRAIN_GEMMS_BUDGET:-150} + 120 )) python3 benchmarks/compare.py --set train --profile $GPU_TAG \
                 --sweep none --no-nvmmh --rep-ms ${TRAIN_GEMMS_REP_MS:-10} --budget-s ${TRAIN_GEMMS_BUDGET:-150} \
                 --out "$OUT/compare_train_$GPU_TAG.csv" > "$log" 2>&1 ;;
    vendor)    { timeout $(( ${VENDOR_BUDGET:-200} + 60 )) python3 benchmarks/vendor_times.py --budget-s ${VENDOR_BUDGET:-200}
                 echo "vendor rc=$?"; tar czf "$OUT/vendor_data.tgz" benchmarks/data/h200_vendor benchmarks/data/h200_vendor_heldout
               } > "$log" 2>&1 ;;
    heldout)   { hp=${HELDOUT_PROFILE:-h200}  # another GPU's profile (h100): its own <profile>_heldout/ data
                 timeout $(( ${HELDOUT_BUDGET:-480} + 90 )) python3 -m torch.distributed.run --standalone --nproc-per-node gpu \
                   benchmarks/sweep.py --heldout --profile $hp --rep-ms ${HELDOUT_REP_MS:-3} --screen ${HELDOUT_SCREEN:-1.5} \
                   --budget-s ${HELDOUT_BUDGET:-480} ${HELDOUT_ARGS:-}
                 echo "sweep rc=$?"; python3 benchmarks/missing_picks.py --profile $hp
                 tar czf "$OUT/heldout_data.tgz" benchmarks/data/${hp}_heldout
               } > "$log" 2>&1 ;;
    ws_sweep)  { timeout 200 python3 -m pytest -m gpu tests/dropin/test_ws_route_gpu.py tests/dropin/test_ws_route.py -q -rs \
                   -p no:cacheprovider
                 timeout $(( ${WS_BUDGET:-400} + 60 )) python3 -m torch.distributed.run --standalone --nproc-per-node gpu \
                   benchmarks/sweep.py --rows benchmarks/data/ws_jobs.csv --profile benchmarks/data/h200_ws/h200_ws_probe.yaml \
                   --rep-ms ${WS_REP_MS:-3} --budget-s ${WS_BUDGET:-400}
                 echo "sweep rc=$?"; tar czf "$OUT/ws_data.tgz" benchmarks/data/h200_ws
               } > "$log" 2>&1 ;;
    ws_cold)   { timeout $(( ${WS_BUDGET:-400} + 60 )) python3 -m torch.distributed.run --standalone --nproc-per-node gpu \
                   benchmarks/sweep.py --rows benchmarks/data/ws_jobs_cold.csv --profile benchmarks/data/h200_ws/h200_ws_probe.yaml \
                   --rep-ms ${WS_REP_MS:-3} --timer cold --budget-s ${WS_BUDGET:-400}
                 echo "sweep rc=$?"; tar czf "$OUT/ws_cold_data.tgz" benchmarks/data/h200_cold_ws
               } > "$log" 2>&1 ;;
    repick)    # default variant: model.mn_major_tile_cost=2 (chosen on training rows, off until its picks are
               # timed: benchmarks/results/mn_major_cost_h200_*.txt): 2 picks, 67 warm rows. Session 17's
               # combined terms (terms_combined_repicked_h200_*.txt) have every pick timed since session 18.
               # $REPICK_PROFILE (default h200): the profile whose sweeps and picks (h100: on an H100)
               { vars=""; for v in ${REPICK_VARIANTS-mn_major_tile_cost=2 k_iter_overhead_ns=3.7552,tile_overhead_ns=605.02,splitk_fixup_read_efficiency=0.7,staged_load_exponent=0.34 unaligned_penalty=5.5545,staged_load_exponent=1.15}; do vars="$vars --variant $v"; done
                 # the job files stay out of $OUT: the device tool brings back 8 files at most
                 # $REPICK_LEAN K (default 0): each pick with its shape's K fastest recorded configs only (the lean job,
                 # benchmarks/data/*_lean/: 3.8x fewer rows at K = 8 for h200's candidates G and M)
                 jobs=$(mktemp -d); python3 benchmarks/missing_picks.py --profile ${REPICK_PROFILE:-h200} $vars --lean ${REPICK_LEAN:-0} -o "$jobs/repick_jobs.csv" --cold-output "$jobs/repick_jobs_cold.csv"
                 for job in repick_jobs repick_jobs_cold; do
                   [ "$(wc -l < "$jobs/$job.csv")" -gt 1 ] || { echo "$job: no rows"; continue; }
                   timer=$([ $job = repick_jobs_cold ] && echo "--timer cold" || true)
                   timeout $(( ${REPICK_BUDGET:-240} + 60 )) python3 -m torch.distributed.run --standalone --nproc-per-node gpu \
                     benchmarks/sweep.py --rows "$jobs/$job.csv" --profile ${REPICK_PROFILE:-h200} --rep-ms ${REPICK_REP_MS:-3} $timer --budget-s ${REPICK_BUDGET:-240}
                   echo "$job: sweep rc=$?"
                 done
                 tar czf "$OUT/repick_data.tgz" $(ls -d benchmarks/data/*_repick benchmarks/data/*_lean 2>/dev/null)
               } > "$log" 2>&1 ;;
    spill)     # the census's spilling configs on a training sweep's unaligned shapes (benchmarks/spill_jobs.py, CPU,
               # $SPILL_PROFILE default h100, its ragged.csv), beside each shape's timed configs, into
               # benchmarks/data/<profile>_repick/ (resumable, $SPILL_BUDGET s, default 240) -> $OUT/spill_data.tgz;
               # merge on the CPU with missing_picks.py --apply
               { jobs=$(mktemp -d); python3 benchmarks/spill_jobs.py --profile ${SPILL_PROFILE:-h100} -o "$jobs/spill_jobs.csv"
                 timeout $(( ${SPILL_BUDGET:-240} + 60 )) python3 -m torch.distributed.run --standalone --nproc-per-node gpu \
                   benchmarks/sweep.py --rows "$jobs/spill_jobs.csv" --profile ${SPILL_PROFILE:-h100} --rep-ms 3 --budget-s ${SPILL_BUDGET:-240}
                 echo "spill: sweep rc=$?"
                 tar czf "$OUT/spill_data.tgz" benchmarks/data/*_repick
               } > "$log" 2>&1 ;;
    timeline)  { timeout 200 python3 benchmarks/host_linear.py --timeline ${TIMELINE_MODELS:-llama3.2-1b} --out "$OUT"
                 timeout 240 python3 benchmarks/host_linear.py --split ${SPLIT_MODELS:-bert-large llama3.2-1b}
               } > "$log" 2>&1 ;;
    train_host) timeout ${TRAIN_HOST_TIMEOUT:-240} python3 benchmarks/host_linear.py --train ${TRAIN_MODELS:-llama3.2-1b} > "$log" 2>&1 ;;
    demo)      timeout ${DEMO_TIMEOUT:-120} python3 -m tritonblas demo --profile h200 > "$log" 2>&1 ;;
    *)         python3 $step > "$OUT/$(basename $step).log" 2>&1 ;;
  esac
  echo "== $step: rc=$? in $(( $(date +%s) - start )) s"
  tail -n ${SHOW_LINES:-25} "$log" 2>/dev/null
done
