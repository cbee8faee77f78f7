#!/usr/bin/env bash
# One device call, whatever GPU the device tool gives (sessions 20-21 asked for an H200 and got H100s):
#   GIT_SHA=<sha> bash benchmarks/device_plan.sh          (TOTAL=<s> the seconds the call may take, default 555)
# H200: the repick of the candidate profile terms ($REPICK_VARIANTS, default candidate G below;
#   REPICK_BUDGET=0 skips it), the ragged training set's sampled sweep ($RAGGED_BUDGET s, 0 skips it), then the
#   held-out split's exhaustive sweeps ($HELDOUT_ARGS, default the unfinished tf32, fp8 and square files) with the
#   seconds left (issue 19).
#   H200 data is only ever written on an H200: sweep.py refuses another GPU.
# GIT_SHA: the literal sha, pasted from this machine (`git rev-parse HEAD` here): the device copy's .git is the
#   last landing, not the tree sent, so $(git rev-parse HEAD) inside the device command records the wrong commit
#   (session 26's first run did).
# Any other GPU with OTHER_HELDOUT=<its profile>: the held-out split's sweeps for that profile (bf16 files first).
# REPICK_H100=1 first, whatever else runs (an H100): $REPICK_VARIANTS_H100's untimed h100 training picks (default
#   candidate E, shipped in h100.yaml since session 31: nothing left to time; gpu_session's repick).
# RETIME=1 first, whatever else runs: gpu_session's retime step (suspect recorded rows timed again in full).
# Any GPU with SPILL=1 (before all of the branches below): gpu_session's spill step ($SPILL_PROFILE's ragged set).
# Any GPU with TRAINING=1 (before all of the branches below but SPILL): the training sets' sampled sweep for its own profile.
# Any GPU with DECODE_PROBE=1 (before all of the branches below but TRAINING): the decode GEMMs' cold sweep, then tiles outside
#   the space, the best-tile table and CUDA-graph decode with it (gpu_session.sh's decode and decode_probe steps).
# Any GPU with MODEL_GEMMS=1 (before all of the branches below but DECODE_PROBE): the training steps' GEMMs, ours vs torch
#   (gpu_session.sh's train_gemms), then the decode GEMMs' cold sweep and ours vs its best vs torch (its decode step).
# Any other GPU otherwise: the whole suite, then real models with the device's own profile ($MODELS_ARGS; by default
#   eager decode first, then the training rows, the prefills, CUDA-graph decode, ViT-L/16 and Llama-3-8B prefill
#   (issue 16), with the seconds left. The vendor-aligned rule is the default on NVIDIA GPUs since session 37, so the
#   `aligned` side (--aligned) would repeat ours: add it with MODELS_ENV=TRITONBLAS_VENDOR_ALIGNED=0 to time the rule
#   against its absence in one run.
# MODELS=1 takes that last branch (suite, then real models) on an H200 too (issue 16's targets are the H200's).
# SUITE=1 runs the whole suite first in the branches above that do not; SUITE=0 skips it in the last one.
# Every step is benchmarks/gpu_session.sh's; the results land in $OUT as they do there.
# Suggested order (session 33's closing note): on an H200, the default branch (candidates G's and M's repick, then
#   the held-out sweeps; again until their picks are all timed: 82 picks; the lean job (REPICK_LEAN, default 8 here:
#   each pick with its shape's 8 fastest recorded configs) has 513 warm and 225 cold rows, the full one 1941 and 841;
#   keep REPICK_BUDGET x 2 + 120 under TOTAL, the repick's data is tarred at its end),
#   then MODELS=1, then SPILL=1 SPILL_PROFILE=h200 (the H200's own spilling rows, 7 ragged shapes); on an H100
#   (session 34 timed h100's repick and 7 of its 18 held-out fp8 shapes), OTHER_HELDOUT=h100 HELDOUT_ARGS="--jobs
#   fp8_e4m3" (7 of 18) or "--jobs tf32" (7 of 18; the large shapes take 130-280 s each),
#   or MODELS=1, or TRAINING=1 TRAINING_SETS="llm:fp16 grid:fp16:60" (the H100 has no fp16 training sweep).
# Session 34: the unaligned tf32/fp8 training set (benchmarks/shapes/unaligned.yaml): 6 of 24 fp8 shapes swept on an
#   H100 (h100.yaml's fp8_spill_traffic_limit was chosen on them); more on an H100 with TRAINING=1
#   TRAINING_SETS="unaligned:fp8_e4m3 unaligned:tf32" TRAINING_CONFIGS=40 TRAINING_ARGS="--also-pick
#   mn_major_tile_cost=0 fp8_spill_traffic_limit=0" (resumable; large unaligned fp8 shapes take 40-100 s each with
#   the 40-59x spilling configs in the sample), then spill_slowdown.py --choose --param fp8_spill_traffic_limit.
# Session 35 (H100: held-out fp8 and tf32 complete, the unaligned training set complete for fp8 and tf32, the suite
#   2291 passed at 0a691ac); session 36 timed the fp8 census's split-K picks on an H100 (RETIME_JOBS=
#   benchmarks/data/jobs/h100_fp8_splitk_census.csv) and shipped the rows: held-out fp8 on the H100 0.853 / 0.741.
#   Session 36 also shipped h100.yaml's narrow_load_exponent 0.1878 (two rounds of its moved training picks timed).
#   Cheapest H200 gain in reach (session 36, CPU): candidate M alone, 2 training picks, 67 rows (about a minute):
#   GIT_SHA=<sha> STEPS=repick REPICK_PROFILE=h200 REPICK_VARIANTS=mn_major_tile_cost=2 REPICK_BUDGET=60 bash
#   benchmarks/gpu_session.sh; then missing_picks.py --profile h200 --apply and `term_eval.py --profile h200 --set
#   mn_major_tile_cost=2`: the H200's held-out tf32 (7 of 18 recorded) would read 0.853 / 0.670 -> 0.925 / 0.833.
# Session 37 (H200 at 635e95f): the suite (2300 passed), models (7 workloads), candidate G+M's 82 picks timed, M
#   shipped in h200.yaml, held-out tf32 complete (18/18), fp8 1 of 18. Left for an H200, in order: the held-out fp8
#   and square sweeps (`REPICK_BUDGET=0 RAGGED_BUDGET=0 HELDOUT_ARGS="--jobs fp8_e4m3 square"`, resumable), the
#   unaligned training set below (the H200 has no 4- or 8-byte-aligned training rows: h100's narrow_load_exponent
#   did not transfer, CHANGELOG session 37), then MODELS=1 at the new vendor-aligned default.
#   On an H200, after the repick: TRAINING=1 TRAINING_SETS="unaligned:fp8_e4m3 unaligned:tf32" TRAINING_CONFIGS=40
#   TRAINING_ARGS="--also-pick mn_major_tile_cost=0 fp8_spill_traffic_limit=0" (h200.yaml has no unaligned fp8 row, so
#   its fp8_spill_traffic_limit stays 0 and its held-out fp8 split, once swept, would meet the H100's split-K spills).
# Session 38 (H100 twice at cad2780: the suite, 2308 passed; models at the vendor-aligned default, 10 workloads, geomean
#   1.028). The rule then took decode-sized GEMMs too (handover.vendor_aligned), not yet measured end to end. First,
#   on any GPU, FIRST_MODELS (below, about 200 s), then on an H200 the held-out sweeps with the rest, in one call:
#   GIT_SHA=<sha> TOTAL=575 FIRST_MODELS="llama3.2-1b:decode_graph:bf16 llama3.2-1b:decode:bf16
#   llama3-8b:decode_graph:bf16" REPICK_BUDGET=0 RAGGED_BUDGET=0 HELDOUT_ARGS="--jobs square fp8_e4m3" bash
#   benchmarks/device_plan.sh (square has 7 small shapes left, fp8 17; on an H100 add SUITE=0 or the suite and the
#   models follow); then the unaligned training set on an H200. The rule also holds under torch.compile since session
#   38 (routing._handed): llama3-8b:decode_compile:bf16 and llama3.2-1b:compile:bf16 in FIRST_MODELS measure that.
# Session 39 (H100 twice at 5a1b5be): the decode hand-over measured (CUDA-graph decode 1.005 / 1.008, eager 0.918); the
#   suite failed 5 compile tests under torch 2.11 (fixed at 3c10343, not rerun on a GPU); the rule also hands K under
#   one MMA step to torch since 193a4e8 (the rotary embedding's fp32 K = 1 matmul), not measured. The compiled rows
#   at 5a1b5be measured a broken compile (a graph break at every routed GEMM under torch 2.11). Next call, whatever
#   GPU comes: GIT_SHA=<sha> TOTAL=575 FIRST_MODELS="llama3.2-1b:decode:bf16 llama3-8b:decode_compile:bf16
#   llama3.2-1b:compile:bf16" FIRST_MODELS_BUDGET=200 REPICK_BUDGET=0 RAGGED_BUDGET=0 HELDOUT_ARGS="--jobs square
#   fp8_e4m3" MODELS_ARGS="--jobs llama3.2-1b:decode_graph:bf16" bash benchmarks/device_plan.sh
#   (about 240 s of models; `aligned` there is the default, `ours` the rule off; the eager decode's routed count at
#   the default should be 0, and models.log names what was routed). Then on an H100 the suite runs (the last
#   branch), on an H200 the held-out sweeps with the seconds left; a second H200 call with SUITE=1 and no
#   FIRST_MODELS runs the suite first (the 5 compile tests that failed at 5a1b5be must pass).
# Session 40 (one H100 call at 1a7087f after eleven refused or failed requests, ~1100 s of device time): fronts for
#   the hand-over (routing._fronted); eager decode 0.970 at the default (models_h100_1a7087f_first.csv); the suite
#   passed but for one CPU-only test (fixed since); the models step fit only the decode job in 170 s. Next call,
#   whatever GPU comes: the models at the default with the seconds left (the last branch: SUITE=0 MODELS=1 on an
#   H200; the compiled rows now measure a working compile), then (same call) `PYTHONPATH=$PWD python3
#   benchmarks/host_linear.py --handover-gpu > $OUT/handover.txt`; on an H200 a second call with SUITE=1 (the suite
#   has not run on an H200 since session 37), then the held-out fp8/square sweeps (REPICK_BUDGET=0 RAGGED_BUDGET=0
#   HELDOUT_ARGS="--jobs square fp8_e4m3"), then the unaligned training set (TRAINING=1, session 37's line).
# Session 41 (four H100 calls, no refusals: 6e0db3a, ae5e565, 3b64bb6 twice): models at the default; the suite at
#   ae5e565 (2419 passed); nn.Linear's forward (handover.linear_forward) against F.linear's front in one alternation
#   (MODELS_ARGS="--front --reps 20 --jobs ..."). Next, whatever GPU comes: the same with the other workloads and the
#   compiled rows (llama3.2-1b:decode_graph, llama3-8b:decode_compile, llama3.2-1b:compile; MODELS_ARGS with --front
#   adds the mechanism's side); on an H200 SUITE=1 MODELS=1 first (no suite on an H200 since session 37), then the
#   held-out fp8/square sweeps and the unaligned training set as in session 40's line.
# Session 42 (one H100 call at 79b0be5 after eight refused or failed requests: the suite, 2442 passed; CUDA-graph decode
#   1.003 and compiled 8B decode 1.000). Candidate H below (D + model.hbm_latency_ns 1250, chosen on training rows only,
#   benchmarks/results/terms_h200_candidate_h.txt) meets every training floor on its timed picks (the 4 decode shapes
#   that broke D's cold llm floor are among the untimed: they decide whether H holds) and lifts held-out
#   pooled bf16 0.916 / 0.759 -> 0.929 / 0.788; 12 of its training picks (4 decode shapes) are untimed. Next H200 call,
#   first (about a minute): GIT_SHA=<sha> STEPS=repick REPICK_PROFILE=h200 REPICK_VARIANTS=$CAND_H REPICK_LEAN=8
#   REPICK_BUDGET=90 bash benchmarks/gpu_session.sh; then missing_picks.py --apply and `term_eval.py --profile h200 --set
#   <H>`: ship H in h200.yaml if the rule is met. Then SUITE=1 MODELS=1 (no H200 models since session 37), then the
#   held-out fp8/square sweeps. Any GPU: llama3.2-1b:compile:bf16 and the --front rows still unmeasured at 79b0be5.
# Session 43 (two H100 calls at 9786cb3 / f8fbb57 after four refused or failed requests): models (10 workloads, geomean
#   1.042), the suite (2485 passed; 2 failed on a test since reverted), fp8 promoted every 128 K since f8fbb57 (0.887x
#   torch._scaled_mm on an H100). Next H200 call: candidate H's repick first (session 42's line, REPICK_VARIANTS=$CAND_H),
#   then SUITE=1 MODELS=1. Every fp8 sweep was timed promoting every 32 K: re-sweep the H200's fp8 training set
#   (TRAINING=1 TRAINING_SETS="grid:fp8_e4m3:48") and the held-out fp8 file (HELDOUT_ARGS="--jobs fp8_e4m3", exhaustive),
#   then refit model.fp8_promote_efficiency on the training rows. Any Hopper: `STEPS=fp8_promote` (three intervals
#   side by side) at the new default, and the promoted spills of benchmarks/fp8_promote_census.py timed (128x256x128
#   w8, 1080 bytes of spill stores, against 256x128x128 w8, 12) before a spill predicate is fitted.
# Session 44 one-call form (any Hopper; the A/Bs, then the training sweep with what is left):
#   export GIT_SHA=<sha>; for v in fp8_promoted_spill_limit=0 fp8_promote_efficiency=0.77115; do PYTHONPATH=$PWD
#   timeout 150 python3 benchmarks/scaled_mm_compare.py --rep-ms 10 --variant $v --out $OUT/scaled_mm_ab_${v%%=*}.csv
#   >> $OUT/ab.log 2>&1; done; tail -4 $OUT/ab.log; TOTAL=$((575-SECONDS)) TRAINING=1 TRAINING_SETS=scaled_mm
#   TRAINING_CONFIGS=40 TRAINING_ARGS="--also-pick fp8_promote_efficiency=0.77115 fp8_promoted_spill_limit=0"
#   bash benchmarks/device_plan.sh
# Session 44 (four H100 calls): suite 2494 passed at 43a21a4; fp8 in scaled_mm's layout swept (fp8_ceiling: the space's
#   best 0.81-0.87x torch._scaled_mm on large shapes, the pick 0.66-0.85x); fp8_promote_efficiency 0.77115 for that
#   layout tried and reverted on a two-run comparison that unmoved picks make inconclusive; model.fp8_promoted_spill_limit
#   1148 shipped on training rows only (its scaled_mm effect unmeasured). Next, any Hopper, first (about 60 s each):
#   `PYTHONPATH=$PWD python3 benchmarks/scaled_mm_compare.py --rep-ms 10 --variant fp8_promoted_spill_limit=0 --out
#   $OUT/scaled_mm_ab_spill.csv` (the shipped rule against none, one alternation), the same with --variant
#   fp8_promote_efficiency=0.77115 (the reverted pricing; fast-accumulation calls select without the spill rule,
#   origami.space.without_promotion, so their picks are session 43's); then the new fp8 training
#   set in that layout: TRAINING=1 TRAINING_SETS=scaled_mm TRAINING_CONFIGS=40 TRAINING_ARGS="--also-pick
#   fp8_promote_efficiency=0.77115 fp8_promoted_spill_limit=0" (43 shapes; about 300 s), then the held-out fp8 split, now in that layout, exhaustive
#   (H200: HELDOUT_ARGS="--jobs fp8_e4m3"; H100: OTHER_HELDOUT=h100 HELDOUT_ARGS="--jobs fp8_e4m3"). On an H100 also
#   the re-timed unaligned fp8 set's picks at fp8_spill_traffic_limit 0 (results/unaligned_fp8_h100_b9e9837.csv: copy
#   it over benchmarks/data/h100/unaligned_fp8_e4m3.csv, then STEPS=repick REPICK_PROFILE=h100
#   REPICK_VARIANTS=fp8_spill_traffic_limit=0). On an H200 candidate H's repick stays first (session 42's line).
set -u -o pipefail
: "${GIT_SHA:?set GIT_SHA=<the commit of the tree you send>}"
export GIT_SHA
TOTAL=${TOTAL:-555}
start=$(date +%s)
left() { echo $(( TOTAL - ($(date +%s) - start) )); }
source benchmarks/_gpu.sh
gpu=$(gpu_name)
echo "device_plan: $gpu, $TOTAL s"
# candidate A (session 19's term search) and B (A with the register-staged residency term fitted on training
# sweeps: staged_load_exponent 1.15, unaligned_penalty 5.55): their picks the training sweeps have not timed
CAND_A=k_iter_overhead_ns=3.7552,tile_overhead_ns=605.02,splitk_fixup_read_efficiency=0.7,staged_load_exponent=0.34
CAND_B=k_iter_overhead_ns=3.7552,tile_overhead_ns=605.02,splitk_fixup_read_efficiency=0.7,staged_load_exponent=1.15,unaligned_penalty=5.5545
# candidate C (session 25): split-K's operand bytes counted per K range (model.splitk_range_reads 1) alone. The
# decode-sized picks hinge on it: under it the model ties them at the HBM floor and keeps split-K 64x256x32 for
# 1x28672x8192 (128 us measured against the best 109); with it they move to 16-row dp / Stream-K tiles, 72 training
# picks no sweep has timed (`python benchmarks/term_eval.py --set splitk_range_reads=1 --training-only`)
CAND_C=splitk_range_reads=1
# candidate D (session 30): C with Stream-K's streamed phase counted the same way (model.streamk_range_reads 1) and
# mem_latency_ns refitted with them on the training sweeps only (857 -> 1133.4, the same value on the H200's and the
# H100's training data). Shipped in h100.yaml (its training picks timed on an H100, merged). On the H200's held-out
# split it lifts every file or leaves it (pooled bf16 0.895 / p10 0.717 -> 0.907 / 0.757: `python
# benchmarks/term_eval.py --profile h200 --set splitk_range_reads=1,streamk_range_reads=1 --fit mem_latency_ns`),
# but 61 of its H200 training picks are untimed: the repick below times them, then h200.yaml can take it
CAND_D=splitk_range_reads=1,streamk_range_reads=1,mem_latency_ns=1133.4
# candidate E (H100, session 30): model.hbm_latency_ns fitted on h100.yaml's training sweeps (0 -> 1610: K-steps
# whose bytes miss the L2 hide a longer latency; decode set 0.921 -> 0.963 of the space's best, held-out pooled bf16
# 0.900 -> 0.905 with no file down: `python benchmarks/term_eval.py --profile h100 --fit hbm_latency_ns`); 24 of its
# H100 training picks are untimed: REPICK_H100=1 below times them on an H100, then h100.yaml can take it
CAND_E=hbm_latency_ns=1610
# candidate G (H200, session 31): D with unaligned_penalty and staged_load_exponent fitted on the H200's training sweeps
# only (`python benchmarks/term_eval.py --profile h200 --set splitk_range_reads=1,streamk_range_reads=1,mem_latency_ns=1133.4,
# staged_load_exponent=1 --fit unaligned_penalty,staged_load_exponent --training-only`: 5.865 and 0.85; the H100's
# own fit of the same pair, shipped in h100.yaml, gave 3.49 and 0.9775). On the H200's held-out split: pooled bf16
# 0.895 / p10 0.717 -> 0.918 / 0.783 (D alone 0.907 / 0.757), fp16 0.847 -> 0.916, every file up or equal; 80 of its
# H200 training picks are untimed (1874 warm and 841 cold job rows): the H200 branch's repick times them first.
# With session 33's staged_slowdown_limit (1.922 since session 34, shipped in h200.yaml) under it: 0.916 / 0.759 -> 0.935 / 0.789
# (`python benchmarks/term_eval.py --profile h200 --set <G>`)
CAND_G=splitk_range_reads=1,streamk_range_reads=1,mem_latency_ns=1133.4,unaligned_penalty=5.865,staged_load_exponent=0.85
# candidate H (H200, session 42): D with model.hbm_latency_ns 1250, the smallest value on a 50 ns grid at which no
# training floor breaks (D alone breaks h200_cold/llm's p10, 0.893 < 0.917: its decode picks move from split-K to
# data-parallel tiles that the cold timer finds 0.87-0.89 of the best); training pooled bf16 0.962 / 0.891 -> 0.977 /
# 0.932 on the timed picks, held-out 0.916 / 0.759 -> 0.929 / 0.788 with no held-out file down; 12 training picks
# untimed (1x and 16x 6144x4096 and 10240x8192, warm bf16/fp16 and cold): benchmarks/results/terms_h200_candidate_h.txt
CAND_H=splitk_range_reads=1,streamk_range_reads=1,mem_latency_ns=1133.4,hbm_latency_ns=1250
# candidate H31 (H200, session 31; the session-42 candidate above took the name H): G with model.staged_spill_penalty fitted on the H200's training sweeps only. Not the
# default: its held-out gain (pooled bf16 0.938 / 0.797 with the penalty at 0.1062) rested on the spill rule's false
# positive on dp 128x128x32 w8, which the sm_90 compile census says compiles clean (origami.space.STAGED_SPILL_CENSUS,
# session 31). With the census's verdicts the fit gives 0.074 and the held-out split 0.911, dlrm and square down: the
# penalty was standing in for something else that slows dp 128x128x32 w8 on unaligned rows.
CAND_H31=$CAND_G,staged_spill_penalty=0.07435
# candidate I (H100, session 31): the same term on h100.yaml's training sweeps (0.2874 with the census's verdicts):
# held-out pooled bf16 0.921 / 0.823 -> 0.928 / 0.820, skinny up, longk and dlrm down. Not the default either
CAND_I=staged_spill_penalty=0.2874
# candidate M (tf32/fp8 only): model.mn_major_tile_cost 2, chosen on the H200's training rows in session 18 (grid_tf32, grid_fp8;
# benchmarks/kmajor_residuals.py --cost); it moves tf32/fp8 picks of the register-read regime only (origami.kmajor).
# H200: 2 training picks untimed (67 warm rows), timed by the H200 branch's repick beside G's. H100: fitted on its
# own kmajor tf32/fp8 training sweeps in session 32 (1.851, shipped in h100.yaml: `python benchmarks/term_eval.py
# --profile h100 --fit mn_major_tile_cost`)
CAND_M=mn_major_tile_cost=2
if [ -n "${SUITE:-}" ] && { [[ "$gpu" == *H200* ]] || [ -n "${OTHER_HELDOUT:-}${MODEL_GEMMS:-}" ]; }; then
  # SUITE=1: the whole suite first, in a branch that does not run it (tritonblas/ changed since the last GPU run)
  STEPS=tests TESTS_TIMEOUT=${TESTS_TIMEOUT:-320} bash benchmarks/gpu_session.sh
fi
if [ -n "${FIRST_MODELS:-}" ]; then
  # FIRST_MODELS="<model:mode:dtype ...>" (any GPU; before every branch, $FIRST_MODELS_BUDGET s, default 200): those
  # models.py jobs with the `ours` side at TRITONBLAS_VENDOR_ALIGNED=0 (our kernels everywhere) and the default as the
  # `aligned` side (--aligned), into models_<gpu>_first.csv / models_first.log (session 38's decode hand-over)
  fb=${FIRST_MODELS_BUDGET:-200}
  STEPS=models MODELS_ENV=TRITONBLAS_VENDOR_ALIGNED=0 MODELS_SUFFIX=_first MODELS_TIMEOUT=$(( fb + 40 )) \
    MODELS_BUDGET=$fb MODELS_ARGS="--aligned --jobs $FIRST_MODELS" bash benchmarks/gpu_session.sh
fi
if [ -n "${REPICK_H100:-}" ]; then  # REPICK_H100=1 (an H100; first): candidate E's untimed h100 training picks
  STEPS=repick REPICK_PROFILE=h100 REPICK_VARIANTS=${REPICK_VARIANTS_H100:-$CAND_E} REPICK_BUDGET=${REPICK_BUDGET:-120} \
    bash benchmarks/gpu_session.sh
fi
if [ -n "${RETIME:-}" ]; then  # RETIME=1 (any branch): gpu_session's retime step first (a few seconds)
  STEPS=retime bash benchmarks/gpu_session.sh
fi
if [ -n "${SPILL:-}" ]; then
  # SPILL=1 (any GPU; first of the branches): the sm_90 census's spilling configs on the training ragged set's shapes
  # of $SPILL_PROFILE (default h100: the H100's; h200 on an H200), none timed there yet (gpu_session's spill step),
  # so a spill term is fitted on training rows (session 33: the held-out split's worst H100 pick spills 4732 bytes
  # in a config no training row timed)
  STEPS=spill SPILL_BUDGET=$(( $(left) - 90 )) bash benchmarks/gpu_session.sh
elif [ -n "${TRAINING:-}" ]; then
  # TRAINING=1 (any GPU; first of the branches): the training sets' sampled sweep for the GPU's own profile, with the
  # seconds left (gpu_session's training step, resumable: commit training_data.tgz's CSVs and call again). Where no
  # H200 comes, the H100's terms can then be fitted on H100 training data and judged on benchmarks/data/h100_heldout/
  # (session 29: fits on the decode set alone overfit it)
  STEPS=training TRAINING_BUDGET=$(( $(left) - 110 )) bash benchmarks/gpu_session.sh
elif [ -n "${DECODE_PROBE:-}" ]; then
  # DECODE_PROBE=1 (any GPU; before the branches below): the decode GEMMs' exhaustive cold sweep where the GPU's
  # profile has none yet (benchmarks/data/<profile>_cold/decode.csv, resumable: about 7 GPU-minutes on an H200, so a
  # first call may only sweep), then gpu_session's decode_probe step with the seconds left: tiles outside the space,
  # the best-tile table, ours vs the best of both vs torch, and the CUDA-graph decode rows of models.py with that
  # table (issue 16's decode gap: session 29 measured, on an H100, the space's best at 0.954x torch per GEMM, the
  # probe's best at 0.985x, origami's picks at 0.869x)
  STEPS=decode DECODE_SWEEP_BUDGET=${DECODE_SWEEP_BUDGET:-300} DECODE_COMPARE_BUDGET=${DECODE_COMPARE_BUDGET:-40} \
    bash benchmarks/gpu_session.sh
  b=$(( $(left) - 40 ))
  if [ $b -gt 300 ]; then  # probe sweep + compare + two CUDA-graph decode rows
    STEPS=decode_probe PROBE_BUDGET=$(( b - 300 > 60 ? 120 : 60 )) DECODE_COMPARE_BUDGET=40 \
      PROBE_MODELS_BUDGET=$(( b - 220 )) bash benchmarks/gpu_session.sh
  fi
elif [ -n "${MODEL_GEMMS:-}" ]; then
  # MODEL_GEMMS=1, for a call whose code the GPU suite has already passed: the models' own GEMMs per shape, where
  # a model's GEMM time loses to cuBLAS's (issues 16 and 18): the training steps' GEMMs, ours vs torch
  # (gpu_session.sh's train_gemms), then the decode GEMMs' cold sweep and compare (its decode step)
  STEPS=train_gemms TRAIN_GEMMS_BUDGET=${TRAIN_GEMMS_BUDGET:-120} bash benchmarks/gpu_session.sh
  b=$(( $(left) - 60 ))
  if [ $b -gt 330 ]; then  # the sweep's timeout is its budget + 90 s, the compare's 60 + 90 s
    STEPS=decode DECODE_SWEEP_BUDGET=$(( b - 250 )) DECODE_COMPARE_BUDGET=60 bash benchmarks/gpu_session.sh
  fi
elif [[ "$gpu" == *H200* ]] && [ -z "${MODELS:-}" ]; then
  if [ "${REPICK_BUDGET:-200}" -gt 0 ]; then  # 0 skips it (session 22 timed A's and B's picks; G's are untimed)
    # the budget is per job (warm, then cold): G's 80 picks need about two calls' worth; the sweep resumes from
    # the committed benchmarks/data/h200_repick/ files
    STEPS=repick REPICK_BUDGET=${REPICK_BUDGET:-200} REPICK_LEAN=${REPICK_LEAN:-8} \
      REPICK_VARIANTS=${REPICK_VARIANTS:-$CAND_G $CAND_M} \
      bash benchmarks/gpu_session.sh
  fi
  # the training sweep of the ragged set (unaligned skinny and long-K shapes: the regime of the held-out split's
  # worst picks, where only 7 of its 32 training shapes were timed), sampled: the model's pick plus uniform draws
  # (64 a shape, as its first 7; session 22's 25 shapes at 32 configs took 75 s and their data was lost)
  # (what the repick left: at most $RAGGED_BUDGET s, default 150, keeping 160 s for the held-out step)
  rb=$(( $(left) - 160 )); [ $rb -gt ${RAGGED_BUDGET:-150} ] && rb=${RAGGED_BUDGET:-150}
  if [ $rb -gt 60 ]; then
    STEPS=sweep SWEEP_TIMEOUT=$(( rb + 60 )) \
      SWEEP_ARGS="--jobs ragged --max-configs ${RAGGED_CONFIGS:-64} --rep-ms 3 --budget-s $rb" \
      bash benchmarks/gpu_session.sh
  fi
  b=$(( $(left) - 100 ))  # the heldout step's own margin: its sweep's timeout is the budget + 90 s
  if [ $b -gt 60 ]; then
    STEPS=heldout HELDOUT_BUDGET=$b HELDOUT_ARGS=${HELDOUT_ARGS:---jobs tf32 fp8_e4m3 square} bash benchmarks/gpu_session.sh
  fi
elif [ -n "${OTHER_HELDOUT:-}" ]; then
  # OTHER_HELDOUT=<profile> (h100 on an H100): the held-out split's exhaustive sweeps with that profile's picks,
  # into benchmarks/data/<profile>_heldout/, for a call whose code the GPU suite has already passed: how close
  # a profile no sweep was fitted on picks to the exhaustive best, on the GPU the device gives
  b=$(( $(left) - 100 ))
  if [ $b -gt 60 ]; then
    STEPS=heldout HELDOUT_PROFILE=$OTHER_HELDOUT HELDOUT_BUDGET=$b \
      HELDOUT_ARGS=${HELDOUT_ARGS:---jobs llm skinny longk dlrm grid square} bash benchmarks/gpu_session.sh
  fi
else
  if [ "${SUITE:-}" != 0 ]; then  # SUITE=0: the models alone (a call whose code the suite has passed, or short time)
    STEPS=tests TESTS_TIMEOUT=${TESTS_TIMEOUT:-320} bash benchmarks/gpu_session.sh
  fi
  b=$(( $(left) - 40 ))
  if [ $b -gt 60 ]; then  # the workloads session 24's unaligned-out plans touch first (GPT-2's lm_head, DLRM's
    # ragged widths), then the training rows; the aten and eager experiments were decided off (sessions 23-24)
    STEPS=models MODELS_TIMEOUT=$(( b + 30 )) MODELS_BUDGET=$b \
      MODELS_ARGS=${MODELS_ARGS:---jobs llama3.2-1b:decode:bf16 bert-large:train:bf16 llama3.2-1b:train:bf16 bert-large:prefill:bf16 gpt2-medium:train:bf16 dlrm-mlp:train:fp16 gpt2-medium:prefill:bf16 llama3.2-1b:decode_graph:bf16 vit-l16:prefill:bf16 llama3-8b:prefill:bf16} \
      bash benchmarks/gpu_session.sh
  fi
  # (the training step's host split, train_host, ran in sessions 22-23: run it by hand when wanted)
fi
# The device tool brings back at most 8 files from $OUT (session 22 lost the ragged sweep's sweep_data.tgz, the
# 9th): past 8, the logs, texts and job CSVs travel in one logs.tgz and the data tarballs stay as they are
# (only the device's $OUT: never the committed benchmarks/results a run without $OUT writes to)
out=${OUT:-}
if [ -n "$out" ] && [ "$(ls -1 "$out" | wc -l)" -gt 8 ]; then
  small=$(cd "$out" && ls -1 | grep -E '\.(log|txt|csv)$')
  (cd "$out" && tar czf logs.tgz $small && rm -f $small)
  echo "device_plan: packed $(echo $small | wc -w) logs into $out/logs.tgz (8 files come back)"
fi
echo "device_plan: done in $(( $(date +%s) - start )) s"
