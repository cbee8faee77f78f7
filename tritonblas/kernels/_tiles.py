"""Shared ``@triton.jit`` pieces of every GEMM kernel: tile geometry, operand addressing, main loop.

Stride glossary (every kernel takes the same list): ``stride_ab, stride_am, stride_ak`` are A's
batch, row (M) and column (K) strides in elements; ``stride_bb, stride_bk, stride_bn`` B's batch,
K and N strides; ``stride_cb/cm/cn`` the optional ``C`` input's and ``stride_ob/om/on`` the output's.
A batch stride of 0 broadcasts that operand over the batch.

Layout classes (host-computed constexprs, ``tritonblas.plan``): ``*_ORDER`` = 0 when the operand's
second dim has unit stride (A: K contiguous, B and the output: N contiguous), 1 when its first dim
has (a transposed view), 2 for general strides. The unit stride is then the literal ``1`` in the
kernel (not a runtime argument), so Triton knows the contiguous axis. ``*_ALIGN`` is the
host-validated number of elements that the base and every non-unit stride are multiples of;
``*_EDGE`` (≤ ``*_ALIGN``) also divides the extent of the contiguous dim. They reach the compiler
through ``tl.multiple_of`` on an int64 copy of the value (:func:`aligned`): rows then start on
16-byte boundaries (16-byte cp.async, a multi-stage pipeline), and an edge mask such as ``rn < N``
is provably constant over 16-byte groups, so masked edge tiles load vectors too. Without them
Triton 3.6 emits no cp.async at all for bf16 rows of unknown alignment: scalar 2-byte loads and a
single-buffered main loop (checked in the sm_90 PTX; this was the N = 1000 cliff). A hint placed
directly on a kernel argument is silently dropped by Triton 3.6 (``ir.value.set_attr`` ignores
function block arguments), so it must go on an op result; the ``extsi`` of the int64 cast is one.

Offsets are int64 from the first product on: ``row · stride`` and ``batch · stride_b`` can exceed
2³¹ for large operands.
"""

import triton
import triton.language as tl

from tritonblas.kernels.pid import tile_coords

__all__ = ["aligned", "operand_offsets", "tile_position", "mac_loop", "tile_acc"]


@triton.jit
def aligned(x, ALIGN: tl.constexpr):
    """A stride or size as int64, known to the compiler to be a multiple of ALIGN (host-validated)."""
    x64 = x.to(tl.int64)
    if ALIGN > 1:
        x64 = tl.multiple_of(x64, ALIGN)
    return x64


@triton.jit
def operand_offsets(r0, r1, s0, s1, ORDER: tl.constexpr, ALIGN: tl.constexpr):
    """int64 element offsets of the [len(r0), len(r1)] block at rows r0, columns r1."""
    r0 = r0.to(tl.int64)
    r1 = r1.to(tl.int64)
    if ORDER == 0:
        off = r0[:, None] * aligned(s0, ALIGN) + r1[None, :]
    elif ORDER == 1:
        off = r0[:, None] + r1[None, :] * aligned(s1, ALIGN)
    else:
        off = r0[:, None] * s0.to(tl.int64) + r1[None, :] * s1.to(tl.int64)
    return off


@triton.jit
def tile_position(tile_id, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """(batch index, pid_m, pid_n) of a tile id: batch-major, GROUP_M swizzle inside a batch entry."""
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    per_batch = num_pid_m * num_pid_n
    bid = tile_id // per_batch
    pid_m, pid_n = tile_coords(tile_id % per_batch, num_pid_m, num_pid_n, GROUP_M)
    return bid, pid_m, pid_n


@triton.jit
def mac_loop(A, B, bid, rm, rn, k_lo, k_hi, M, N, K,
             stride_ab, stride_am, stride_ak, stride_bb, stride_bk, stride_bn,
             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
             A_ORDER: tl.constexpr, B_ORDER: tl.constexpr, A_ALIGN: tl.constexpr, B_ALIGN: tl.constexpr,
             A_EDGE: tl.constexpr, B_EDGE: tl.constexpr, EDGE: tl.constexpr, INPUT_PRECISION: tl.constexpr,
             MAX_IMPRECISE: tl.constexpr):
    """fp32 sum over K-iterations [k_lo, k_hi) of A[rm, k-block] @ B[k-block, rn].

    Full K-blocks run unmasked along K (the main, pipelined loop); a partial last block (K % BLOCK_K)
    is peeled into one masked iteration. EDGE adds the M/N masks; interior tiles (EDGE False) load
    with no mask at all. A mask along an operand's contiguous dim compares with a size hinted by
    that operand's alignment class, so it stays vectorisable.
    """
    rk = k_lo * BLOCK_K + tl.arange(0, BLOCK_K)
    a_ptrs = A + bid.to(tl.int64) * aligned(stride_ab, A_ALIGN) \
        + operand_offsets(rm, rk, stride_am, stride_ak, A_ORDER, A_ALIGN)
    b_ptrs = B + bid.to(tl.int64) * aligned(stride_bb, B_ALIGN) \
        + operand_offsets(rk, rn, stride_bk, stride_bn, B_ORDER, B_ALIGN)
    if A_ORDER == 0:
        a_step = BLOCK_K
    else:
        a_step = BLOCK_K * aligned(stride_ak, A_ALIGN)
    if B_ORDER == 1:
        b_step = BLOCK_K
    else:
        b_step = BLOCK_K * aligned(stride_bk, B_ALIGN)
    if EDGE:
        if A_ORDER == 1:
            mask_m = rm < aligned(M, A_EDGE)
        else:
            mask_m = rm < M
        if B_ORDER == 0:
            mask_n = rn < aligned(N, B_EDGE)
        else:
            mask_n = rn < N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    k_full = tl.minimum(k_hi, K // BLOCK_K)
    for _ in range(k_lo, k_full):
        if EDGE:
            a = tl.load(a_ptrs, mask=mask_m[:, None], other=0.0)
            b = tl.load(b_ptrs, mask=mask_n[None, :], other=0.0)
        else:
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION, max_num_imprecise_acc=MAX_IMPRECISE)
        a_ptrs += a_step
        b_ptrs += b_step
    if k_hi > k_full:
        if A_ORDER == 0:
            k_bound = aligned(K, A_EDGE)
        elif B_ORDER == 1:
            k_bound = aligned(K, B_EDGE)
        else:
            k_bound = K
        mask_k = k_full * BLOCK_K + tl.arange(0, BLOCK_K) < k_bound
        if EDGE:
            a = tl.load(a_ptrs, mask=mask_m[:, None] & mask_k[None, :], other=0.0)
            b = tl.load(b_ptrs, mask=mask_k[:, None] & mask_n[None, :], other=0.0)
        else:
            a = tl.load(a_ptrs, mask=mask_k[None, :], other=0.0)
            b = tl.load(b_ptrs, mask=mask_k[:, None], other=0.0)
        acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION, max_num_imprecise_acc=MAX_IMPRECISE)
    return acc


@triton.jit
def tile_acc(A, B, bid, pid_m, pid_n, k_lo, k_hi, M, N, K,
             stride_ab, stride_am, stride_ak, stride_bb, stride_bk, stride_bn,
             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
             A_ORDER: tl.constexpr, B_ORDER: tl.constexpr, A_ALIGN: tl.constexpr, B_ALIGN: tl.constexpr,
             A_EDGE: tl.constexpr, B_EDGE: tl.constexpr, INPUT_PRECISION: tl.constexpr, MAX_IMPRECISE: tl.constexpr):
    """The tile's fp32 accumulator over K-iterations [k_lo, k_hi): one branch per tile (outside the K
    loop) picks the unmasked interior loop or the masked edge loop."""
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    if ((pid_m + 1) * BLOCK_M <= M) & ((pid_n + 1) * BLOCK_N <= N):
        acc = mac_loop(A, B, bid, rm, rn, k_lo, k_hi, M, N, K,
                       stride_ab, stride_am, stride_ak, stride_bb, stride_bk, stride_bn,
                       BLOCK_M, BLOCK_N, BLOCK_K, A_ORDER, B_ORDER, A_ALIGN, B_ALIGN, A_EDGE, B_EDGE,
                       False, INPUT_PRECISION, MAX_IMPRECISE)
    else:
        acc = mac_loop(A, B, bid, rm, rn, k_lo, k_hi, M, N, K,
                       stride_ab, stride_am, stride_ak, stride_bb, stride_bk, stride_bn,
                       BLOCK_M, BLOCK_N, BLOCK_K, A_ORDER, B_ORDER, A_ALIGN, B_ALIGN, A_EDGE, B_EDGE,
                       True, INPUT_PRECISION, MAX_IMPRECISE)
    return acc
