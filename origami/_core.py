"""The numba scorer: one call scores every candidate row of one problem (or many problems).

Everything here takes ndarrays and scalars only. Time unit: nanoseconds. Rates are per ns.
See origami/select.py for the public API and DESIGN.md §5 for the model's terms.

Model, per candidate (T tiles, kI K-iterations, S = CUs × occupancy resident programs):
- a *wave* is the set of programs resident at once; a K-step of a wave costs
  max(compute, memory, latency) + overlap_loss · min(compute, memory) + per-iteration overhead,
  with memory = max(L2, LLC, HBM) (imperfect overlap: better memory behaviour still counts when
  compute-bound), where
  compute = programs-per-CU × 2·BMc·BNc·BK / (CU matrix rate × efficiency(tile, family)),
  with BMc/BNc the tile padded to the matrix instruction;
  L2 = all operand bytes requested by the wave / L2 bandwidth;
  HBM (or LLC, then HBM) = the wave's *distinct* A row-blocks and B column-blocks per chiplet
  under the kernels' program→tile mapping (GROUP_M, chiplet round-robin dispatch and remap), in
  closed form — exact for linear dispatch (tested against a walk of the real mapping), an
  approximation for round-robin chiplets (up to several x off; strict xfail in the tests) — whose
  reuse is capped by L2 capacity;
  latency = mem_latency / (num_stages − 1).
- waves: the full waves (alike), then the partial last wave with its real program count;
- Stream-K: full waves data-parallel, the remainder's K-iterations spread over the grid, plus
  fp32 partial traffic and a fix-up per split tile; split-K: T·s programs of kI/s iterations plus
  the ordered reduction, its partials at L2 bandwidth while they fit in half the L2 and beyond that
  at LLC/HBM bandwidth (``_partial_time``); a wave's distinct operand bytes are counted once per K
  range it reads as far as the profile's splitk_range_reads says (``_split_ranges``; 0 by default), and
  those of Stream-K's streamed phase as far as streamk_range_reads says (0 by default);
- register-staged rows (under 4 bytes aligned, NVIDIA) whose kernel spills (the row's staged_spill
  column, origami.space.staged_spills): every K-step × (1 + staged_spill_penalty) (0 by default);
- epilogue (C write, once per tile, and tile overhead), launch overhead;
- the result is never below the roofline floor max(FLOPs / peak, compulsory bytes / HBM):
  ``_final(total, floor) = max(total, floor) + FLOOR_TIE · total``. The small second term keeps the
  order of configs whose modelled total falls under the floor (small, memory-bound problems),
  which a plain max() collapsed into one tie broken by row index; it never reorders a config
  under the floor against one above it (see ``_final``).

``best_row`` (select) is an exact branch and bound over this. Rows that tie an earlier *model
twin* (origami.enumerate._model_key: equal in everything the score reads) are never scored; the
others form *families* that differ only in GROUP_M and the chiplet remap, each bounded by
``screen_bounds`` (the score with every K-step's memory time at its L2 time) before any of its
rows is scored, best bound first. Measured 2026-11-30 on this 2-core EPYC (bench_select.py): 355-419
families, a median of 1-4 rows scored on NVIDIA profiles and 3-12 on AMD ones, 4-7 µs a problem
against 8-131 µs for scoring every row (656-4401).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from origami import pidmap
from origami._encoding import (K_DP, K_PERSISTENT, K_SPLITK, K_STREAMK, K_WS, R_BK, R_BM, R_BN, R_CHUNK, R_GMULT, R_GROUP,
                               R_KIND, R_LBK, R_LBM, R_LBN, R_NCHIP, R_OCC, R_SPILL, R_SPLIT, R_STAGES, R_TWIN, R_WARPS,
                               STAGED_ALIGN, VECTOR_ALIGN, persistent_grid)
from origami._jitcache import CACHE

FASTMATH = False  # IEEE semantics: rankings must be identical with NUMBA_DISABLE_JIT=1
FLOOR_TIE = 1e-3  # weight of the unclamped total in _final


@njit(cache=CACHE, fastmath=FASTMATH, inline="always")
def _final(total, floor):
    """The score: the total clamped to the roofline floor, plus FLOOR_TIE · total.

    Monotone in total (so lower bounds of the total give lower bounds of the score) and ≥ floor.
    Under the floor it orders configs by their modelled totals instead of tying them: with
    max() alone, 16x4096x4096 and 1x8192x8192 on h200 picked by row index among dozens of tied
    configs (selection efficiency 0.77 and 0.67 on benchmarks/data/h200/calib.csv, 2026-11-30).
    A config under the floor still beats every config above it: floor + ε·t_under <
    (1 + ε)·floor ≤ (1 + ε)·t_above."""
    return max(total, floor) + FLOOR_TIE * total

# hw vector layout (built by select._hw_vector)
HW_CUS, HW_CHIPLETS, HW_RR, HW_CU_RATE, HW_IM, HW_IN, HW_IK, HW_L2_BYTES, HW_L2_BW, HW_LLC_BYTES, \
    HW_LLC_BW, HW_HBM_BW, HW_LAUNCH, HW_PEAK, HW_MMA_EFF, HW_SMALL_EFF, HW_SK_EFF, HW_KITER, HW_TILE, \
    HW_UNALIGNED, HW_FIXUP, HW_LAT, HW_OVERLAP, HW_SK_SPLIT, HW_WG1_EFF, HW_WS_EFF, HW_SK_UNALIGNED, HW_SPLIT_READS, \
    HW_SPILL, HW_FIX_READ, HW_MN_COST, HW_STAGED_EXP, HW_MAX_WARPS, HW_SPLITK_EFF, HW_SK_READS, HW_HBM_LAT, HW_NARROW_EXP, HW_LEN = range(38)

# Resident warps per SM from which model.unaligned_penalty holds for register-staged loads: one 8-warp
# program per SM, the rows that penalty was fitted on (_staged_load_factor)
STAGED_REF_WARPS = 8.0

# term indices
T_COMPUTE, T_L2, T_LLC, T_HBM, T_LATENCY, T_EPILOGUE, T_FIXUP, T_LAUNCH, T_WAVES, T_LEN = range(10)
TERM_NAMES = ("compute", "l2", "llc", "hbm", "latency", "epilogue", "fixup", "launch", "waves")


SKEW_KSTEPS = 16.0  # how many K-steps apart concurrent programs drift; bounds reuse by L2 capacity


@njit(cache=CACHE, fastmath=FASTMATH)
def _cdiv(a, b):
    return -(-a // b)


# The kernels' own program→tile mappings (origami/pidmap.py mirrors tritonblas/kernels/pid.py
# bit for bit), compiled here so the model sees exactly what the kernels do.
remap_tile = njit(cache=CACHE, fastmath=FASTMATH)(pidmap.chiplet_remap)
group_coords = njit(cache=CACHE, fastmath=FASTMATH)(pidmap.tile_coords)
grid_of = njit(cache=CACHE, fastmath=FASTMATH)(persistent_grid)  # origami._encoding's rule, compiled


@njit(cache=CACHE, fastmath=FASTMATH)
def problem_valid(row, m, n, kiters, tiles, cus):
    """Problem-dependent predicates; mirrors origami.space.check_problem exactly."""
    if row[R_KIND] == K_SPLITK:
        if row[R_SPLIT] < 2 or row[R_SPLIT] > kiters:
            return False
        if tiles >= cus:
            return False
    if row[R_BM] > max(64, 4 * m) or row[R_BN] > max(64, 4 * n):
        return False
    return True


@njit(cache=CACHE, fastmath=FASTMATH, inline="always")
def ws_valid(n, batch, ab, cb, align):
    """The problem-dependent part of origami.space.check_ws, as the scorer sees a problem: batch 1,
    16-byte alignment, a 2-byte (bf16/fp16) output of rows in whole 16-byte chunks (the 16-bit inputs
    are the row class's: origami.space.ws_space)."""
    return batch == 1 and align >= 16 and cb == 2 and (n * cb) % 16 == 0


@njit(cache=CACHE, fastmath=FASTMATH)
def _contiguous(first, count, num_pid_m, num_pid_n, group_m):
    """Distinct (row-blocks, col-blocks) of ``count`` consecutive tile ids from tile 0 under GROUP_M
    (closed form, exact: whole groups of gm rows, then the last, possibly shorter, group walked
    column by column)."""
    gm = min(group_m, num_pid_m)
    width = gm * num_pid_n
    full = count // width
    rem = count - full * width
    rows = full * gm
    cols = num_pid_n if full > 0 else 0
    size_m = min(gm, num_pid_m - full * gm)
    if rem > 0 and size_m > 0:
        rows += min(size_m, rem)
        cols = max(cols, min(num_pid_n, _cdiv(rem, size_m)))
    return max(1, min(num_pid_m, rows)), max(1, cols)


@njit(cache=CACHE, fastmath=FASTMATH)
def _gcd(a, b):
    while b:
        a, b = b, a % b
    return a


@njit(cache=CACHE, fastmath=FASTMATH)
def _one_group(nruns, run, stride, rows_g, num_pid_n, start, last_run):
    """Distinct (rows, cols) of the tiles ``start + j·stride + i`` (j < nruns, i < run; the last run
    ``last_run`` long) inside one GROUP_M group of ``rows_g`` rows, where tile t is at row t % rows_g
    and column t // rows_g; tiles past the group's rows_g·num_pid_n are not there."""
    size = rows_g * num_pid_n
    if start >= size:
        return 0, 0
    fit = _cdiv(size - start, stride)
    if fit < nruns:
        nruns, last_run = fit, run
    last = min(start + (nruns - 1) * stride + last_run, size)  # one past the last tile
    d = _gcd(stride, rows_g)
    period = rows_g // d
    if nruns >= period:
        rows = rows_g if run >= d else period * run
    else:
        rows = nruns * run
    rows = min(rows_g, rows, (nruns - 1) * run + (last - start - (nruns - 1) * stride))
    if stride >= rows_g:
        cols = (nruns - 1) * _cdiv(run, rows_g) + _cdiv(last - (start + (nruns - 1) * stride), rows_g)
    else:
        cols = (last - 1) // rows_g - start // rows_g + 1
    return rows, min(num_pid_n, cols)


@njit(cache=CACHE, fastmath=FASTMATH)
def _full_groups(nruns, run, stride, gm, groups, num_pid_n):
    """Distinct (rows, cols) of runs of ``run`` tiles ``stride`` apart in whole groups of ``gm`` rows
    (gm divides stride): tile t is at column (t // gm) mod num_pid_n of group t // (gm·num_pid_n),
    so the runs start at columns j·u mod num_pid_n (u = stride / gm), e = ceil(run / gm) wide."""
    u = stride // gm
    e = _cdiv(run, gm)
    d = _gcd(u, num_pid_n)
    period = num_pid_n // d
    if nruns >= period:
        cols = num_pid_n if e >= d else period * e
    else:  # nruns of the period's multiples of d: steps of delta until they wrap (at most 3 gap sizes)
        delta = min(u % num_pid_n, num_pid_n - u % num_pid_n)
        gap = delta if nruns * delta <= num_pid_n else max(d, num_pid_n // nruns)
        cols = (nruns - 1) * min(gap, e) + e
    if u >= num_pid_n:
        g = nruns * _cdiv(e, num_pid_n)
    else:
        g = ((nruns - 1) * u + e - 1) // num_pid_n + 1
    return min(groups, g) * min(gm, run), min(num_pid_n, cols)


@njit(cache=CACHE, fastmath=FASTMATH)
def _runs(count, run, stride, num_pid_m, num_pid_n, group_m):
    """Distinct (row-blocks, col-blocks) of ``count`` tile ids laid out as runs of ``run``
    consecutive ids whose starts are ``stride`` apart, under GROUP_M: the whole groups
    (:func:`_full_groups`) and the last, shorter group (:func:`_one_group`), whose column sets are
    added (their union lies between the larger and the sum, within 2x of either). Against the exact
    walk (distinct_exact, tests/origami/test_model_properties.py): within 1.9x on the test grid of
    11766 round-robin cases (8 chiplets, chunk 1/8/32, GROUP_M 1/8), mean |log ratio| 0.029."""
    if run >= count or stride == run:
        return _contiguous(0, count, num_pid_m, num_pid_n, group_m)
    gm = min(group_m, num_pid_m)
    nruns = _cdiv(count, run)
    last_run = count - (nruns - 1) * run
    if gm == num_pid_m or stride % gm:
        # one group of every row (or GROUP_M not dividing the stride, which the enumerated powers of
        # two never give): the one-group form, in each group the runs reach
        rows, cols = _one_group(nruns, run, stride, gm, num_pid_n, 0, last_run)
        if gm < num_pid_m:
            rows = min(num_pid_m, rows * _cdiv((nruns - 1) * stride + run, gm * num_pid_n))
        return max(1, rows), max(1, cols)
    full = num_pid_m // gm
    wfull = full * gm * num_pid_n
    first = min(nruns, _cdiv(wfull, stride))
    rows, cols = _full_groups(first, run, stride, gm, full, num_pid_n)
    tail = num_pid_m - full * gm
    if nruns > first and tail > 0:
        r2, c2 = _one_group(nruns - first, run, stride, tail, num_pid_n, first * stride - wfull, last_run)
        rows += r2
        cols += c2
    return max(1, min(num_pid_m, rows)), max(1, min(num_pid_n, cols))


@njit(cache=CACHE, fastmath=FASTMATH)
def _distinct(count, nchip, chunk, rr, num_pid_m, num_pid_n, group_m):
    """Distinct (row-blocks, col-blocks) touched by one chiplet's share of ``count`` concurrent
    programs: the tiles that share one L2. Linear dispatch: one contiguous run. Round-robin
    chiplets: chiplet 0 runs every nchip-th program; without a remap these are tiles nchip apart,
    with the remap runs of ``chunk`` consecutive tiles nchip·chunk apart (see remap_tile)."""
    if not rr or nchip <= 1:
        return _contiguous(0, count, num_pid_m, num_pid_n, group_m)
    return _runs(_cdiv(count, nchip), chunk, nchip * chunk, num_pid_m, num_pid_n, group_m)


@njit(cache=CACHE, fastmath=FASTMATH)
def distinct_exact(first_pid, count, grid, nchip, chunk, rr, num_pid_m, num_pid_n, group_m):
    """Reference for _distinct (tests): count chiplet 0's rows/cols by walking the real mapping."""
    rows_seen = np.zeros(num_pid_m, dtype=np.bool_)
    cols_seen = np.zeros(num_pid_n, dtype=np.bool_)
    step = nchip if (rr and nchip > 1) else 1
    for p in range(first_pid, first_pid + count, step):
        t = remap_tile(p, grid, nchip, chunk) if step > 1 else p
        if t < num_pid_m * num_pid_n:
            pm, pn = group_coords(t, num_pid_m, num_pid_n, group_m)
            rows_seen[pm] = True
            cols_seen[pn] = True
    return rows_seen.sum(), cols_seen.sum()


NARROW_MMA_M = 16.0     # the narrow MMA's M (mma.sync m16nNk) used when BLOCK_M < the wide instruction's M
NARROW_MMA_RATE = 0.5   # estimate: its rate relative to the wide instruction's (Hopper mma.sync vs wgmma)


@njit(cache=CACHE, fastmath=FASTMATH, inline="always")
def mma_work(bm, bn, bk, hw):
    """FLOPs one program's K-step costs on the matrix units, padding included. A tile narrower than
    the profile's instruction M (wgmma's 64 on Hopper) cannot use that instruction: Triton issues
    the narrow MMA (mma.sync, M = 16) instead, padded to 16 rows and at NARROW_MMA_RATE of the
    wide rate (estimate). Before, such tiles were padded to 64 rows: for 16x4096x4096 and
    1x8192x8192 the model could not tell BLOCK_M = 16 from 64, and the H200 sweep
    (benchmarks/data/h200/calib.csv, 2026-11-30) has 16-row tiles fastest on both (selection
    efficiency 0.77 -> 0.97 and 0.88 -> 0.93; the same for any rate from 0.5 to 1).

    Where the wide MMA reads an operand through registers (origami.kmajor.mma_reads_through_registers;
    HW_MN_COST is model.mn_major_tile_cost there, 0 elsewhere), a K-step costs as if the tile had
    BLOCK_M + cost x BLOCK_N rows: on the H200's training sweeps such rows measured roughly
    1 + 1.5-2 x BLOCK_N / BLOCK_M times their prediction (about 2x at 128x64, 8x at 64x256:
    benchmarks/kmajor_residuals.py), and the rows' prediction error is smallest at a cost of 2-2.25."""
    bnc = max(bn, hw[HW_IN])
    if bm < hw[HW_IM]:
        return 2.0 * max(bm, NARROW_MMA_M) * bnc * bk / NARROW_MMA_RATE
    return 2.0 * (bm + hw[HW_MN_COST] * bn) * bnc * bk


@njit(cache=CACHE, fastmath=FASTMATH, inline="always")
def _kstep(nprog, bm, bn, bk, stages, eff, cus, nchip, ab, bb, hw, rows, cols, align_pen, out, kranges=1.0,
           staged_warps=0.0, staged_exp=0.0):
    """Cost of one K-step of a wave of ``nprog`` concurrent programs; fills out[0:5] with the
    per-term times and returns their max + the per-iteration overhead. ``kranges`` (>= 1): the
    disjoint K ranges the wave's programs read at once (split-K: :func:`_split_ranges`); the
    distinct bytes of ``rows`` x ``cols`` blocks are read once per range. ``staged_warps``: the
    program's warps where its loads are narrower than 16 bytes, else 0; ``staged_exp`` the exponent of
    that load class (:func:`_load_class`, :func:`_staged_load_factor`)."""
    per_cu = _cdiv(nprog, cus)
    align_pen *= _staged_load_factor(per_cu, staged_warps, staged_exp, hw)
    compute = per_cu * mma_work(bm, bn, bk, hw) / (hw[HW_CU_RATE] * eff)
    tile_bytes = (bm * ab + bn * bb) * bk
    # an SM draws at most its share (1/cus) of the L2 bandwidth: a partial wave of nprog < cus
    # programs is not served at the whole machine's rate (per_cu * cus >= nprog; equal for full
    # waves). On calib.csv (H200) this moved only 2048x511x4099 (32 tiles of 256x128 ran 3.4x
    # slower than the model said): selection efficiency 0.33 -> 0.54, geomean 0.886 -> 0.914.
    l2 = per_cu * cus * tile_bytes * align_pen / hw[HW_L2_BW]
    # distinct bytes per chiplet, then all chiplets
    chips = min(nchip, nprog) if nchip > 1 else 1
    uniq = (rows * bm * ab + cols * bn * bb) * bk * chips * kranges
    footprint = (rows * bm * ab + cols * bn * bb) * bk * SKEW_KSTEPS * kranges
    hit_cap = min(1.0, hw[HW_L2_BYTES] / max(footprint, 1.0))
    reuse_bytes = nprog * tile_bytes - uniq
    miss = uniq + (1.0 - hit_cap) * max(reuse_bytes, 0.0)
    if hw[HW_LLC_BYTES] > 0:
        llc = miss / hw[HW_LLC_BW]
        hbm = miss * 0.5 / hw[HW_HBM_BW]
    else:
        llc = 0.0
        hbm = miss / hw[HW_HBM_BW]
    lat = _load_latency(miss, nprog * tile_bytes, hw) / max(1.0, stages - 1.0)
    out[T_COMPUTE] = compute
    out[T_L2] = l2
    out[T_LLC] = llc
    out[T_HBM] = hbm
    out[T_LATENCY] = lat
    mem = max(max(l2, llc), hbm)
    return max(max(compute, mem), lat) + hw[HW_OVERLAP] * min(compute, mem) + hw[HW_KITER]


@njit(cache=CACHE, fastmath=FASTMATH, inline="always")
def _load_latency(miss, read, hw):
    """The latency one K-step's loads must hide: model.mem_latency_ns, or, where model.hbm_latency_ns
    exceeds it, the two weighted by the share of the step's ``read`` bytes that miss the L2 (``miss``,
    read from HBM): mem_latency_ns + share x (hbm_latency_ns - mem_latency_ns). Never under
    mem_latency_ns, so the screen's latency bound (group_constants' GC_LAT) stays a lower bound.

    Why: one latency cannot price both regimes the H100's sweeps hold. Decode GEMMs stream every weight
    byte from HBM once, cold, with a grid of under one wave whose programs each run a chain of K-steps:
    there a data-parallel 16x16x512 program of 1x1024x4096 measured 11.6 us against 4.8 predicted
    (benchmarks/data/h100_probe/decode.csv). Large GEMMs mostly hit the L2, and mem_latency_ns was
    fitted on them."""
    lat = hw[HW_LAT]
    if hw[HW_HBM_LAT] > lat and read > 0.0:
        lat += min(1.0, miss / read) * (hw[HW_HBM_LAT] - lat)
    return lat


@njit(cache=CACHE, fastmath=FASTMATH, inline="always")
def _staged_load_factor(per_cu, staged_warps, exponent, hw):
    """Factor (>= 1) on the unaligned penalty of a wave of narrow loads that keeps fewer than
    STAGED_REF_WARPS warps on an SM: (STAGED_REF_WARPS / w) ** ``exponent``, w = ``per_cu`` x
    ``staged_warps`` (at most the SM's warp slots); 1 at or above it, where the loads are 16-byte
    (``staged_warps`` 0), or where the exponent is 0 (off). The exponent is the load class's
    (:func:`_load_class`): model.staged_load_exponent for register-staged rows, model.narrow_load_exponent
    for 4- and 8-byte rows.

    Register-staged loads (no cp.async) have only as many bytes in flight as the SM's warps issue,
    and unaligned_penalty was fitted where an SM held one or two 8-warp programs. Evidence (H200
    training sweeps, register-staged bf16/fp16 rows, ``python benchmarks/staged_residuals.py``):
    measured / predicted time 1.21 at <= 4 resident warps per SM, 0.94-0.95 at 8-16. Fitted on the
    training sweeps (``benchmarks/term_eval.py --training-only --set staged_load_exponent=1 --fit
    unaligned_penalty,staged_load_exponent``): exponent 1.15 with the penalty at 5.55; it moves 8
    training picks, 5 of them to configs no sweep timed, so it stays off until a GPU session times
    them (benchmarks/results/staged_load_term_h200.txt). On the H100's training sweeps, with the ragged
    (unaligned) set, the same fit gives 0.9775 with the penalty at 3.49, every moved pick timed (h100.yaml
    ships it): a Stream-K 32x64x64 tile of 26x8719x8771 ran 186 us with one 4-warp program an SM and 120 us
    with four. Never below 1: screen_bounds' penalty (unaligned_penalty alone) stays a lower bound."""
    if staged_warps <= 0.0 or exponent <= 0.0:
        return 1.0
    w = min(per_cu * staged_warps, hw[HW_MAX_WARPS])
    return max(1.0, (STAGED_REF_WARPS / w) ** exponent)


@njit(cache=CACHE, fastmath=FASTMATH, inline="always")
def _load_class(warps, align, hw):
    """(warps, exponent) that :func:`_staged_load_factor` prices a program's loads by, from the rows'
    alignment (NVIDIA; both exponents are 0 on AMD, select._hw_vector): under STAGED_ALIGN bytes the
    loads are register-staged (model.staged_load_exponent); 4 or 8 bytes, cp.async copies of that width
    without TMA (model.narrow_load_exponent); 16 bytes, TMA or vector copies: (0, 0), no factor.

    Evidence for the second class (H100 training sweeps, 4-byte-aligned tf32 rows of
    benchmarks/shapes/unaligned.yaml): Stream-K and split-K 256x64 tiles with 4 warps, one program an SM,
    ran 2-3x their prediction (2959x13x8063: 182 us against 63; 10677x31x5405: 360 against 121). The
    exponent is fitted on the training sweeps only (``benchmarks/term_eval.py --profile h100 --fit
    narrow_load_exponent --training-only``: 0.1878, every training pick it moves timed)."""
    if align < STAGED_ALIGN:
        return warps, hw[HW_STAGED_EXP]
    if align < VECTOR_ALIGN:
        return warps, hw[HW_NARROW_EXP]
    return 0.0, 0.0


@njit(cache=CACHE, fastmath=FASTMATH)
def tile_efficiencies(base, hw):
    """Main-loop efficiency of every row's tile (precomputed once per candidate array)."""
    out = np.empty(base.shape[0])
    for i in range(base.shape[0]):
        out[i] = _tile_eff(base[i, R_BM], base[i, R_BN], hw)
        # NVIDIA fp8 with promoted accumulation: a one-warpgroup (4-warp) program cannot overlap its
        # promotion adds with another warpgroup's MMAs (HW_WG1_EFF is 1 for every other dtype and
        # vendor, select._hw_vector)
        if base[i, R_WARPS] <= 4:
            out[i] *= hw[HW_WG1_EFF]
        if base[i, R_KIND] == K_WS:  # the warp-specialised kernel's main loop (hardware.MODEL_PARAMS)
            out[i] *= hw[HW_WS_EFF]
    return out


@njit(cache=CACHE, fastmath=FASTMATH)
def _tile_eff(bm, bn, hw):
    lo = math.log2(64.0 * 64.0)
    hi = math.log2(128.0 * 256.0)
    x = (math.log2(bm * bn * 1.0) - lo) / (hi - lo)
    x = min(1.0, max(0.0, x))
    small = hw[HW_SMALL_EFF]
    if bm * bn < 64 * 64:
        small = small * (bm * bn) / (64.0 * 64.0) + small * 0.5 * (1.0 - (bm * bn) / (64.0 * 64.0))
    return hw[HW_MMA_EFF] * (small + (1.0 - small) * x)


@njit(cache=CACHE, fastmath=FASTMATH)
def _phase(nprog_total, kiters, grid_cap, bm, bn, bk, stages, eff, cus, nchip, chunk, rr,
           ab, bb, hw, num_pid_m, num_pid_n, group_m, align_pen, acc, tmp, tile_ns, split_tiles=0, split=1,
           slow=1.0, staged_warps=0.0, staged_exp=0.0):
    """Cost of ``nprog_total`` programs of ``kiters`` K-steps each, at most ``grid_cap`` at a time:
    the full waves (all alike) plus the partial last wave with its real program count, each wave
    paying ``tile_ns`` of tile overhead (hw's tile_overhead_ns; 0 for the warp-specialised kernel,
    whose epilogues overlap the next tile's loads: score_row adds one). Split-K passes its
    ``split_tiles`` tiles and ``split`` count (each wave's K ranges: :func:`_split_ranges`). Every
    K-step and its terms × ``slow`` (>= 1: :func:`_spill_slowdown`); ``staged_warps``, ``staged_exp`` as :func:`_kstep`.
    Accumulates term totals into acc; returns the time."""
    full = nprog_total // grid_cap
    rest = nprog_total - full * grid_cap
    total = 0.0
    if full > 0:
        rows, cols = _distinct(grid_cap, nchip, chunk, rr, num_pid_m, num_pid_n, group_m)
        step = slow * _kstep(grid_cap, bm, bn, bk, stages, eff, cus, nchip, ab, bb, hw, rows, cols, align_pen, tmp,
                             _split_ranges(grid_cap, split_tiles, split, hw), staged_warps, staged_exp)
        w = full * kiters * slow
        for t in range(5):
            acc[t] += w * tmp[t]
        total += full * (kiters * step + tile_ns)
    if rest > 0:
        rows, cols = _distinct(rest, nchip, chunk, rr, num_pid_m, num_pid_n, group_m)
        step = slow * _kstep(rest, bm, bn, bk, stages, eff, cus, nchip, ab, bb, hw, rows, cols, align_pen, tmp,
                             _split_ranges(rest, split_tiles, split, hw), staged_warps, staged_exp)
        for t in range(5):
            acc[t] += kiters * slow * tmp[t]
        total += kiters * step + tile_ns
    acc[T_EPILOGUE] += (full + (1 if rest > 0 else 0)) * tile_ns
    return total


@njit(cache=CACHE, fastmath=FASTMATH, inline="always")
def _spill_slowdown(spills, align, hw):
    """Factor (>= 1) on a row's K-steps: 1 + staged_spill_penalty where its loads are register-staged
    (under 4 bytes aligned; the staged_spill column is 1 only on NVIDIA) and its kernel spills
    (``spills``: the row's staged_spill column, origami.space.staged_spills), else 1.

    Spilled registers go to local memory (L1, then L2) and back inside every K-step, next to the
    scalar loads they displaced: a share of the step's own time, whatever bounds it. The census's
    spilling configs timed on 61x6485x11719 (benchmarks/data/h200/ragged.csv) ran at a median 1.26x
    their prediction against 0.92x for the clean ones (origami.space.STAGED_PRESSURE_LIMITS)."""
    if spills > 0 and align < STAGED_ALIGN:
        return 1.0 + hw[HW_SPILL]
    return 1.0


@njit(cache=CACHE, fastmath=FASTMATH, inline="always")
def _split_ranges(nprog, split_tiles, split, hw):
    """The K ranges a wave of ``nprog`` split-K programs reads at once, as the model counts their
    operand bytes: 1 + splitk_range_reads · (ranges − 1), ranges = min(split, ⌈nprog / tiles⌉)
    (programs are tile-fastest, so a wave holds ⌈nprog / tiles⌉ splits of every tile; their K ranges
    are disjoint). 1 when ``split_tiles`` is 0 (not split-K) and at the parameter's default 0.

    Before it, a wave of every split of every tile was counted as one K range's distinct bytes:
    the split-K rows' HBM term came to 1/split of the operand bytes they read (median 0.50, 0.25,
    0.14, 0.13 of the compulsory A + B time at split 2, 4, 8, 16 over the H200 training sweeps of
    2026-11-30, against 2.1 for data-parallel rows), and those rows measured 1.21, 1.33, 1.53, 1.66x
    their prediction relative to the same shape's data-parallel rows (benchmarks/splitk_residuals.py)."""
    if split_tiles <= 0:
        return 1.0
    ranges = min(split, _cdiv(nprog, split_tiles))
    return 1.0 + hw[HW_SPLIT_READS] * (ranges - 1.0)


@njit(cache=CACHE, fastmath=FASTMATH, inline="always")
def _streamed_ranges(g, sk_tiles, kiters, hw):
    """The K ranges Stream-K's streamed phase reads at once, as the model counts their operand bytes:
    1 + streamk_range_reads · (ranges − 1), ranges = min(K-iterations, ⌈g / sk_tiles⌉) (its g programs
    share the sk_tiles tiles' K-iterations in contiguous runs, so about g / sk_tiles programs read disjoint
    K ranges of each tile at once). 1 at the parameter's default 0 (one range, as before it).

    Evidence (the H100's exhaustive cold sweep of the decode GEMMs, benchmarks/data/h100_cold/decode.csv):
    at 0 the streamed phase's HBM term falls under the compulsory bytes (1x128256x2048, Stream-K
    16x128x32 on a 792-program grid: 156 us against 175 us of weight at the HBM rate) and Stream-K rows
    measured 1.24x their prediction relative to the same shape's data-parallel rows."""
    ranges = min(kiters, _cdiv(g, sk_tiles))
    return 1.0 + hw[HW_SK_READS] * (ranges - 1.0)


@njit(cache=CACHE, fastmath=FASTMATH, inline="always")
def _partial_time(part_bytes, hw):
    """Time of split-K's fp32 partial traffic (``part_bytes`` = written + read back): at L2 bandwidth
    while the written partials fit in half the L2 (all chiplets'; the other half streams A and B);
    the share beyond it is evicted before the tile's last program reads it back, so it goes at the
    LLC's bandwidth where an LLC holds it, else at HBM's. Never below part_bytes / L2 bandwidth, so screen_bounds'
    L2-only fix-up stays a lower bound.

    Evidence (H200 sweeps of 2026-11-30, warm and cold L2): split-K picks whose partials exceed the
    L2 (3000x1000x7000 and 8192x384x7040, 128x256 tiles x 4 splits: 50 and 67 MB written) measured
    1.3-1.4x the data-parallel config the model ranked behind them; with this term the model picks
    that config, and no recorded sweep's selection efficiency drops (bf16 pooled 0.940 -> 0.943)."""
    written = 0.5 * part_bytes
    spill = max(0.0, written - 0.5 * hw[HW_L2_BYTES] * hw[HW_CHIPLETS]) / max(written, 1.0)  # every chiplet's L2
    far_bw = hw[HW_LLC_BW] if hw[HW_LLC_BYTES] >= written else hw[HW_HBM_BW]
    return part_bytes * (1.0 - spill) / hw[HW_L2_BW] + part_bytes * spill / min(far_bw, hw[HW_L2_BW])


@njit(cache=CACHE, fastmath=FASTMATH)
def score_row(base, i, effs, m, n, k, batch, ab, bb, cb, align, hw, terms, tmp):
    """Predicted latency (ns) of one candidate; fills terms[0:T_LEN]."""
    for t in range(T_LEN):
        terms[t] = 0.0
    kind = base[i, R_KIND]
    bm = base[i, R_BM]
    bn = base[i, R_BN]
    bk = base[i, R_BK]
    stages = base[i, R_STAGES]
    group_m = base[i, R_GROUP]
    # Programs land on chiplets by the hardware's dispatch whatever the row says; the row's remap
    # only decides which tiles form each chiplet's runs (chunk 1 = the dispatch's own round-robin).
    rr = hw[HW_RR] > 0.5
    nchip = int(hw[HW_CHIPLETS]) if rr else 1
    chunk = base[i, R_CHUNK] if base[i, R_NCHIP] > 1 else 1
    occ = base[i, R_OCC]
    cus = int(hw[HW_CUS])
    num_pid_m = (m + bm - 1) >> base[i, R_LBM]  # blocks are powers of two: shifts, not divisions
    num_pid_n = (n + bn - 1) >> base[i, R_LBN]
    tiles = num_pid_m * num_pid_n * batch
    kiters = max(1, (k + bk - 1) >> base[i, R_LBK])
    if not problem_valid(base[i], m, n, kiters, tiles, cus):
        return np.inf
    if kind == K_WS and not ws_valid(n, batch, ab, cb, align):
        return np.inf
    eff = effs[i]
    align_pen = 1.0 if align >= 16 else hw[HW_UNALIGNED]
    slow = _spill_slowdown(base[i, R_SPILL], align, hw)
    sw, sx = _load_class(base[i, R_WARPS] * 1.0, align, hw)
    slots = cus * occ
    total = 0.0
    if kind == K_DP or kind == K_PERSISTENT or kind == K_WS:
        grid_cap = slots
        if kind != K_DP:
            grid_cap = min(slots, grid_of(cus * base[i, R_GMULT], tiles))
        # warp-specialised: each tile's epilogue overlaps the next tile's loads; one is left in series
        tile_ns = 0.0 if kind == K_WS else hw[HW_TILE]
        t = _phase(tiles, kiters, grid_cap, bm, bn, bk, stages, eff, cus, nchip, chunk, rr,
                   ab, bb, hw, num_pid_m, num_pid_n, group_m, align_pen, terms, tmp, tile_ns, 0, 1, slow, sw, sx)
        if kind == K_WS:
            t += hw[HW_TILE]
            terms[T_EPILOGUE] += hw[HW_TILE]
        total += t
    elif kind == K_STREAMK:
        g = cus * base[i, R_GMULT]
        sk_tiles = tiles % g
        dp_tiles = tiles - sk_tiles
        if sk_tiles == 0:
            return np.inf  # nothing to stream: identical to persistent
        sk_eff = eff * hw[HW_SK_EFF]
        # unaligned rows (masked pointer loads): the Stream-K kernel's loads lose more than the data-parallel
        # kernel's (x >= 1, so screen_bounds' memory terms, without it, stay lower bounds)
        sk_pen = align_pen if align >= 16 else align_pen * hw[HW_SK_UNALIGNED]
        if dp_tiles > 0:  # the Stream-K kernel's efficiency applies to its data-parallel tiles too
            t = _phase(dp_tiles, kiters, g, bm, bn, bk, stages, sk_eff, cus, nchip, chunk, rr,
                       ab, bb, hw, num_pid_m, num_pid_n, group_m, sk_pen, terms, tmp, hw[HW_TILE], 0, 1, slow, sw, sx)
            total += t
        iters = _cdiv(sk_tiles * kiters, g)
        if dp_tiles == 0:  # every tile split: H200 sweeps measured these ~1.2x over the mixed grids' rate
            sk_eff *= hw[HW_SK_SPLIT]  # <= 1, so screen_bounds' compute (without it) stays a lower bound
        rows, cols = _distinct(min(sk_tiles, g), nchip, chunk, rr, num_pid_m, num_pid_n, group_m)
        # the streamed phase's g programs cover the sk_tiles tiles' K-iterations at once: about g / sk_tiles
        # disjoint K ranges of each tile, counted as far as streamk_range_reads says (_streamed_ranges)
        step = slow * _kstep(g, bm, bn, bk, stages, sk_eff, cus, nchip, ab, bb, hw, rows, cols, sk_pen, tmp,
                             _streamed_ranges(g, sk_tiles, kiters, hw), sw, sx)
        for t in range(5):
            terms[t] += iters * slow * tmp[t]
        total += iters * step + hw[HW_TILE]
        # contributors per split tile: the grid's share of one tile's iterations, on average
        # (g / sk_tiles + 1, at most one per iteration) — continuous, so the cost is monotone in K
        contrib = min(kiters * 1.0, g / sk_tiles + 1.0)
        part_bytes = sk_tiles * contrib * bm * bn * 4.0 * 2.0
        fix = hw[HW_FIXUP] + part_bytes / hw[HW_L2_BW]
        fix += (contrib - 1.0) * bm * bn * 4.0 * cus / hw[HW_L2_BW]
        terms[T_FIXUP] += fix
        total += fix
    else:  # split-K
        s = base[i, R_SPLIT]
        kpart = _cdiv(kiters, s)
        progs = tiles * s
        # the split-K kernel's main loop against the data-parallel one's (model.splitk_efficiency, <= 1:
        # _screen_splitk's compute, without it, stays a lower bound)
        t = _phase(progs, kpart, slots, bm, bn, bk, stages, eff * hw[HW_SPLITK_EFF], cus, nchip, chunk, rr,
                   ab, bb, hw, num_pid_m, num_pid_n, 1, align_pen, terms, tmp, hw[HW_TILE], tiles, s, slow, sw, sx)
        total += t
        part_bytes = progs * bm * bn * 4.0 * 2.0
        # the tile's last program reads the other s - 1 partials alone: at its share of the L2 bandwidth
        # times splitk_fixup_read_efficiency (<= 1, so _screen_splitk's bound, without it, stays a bound)
        fix = hw[HW_FIXUP] + _partial_time(part_bytes, hw) + \
            (s - 1) * bm * bn * 4.0 * cus / (hw[HW_L2_BW] * hw[HW_FIX_READ])
        terms[T_FIXUP] += fix
        total += fix
    # epilogue: C written once (bias/beta·C reads ride along), spread over the machine
    c_bytes = m * n * batch * cb * 1.0
    epi = c_bytes / hw[HW_HBM_BW] / max(1.0, _cdiv(tiles, slots) * 1.0)
    terms[T_EPILOGUE] += epi
    total += epi + hw[HW_LAUNCH]
    terms[T_LAUNCH] = hw[HW_LAUNCH]
    # waves: time lost to the partial last wave (informational: already inside the totals)
    waves = _cdiv(tiles, slots)
    terms[T_WAVES] = (1.0 - tiles / (waves * slots * 1.0)) * (terms[T_COMPUTE])
    floor = max(2.0 * m * n * k * batch / hw[HW_PEAK],
                (m * k * ab + k * n * bb + m * n * cb) * batch * 1.0 / hw[HW_HBM_BW])
    return _final(total, floor)


@njit(cache=CACHE, fastmath=FASTMATH)
def score_all(base, effs, m, n, k, batch, ab, bb, cb, align, hw, out_lat, out_terms):
    """Score every row of ``base`` for one problem; invalid rows get +inf."""
    tmp = np.zeros(8)
    for i in range(base.shape[0]):
        twin = base[i, R_TWIN]
        if twin >= 0:  # identical to an earlier row for the model: same score
            out_lat[i] = out_lat[twin]
            out_terms[i, :] = out_terms[twin, :]
            continue
        out_lat[i] = score_row(base, i, effs, m, n, k, batch, ab, bb, cb, align, hw, out_terms[i], tmp)


# --- branch and bound (select) -------------------------------------------------------------------
# The search plan (origami.enumerate.search_plan) holds every row that is not a model twin, in
# *families*: rows that differ only in GROUP_M and the chiplet remap, which the score reads only
# through the LLC and HBM terms. Family columns: its rows are fam_rows[F_START:F_END], ascending,
# F_ROW the first; F_KIND; F_GRID programs per CU of a full wave's grid (data-parallel: occupancy,
# persistent: min(occupancy, grid_mult), Stream-K: grid_mult); F_SPLIT (split-K); F_GROUP its tile
# group (block sizes, stages, occupancy: one row of group_constants), whose families are contiguous
# and end at F_GEND.
F_START, F_END, F_ROW, F_KIND, F_GRID, F_SPLIT, F_GROUP, F_GEND, F_LEN = range(9)
GC_COMPUTE, GC_COMPUTE_SK, GC_L2, GC_LAT, GC_LEN = range(5)

# Relative slack of screen_bounds: far above the rounding error of either side (well under 1e-13).
SCREEN_SLACK = 1e-9


def group_constants(base, effs, fams, ab, bb, hw):
    """Problem-independent constants of each tile group (once per candidate array, in numpy: only
    screen_bounds reads them, and it allows for rounding): the compute time of one K-step of one
    program per CU (data-parallel and Stream-K efficiency), the L2 time of one program's K-step
    (aligned), and the latency bound of one K-step."""
    first = np.unique(fams[:, F_GROUP], return_index=True)[1]
    rows = fams[first, F_ROW]
    bm, bn, bk = (base[rows, c].astype(np.float64) for c in (R_BM, R_BN, R_BK))
    out = np.empty((rows.size, GC_LEN))
    bnc = np.maximum(bn, hw[HW_IN])  # mma_work, vectorised
    padded = np.where(bm < hw[HW_IM], 2.0 * np.maximum(bm, NARROW_MMA_M) * bnc * bk / NARROW_MMA_RATE,
                      2.0 * (bm + hw[HW_MN_COST] * bn) * bnc * bk)
    out[:, GC_COMPUTE] = padded / (hw[HW_CU_RATE] * effs[rows])
    out[:, GC_COMPUTE_SK] = out[:, GC_COMPUTE] / hw[HW_SK_EFF]
    out[:, GC_L2] = (bm * ab + bn * bb) * bk / hw[HW_L2_BW]
    out[:, GC_LAT] = hw[HW_LAT] / np.maximum(1.0, base[rows, R_STAGES] - 1.0)
    return out


@njit(cache=CACHE, fastmath=FASTMATH, inline="always")
def _step_lb(per_cu, nprog, compute1, l2_1, lat, hw):
    """_kstep with the memory time taken as its L2 time (LLC and HBM omitted)."""
    compute = per_cu * compute1
    l2 = nprog * l2_1
    return max(max(compute, l2), lat) + hw[HW_OVERLAP] * min(compute, l2) + hw[HW_KITER]


@njit(cache=CACHE, fastmath=FASTMATH, inline="always")
def _phase_lb(full, rest, ksteps, per_cu, cus, compute1, l2_1, lat, hw, tile_ns):
    """_phase with _step_lb for _kstep: ``full`` waves of a grid of ``per_cu`` programs per CU,
    then a last wave of ``rest`` programs, ``tile_ns`` a wave (divisions are what the screen spends
    its time on: the caller shares them)."""
    t = 0.0
    if full > 0:
        t += full * (ksteps * _step_lb(per_cu, cus * per_cu, compute1, l2_1, lat, hw) + tile_ns)
    if rest > 0:
        pc = _cdiv(rest, cus)  # _kstep's L2 share: a partial wave costs per_cu * cus programs' L2 time
        t += ksteps * _step_lb(pc, pc * cus, compute1, l2_1, lat, hw) + tile_ns
    return t


@njit(cache=CACHE, fastmath=FASTMATH, inline="always")
def _screen_streamk(tiles, kiters, per_cu, cus, bm, bn, compute1, l2_1, lat, hw):
    """score_row's Stream-K time (before epilogue and launch), as _step_lb sees a K-step; +inf when
    nothing is left to stream. contrib is 1 (kiters = 1) or ≥ 2 (grid > sk_tiles), so
    contrib − 1 is exact or far from cancellation."""
    grid = cus * per_cu
    full = tiles // grid
    sk_tiles = tiles - full * grid
    if sk_tiles == 0:
        return np.inf
    step = _step_lb(per_cu, grid, compute1, l2_1, lat, hw)
    contrib = min(kiters * 1.0, grid / sk_tiles + 1.0)
    t = full * (kiters * step + hw[HW_TILE])
    t += _cdiv(sk_tiles * kiters, grid) * step + hw[HW_TILE]
    fixup_bytes = sk_tiles * contrib * bm * bn * 8.0 + (contrib - 1.0) * bm * bn * 4.0 * cus
    return t + hw[HW_FIXUP] + fixup_bytes / hw[HW_L2_BW]


@njit(cache=CACHE, fastmath=FASTMATH, inline="always")
def _screen_splitk(tiles, kiters, split, occ, cus, bm, bn, compute1, l2_1, lat, hw):
    """score_row's split-K time (before epilogue and launch), as _step_lb sees a K-step."""
    progs = tiles * split
    full = progs // (cus * occ)
    t = _phase_lb(full, progs - full * cus * occ, _cdiv(kiters, split), occ, cus, compute1, l2_1, lat, hw, hw[HW_TILE])
    return t + hw[HW_FIXUP] + (progs * bm * bn * 8.0 + (split - 1) * bm * bn * 4.0 * cus) / hw[HW_L2_BW]


@njit(cache=CACHE, fastmath=FASTMATH)
def screen_bounds(base, fams, gconst, m, n, k, batch, ab, cb, align, hw, floor, out):
    """out[f] = a lower bound of the score of every row of family f (+inf: none is valid).

    Why it is one: it is score_row's total in real arithmetic with the memory time of every K-step
    taken as its L2 time — max(L2, LLC, HBM) ≥ L2, and the total is non-decreasing in it (the
    profile's overlap_loss is validated to [0, 1]); the rest is the same sum, evaluated from
    per-group constants instead of score_row's exact expressions. Both sides are sums, products,
    quotients, max and min of non-negative numbers (the one difference, Stream-K's contrib − 1,
    does not cancel: _screen_streamk), so each computed value is within ~100 ulp (< 1e-13
    relative) of its real value; scaling the total by (1 − SCREEN_SLACK) makes it ≤ the computed
    score, and _final (monotone, with score_row's own floor expression) keeps it a lower bound. The tests check it against the
    full scoring (test_screen_bounds_never_exceed_the_score_of_a_family_row).

    Cost: 10-15 ns a family that needs its bound (split-K families are skipped in one step when the
    tiles fill the machine), 2-5 µs in all (measured 2026-11-30 on this 2-core EPYC)."""
    cus = int(hw[HW_CUS])
    pen = 1.0 if align >= 16 else hw[HW_UNALIGNED]
    c_time = m * n * batch * cb * 1.0 / hw[HW_HBM_BW]
    keep = 1.0 - SCREEN_SLACK
    f = 0
    while f < fams.shape[0]:
        gend = fams[f, F_GEND]
        r = fams[f, F_ROW]
        bm = base[r, R_BM]
        bn = base[r, R_BN]
        out[f:gend] = np.inf
        if bm > max(64, 4 * m) or bn > max(64, 4 * n):  # problem_valid, for every row of the group
            f = gend
            continue
        tiles = ((m + bm - 1) >> base[r, R_LBM]) * ((n + bn - 1) >> base[r, R_LBN]) * batch
        kiters = max(1, (k + base[r, R_BK] - 1) >> base[r, R_LBK])
        occ = base[r, R_OCC]
        g = fams[f, F_GROUP]
        l2_1 = gconst[g, GC_L2] * pen
        lat = gconst[g, GC_LAT]
        full = tiles // (cus * occ)  # data-parallel waves: the full ones, then the rest
        rest = tiles - full * cus * occ
        fixed = c_time / max(1.0, (full + (rest > 0)) * 1.0) + hw[HW_LAUNCH]  # epilogue over _cdiv(tiles, slots)
        for j in range(f, gend):
            kind = fams[j, F_KIND]
            if kind == K_SPLITK:  # a group's split-K families come last
                if tiles >= cus:
                    break
                if fams[j, F_SPLIT] < 2 or fams[j, F_SPLIT] > kiters:
                    continue
                t = _screen_splitk(tiles, kiters, fams[j, F_SPLIT], occ, cus, bm, bn, gconst[g, GC_COMPUTE], l2_1,
                                   lat, hw)
            elif kind == K_STREAMK:
                t = _screen_streamk(tiles, kiters, fams[j, F_GRID], cus, bm, bn, gconst[g, GC_COMPUTE_SK], l2_1,
                                    lat, hw)
            else:  # data-parallel, persistent or warp-specialised
                per_cu = fams[j, F_GRID]
                pfull, prest = full, rest
                if per_cu != occ:  # a persistent grid below the resident capacity
                    pfull = tiles // (cus * per_cu)
                    prest = tiles - pfull * cus * per_cu
                if kind == K_WS:  # score_row's: one tile overhead in all
                    if not ws_valid(n, batch, ab, cb, align):
                        continue
                    t = _phase_lb(pfull, prest, kiters, per_cu, cus, gconst[g, GC_COMPUTE], l2_1, lat, hw, 0.0)
                    t += hw[HW_TILE]
                else:
                    t = _phase_lb(pfull, prest, kiters, per_cu, cus, gconst[g, GC_COMPUTE], l2_1, lat, hw, hw[HW_TILE])
            out[j] = _final((t + fixed) * keep, floor)
        f = gend


@njit(cache=CACHE, fastmath=FASTMATH)
def _scan_family(f, screen, base, effs, fams, fam_rows, m, n, k, batch, ab, bb, cb, align, hw, terms, tmp,
                 best, best_lat):
    """Score family f's rows that can still beat (best, best_lat); returns the new (best, best_lat)."""
    for q in range(fams[f, F_START], fams[f, F_END]):
        r = fam_rows[q]
        if screen > best_lat or (screen == best_lat and r > best):
            break  # rows ascend: no later row of the family can win either
        lat = score_row(base, r, effs, m, n, k, batch, ab, bb, cb, align, hw, terms, tmp)
        if lat < best_lat or (lat == best_lat and r < best):
            best_lat = lat
            best = r
    return best, best_lat


@njit(cache=CACHE, fastmath=FASTMATH)
def best_row(base, effs, fams, fam_rows, gconst, m, n, k, batch, ab, bb, cb, align, hw):
    """Index and latency of the best row for one problem (ties: lowest index); (-1, inf) if none.

    Branch and bound over the search plan's families (model twins tie an earlier row, so they
    never win and are not in it): every family's screen bound, then, lowest bound first, the rows
    of every family that can still beat the best row so far (or tie it at a lower row). The argmin
    is exact: a row is skipped only when a lower bound of its score says it cannot win."""
    tmp = np.zeros(8)
    terms = np.zeros(T_LEN)
    nf = fams.shape[0]
    screen = np.empty(nf)
    floor = max(2.0 * m * n * k * batch / hw[HW_PEAK],
                (m * k * ab + k * n * bb + m * n * cb) * batch * 1.0 / hw[HW_HBM_BW])
    screen_bounds(base, fams, gconst, m, n, k, batch, ab, cb, align, hw, floor, screen)
    # Best first, by hand (np.argsort and np.argmin add ~1.5 s and ~0.3 s of cold compile): the live
    # family with the lowest bound next; after each, drop the families that can no longer win.
    live = np.empty(nf, dtype=np.int64)
    nxt = 0
    for f in range(nf):
        live[f] = f
        if screen[f] < screen[nxt]:
            nxt = f
    nlive = nf
    best = -1
    best_lat = np.inf
    while nlive > 0:
        f = live[nxt]
        nlive -= 1
        live[nxt] = live[nlive]
        best, best_lat = _scan_family(f, screen[f], base, effs, fams, fam_rows, m, n, k, batch, ab, bb, cb, align,
                                      hw, terms, tmp, best, best_lat)
        keep = 0
        nxt = 0
        for q in range(nlive):
            g = live[q]
            if screen[g] < best_lat or (screen[g] == best_lat and fams[g, F_ROW] < best):
                live[keep] = g
                if screen[g] < screen[live[nxt]]:
                    nxt = keep
                keep += 1
        nlive = keep
    return best, best_lat


@njit(cache=CACHE, fastmath=FASTMATH)
def select_row(base, effs, fams, fam_rows, gconst, m, n, k, batch, ab, bb, cb, align, hw):
    """best_row, and the best row's terms: (row, latency, terms as a tuple). One call for select;
    a tuple comes back to Python ~0.5 µs faster than an array filled in place."""
    i, lat = best_row(base, effs, fams, fam_rows, gconst, m, n, k, batch, ab, bb, cb, align, hw)
    t = np.zeros(T_LEN)
    if i >= 0:
        score_row(base, i, effs, m, n, k, batch, ab, bb, cb, align, hw, t, np.zeros(8))
    return i, lat, (t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8])


assert T_LEN == 9, "select_row returns T_LEN terms"


@njit(cache=CACHE, fastmath=FASTMATH, parallel=True)
def best_rows_many(base, effs, fams, fam_rows, gconst, dims, sizes, align, hw, out_idx, out_lat):
    """select for many problems of one dtype/layout class: dims is (P, 4) int64 [m, n, k, batch]."""
    for p in prange(dims.shape[0]):
        i, lat = best_row(base, effs, fams, fam_rows, gconst, dims[p, 0], dims[p, 1], dims[p, 2], dims[p, 3],
                          sizes[0], sizes[1], sizes[2], align[p], hw)
        out_idx[p] = i
        out_lat[p] = lat
