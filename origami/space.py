"""The search space: validity predicates (one per hardware constraint) and candidate enumeration.

The predicates are the single source of truth shared by the enumerator, the selector, the launcher
(`tritonblas.plan`) and the tests. Each takes ``(cfg, problem, hw)`` and returns ``None`` when the
constraint holds, or a one-line reason when it does not.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Callable

from origami import toolchain
from origami.promoted_spill import PROMOTED_SPILL_BYTES_FP8
from origami.spill_census import SPILL_BYTES, SPILL_BYTES_FP8
from origami.spill_slowdown import SLOWDOWN
from origami._encoding import STAGED_ALIGN
from origami.config import Kind, TileConfig
from origami.hardware import HardwareProfile
from origami.problem import DType, GemmProblem, tma_store_exact

__all__ = [
    "TileConfig", "Kind", "smem_bytes", "amd_direct_to_lds", "acc_registers_per_thread", "resident_programs", "register_staged",
    "narrow_loads", "amd_register_budget", "amd_vgprs_per_thread", "amd_vgpr_bound",
    "staged_registers_per_thread", "check_staged_registers", "MAX_STAGED_REGS_PER_THREAD",
    "staged_load_pressure", "STAGED_PRESSURE_LIMITS", "STAGED_SPILL_CENSUS", "STAGED_SPILL_CENSUS_ARCH",
    "staged_spills", "over_pressure_limit", "census_spills", "staged_spill_rule", "spill_group",
    "census_spill_traffic", "measured_spill_slowdown", "promoted_spill_bytes", "check_promoted_registers",
    "check_smem", "check_registers", "check_instr", "check_vendor", "check_problem", "check_residency",
    "check_ws", "ws_available", "ws_space", "without_ws", "without_promotion", "WS_TILES", "WS_WARPS", "WS_DTYPES",
    "PREDICATES", "violations", "is_valid", "k_iters",
]

# Per-thread fp32 accumulator registers above which Triton spills or serialises: a 256x256 tile at
# 8 warps (256 regs) ran at 0.03-0.27x of the best config on the H200 (H200.md, 2026-11-29).
MAX_ACC_REGS_PER_THREAD = 128
# Register-staged loads (see register_staged): the per-thread registers that the in-flight operand
# stages plus the accumulator may take. Measured on the H200 (Triton 3.6, sweeps of 2026-11-30,
# the 2-byte-aligned bf16 shapes of benchmarks/data/h200/{square,dlrm}.csv, ~1100 configs): with
# at most 128 the measured time was 0.6-1.3x the model's prediction (median), as for aligned
# shapes; at 144-384 it was 2-12x (median), e.g. 6007^3 at 128x256x64 w8 s3 took 21.6 ms against
# 4.5 ms for 256x128x32 w8 s3.
MAX_STAGED_REGS_PER_THREAD = 128
# The same loads, per kernel: what the compiler does (benchmarks/staged_census.py: every (kind, tile, warps,
# stages) of the staged space compiled for sm_90 by Triton 3.6 on the CPU, ptxas -v; compiler output, no
# timings; benchmarks/data/nvidia_aot/h200_staged.csv: 510 compiled rows, 150 distinct (kind, tile, warps), of
# 61x6485x11719, 4096x1057x3333 and split-K on 31x1163x5965). The shape and the stages do not change the
# registers (every distinct config compiled alike on every shape, s3 as s4); what does is the per-thread operand
# elements a K-step loads by scalar masked loads (each with its own address), the accumulator, and the kernel
# (Stream-K and persistent keep more state live than data-parallel, split-K the least). staged_load_pressure
# counts the B tile's elements twice: the census separates that way (split-K 16x128x64 spills 656 bytes where
# 128x64x32, with more A and accumulator elements but half the B ones per thread, compiles clean; data-parallel
# 32x128x32 spills where 64x64x32 does not). Against ptxas's verdict (spill bytes > 0) on the 510 rows:
# 10 wrong (3 of the 150 configs: data-parallel 128x128x32 w8 predicted to spill and clean, persistent 16x64x64
# spilling 24 bytes, split-K 16x64x128 clean), where the weights 1.5 A + B + accumulator with the limits
# {dp 108, persistent 72, streamk 96, splitk 144} that preceded them were wrong on 50 (14 configs, all spilling
# under their limit, among them split-K 16x128x64). Leave-one-config-out with the limits refitted: 8 of 150 wrong (those weights: 9).
# benchmarks/spill_eval.py --census prints both confusion tables. Of the configs the MAX_STAGED rule keeps, the
# spilling ones timed on 61x6485x11719 (a training shape, benchmarks/data/h200/ragged.csv) ran at a median
# 1.26x their prediction (0.58-2.93), the clean ones at 0.92x (0.51-1.70). Read through staged_spills by
# model.staged_spill_rule (1: such configs leave the space) and model.staged_spill_penalty (their main loop
# slower by that share).
STAGED_PRESSURE_LIMITS = {Kind.DP: 100.0, Kind.PERSISTENT: 90.0, Kind.STREAMK: 100.0, Kind.SPLITK: 140.0}
# The census's verdict where the pressure rule disagrees with it, on the arch and compiler it compiled for (sm_90,
# Triton 3.6): (kind, BLOCK_M, BLOCK_N, BLOCK_K, warps) -> spills. Compiler facts beat the fitted rule where they
# exist: data-parallel 128x128x32 w8 compiles clean at pressure 112 (its 256x64x32 w8 twin, same pressure, spills)
# and ran fastest of every config on the H100's held-out 4096x497x1946 fp16 (benchmarks/data/h100_heldout/fp16.csv);
# persistent 16x64x64 w4 spills 24 bytes under its limit; split-K 16x64x128 w4 compiles clean over its limit.
STAGED_SPILL_CENSUS_ARCH = "sm_90"
STAGED_SPILL_CENSUS = {(Kind.DP, 128, 128, 32, 8): False, (Kind.PERSISTENT, 16, 64, 64, 4): True,
                       (Kind.SPLITK, 16, 64, 128, 4): False}
# The warp-specialised persistent kernel (kind 'ws', tritonblas/kernels/gluon_hopper.py): the tiles it
# is compiled and tested for, (BLOCK_M, BLOCK_N, BLOCK_K, stages) — gluon_hopper.VARIANTS, kept equal by
# tests/api/test_ws_plan.py — its default partition's warps (two consumer warpgroups; the TMA
# producer warp comes on top), and its input and output dtypes.
WS_TILES = ((128, 256, 64, 3), (128, 128, 64, 4))
WS_WARPS = 8
WS_DTYPES = (DType.BF16, DType.FP16)


def k_iters(problem: GemmProblem, cfg: TileConfig) -> int:
    return max(1, math.ceil(problem.k / cfg.block_k))


def smem_bytes(cfg: TileConfig, problem: GemmProblem, hw: HardwareProfile) -> int:
    """Shared memory / LDS that Triton allocates for the operand pipeline of one program.

    A = BM·BK·bytes(a), B = BK·BN·bytes(b).
    - AMD (stream pipeliner): max(A, B) for num_stages = 1, else (num_stages − 1)·(A + B) — tritonBLAS'
      formula, validated 35/35 against compiled metadata on gfx942 with Triton 3.6 (reference study §4),
      and on gfx942 with Triton 3.9 (the CI census sample, 13/13, 2026-12-01).
    - AMD gfx950 under Triton >= 3.8 (:func:`amd_direct_to_lds`): every stage is an LDS buffer plus
      row padding, bounded here by num_stages·(A + B)·17/16. Compiled on this CPU for gfx950 with
      Triton 3.9 (benchmarks/amd_census.py, 2026-12-01, 36 configs with num_stages >= 2 from the
      mi350x/mi355x spaces): the allocation was num_stages·(A + B) plus 0.8-6.2% (the most with
      32x32 MFMA and a transposed A), never above this bound; num_stages = 1 stays max(A, B) (18 of
      20 configs; the other 2, 32-row tiles with 32x32 MFMA, took 2·max(A, B), at most 16 KiB).
    - NVIDIA: num_stages·(A + B) (every stage is a cp.async/TMA buffer; stage 1 still stages the dot
      operands in shared memory for wgmma); equal to `kernel.metadata.shared` of the compiled sm_90
      pointer kernels (tests/kernels/test_aot_compile.py, Triton 3.6, 2026-11-30). The TMA kernel
      adds 8·num_stages bytes of mbarriers, which no power-of-two tile brings over the limit.
    """
    a = cfg.block_m * cfg.block_k * problem.a_dtype.bytes
    b = cfg.block_k * cfg.block_n * problem.b_dtype.bytes
    if hw.is_amd:
        if cfg.num_stages == 1:
            return max(a, b)
        if amd_direct_to_lds(hw):
            staged = cfg.num_stages * (a + b)
            return staged + staged // 16
        return (cfg.num_stages - 1) * (a + b)
    if cfg.kind is Kind.WS:  # gluon_hopper.smem_bytes: the ring, the epilogue's C staging tile, 2·stages mbarriers
        return cfg.num_stages * (a + b) + cfg.block_m * cfg.block_n * problem.c_dtype.bytes + 16 * cfg.num_stages
    return max(1, cfg.num_stages) * (a + b)


def amd_direct_to_lds(hw: HardwareProfile) -> bool:
    """Whether the compiler stages all num_stages operand buffers in LDS on ``hw``: gfx950 with
    Triton 3.8 or later (:func:`origami.toolchain.triton_version`; 3.6 keeps one stage in registers,
    as on gfx942 with every release measured)."""
    if hw.arch != "gfx950":
        return False
    version = toolchain.triton_version()
    return version is not None and version >= (3, 8)


def acc_registers_per_thread(cfg: TileConfig, hw: HardwareProfile) -> int:
    return cfg.block_m * cfg.block_n // (cfg.num_warps * hw.compute["warp_size"])


def register_staged(problem: GemmProblem, hw: HardwareProfile) -> bool:
    """Whether the pointer kernel's operand loads go through registers: on NVIDIA, rows that are not
    4-byte aligned (``problem.align_bytes < 4``) cannot use cp.async (4, 8 or 16 bytes a copy), so
    Triton's pipeliner keeps every in-flight stage of A and B in registers. (AMD's loads always go
    through registers and its pipeliner stages through LDS: its smem/occupancy model covers them.)"""
    return not hw.is_amd and problem.align_bytes < STAGED_ALIGN


def staged_registers_per_thread(cfg: TileConfig, problem: GemmProblem, hw: HardwareProfile) -> int:
    """32-bit registers per thread of the in-flight operand stages (num_stages − 1 of them) plus
    the fp32 accumulator, for register-staged loads (:func:`register_staged`)."""
    stage = cfg.block_m * cfg.block_k * problem.a_dtype.bytes + cfg.block_k * cfg.block_n * problem.b_dtype.bytes
    threads = cfg.num_warps * hw.compute["warp_size"]
    return max(1, cfg.num_stages - 1) * stage // (4 * threads) + acc_registers_per_thread(cfg, hw)


def staged_load_pressure(cfg: TileConfig, hw: HardwareProfile) -> float:
    """Per-thread register pressure of a register-staged K-step, in elements: the A tile's
    (BLOCK_M x BLOCK_K) plus twice the B tile's (BLOCK_K x BLOCK_N) plus the accumulator's, over the
    program's threads (STAGED_PRESSURE_LIMITS says where these weights come from)."""
    threads = cfg.num_warps * hw.compute["warp_size"]
    return (cfg.block_m * cfg.block_k + 2 * cfg.block_k * cfg.block_n + cfg.block_m * cfg.block_n) / threads


def staged_spills(cfg: TileConfig, problem: GemmProblem, hw: HardwareProfile) -> bool:
    """Whether ``cfg``'s kernel spills registers on ``problem``: its loads are register-staged
    (:func:`register_staged`) and its :func:`staged_load_pressure` is over its kind's
    :data:`STAGED_PRESSURE_LIMITS` (kinds without a limit, the warp-specialised one, never stage), except
    where the sm_90 compile census says otherwise (:data:`STAGED_SPILL_CENSUS`, on that arch only).
    The one spill predicate: the space's rule (:func:`check_staged_registers`), the encoded rows'
    ``staged_spill`` column that the scorer's ``model.staged_spill_penalty`` reads
    (origami.enumerate.base_array, origami.select.predict) and the census tests all call it."""
    if cfg.kind not in STAGED_PRESSURE_LIMITS or not register_staged(problem, hw):
        return False
    known = census_spills(cfg, hw)
    return over_pressure_limit(cfg, hw) if known is None else known


def over_pressure_limit(cfg: TileConfig, hw: HardwareProfile) -> bool:
    """The pressure rule alone: :func:`staged_load_pressure` over ``cfg``'s kind's
    :data:`STAGED_PRESSURE_LIMITS` (False for a kind without a limit)."""
    limit = STAGED_PRESSURE_LIMITS.get(cfg.kind)
    return limit is not None and staged_load_pressure(cfg, hw) > limit


def census_spills(cfg: TileConfig, hw: HardwareProfile) -> "bool | None":
    """The compile census's verdict on ``cfg`` (:data:`STAGED_SPILL_CENSUS`) on the arch it compiled for; None
    where it has none (another arch, or a config the pressure rule gets right)."""
    if hw.arch != STAGED_SPILL_CENSUS_ARCH:
        return None
    return STAGED_SPILL_CENSUS.get((cfg.kind, cfg.block_m, cfg.block_n, cfg.block_k, cfg.num_warps))


def spill_group(cfg: TileConfig) -> tuple:
    """The key of the spill tables (origami.spill_census, origami.spill_slowdown): (kind, BLOCK_M, BLOCK_N,
    BLOCK_K, warps); the stages, grid and GROUP_M do not change what the compiler spills."""
    return (cfg.kind.value, cfg.block_m, cfg.block_n, cfg.block_k, cfg.num_warps)


# the census's table per operand width in bytes (origami.spill_census: the bf16 and the fp8_e4m3 compiles)
_SPILL_TABLES = {2: SPILL_BYTES, 1: SPILL_BYTES_FP8}


def census_spill_traffic(cfg: TileConfig, problem: GemmProblem, hw: HardwareProfile) -> "float | None":
    """Spill bytes per multiply-add of ``cfg``'s K-step on a register-staged ``problem``: the sm_90 compile
    census's spill bytes per thread (origami.spill_census: SPILL_BYTES for 2-byte operands, SPILL_BYTES_FP8 for
    1-byte; stores + loads) x the block's threads / (BLOCK_M x BLOCK_N x BLOCK_K); 0 for a config the census compiled
    clean. None where the census does not speak: another arch, operands of another width or of two widths, a config
    it did not compile, or a problem whose loads are not register-staged (:func:`register_staged`). For 2-byte
    operands what spilling costs is not this number (on the H100's training rows it ranks the groups' measured
    slowdown poorly: :func:`measured_spill_slowdown`); for 1-byte ones the census separates the configs that ran
    40-59x their prediction on the H100's unaligned fp8 training rows (10-19 bytes per multiply-add) from the
    rest (at most 2.9; the fastest 0.28), and ``model.fp8_spill_traffic_limit`` reads it (:func:`check_staged_registers`)."""
    width = problem.a_dtype.bytes
    if hw.arch != STAGED_SPILL_CENSUS_ARCH or not register_staged(problem, hw) or cfg.kind not in STAGED_PRESSURE_LIMITS \
            or problem.b_dtype.bytes != width or width not in _SPILL_TABLES:
        return None
    spilled = _SPILL_TABLES[width].get(spill_group(cfg))
    if spilled is None:
        return None
    threads = cfg.num_warps * hw.compute["warp_size"]
    return spilled * threads / (cfg.block_m * cfg.block_n * cfg.block_k)


def measured_spill_slowdown(cfg: TileConfig, problem: GemmProblem, hw: HardwareProfile) -> "float | None":
    """How much slower than predicted ``cfg`` ran on training rows like ``problem``, against the clean configs of
    the same shapes (origami.spill_slowdown.SLOWDOWN: per census-spilling (kind, tile, warps), the median over the
    H100's training sweeps, benchmarks/spill_slowdown.py); None where :func:`census_spill_traffic` does not speak
    or the group has no such measurement (a clean config, or fewer than 10 timed rows). Read by
    :func:`check_staged_registers` through ``model.staged_slowdown_limit``.

    Why measured and not derived from the census's spill bytes: on the H100's 32 unaligned training shapes, with
    every spilling group of the space timed (benchmarks/spill_jobs.py), the slowdown ran from 0.85x
    (dp 16x64x128 w4, 1.35 spill bytes per multiply-add) to 3.48x (Stream-K 32x128x64 w4, 2.31) and 2.04x for
    split-K 16x128x64 w4 at 0.64: neither the bytes nor the bytes per multiply-add order them (our guess at why:
    ptxas's count does not say whether a spill sits inside the K loop or outside it)."""
    if problem.a_dtype.bytes != 2 or census_spill_traffic(cfg, problem, hw) is None:  # the table's rows are bf16
        return None
    return SLOWDOWN.get(spill_group(cfg))


def staged_spill_rule(hw: HardwareProfile) -> bool:
    """Whether ``hw``'s space leaves out the configs whose register-staged kernels spill
    (:data:`STAGED_PRESSURE_LIMITS`): an NVIDIA profile with ``model.staged_spill_rule`` 1."""
    return not hw.is_amd and hw.model.get("staged_spill_rule", 0.0) > 0


def narrow_loads(problem: GemmProblem, hw: HardwareProfile) -> bool:
    """The alignment class of the candidate space (``origami.enumerate.base_array``'s ``staged``):
    on NVIDIA :func:`register_staged` (under 4 bytes: no cp.async); on AMD under 16 bytes, where
    the pointer kernels lose their dwordx4 loads (tests/kernels/test_aot_compile.py) and take
    far more registers (:func:`amd_vgpr_bound`)."""
    return problem.align_bytes < 16 if hw.is_amd else register_staged(problem, hw)


# --- AMD registers -------------------------------------------------------------------------------
# Fitted to the AMD compile census (benchmarks/amd_census.py; Triton 3.6, gfx942 + gfx950,
# 2026-12-01) as committed in 8990a5f: 940 compiled configs whose LDS fits, 163 of them spilling,
# the picks of the earlier model plus a space sample. The target is TotalNumVgprs (arch + AGPRs) per
# thread of the pointer kernels. The terms:
#   acc     the per-thread fp32 accumulator
#   stage   the operand stages in flight, max(1, stages − 1)·(BM·BK + BK·BN)·bytes / (4·threads)
#   narrow  operands under 16-byte alignment
#   streamk Stream-K's fix-up path
# Central estimate: least squares on the 777 configs that compile without spilling. The programs
# per CU it implies equal the compiler's on 610 of the 777 (the earlier acc + 64 guess: 227).
_VGPR_FIT = dict(acc=1.4, stage=3.2, narrow_stage=2.5, narrow=76.0, streamk=18.0, base=40.0)
# Upper bound: grid search that admits no spilling pick and rejects the fewest clean configs. On the
# fit data it admits 2 of the 163 spilling configs (sampled, none a pick) and rejects 82 of the 777
# clean ones. Validated on the census of the model that uses it (benchmarks/data/amd_aot/README.md):
# none of its picks spills (587 distinct compiled picks over the four profiles), and overall
# 93-98% of the rows a profile agree.
_VGPR_BOUND = dict(acc=1.0, stage=1.5, narrow_stage=8.0, narrow=192.0, streamk=32.0, base=128.0)


def _simds(hw: HardwareProfile) -> int:
    c = hw.compute
    return max(1, c["registers_per_cu"] // (c["max_registers_per_thread"] * c["warp_size"]))


def amd_register_budget(cfg: TileConfig, hw: HardwareProfile) -> int:
    """VGPRs (arch + accumulation) per thread that LLVM allows the kernel: the SIMD's unified file
    (``max_registers_per_thread``, 512) over the waves each SIMD must hold, max(waves_per_eu,
    ceil(num_warps / SIMDs)). Census: TotalNumVgprs never exceeds it (256 at 8 warps, 512 at 4;
    waves_per_eu = 4 caps 256x256x32 at 128 and it spills)."""
    waves = max(1, cfg.waves_per_eu or 0, -(-cfg.num_warps // _simds(hw)))
    return hw.compute["max_registers_per_thread"] // waves


def _amd_vgprs(cfg: TileConfig, problem: GemmProblem, hw: HardwareProfile, k: dict) -> float:
    threads = cfg.num_warps * hw.compute["warp_size"]
    stage = max(1, cfg.num_stages - 1) * (cfg.block_m * cfg.block_k * problem.a_dtype.bytes
                                          + cfg.block_k * cfg.block_n * problem.b_dtype.bytes) / (4 * threads)
    narrow = problem.align_bytes < 16
    return (k["acc"] * acc_registers_per_thread(cfg, hw) + k["stage"] * stage + k["base"]
            + narrow * (k["narrow_stage"] * stage + k["narrow"]) + k["streamk"] * (cfg.kind is Kind.STREAMK))


def amd_vgprs_per_thread(cfg: TileConfig, problem: GemmProblem, hw: HardwareProfile) -> int:
    """Estimated VGPRs per thread the compiler allocates (granule 8, at most the budget): the
    central fit _VGPR_FIT to the AMD compile census. Sets the model's occupancy on AMD."""
    est = -(-int(math.ceil(_amd_vgprs(cfg, problem, hw, _VGPR_FIT))) // 8) * 8
    return max(8, min(amd_register_budget(cfg, hw), est))


def amd_vgpr_bound(cfg: TileConfig, problem: GemmProblem, hw: HardwareProfile) -> float:
    """Upper estimate of the VGPRs a config needs (_VGPR_BOUND): above the budget it spills."""
    return _amd_vgprs(cfg, problem, hw, _VGPR_BOUND)


def resident_programs(cfg: TileConfig, problem: GemmProblem, hw: HardwareProfile) -> int:
    """Programs of this config that fit on one CU at once (smem, warps, block slots, registers).

    AMD: by the compiler's rule, each of the CU's SIMDs holds 512 // VGPRs waves
    (:func:`amd_vgprs_per_thread`, at most max_warps_per_cu / SIMDs) and a program puts
    ceil(num_warps / SIMDs) waves on each. NVIDIA: the register file over (acc + 64) registers a thread."""
    c = hw.compute
    by_smem = c["smem_bytes_per_cu"] // max(1, smem_bytes(cfg, problem, hw))
    by_warps = c["max_warps_per_cu"] // cfg.num_warps
    if hw.is_amd:
        simds = _simds(hw)
        waves = min(c["max_warps_per_cu"] // simds, c["max_registers_per_thread"] // amd_vgprs_per_thread(cfg, problem, hw))
        by_regs = waves // -(-cfg.num_warps // simds)
    else:
        regs_per_thread = min(c["max_registers_per_thread"], acc_registers_per_thread(cfg, hw) + 64)
        by_regs = c["registers_per_cu"] // (regs_per_thread * cfg.num_warps * c["warp_size"])
    return max(0, min(by_smem, by_warps, c["max_blocks_per_cu"], by_regs))


# --- predicates ------------------------------------------------------------------------------
def check_smem(cfg: TileConfig, problem: GemmProblem, hw: HardwareProfile) -> str | None:
    need, have = smem_bytes(cfg, problem, hw), hw.compute["smem_bytes_per_block"]
    if need > have:
        return f"shared memory: needs {need} bytes with {cfg.num_stages} stages, the profile allows {have}"
    return None


def check_registers(cfg: TileConfig, problem: GemmProblem, hw: HardwareProfile) -> str | None:
    """The fp32 accumulator within MAX_ACC_REGS_PER_THREAD; on AMD also :func:`amd_vgpr_bound`
    within :func:`amd_register_budget` (the compile census: configs over it spill)."""
    acc = acc_registers_per_thread(cfg, hw)
    if acc > MAX_ACC_REGS_PER_THREAD:
        return (f"registers: {cfg.block_m}x{cfg.block_n} accumulator needs {acc} fp32 registers per thread "
                f"at {cfg.num_warps} warps (limit {MAX_ACC_REGS_PER_THREAD})")
    if acc < 1:
        return f"registers: {cfg.num_warps} warps is too many for a {cfg.block_m}x{cfg.block_n} tile"
    if hw.is_amd:
        need, budget = amd_vgpr_bound(cfg, problem, hw), amd_register_budget(cfg, hw)
        if need > budget:
            return (f"registers: {cfg.block_m}x{cfg.block_n}x{cfg.block_k} at {cfg.num_warps} warps, "
                    f"{cfg.num_stages} stages{' with under-16-byte-aligned operands' if problem.align_bytes < 16 else ''} "
                    f"needs up to {need:.0f} VGPRs per thread, the compiler allows {budget} (it would spill)")
    return None


def check_staged_registers(cfg: TileConfig, problem: GemmProblem, hw: HardwareProfile) -> str | None:
    """The candidate space's register-staging rule (:func:`register_staged` problems only): the
    in-flight stages within MAX_STAGED_REGS_PER_THREAD and, where the profile has the
    :func:`staged_spill_rule`, no spilling kernel (:func:`staged_spills`).

    A *performance* rule, not a validity one, so it is not in PREDICATES: a config over the limit
    compiles and computes correctly, but spills (2-12x slower on the H200, MAX_STAGED_REGS_PER_THREAD),
    so the enumerator leaves it out of the space the model searches (origami.enumerate.base_array,
    per kind), while ``config=`` may still force it."""
    if not register_staged(problem, hw):
        return None
    staged = staged_registers_per_thread(cfg, problem, hw)
    if staged > MAX_STAGED_REGS_PER_THREAD:
        return (f"registers: operands {problem.align_bytes}-byte aligned (no cp.async), so {cfg.num_stages} "
                f"stages of a {cfg.block_m}x{cfg.block_n}x{cfg.block_k} tile at {cfg.num_warps} warps hold "
                f"{staged} registers per thread (limit {MAX_STAGED_REGS_PER_THREAD})")
    limit = hw.model.get("staged_slowdown_limit", 0.0)  # off sm_90 (AMD included) the table does not speak
    slow = measured_spill_slowdown(cfg, problem, hw) if limit > 0 else None
    if slow is not None and slow >= limit:
        return (f"registers: operands {problem.align_bytes}-byte aligned (no cp.async): the {cfg.kind.value} "
                f"{cfg.block_m}x{cfg.block_n}x{cfg.block_k} kernel at {cfg.num_warps} warps spills (sm_90 compile "
                f"census) and ran {slow:.2f}x its prediction against clean configs on training rows "
                f"(model.staged_slowdown_limit {limit:g})")
    fp8_limit = hw.model.get("fp8_spill_traffic_limit", 0.0)
    traffic = census_spill_traffic(cfg, problem, hw) if fp8_limit > 0 and problem.a_dtype.bytes == 1 else None
    if traffic is not None and traffic >= fp8_limit:
        return (f"registers: operands {problem.align_bytes}-byte aligned (no cp.async): the {cfg.kind.value} "
                f"{cfg.block_m}x{cfg.block_n}x{cfg.block_k} kernel at {cfg.num_warps} warps spills {traffic:.2f} bytes "
                f"per multiply-add on 1-byte operands (sm_90 compile census; model.fp8_spill_traffic_limit {fp8_limit:g})")
    if staged_spill_rule(hw) and staged_spills(cfg, problem, hw):
        return (f"registers: operands {problem.align_bytes}-byte aligned (no cp.async): the {cfg.kind.value} "
                f"kernel's {cfg.block_m}x{cfg.block_n}x{cfg.block_k} K-step at {cfg.num_warps} warps loads "
                f"{staged_load_pressure(cfg, hw):.0f} elements per thread by scalar loads "
                f"(limit {STAGED_PRESSURE_LIMITS[cfg.kind]:.0f}"
                f"{': it spills' if census_spills(cfg, hw) is None else '; the sm_90 compile census: it spills'})")
    return None


def promoted_spill_bytes(cfg: TileConfig, problem: GemmProblem, hw: HardwareProfile) -> "int | None":
    """Spill bytes per thread (stores + loads) of ``cfg``'s fp8 kernel promoting its wgmma sum into fp32 every
    tritonblas.plan.fp8_promote_k, with scaled_mm's row-wise scales: the sm_90 compile census
    (origami.promoted_spill); None where it does not speak: another arch, operands not both 1-byte, rows under 4
    bytes aligned (register-staged loads: :func:`census_spill_traffic`'s census), a group it did not compile.

    Why: the promotion keeps a second accumulator tile live, and where one warpgroup's wgmma owns a 64x256
    slice the kernel spills (128x256x128 w8: 1108 bytes per thread; 256x128x128 w8: none). On the H100's
    exhaustive fp8 sweep in scaled_mm's layout 128x256x128 w8 ran 1051 us on 8192^3 against 983 for 256x128x128
    w8, which the model ties with it, and 1178 against 1072 with the scales (benchmarks/scaled_mm_configs.py)."""
    if hw.arch != STAGED_SPILL_CENSUS_ARCH or problem.a_dtype.bytes != 1 or problem.b_dtype.bytes != 1 \
            or register_staged(problem, hw):
        return None
    return PROMOTED_SPILL_BYTES_FP8.get(spill_group(cfg))


def check_promoted_registers(cfg: TileConfig, problem: GemmProblem, hw: HardwareProfile) -> str | None:
    """The space's rule for promoted fp8 kernels: where the profile sets ``model.fp8_promoted_spill_limit``, no
    config whose kernel the census says spills that many bytes per thread (:func:`promoted_spill_bytes`). A
    performance rule, not a validity one, so not in PREDICATES (as :func:`check_staged_registers`): ``config=``
    may still force such a config, and ``fp8_fast_accum`` calls (no promotion, no spill) select without it
    (:func:`without_promotion`)."""
    limit = hw.model.get("fp8_promoted_spill_limit", 0.0)
    spilled = promoted_spill_bytes(cfg, problem, hw) if limit > 0 else None
    if spilled is not None and spilled >= limit:
        return (f"registers: the {cfg.kind.value} {cfg.block_m}x{cfg.block_n}x{cfg.block_k} fp8 kernel at "
                f"{cfg.num_warps} warps spills {spilled} bytes per thread promoting its wgmma sum into fp32 (sm_90 "
                f"compile census; model.fp8_promoted_spill_limit {limit:g})")
    return None


def check_instr(cfg: TileConfig, problem: GemmProblem, hw: HardwareProfile) -> str | None:
    """Matrix-instruction divisibility: Triton's tl.dot needs every block dim ≥ 16 and BK a multiple
    of the instruction K (and ≥ 32 bytes of K per row for 8-bit types)."""
    key = hw.rate_key(problem.a_dtype)
    if key is None or hw.matrix_peak_flops.get(key, 0.0) <= 0:
        return f"dtype: {problem.a_dtype.value} has no matrix rate on {hw.name} ({hw.arch})"
    im, in_, ik = hw.matrix_instr_shape[key]
    if cfg.block_k % ik or cfg.block_k * problem.a_dtype.bytes < 32:
        return f"instruction: BLOCK_K={cfg.block_k} is not a multiple of the {key} instruction K={ik} (>= 32 bytes)"
    if cfg.block_n % in_ or cfg.block_m % min(im, 16):
        return f"instruction: {cfg.block_m}x{cfg.block_n} does not tile the {key} instruction {im}x{in_}"
    return None


def check_vendor(cfg: TileConfig, problem: GemmProblem, hw: HardwareProfile) -> str | None:
    extras = (cfg.waves_per_eu, cfg.matrix_instr_nonkdim, cfg.kpack)
    if hw.is_amd:
        if any(e is None for e in extras):
            return "vendor: AMD profiles need waves_per_eu, matrix_instr_nonkdim and kpack"
        if cfg.matrix_instr_nonkdim not in (16, 32) or cfg.kpack not in (1, 2) or not 0 <= cfg.waves_per_eu <= 8:
            return (f"vendor: AMD knobs out of range (matrix_instr_nonkdim {cfg.matrix_instr_nonkdim} not in 16/32, "
                    f"kpack {cfg.kpack} not in 1/2, waves_per_eu {cfg.waves_per_eu} not in 0..8)")
    elif any(e is not None for e in extras):
        return "vendor: waves_per_eu / matrix_instr_nonkdim / kpack are AMD-only and must be None on NVIDIA"
    if cfg.num_chiplets not in (1, hw.chiplets):
        return f"chiplets: remap over {cfg.num_chiplets} chiplets, the profile has {hw.chiplets}"
    if cfg.num_chiplets == 1 and cfg.chunk != 1:
        return "chiplets: chunk must be 1 without a chiplet remap"
    return None


_INT32_MAX = 2**31 - 1


def check_problem(cfg: TileConfig, problem: GemmProblem, hw: HardwareProfile) -> str | None:
    if cfg.kind is Kind.SPLITK:
        if cfg.split_k < 2:
            return "split-K: split_k must be >= 2"
        if cfg.split_k > k_iters(problem, cfg):
            return f"split-K: split_k={cfg.split_k} exceeds the {k_iters(problem, cfg)} K-iterations"
        tiles = -(-problem.m // cfg.block_m) * -(-problem.n // cfg.block_n) * problem.batch
        if tiles >= hw.compute_units:
            return (f"split-K: {tiles} tiles already fill the {hw.compute_units} compute units "
                    "(split-K is for grids that leave units idle)")
    # the kernels' tile-id math is int32 (tritonblas.kernels.pid): GROUP_M x tile columns, and the
    # chiplet remap's NUM_CHIPLETS x CHUNK, must fit, or ids wrap (NaN / wrong tiles, or a compile error)
    if cfg.group_m * -(-max(problem.n, 1) // cfg.block_n) > _INT32_MAX:
        return (f"group: GROUP_M={cfg.group_m} x {-(-problem.n // cfg.block_n)} tile columns overflows the "
                f"kernels' int32 tile ids (GROUP_M beyond the tile rows changes nothing)")
    if cfg.num_chiplets * cfg.chunk > _INT32_MAX:
        return f"chiplets: {cfg.num_chiplets} x chunk {cfg.chunk} overflows the kernels' int32 program ids"
    if cfg.block_m > max(64, 4 * problem.m) or cfg.block_n > max(64, 4 * problem.n):
        return (f"tile: {cfg.block_m}x{cfg.block_n} is more than 4x the {problem.m}x{problem.n} output "
                "(and larger than 64)")
    return None


def check_residency(cfg: TileConfig, problem: GemmProblem, hw: HardwareProfile) -> str | None:
    """Persistent and Stream-K grids are sized to the resident capacity (our Stream-K fix-up never
    waits on another program, so this is a performance bound, not a deadlock guard)."""
    if resident_programs(cfg, problem, hw) < 1:
        return "occupancy: not one program of this config fits on a compute unit"
    if cfg.kind in (Kind.PERSISTENT, Kind.STREAMK, Kind.WS):
        cap = hw.compute_units * resident_programs(cfg, problem, hw)
        if cfg.grid > cap:
            return f"residency: grid {cfg.grid} exceeds the {cap} co-resident programs"
    return None


def ws_available(hw: HardwareProfile) -> bool:
    """Whether ``hw``'s space has the warp-specialised kernel (kind 'ws'): an NVIDIA sm_90 profile whose
    ``model.ws_efficiency`` is above 0 (0, the default, is a profile without it)."""
    return not hw.is_amd and hw.arch == "sm_90" and hw.model.get("ws_efficiency", 0.0) > 0


@lru_cache(maxsize=64)
def without_ws(hw: HardwareProfile) -> HardwareProfile:
    """``hw`` with ``model.ws_efficiency`` 0: its space without the warp-specialised kernel (what a call
    that kernel cannot run selects from; ``hw`` itself when it has none)."""
    return hw if hw.model.get("ws_efficiency", 0.0) == 0 else hw.replace_model(ws_efficiency=0.0)


def without_promotion(hw: HardwareProfile) -> HardwareProfile:
    """``hw`` with ``model.fp8_promoted_spill_limit`` 0: the space of fp8 calls with fast accumulation, whose kernel
    keeps no promoted accumulator and so does not spill the way :func:`check_promoted_registers` counts (``hw`` itself
    when the rule is off). The fp8 rate term is left as it is, so those calls keep the picks the rule would move
    (measured at 0.939x torch._scaled_mm's fast accumulation over 40 shapes on an H100: benchmarks/results/
    scaled_mm_h100_fast_9786cb3.csv)."""
    return hw if hw.model.get("fp8_promoted_spill_limit", 0.0) == 0 else hw.replace_model(fp8_promoted_spill_limit=0.0)


def ws_space(hw: HardwareProfile, a_dtype: DType, b_dtype: DType, staged: bool) -> bool:
    """Whether a candidate class (origami.enumerate.base_array's key) holds 'ws' rows: the kernel on
    ``hw``, 16-bit inputs of one dtype, operands not register-staged (the kernel loads through TMA)."""
    return ws_available(hw) and a_dtype in WS_DTYPES and b_dtype == a_dtype and not staged


def check_ws(cfg: TileConfig, problem: GemmProblem, hw: HardwareProfile) -> str | None:
    """What the warp-specialised kernel (kind 'ws') runs: one of :data:`WS_TILES` at :data:`WS_WARPS`
    warps, on a profile that has it (:func:`ws_available`), bf16/fp16 inputs of one dtype and a bf16/fp16
    output, batch 1, operands and output 16-byte aligned (TMA descriptors), and C rows a whole number of
    16-byte chunks (its TMA store, :func:`origami.problem.tma_store_exact`). The scorer mirrors the
    problem-dependent part (origami._core.ws_valid: a 2-byte output).
    Other kinds: None."""
    if cfg.kind is not Kind.WS:
        return None
    if not ws_available(hw):
        return (f"ws: {hw.name} has no warp-specialised kernel (it needs an NVIDIA sm_90 profile with "
                "model.ws_efficiency > 0)")
    tile = (cfg.block_m, cfg.block_n, cfg.block_k, cfg.num_stages)
    if tile not in WS_TILES or cfg.num_warps != WS_WARPS:
        known = ", ".join(f"{m}x{n}x{k} s{s}" for m, n, k, s in WS_TILES)
        return (f"ws: {cfg.block_m}x{cfg.block_n}x{cfg.block_k} w{cfg.num_warps} s{cfg.num_stages} is not one of "
                f"the kernel's tiles ({known}, {WS_WARPS} warps)")
    if problem.a_dtype not in WS_DTYPES or problem.b_dtype != problem.a_dtype or problem.c_dtype not in WS_DTYPES:
        return (f"ws: {problem.a_dtype.value} x {problem.b_dtype.value} -> {problem.c_dtype.value}: the kernel takes "
                "bf16 or fp16 inputs of one dtype and writes bf16 or fp16")
    if problem.batch != 1:
        return f"ws: batch {problem.batch}: the kernel computes one 2-D product"
    if problem.align_bytes < 16:
        return f"ws: operands {problem.align_bytes}-byte aligned: its TMA descriptors need 16 bytes"
    if not tma_store_exact(problem.n, problem.c_dtype.bytes):
        return f"ws: C rows of N={problem.n} are not a whole number of 16-byte chunks (its TMA store)"
    return None


PREDICATES: tuple[Callable[[TileConfig, GemmProblem, HardwareProfile], str | None], ...] = (
    check_smem, check_registers, check_instr, check_vendor, check_problem, check_residency, check_ws,
)


def violations(cfg: TileConfig, problem: GemmProblem, hw: HardwareProfile) -> list[str]:
    return [r for p in PREDICATES if (r := p(cfg, problem, hw)) is not None]


def is_valid(cfg: TileConfig, problem: GemmProblem, hw: HardwareProfile) -> bool:
    return not violations(cfg, problem, hw)


