"""Alignment staging's cost policy: whether copying operands under 16-byte alignment into padded
buffers, and running the model's pick for the aligned problem, is predicted to beat the model's pick
for the problem as it is.

Which operands can be staged is a launch question (``tritonblas.plan.align_staging_for``: NVIDIA
TMA architectures, operands contiguous along one of their last two dims); this module prices the
copies and decides. The dispatcher (``tritonblas.dispatch``) calls :func:`staged_pick` for model
picks only; a forced config or a tile-table entry runs as it is. Pure CPU.
"""

from __future__ import annotations

import dataclasses

from origami.hardware import HardwareProfile
from origami.kmajor import aligned_view
from origami.problem import GemmProblem
from origami.select import Estimate, select
from origami.space import without_ws

__all__ = ["STAGE_COPY_EFFICIENCY", "STAGED_HOST_NS", "staging_copy_ns", "staged_pick", "unaligned_out_pick"]

# A copy into a buffer whose leading dimension is padded to 16 bytes runs at this share of the
# profile's HBM bandwidth (read + write counted). torch's copy_ into a padded (non-contiguous)
# destination, measured on the H200 (benchmarks/diag_staging.py, CUDA-graph medians, 2026-11-30):
# 1.6-2.1 TB/s for 4-67 MB moved, 0.38-0.48 of the profile's 4.3 TB/s.
STAGE_COPY_EFFICIENCY = 0.4
# ... and a staged launch costs about this much host time per call (its fast entry: fresh buffers,
# the copies, the raw launch). Measured on the H200 host at a78d6e5 (benchmarks/diag_staging.py,
# 2026-11-30): 46.5 us per call (one copy, 4096x1000x3333), 68.5 (two, 1999^3), 80.6 (two, 4097^3);
# do_bench of the call then equals the GPU time (72 us for 1999^3 against torch's 137). A launch whose
# GPU time is under its host time minus ~20 us reads host-bound in do_bench; this floor keeps the
# shortest problems unstaged. Staging pays only when the unstaged pick is predicted slower than both
# this and the staged launch's GPU time (a host property, not the profile's).
STAGED_HOST_NS = 60_000.0


def staging_copy_ns(problem: GemmProblem, hw: HardwareProfile, stage: tuple[bool, bool]) -> float:
    """Estimated GPU time of the staging copies of ``stage`` = (A?, B?): each reads and writes its
    operand once (batch included) at STAGE_COPY_EFFICIENCY of the profile's HBM bandwidth, plus one
    kernel start (``launch_overhead_ns``) per copy."""
    elems = (problem.m * problem.k * problem.a_dtype.bytes if stage[0] else 0) + \
        (problem.k * problem.n * problem.b_dtype.bytes if stage[1] else 0)
    bw = hw.memory["hbm_bytes_per_s"] * STAGE_COPY_EFFICIENCY
    return 2.0 * problem.batch * elems / bw * 1e9 + sum(stage) * hw.launch_overhead_ns


def staged_pick(problem: GemmProblem, hw: HardwareProfile, stage: tuple[bool, bool],
                unstaged_ns: float) -> "tuple[GemmProblem, Estimate] | None":
    """(aligned problem, the model's pick for it) when staging the operands of ``stage`` = (A?, B?)
    is predicted faster than ``unstaged_ns`` (the estimate of the model's pick for ``problem`` as it
    is); else None. The aligned problem keeps everything but ``align_bytes`` (an unaligned ``out``
    only loses its vector stores, which the model does not charge). Prediction: the aligned pick's
    estimate plus :func:`staging_copy_ns`, and never under STAGED_HOST_NS. The aligned pick is never
    the warp-specialised kernel (kind 'ws': :func:`origami.space.without_ws`): staging aligns A and B,
    not ``out``, which its TMA store needs, and a 'ws' plan binds no staged operand."""
    if unstaged_ns <= STAGED_HOST_NS or not any(stage):
        return None
    aligned = dataclasses.replace(problem, align_bytes=16)
    # scored as the kernel reads it: a copied tf32/fp8 operand is K-major (origami.kmajor.aligned_view);
    # the candidate space does not depend on the layouts, so the pick is a config for ``aligned`` too
    est = select(aligned_view(problem, stage), without_ws(hw))
    if max(STAGED_HOST_NS, est.latency_ns + staging_copy_ns(problem, hw, stage)) >= unstaged_ns:
        return None
    return aligned, est


def unaligned_out_pick(problem: GemmProblem, hw: HardwareProfile,
                       unaligned_ns: float) -> "tuple[GemmProblem, Estimate] | None":
    """(aligned problem, the model's pick for it) for a problem whose operands A and B the kernels read as they
    are, its ``align_bytes`` under 16 from ``out`` alone (the caller's predicate: ``tritonblas.plan.reads_as_is``),
    when that pick is predicted faster than ``unaligned_ns``; else None.

    Each kernel operand keeps its own alignment class at launch (``tritonblas.plan.align_elements``): A and B
    are read through TMA descriptors or 16-byte vector loads and ``out`` is stored through pointers at its own
    class, so the aligned problem's pick runs with nothing copied; out loses its vector stores, which the model
    does not charge (as for :func:`staged_pick`'s aligned problem). Never the warp-specialised kernel (kind
    'ws', :func:`origami.space.without_ws`): its TMA store needs an aligned out. Why: an ``F.linear`` whose
    out_features make its rows ragged (GPT-2's lm_head: 50257 bf16 logits a row, the weight K-major and aligned)
    otherwise ran the pointer kernel with every load register-staged: 2048x50257x1024 predicted 2161 us on the
    h100 profile, against 294 us for the aligned problem's TMA pick (the dispatcher's plan, CPU, 2026-12-05).
    On AMD the unaligned problem's space also drops every config whose register-staged loads would spill."""
    if problem.align_bytes >= 16:
        return None
    aligned = dataclasses.replace(problem, align_bytes=16)
    est = select(aligned, without_ws(hw))
    return (aligned, est) if est.latency_ns < unaligned_ns else None
