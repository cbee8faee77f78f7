"""Data-parallel, persistent and TMA (Hopper tensor-descriptor) GEMM kernels.

Every kernel in this package takes the same argument list, so one host routine
(``tritonblas.plan.launch``) builds it for all of them:

- pointers ``A, B, C, Out, Bias, ScaleA, ScaleB, Workspace, Counters`` (unused ones get any valid
  tensor; the TMA kernel gets host tensor descriptors as A and B);
- sizes ``M, N, K, BATCH`` and the runtime split count ``split_k`` (split-K only);
- strides (see ``_tiles`` for the glossary) and ``alpha, beta`` (fp32);
- constexprs: the tile config (BLOCK_M/N/K, GROUP_M, NUM_CHIPLETS, CHUNK — from ``TileConfig``
  through ``LaunchPlan.constexprs``), then the per-launch classes computed from the tensors
  (``*_ORDER``, ``*_ALIGN``, epilogue switches, INPUT_PRECISION, MAX_IMPRECISE, TMA_BATCHED).

Sizes and operand strides are ``do_not_specialize``: Triton would otherwise compile one variant per
"divisible by 16 / equal to 1" pattern of a dozen integers. Our own layout and alignment classes
(three alignment values, host-validated) replace that, which bounds compilations per tile config.
"""

import triton
import triton.language as tl

from tritonblas.kernels._epilogue import epilogue, epilogue_values, to_out
from tritonblas.kernels._tiles import operand_offsets, tile_acc, tile_position
from tritonblas.kernels.pid import chiplet_remap

__all__ = ["RUNTIME_INTS", "gemm_kernel", "gemm_persistent_kernel", "gemm_tma_kernel", "tma_tile_acc", "any_tile_acc",
           "gemm_tma_flat_kernel"]

RUNTIME_INTS = [
    "M", "N", "K", "BATCH", "split_k",
    "stride_ab", "stride_am", "stride_ak", "stride_bb", "stride_bk", "stride_bn",
    "stride_ob", "stride_om", "stride_on",
]


@triton.jit(do_not_specialize=RUNTIME_INTS)
def gemm_kernel(A, B, C, Out, Bias, ScaleA, ScaleB, Workspace, Counters,
                M, N, K, BATCH, split_k,
                stride_ab, stride_am, stride_ak, stride_bb, stride_bk, stride_bn,
                stride_cb, stride_cm, stride_cn, stride_ob, stride_om, stride_on, stride_bias,
                alpha, beta,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                NUM_CHIPLETS: tl.constexpr, CHUNK: tl.constexpr,
                A_ORDER: tl.constexpr, B_ORDER: tl.constexpr, OUT_ORDER: tl.constexpr,
                A_ALIGN: tl.constexpr, B_ALIGN: tl.constexpr, OUT_ALIGN: tl.constexpr,
                A_EDGE: tl.constexpr, B_EDGE: tl.constexpr, OUT_EDGE: tl.constexpr,
                HAS_C: tl.constexpr, HAS_BIAS: tl.constexpr, SCALE_A: tl.constexpr, SCALE_B: tl.constexpr,
                ACTIVATION: tl.constexpr, INPUT_PRECISION: tl.constexpr, MAX_IMPRECISE: tl.constexpr,
                TMA_BATCHED: tl.constexpr):
    """Data-parallel: one program per output tile (grid = BATCH · ⌈M/BM⌉ · ⌈N/BN⌉, on axis 0)."""
    tile = chiplet_remap(tl.program_id(0), tl.num_programs(0), NUM_CHIPLETS, CHUNK)
    bid, pid_m, pid_n = tile_position(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
    acc = tile_acc(A, B, bid, pid_m, pid_n, 0, tl.cdiv(K, BLOCK_K), M, N, K,
                   stride_ab, stride_am, stride_ak, stride_bb, stride_bk, stride_bn,
                   BLOCK_M, BLOCK_N, BLOCK_K, A_ORDER, B_ORDER, A_ALIGN, B_ALIGN, A_EDGE, B_EDGE,
                   INPUT_PRECISION, MAX_IMPRECISE)
    epilogue(acc, Out, C, Bias, ScaleA, ScaleB, bid, pid_m, pid_n, M, N,
             stride_cb, stride_cm, stride_cn, stride_ob, stride_om, stride_on, stride_bias, alpha, beta,
             BLOCK_M, BLOCK_N, OUT_ORDER, OUT_ALIGN, OUT_EDGE, HAS_C, HAS_BIAS, SCALE_A, SCALE_B, ACTIVATION)


@triton.jit(do_not_specialize=RUNTIME_INTS)
def gemm_persistent_kernel(A, B, C, Out, Bias, ScaleA, ScaleB, Workspace, Counters,
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
    """Persistent: grid = resident programs G; program p computes tiles p, p+G, p+2G, ..."""
    grid = tl.num_programs(0)
    pid = chiplet_remap(tl.program_id(0), grid, NUM_CHIPLETS, CHUNK)
    num_tiles = BATCH * tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    iters = tl.cdiv(K, BLOCK_K)
    for tile in range(pid, num_tiles, grid):
        bid, pid_m, pid_n = tile_position(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        acc = tile_acc(A, B, bid, pid_m, pid_n, 0, iters, M, N, K,
                       stride_ab, stride_am, stride_ak, stride_bb, stride_bk, stride_bn,
                       BLOCK_M, BLOCK_N, BLOCK_K, A_ORDER, B_ORDER, A_ALIGN, B_ALIGN, A_EDGE, B_EDGE, INPUT_PRECISION,
                       MAX_IMPRECISE)
        epilogue(acc, Out, C, Bias, ScaleA, ScaleB, bid, pid_m, pid_n, M, N,
                 stride_cb, stride_cm, stride_cn, stride_ob, stride_om, stride_on, stride_bias, alpha, beta,
                 BLOCK_M, BLOCK_N, OUT_ORDER, OUT_ALIGN, OUT_EDGE, HAS_C, HAS_BIAS, SCALE_A, SCALE_B, ACTIVATION)


@triton.jit
def _tma_load(desc, b, r0, r1, R0: tl.constexpr, R1: tl.constexpr, BATCHED: tl.constexpr):
    if BATCHED:
        x = desc.load([b, r0, r1]).reshape(R0, R1)
    else:
        x = desc.load([r0, r1])
    return x


@triton.jit
def tma_tile_acc(A, B, ba, bb, off_m, off_n, k_lo, k_hi,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                 A_ORDER: tl.constexpr, B_ORDER: tl.constexpr, TMA_BATCHED: tl.constexpr,
                 INPUT_PRECISION: tl.constexpr, MAX_IMPRECISE: tl.constexpr):
    """fp32 sum over K-iterations [k_lo, k_hi) of one tile, A and B through tensor descriptors
    (out-of-bounds rows, columns and the K tail are zero-filled by the TMA unit: no masks, no
    interior/edge split). ``ba`` / ``bb`` are the batch coordinates (TMA_BATCHED only)."""
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for ki in range(k_lo, k_hi):
        off_k = ki * BLOCK_K
        if A_ORDER == 0:
            a = _tma_load(A, ba, off_m, off_k, BLOCK_M, BLOCK_K, TMA_BATCHED)
        else:
            a = _tma_load(A, ba, off_k, off_m, BLOCK_K, BLOCK_M, TMA_BATCHED).T
        if B_ORDER == 0:
            b = _tma_load(B, bb, off_k, off_n, BLOCK_K, BLOCK_N, TMA_BATCHED)
        else:
            b = _tma_load(B, bb, off_n, off_k, BLOCK_N, BLOCK_K, TMA_BATCHED).T
        acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION, max_num_imprecise_acc=MAX_IMPRECISE)
    return acc


@triton.jit
def any_tile_acc(A, B, bid, pid_m, pid_n, k_lo, k_hi, M, N, K,
                 stride_ab, stride_am, stride_ak, stride_bb, stride_bk, stride_bn,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                 A_ORDER: tl.constexpr, B_ORDER: tl.constexpr, A_ALIGN: tl.constexpr, B_ALIGN: tl.constexpr,
                 A_EDGE: tl.constexpr, B_EDGE: tl.constexpr, INPUT_PRECISION: tl.constexpr,
                 MAX_IMPRECISE: tl.constexpr, TMA: tl.constexpr, TMA_BATCHED: tl.constexpr):
    """:func:`tile_acc` (pointers) or :func:`tma_tile_acc` (TMA: A and B are descriptors and
    stride_ab / stride_bb the batch-coordinate multipliers): what the Stream-K and split-K kernels
    share between their pointer and TMA variants."""
    if TMA:
        acc = tma_tile_acc(A, B, bid * stride_ab, bid * stride_bb, pid_m * BLOCK_M, pid_n * BLOCK_N, k_lo, k_hi,
                           BLOCK_M, BLOCK_N, BLOCK_K, A_ORDER, B_ORDER, TMA_BATCHED, INPUT_PRECISION, MAX_IMPRECISE)
    else:
        acc = tile_acc(A, B, bid, pid_m, pid_n, k_lo, k_hi, M, N, K,
                       stride_ab, stride_am, stride_ak, stride_bb, stride_bk, stride_bn,
                       BLOCK_M, BLOCK_N, BLOCK_K, A_ORDER, B_ORDER, A_ALIGN, B_ALIGN, A_EDGE, B_EDGE,
                       INPUT_PRECISION, MAX_IMPRECISE)
    return acc


@triton.jit(do_not_specialize=RUNTIME_INTS)
def gemm_tma_kernel(A, B, C, Out, Bias, ScaleA, ScaleB, Workspace, Counters,
                    M, N, K, BATCH, split_k,
                    stride_ab, stride_am, stride_ak, stride_bb, stride_bk, stride_bn,
                    stride_cb, stride_cm, stride_cn, stride_ob, stride_om, stride_on, stride_bias,
                    alpha, beta,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                    NUM_CHIPLETS: tl.constexpr, CHUNK: tl.constexpr,
                    A_ORDER: tl.constexpr, B_ORDER: tl.constexpr, OUT_ORDER: tl.constexpr,
                    A_ALIGN: tl.constexpr, B_ALIGN: tl.constexpr, OUT_ALIGN: tl.constexpr,
                    A_EDGE: tl.constexpr, B_EDGE: tl.constexpr, OUT_EDGE: tl.constexpr,
                    HAS_C: tl.constexpr, HAS_BIAS: tl.constexpr, SCALE_A: tl.constexpr, SCALE_B: tl.constexpr,
                    ACTIVATION: tl.constexpr, INPUT_PRECISION: tl.constexpr, MAX_IMPRECISE: tl.constexpr,
                    TMA_BATCHED: tl.constexpr):
    """Hopper TMA variant, data-parallel (grid = tiles) or persistent (grid = G), A and B read through
    host tensor descriptors (OOB rows/columns, including the K tail, are zero-filled by the hardware).

    A's descriptor is [M, K] (A_ORDER 0) or [K, M] (A_ORDER 1, loaded then transposed); B's is [K, N]
    (B_ORDER 0) or [N, K] (B_ORDER 1). With TMA_BATCHED a leading batch dim is added and stride_ab /
    stride_bb carry the batch-index multiplier (1, or 0 for a broadcast operand). The host only
    builds descriptors after checking 16-byte alignment of base and strides: an unaligned descriptor
    gives silently wrong results on the H200. The epilogue is the pointer one (masked at edges)."""
    grid = tl.num_programs(0)
    pid = chiplet_remap(tl.program_id(0), grid, NUM_CHIPLETS, CHUNK)
    num_tiles = BATCH * tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    iters = tl.cdiv(K, BLOCK_K)
    for tile in range(pid, num_tiles, grid):
        bid, pid_m, pid_n = tile_position(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        acc = tma_tile_acc(A, B, bid * stride_ab, bid * stride_bb, pid_m * BLOCK_M, pid_n * BLOCK_N, 0, iters,
                           BLOCK_M, BLOCK_N, BLOCK_K, A_ORDER, B_ORDER, TMA_BATCHED, INPUT_PRECISION, MAX_IMPRECISE)
        epilogue(acc, Out, C, Bias, ScaleA, ScaleB, bid, pid_m, pid_n, M, N,
                 stride_cb, stride_cm, stride_cn, stride_ob, stride_om, stride_on, stride_bias, alpha, beta,
                 BLOCK_M, BLOCK_N, OUT_ORDER, OUT_ALIGN, OUT_EDGE, HAS_C, HAS_BIAS, SCALE_A, SCALE_B, ACTIVATION)


@triton.jit
def _tma_store_half(desc, b, r0, r1, x, BATCHED: tl.constexpr):
    if BATCHED:
        desc.store([b, r0, r1], x.reshape(1, x.shape[0], x.shape[1]))
    else:
        desc.store([r0, r1], x)


@triton.jit(do_not_specialize=RUNTIME_INTS)
def gemm_tma_flat_kernel(A, B, C, Out, Bias, ScaleA, ScaleB, Workspace, Counters,
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
                         MAX_IMPRECISE: tl.constexpr, TMA_BATCHED: tl.constexpr, OUT_TMA: tl.constexpr):
    """:func:`gemm_tma_kernel` with the tile loop flattened into the K loop (``tl.range(...,
    flatten=True)``: Triton 3.6 fuses the nest and software-pipelines across tile boundaries, so
    a persistent program issues the next tile's first TMA loads before this tile's epilogue) and,
    with OUT_TMA, the output written by two TMA stores of BLOCK_M × BLOCK_N/2 through a host
    descriptor passed as ``Out`` ([M, N] or [batch, M, N], N contiguous; the unit clips the edges)
    instead of per-thread stores. Without OUT_TMA (an output that is not 16-byte aligned or not
    row-major) one masked pointer store (the tile-loop fusion pass of Triton 3.6 fails on the
    shared epilogue's interior/edge branch). Serves dp (grid = tiles) and persistent (grid = G) plans.

    Warp specialisation (``warp_specialize=True``) is not used: Triton 3.6 ignores it on sm_90
    (no ``ttg.warp_specialize`` in the TTGIR; checked by compiling on the CPU)."""
    grid = tl.num_programs(0)
    pid = chiplet_remap(tl.program_id(0), grid, NUM_CHIPLETS, CHUNK)
    num_tiles = BATCH * tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    iters = tl.cdiv(K, BLOCK_K)
    for tile in tl.range(pid, num_tiles, grid, flatten=True):
        bid, pid_m, pid_n = tile_position(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc = tma_tile_acc(A, B, bid * stride_ab, bid * stride_bb, off_m, off_n, 0, iters,
                           BLOCK_M, BLOCK_N, BLOCK_K, A_ORDER, B_ORDER, TMA_BATCHED, INPUT_PRECISION, MAX_IMPRECISE)
        acc = epilogue_values(acc, C, Bias, ScaleA, ScaleB, bid, pid_m, pid_n, M, N,
                              stride_cb, stride_cm, stride_cn, stride_bias, alpha, beta,
                              BLOCK_M, BLOCK_N, HAS_C, HAS_BIAS, SCALE_A, SCALE_B, ACTIVATION)
        if OUT_TMA:
            halves = tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)).permute(0, 2, 1)
            lo, hi = tl.split(halves)
            _tma_store_half(Out, bid, off_m, off_n, to_out(lo, Out.dtype), TMA_BATCHED)
            _tma_store_half(Out, bid, off_m, off_n + BLOCK_N // 2, to_out(hi, Out.dtype), TMA_BATCHED)
        else:  # one masked store, no interior/edge branch: Triton 3.6's loop fusion fails on an scf.if
            rm = off_m + tl.arange(0, BLOCK_M)
            rn = off_n + tl.arange(0, BLOCK_N)
            o_ptrs = Out + bid.to(tl.int64) * stride_ob + operand_offsets(rm, rn, stride_om, stride_on, OUT_ORDER,
                                                                          OUT_ALIGN)
            tl.store(o_ptrs, to_out(acc, Out.dtype.element_ty), mask=(rm < M)[:, None] & (rn < N)[None, :])
