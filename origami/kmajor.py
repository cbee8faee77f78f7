"""Operands Hopper's wide MMA cannot read as they are: the one home of the rule by which the launcher
stages them (``tritonblas.plan.staging_for``, ``make_plan``; an alignment copy of such an operand is
written K-major too: :func:`aligned_view`), and of the predicate for the launches that read them
through registers instead (:func:`mma_reads_through_registers`), which the scorer prices with
``model.mn_major_tile_cost`` (off by default; benchmarks/kmajor_residuals.py: such rows ran 1.6-8x
their prediction on the H200).

wgmma takes its shared-memory operands K-major only for tf32 and fp8 (16-bit dtypes take either major;
IEEE fp32 does not use wgmma). With an N-major B (row-major K x N) or an M-major A (layout T), the
compiler loads that operand through registers and writes it transposed into shared memory every
K-step, keeps 2 stages and waits on every wgmma. Measured (H200, Triton 3.6, 2026-11-30, 8192^3, N-major
B): tf32 78 TFLOP/s and fp8 106 unstaged, against 346 and 1375 for the same kernel on a K-major copy.
So a TMA launch copies such an operand to K-major first (:func:`kmajor_staging`) where the copy pays;
where it does not (the other operand's free dim under :data:`STAGING_MIN_DIM`, or no TMA: operands under
16 bytes aligned, K = 0), the wide MMA reads it through registers. The narrow MMA (mma.sync, tiles
under the instruction's M) is not affected this way. Pure CPU, no torch.
"""

from __future__ import annotations

import dataclasses

from origami.hardware import HardwareProfile
from origami.problem import DType, GemmProblem, Layout

__all__ = ["KMAJOR_ONLY_DTYPES", "STAGING_MIN_DIM", "TMA_ARCHS", "has_tma", "tma_problem", "kmajor_copy_ok",
           "kmajor_staging", "mma_reads_through_registers", "aligned_view"]

# the dtypes whose Hopper wgmma reads its shared-memory operands K-major only
KMAJOR_ONLY_DTYPES = frozenset({DType.TF32, DType.FP8_E4M3, DType.FP8_E5M2})
# NVIDIA architectures with the tensor memory accelerator (TMA descriptors, the launcher's TMA kernels)
TMA_ARCHS = ("sm_90", "sm_100")
# Stage an operand when the other operand's free dim (M for B, N for A) is at least this. The copy
# reads and writes the operand once: 2·K·N·e bytes for B at the copy bandwidth BW. Model: staging
# saves ≈0.75 of the GEMM time at the matrix rate R, so
#   0.75·2·M·N·K / R ≥ 2·K·N·e / BW   ⇔   M ≥ (4/3)·e·R / BW      (independent of N, K and batch);
# H200 at the sustained clock and BW = 4.3 TB/s: tf32 (e = 4, R = 356 TFLOP/s) 442, fp8 (e = 1,
# R = 1310) 407. Measured (H200, Triton 3.6, torch 2.11, 2026-11-30): unstaged R_u = 78 (tf32) and
# 106 (fp8) TFLOP/s, staged kernel R_s ≈ 350 and 1300, but torch's transposing copy_ moves only
# 1.15 (fp32) and 0.34 (fp8) TB/s; break-even M = e / (BW·(1/R_u − 1/R_s)) = 349 (tf32), 340 (fp8).
# Seen: tf32 384x4096x4096 staged 69 vs unstaged 68 TFLOP/s; 512x8192x8192 107 vs 77; fp8
# 512x8192x8192 158 vs 109. Both estimates round to the tile multiple 3·128. (A tiled Triton
# transpose measured 3.5-4.0 TB/s fp32, 3.0-3.4 fp8: with it the break-even would be M ≈ 120.)
STAGING_MIN_DIM = 384


def has_tma(hw: HardwareProfile) -> bool:
    """Whether the profile's GPU has the tensor memory accelerator: an NVIDIA architecture of TMA_ARCHS (the one
    rule behind every TMA decision: :func:`tma_problem`, :func:`kmajor_staging` and tritonblas.plan's)."""
    return not hw.is_amd and hw.arch in TMA_ARCHS


def tma_problem(problem: GemmProblem, hw: HardwareProfile) -> bool:
    """Whether the problem's launches may use the TMA kernels: an NVIDIA TMA architecture, operands
    16-byte aligned, K > 0 (the problem part of ``tritonblas.plan.tma_supported``; the config part,
    block dims within a TMA box, holds for every candidate of the space)."""
    return has_tma(hw) and problem.align_bytes >= 16 and problem.k > 0


def kmajor_copy_ok(k: int, dtype: DType) -> bool:
    """Whether a fresh K-major copy of an operand with K = ``k`` is K-major (K > 1) and TMA-legal:
    its row stride, K elements, and so its batch stride, are 16-byte multiples."""
    return k > 1 and (k * dtype.bytes) % 16 == 0


def kmajor_staging(problem: GemmProblem, hw: HardwareProfile) -> tuple[bool, bool]:
    """(stage A?, stage B?): on NVIDIA TMA architectures, for tf32 and fp8 inputs, stage B when it is
    N-major and M >= STAGING_MIN_DIM, stage A when it is M-major and N >= STAGING_MIN_DIM, and only
    where the K-major copy is itself TMA-legal (:func:`kmajor_copy_ok`). Batched problems stage the
    whole (batch, ...) operand. A launch stages only when it runs a TMA kernel (:func:`tma_problem`)."""
    if not has_tma(hw):
        return False, False
    if problem.a_dtype not in KMAJOR_ONLY_DTYPES or problem.b_dtype not in KMAJOR_ONLY_DTYPES:
        return False, False
    stage_a = (problem.a_layout is Layout.T and problem.n >= STAGING_MIN_DIM
               and kmajor_copy_ok(problem.k, problem.a_dtype))
    stage_b = (problem.b_layout is Layout.N and problem.m >= STAGING_MIN_DIM
               and kmajor_copy_ok(problem.k, problem.b_dtype))
    return stage_a, stage_b


def mma_reads_through_registers(problem: GemmProblem, hw: HardwareProfile) -> bool:
    """Whether the wide MMA of every kernel of our space (all but the 16-bit-only 'ws' kind) reads an
    operand through registers on ``problem``: Hopper (sm_90, where it was measured), tf32 or fp8
    inputs, and an M-major A or an N-major B that the launch does not stage K-major (no TMA, or
    :func:`kmajor_staging` declines)."""
    if hw.is_amd or hw.arch != "sm_90":
        return False
    if problem.a_dtype not in KMAJOR_ONLY_DTYPES or problem.b_dtype not in KMAJOR_ONLY_DTYPES:
        return False
    stage_a, stage_b = kmajor_staging(problem, hw) if tma_problem(problem, hw) else (False, False)
    return (problem.a_layout is Layout.T and not stage_a) or (problem.b_layout is Layout.N and not stage_b)


def aligned_view(problem: GemmProblem, stage: tuple[bool, bool]) -> GemmProblem:
    """The problem the kernel reads after alignment staging copied the operands of ``stage`` = (A?, B?)
    into 16-byte-aligned buffers (origami.staging.staged_pick; ``tritonblas.plan.align_staging_for``):
    ``align_bytes`` 16, and a copied tf32/fp8 operand K-major (the launcher writes those copies
    K-major, ``tritonblas.plan._stage_order``: A layout N, B layout T), so the wide MMA reads it from
    shared memory (:func:`mma_reads_through_registers` is False for it)."""
    a_layout, b_layout = problem.a_layout, problem.b_layout
    if stage[0] and problem.a_dtype in KMAJOR_ONLY_DTYPES:
        a_layout = Layout.N
    if stage[1] and problem.b_dtype in KMAJOR_ONLY_DTYPES:
        b_layout = Layout.T
    return dataclasses.replace(problem, align_bytes=16, a_layout=a_layout, b_layout=b_layout)
