"""Split-K GEMM for small M·N with long K: deterministic, with the reduction fused into the kernel.

Grid = T · split_k programs (T tiles, all on axis 0). Logical program ``p`` (after the chiplet remap)
computes split ``j = p // T`` of tile ``t = p mod T`` — tile-fastest, so concurrently running
programs share the same K range of A and B in L2. Split j covers K-iterations
``[⌊j·I/S⌋, ⌊(j+1)·I/S⌋)`` (non-empty when S ≤ I, which ``origami.space.check_problem`` enforces).

Each program stores its fp32 partial to workspace slot ``t·S + j``, then ``tl.debug_barrier()`` and
``tl.atomic_add(counter[t], 1, sem="acq_rel")``; the program that sees ``S − 1`` sums slots
``t·S + 0 … t·S + S − 1`` in split order (bitwise deterministic), applies the epilogue, writes C and
re-arms the counter to 0. No program waits on another; there is no separate reduction kernel.

``gemm_splitk_tma_kernel``: the same with A and B through host TMA descriptors (skinny shapes are
latency-bound: one bulk copy per operand block instead of per-thread cp.async and address math).

Workspace: ``T·S`` fp32 tiles and ``T`` int32 counters.
"""

import triton
import triton.language as tl

from tritonblas.kernels._epilogue import epilogue, load_partial, store_partial
from tritonblas.kernels._tiles import tile_position
from tritonblas.kernels.gemm import RUNTIME_INTS, any_tile_acc
from tritonblas.kernels.pid import chiplet_remap

__all__ = ["gemm_splitk_kernel", "gemm_splitk_tma_kernel"]


@triton.jit
def _splitk_body(A, B, C, Out, Bias, ScaleA, ScaleB, Workspace, Counters,
                 M, N, K, BATCH, split_k,
                 stride_ab, stride_am, stride_ak, stride_bb, stride_bk, stride_bn,
                 stride_cb, stride_cm, stride_cn, stride_ob, stride_om, stride_on, stride_bias,
                 alpha, beta,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                 GROUP_M: tl.constexpr, NUM_CHIPLETS: tl.constexpr, CHUNK: tl.constexpr,
                 A_ORDER: tl.constexpr, B_ORDER: tl.constexpr, OUT_ORDER: tl.constexpr,
                 A_ALIGN: tl.constexpr, B_ALIGN: tl.constexpr, OUT_ALIGN: tl.constexpr,
                 A_EDGE: tl.constexpr, B_EDGE: tl.constexpr, OUT_EDGE: tl.constexpr,
                 HAS_C: tl.constexpr, HAS_BIAS: tl.constexpr, SCALE_A: tl.constexpr,
                 SCALE_B: tl.constexpr, ACTIVATION: tl.constexpr, INPUT_PRECISION: tl.constexpr,
                 MAX_IMPRECISE: tl.constexpr, TMA_BATCHED: tl.constexpr, TMA: tl.constexpr):
    pid = chiplet_remap(tl.program_id(0), tl.num_programs(0), NUM_CHIPLETS, CHUNK)
    num_tiles = BATCH * tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    tile = pid % num_tiles
    split = pid // num_tiles
    iters = tl.cdiv(K, BLOCK_K)
    k_lo = split * iters // split_k
    k_hi = (split + 1) * iters // split_k
    bid, pid_m, pid_n = tile_position(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
    acc = any_tile_acc(A, B, bid, pid_m, pid_n, k_lo, k_hi, M, N, K,
                       stride_ab, stride_am, stride_ak, stride_bb, stride_bk, stride_bn,
                       BLOCK_M, BLOCK_N, BLOCK_K, A_ORDER, B_ORDER, A_ALIGN, B_ALIGN, A_EDGE, B_EDGE,
                       INPUT_PRECISION, MAX_IMPRECISE, TMA, TMA_BATCHED)
    slot0 = tile.to(tl.int64) * split_k
    store_partial(Workspace, slot0 + split, acc, BLOCK_M, BLOCK_N)
    tl.debug_barrier()
    count = tl.atomic_add(Counters + tile, 1, sem="acq_rel")
    if count == split_k - 1:
        acc = load_partial(Workspace, slot0, BLOCK_M, BLOCK_N)
        for j in range(1, split_k):
            acc += load_partial(Workspace, slot0 + j, BLOCK_M, BLOCK_N)
        epilogue(acc, Out, C, Bias, ScaleA, ScaleB, bid, pid_m, pid_n, M, N,
                 stride_cb, stride_cm, stride_cn, stride_ob, stride_om, stride_on, stride_bias, alpha, beta,
                 BLOCK_M, BLOCK_N, OUT_ORDER, OUT_ALIGN, OUT_EDGE, HAS_C, HAS_BIAS, SCALE_A, SCALE_B, ACTIVATION)
        tl.atomic_xchg(Counters + tile, 0, sem="relaxed")


@triton.jit(do_not_specialize=RUNTIME_INTS)
def gemm_splitk_kernel(A, B, C, Out, Bias, ScaleA, ScaleB, Workspace, Counters,
                       M, N, K, BATCH, split_k,
                       stride_ab, stride_am, stride_ak, stride_bb, stride_bk, stride_bn,
                       stride_cb, stride_cm, stride_cn, stride_ob, stride_om, stride_on, stride_bias,
                       alpha, beta,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                       GROUP_M: tl.constexpr, NUM_CHIPLETS: tl.constexpr, CHUNK: tl.constexpr,
                       A_ORDER: tl.constexpr, B_ORDER: tl.constexpr, OUT_ORDER: tl.constexpr,
                       A_ALIGN: tl.constexpr, B_ALIGN: tl.constexpr, OUT_ALIGN: tl.constexpr,
                       A_EDGE: tl.constexpr, B_EDGE: tl.constexpr, OUT_EDGE: tl.constexpr,
                       HAS_C: tl.constexpr, HAS_BIAS: tl.constexpr, SCALE_A: tl.constexpr,
                       SCALE_B: tl.constexpr, ACTIVATION: tl.constexpr, INPUT_PRECISION: tl.constexpr,
                       MAX_IMPRECISE: tl.constexpr, TMA_BATCHED: tl.constexpr):
    """Split-K, A and B through pointers."""
    _splitk_body(A, B, C, Out, Bias, ScaleA, ScaleB, Workspace, Counters,
                 M, N, K, BATCH, split_k,
                 stride_ab, stride_am, stride_ak, stride_bb, stride_bk, stride_bn,
                 stride_cb, stride_cm, stride_cn, stride_ob, stride_om, stride_on, stride_bias,
                 alpha, beta,
                 BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, NUM_CHIPLETS, CHUNK,
                 A_ORDER, B_ORDER, OUT_ORDER, A_ALIGN, B_ALIGN, OUT_ALIGN, A_EDGE, B_EDGE, OUT_EDGE,
                 HAS_C, HAS_BIAS, SCALE_A, SCALE_B, ACTIVATION, INPUT_PRECISION, MAX_IMPRECISE, TMA_BATCHED, False)


@triton.jit(do_not_specialize=RUNTIME_INTS)
def gemm_splitk_tma_kernel(A, B, C, Out, Bias, ScaleA, ScaleB, Workspace, Counters,
                           M, N, K, BATCH, split_k,
                           stride_ab, stride_am, stride_ak, stride_bb, stride_bk, stride_bn,
                           stride_cb, stride_cm, stride_cn, stride_ob, stride_om, stride_on, stride_bias,
                           alpha, beta,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                           GROUP_M: tl.constexpr, NUM_CHIPLETS: tl.constexpr, CHUNK: tl.constexpr,
                           A_ORDER: tl.constexpr, B_ORDER: tl.constexpr, OUT_ORDER: tl.constexpr,
                           A_ALIGN: tl.constexpr, B_ALIGN: tl.constexpr, OUT_ALIGN: tl.constexpr,
                           A_EDGE: tl.constexpr, B_EDGE: tl.constexpr, OUT_EDGE: tl.constexpr,
                           HAS_C: tl.constexpr, HAS_BIAS: tl.constexpr, SCALE_A: tl.constexpr,
                           SCALE_B: tl.constexpr, ACTIVATION: tl.constexpr, INPUT_PRECISION: tl.constexpr,
                           MAX_IMPRECISE: tl.constexpr, TMA_BATCHED: tl.constexpr):
    """Split-K, A and B through host TMA descriptors (16-byte-aligned operands only)."""
    _splitk_body(A, B, C, Out, Bias, ScaleA, ScaleB, Workspace, Counters,
                 M, N, K, BATCH, split_k,
                 stride_ab, stride_am, stride_ak, stride_bb, stride_bk, stride_bn,
                 stride_cb, stride_cm, stride_cn, stride_ob, stride_om, stride_on, stride_bias,
                 alpha, beta,
                 BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, NUM_CHIPLETS, CHUNK,
                 A_ORDER, B_ORDER, OUT_ORDER, A_ALIGN, B_ALIGN, OUT_ALIGN, A_EDGE, B_EDGE, OUT_EDGE,
                 HAS_C, HAS_BIAS, SCALE_A, SCALE_B, ACTIVATION, INPUT_PRECISION, MAX_IMPRECISE, TMA_BATCHED, True)
