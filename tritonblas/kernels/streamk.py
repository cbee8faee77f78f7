"""Stream-K GEMM: full waves data-parallel, the remainder tiles' K-iterations split evenly over the grid.

With G programs and T tiles of I K-iterations each, the first ``T − T mod G`` tiles are computed
whole, round-robin (tile t by program t mod G). The last ``S = T mod G`` tiles form one line of
``S·I`` iterations cut into G contiguous ranges of ``⌊S·I/G⌋`` or one more (the first ``S·I mod G``
programs get the extra one). Because ``S < G``, a range is at most I iterations long, so it touches at
most two tiles.

Fix-up, with no program ever waiting on another (runs under the interpreter, cannot hang):
every contributor of a split tile stores its fp32 partial to its own workspace slot — ``2·p`` for the
tile where program p's range starts, ``2·p + 1`` for the tile where it ends — then
``tl.debug_barrier()`` and ``tl.atomic_add(counter[s], 1, sem="acq_rel")``. The contributor that sees
``count == contributors − 1`` is the last to arrive: it re-reads ALL slots of the tile, its own too, in
contributor order (so the sum, and the result, are bitwise the same whoever arrives last), applies
the epilogue, writes C and re-arms the counter with ``atomic_xchg(counter, 0)``. Counters are zeroed
once at allocation and are zero again after every launch, so CUDA-graph replays need no memset.

``gemm_streamk_tma_kernel`` is the same kernel with A and B read through host tensor descriptors
(``TMA`` constexpr of the shared body): no masks, the hardware zero-fills out-of-bounds rows,
columns and the K tail; the plan falls back to the pointer kernel for operands that are not
16-byte aligned.

Workspace: ``2·G`` fp32 tiles of BLOCK_M × BLOCK_N, and ``T mod G`` int32 counters (at most G).
"""

import triton
import triton.language as tl

from tritonblas.kernels._epilogue import epilogue, load_partial, store_partial
from tritonblas.kernels._tiles import tile_position
from tritonblas.kernels.gemm import RUNTIME_INTS, any_tile_acc
from tritonblas.kernels.pid import chiplet_remap

__all__ = ["gemm_streamk_kernel", "gemm_streamk_tma_kernel"]


@triton.jit
def _range_start(p, base, extra):
    return p * base + tl.minimum(p, extra)


@triton.jit
def _owner(x, base, extra):
    """The program whose Stream-K range holds iteration x."""
    big = extra * (base + 1)
    return tl.where(x < big, x // (base + 1), extra + (x - big) // tl.maximum(base, 1))


@triton.jit
def _streamk_body(A, B, C, Out, Bias, ScaleA, ScaleB, Workspace, Counters,
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
    grid = tl.num_programs(0)
    pid = chiplet_remap(tl.program_id(0), grid, NUM_CHIPLETS, CHUNK)
    num_tiles = BATCH * tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    iters = tl.maximum(tl.cdiv(K, BLOCK_K), 1)
    sk_tiles = num_tiles % grid
    dp_tiles = num_tiles - sk_tiles
    total = sk_tiles * iters
    base = total // grid
    extra = total % grid
    start = _range_start(pid, base, extra)
    end = start + base + (pid < extra).to(tl.int32)

    # One work loop (one MAC site, one epilogue site: the compiler keeps one copy of each, which
    # keeps register pressure at the persistent kernel's): whole tiles pid, pid + G, ... < dp_tiles,
    # then the (at most two) segments of this program's Stream-K range.
    tile = pid
    it = start
    while (tile < dp_tiles) | (it < end):
        if tile < dp_tiles:
            t = tile
            k_lo = 0
            k_hi = iters
            tile += grid
            first = 0
            last = 0
            s = 0
            tile_lo = 0
        else:
            s = it // iters
            tile_lo = s * iters
            t = dp_tiles + s
            k_lo = it - tile_lo
            k_hi = tl.minimum(end - tile_lo, iters)
            it = tile_lo + k_hi
            first = _owner(tile_lo, base, extra)
            last = _owner(tile_lo + iters - 1, base, extra)
        bid, pid_m, pid_n = tile_position(t, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        acc = any_tile_acc(A, B, bid, pid_m, pid_n, k_lo, k_hi, M, N, K,
                           stride_ab, stride_am, stride_ak, stride_bb, stride_bk, stride_bn,
                           BLOCK_M, BLOCK_N, BLOCK_K, A_ORDER, B_ORDER, A_ALIGN, B_ALIGN, A_EDGE, B_EDGE,
                           INPUT_PRECISION, MAX_IMPRECISE, TMA, TMA_BATCHED)
        split = first != last  # several programs contribute to this tile
        finish = True
        if split:
            store_partial(Workspace, 2 * pid + (start < tile_lo).to(tl.int32), acc, BLOCK_M, BLOCK_N)
            tl.debug_barrier()
            count = tl.atomic_add(Counters + s, 1, sem="acq_rel")
            finish = count == last - first
            if finish:
                acc = load_partial(Workspace, 2 * first + (_range_start(first, base, extra) < tile_lo).to(tl.int32),
                                   BLOCK_M, BLOCK_N)
                for q in range(first + 1, last + 1):
                    acc += load_partial(Workspace, 2 * q, BLOCK_M, BLOCK_N)
        if finish:
            epilogue(acc, Out, C, Bias, ScaleA, ScaleB, bid, pid_m, pid_n, M, N,
                     stride_cb, stride_cm, stride_cn, stride_ob, stride_om, stride_on, stride_bias, alpha, beta,
                     BLOCK_M, BLOCK_N, OUT_ORDER, OUT_ALIGN, OUT_EDGE, HAS_C, HAS_BIAS, SCALE_A, SCALE_B,
                     ACTIVATION)
            if split:
                tl.atomic_xchg(Counters + s, 0, sem="relaxed")


@triton.jit(do_not_specialize=RUNTIME_INTS)
def gemm_streamk_kernel(A, B, C, Out, Bias, ScaleA, ScaleB, Workspace, Counters,
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
    """Stream-K, A and B through pointers (any layout and alignment class)."""
    _streamk_body(A, B, C, Out, Bias, ScaleA, ScaleB, Workspace, Counters,
                  M, N, K, BATCH, split_k,
                  stride_ab, stride_am, stride_ak, stride_bb, stride_bk, stride_bn,
                  stride_cb, stride_cm, stride_cn, stride_ob, stride_om, stride_on, stride_bias,
                  alpha, beta,
                  BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, NUM_CHIPLETS, CHUNK,
                  A_ORDER, B_ORDER, OUT_ORDER, A_ALIGN, B_ALIGN, OUT_ALIGN, A_EDGE, B_EDGE, OUT_EDGE,
                  HAS_C, HAS_BIAS, SCALE_A, SCALE_B, ACTIVATION, INPUT_PRECISION, MAX_IMPRECISE, TMA_BATCHED, False)


@triton.jit(do_not_specialize=RUNTIME_INTS)
def gemm_streamk_tma_kernel(A, B, C, Out, Bias, ScaleA, ScaleB, Workspace, Counters,
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
    """Stream-K, A and B through host TMA descriptors (the host checked 16-byte alignment; see
    ``gemm_tma_kernel`` for the descriptor shapes). Same partition and fix-up as the pointer kernel."""
    _streamk_body(A, B, C, Out, Bias, ScaleA, ScaleB, Workspace, Counters,
                  M, N, K, BATCH, split_k,
                  stride_ab, stride_am, stride_ak, stride_bb, stride_bk, stride_bn,
                  stride_cb, stride_cm, stride_cn, stride_ob, stride_om, stride_on, stride_bias,
                  alpha, beta,
                  BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, NUM_CHIPLETS, CHUNK,
                  A_ORDER, B_ORDER, OUT_ORDER, A_ALIGN, B_ALIGN, OUT_ALIGN, A_EDGE, B_EDGE, OUT_EDGE,
                  HAS_C, HAS_BIAS, SCALE_A, SCALE_B, ACTIVATION, INPUT_PRECISION, MAX_IMPRECISE, TMA_BATCHED, True)
