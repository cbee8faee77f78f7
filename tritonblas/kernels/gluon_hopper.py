"""Warp-specialised persistent GEMM for Hopper (sm_90), written in Gluon: origami's kind 'ws'.

origami scores its :data:`VARIANTS` (``origami.space.WS_TILES``, kept equal by
tests/api/test_ws_plan.py) on sm_90 profiles whose ``model.ws_efficiency`` is above 0 (h200: 1.15,
fitted on the training sweeps); the dispatcher runs a 'ws' pick here when
``tritonblas.gluon_route.ws_reason`` allows the call (``TRITONBLAS_GLUON=0`` never).
``TRITONBLAS_GLUON=1`` is the older experiment that forces the kernel by a grid-fill rule
(``tritonblas.dispatch.gluon_eligible``). Not in the package exports: import this module explicitly.

    from tritonblas.kernels.gluon_hopper import gluon_matmul, gluon_scaled_mm, supports
    c = gluon_matmul(a, b, bias=None)            # bf16/fp16; a and b each row- or column-major
    c = gluon_scaled_mm(a8, b8, sa, sb, out_dtype=torch.bfloat16)  # fp8: torch._scaled_mm's contract

The bias, the column-major A and the fp8 path (added after the first H200 run) are compile-checked
for sm_90 only, until the GPU tests below run them.

Evidence (H200, Triton 3.6, 2026-12-01): every variant correct on ragged shapes, no hang
(``TRITONBLAS_TEST_GLUON=1 python3 -m pytest -m gpu tests/kernels/test_gluon_hopper_gpu.py``);
in CUDA-graph replays at or above cuBLAS from 4096x1024x4096 to 4096x4096x8192 and 8192^3
(``benchmarks/gluon_ksweep.py``, ``benchmarks/gluon_probe.py``; the numbers are in CHANGELOG.md).
Compile checks without a GPU: ``tests/kernels/test_gluon_hopper_compile.py``,
``python tests/kernels/_gluon_compile.py``. A warm key (same shapes, strides, config) launches
through ``tritonblas._fastlaunch``'s raw launcher; the first call of a key through Triton's.

Why it exists: our Triton kernels run each tile's pipeline fill and epilogue in series with the
main loop (benchmarks/results/kernels_vs_torch.md). Here one warp only issues TMA loads into a
STAGES-deep ring of shared-memory slots, while the 8 default warps (two warpgroups; each owns 64
rows of the 128-row tile and issues its own wgmma) consume the ring and run the epilogue. While
the consumers convert and store one tile, the producer is already filling the ring for the next.

Synchronisation (one ``ready`` and one ``empty`` mbarrier per ring slot, both with arrival count 1):

- Both partitions walk the same tiles in the same order with the same K-step count, and keep one
  running step counter ``it`` over all the K-steps of all their tiles; slot ``it % STAGES`` is
  used for the ``it // STAGES``-th time, so the parity to wait for is ``(it // STAGES) & 1``.
- producer, per step: wait ``empty[s]`` with the parity *inverted* (a fresh mbarrier counts its
  previous phase, parity 1, as complete, so the first pass over the ring does not block), then
  ``expect`` (an arrive carrying the full A+B box byte count: TMA transfers the whole box even where
  it is out of bounds, zero-filled) and the two TMA loads that complete ``ready[s]``.
- consumers, per step: wait ``ready[s]``, issue an async wgmma, wait until at most one wgmma is in
  flight; the wgmma of the *previous* step has then retired, so, after a barrier across both
  warpgroups (the arrive is issued by one thread only), its slot is released with an arrive on
  ``empty``. After a tile's last step: wait for all wgmma, release the last slot.
- epilogue: wait for the previous tile's TMA store to have read the staging buffer, write the
  converted tile into it, fence, TMA store (rows clipped at the edge exactly; columns in whole
  16-byte chunks, so ``supports`` refuses a C whose rows are not: ``origami.problem.tma_store_exact``),
  do not wait.
"""

from __future__ import annotations

import torch

from origami.problem import tma_store_exact

try:  # Triton without Gluon (< 3.4) or without its Hopper modules: the module still imports
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia.hopper import (
        fence_async_shared,
        mbarrier,
        tma,
        warpgroup_mma,
        warpgroup_mma_wait,
    )
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    from tritonblas._compat import gluon_cta_barrier, gluon_tma_copies

    _cta_barrier = gluon_cta_barrier(gl)  # gl.thread_barrier (Triton 3.6) / gl.barrier (3.9)
    _tma_load, _tma_store = gluon_tma_copies(tma)
    HAS_GLUON = True
except ImportError:  # pragma: no cover - depends on the installed Triton
    HAS_GLUON = False

__all__ = ["HAS_GLUON", "VARIANTS", "FP8_VARIANTS", "gluon_matmul", "gluon_scaled_mm", "smem_bytes", "supports",
           "launch_options"]

DTYPES = (torch.bfloat16, torch.float16)
FP8_DTYPES = (torch.float8_e4m3fn, torch.float8_e5m2)  # gluon_scaled_mm's inputs (bf16/fp16 out)
# (BM, BN, BK, STAGES) of gluon_scaled_mm: 128-byte fp8 rows (BK 128), a fp32 accumulator that the
# promotion (use_fast_accum=False) keeps beside the wgmma's own
FP8_VARIANTS = ((128, 128, 128, 5), (128, 256, 128, 3))
MAX_SMEM = 232448  # bytes of shared memory one block may use on sm_90 (227 KiB)
NUM_WARPS = 8  # default (consumer) partition: two warpgroups, 64 rows of the 128-row tile each
PRODUCER_WARPS = 1
PRODUCER_REGS = 40  # per thread, after setmaxnreg; the consumers get what maxnreg leaves
# 8 + 1 warps are launched as 3 warpgroups (384 threads): 65536 registers / 384 = 170, and ptxas
# wants a multiple of 8. The consumers then get (168 * 384 - 40 * 128) / 256 = 232 registers.
MAXNREG = 168
# The tile configurations this kernel is meant to run (and the tests compile): (BM, BN, BK, STAGES).
VARIANTS = ((128, 256, 64, 3), (128, 128, 64, 4))


def smem_bytes(block_m: int, block_n: int, block_k: int, stages: int, elem_bytes: int = 2,
               out_bytes: int | None = None) -> dict:
    """Shared memory the kernel allocates, by part: the A/B ring (``elem_bytes`` per input element),
    the epilogue staging tile (``out_bytes`` per output element, default ``elem_bytes``) and the
    2·STAGES mbarriers (8 bytes each). Triton may add alignment padding between the parts."""
    ring = stages * (block_m * block_k + block_k * block_n) * elem_bytes
    epilogue = block_m * block_n * (elem_bytes if out_bytes is None else out_bytes)
    barriers = 2 * stages * 8
    return dict(ring=ring, epilogue=epilogue, barriers=barriers, total=ring + epilogue + barriers)


def launch_options() -> dict:
    """The launch keywords of the kernel (besides the grid): warps and register limit."""
    return dict(num_warps=NUM_WARPS, maxnreg=MAXNREG)


# --- the kernel ----------------------------------------------------------------------------------
if HAS_GLUON:

    @gluon.jit
    def _tile_mn(tile, num_m, num_n, GROUP_M: gl.constexpr):
        """(pid_m, pid_n) of ``tile``: groups of GROUP_M tile rows, walked column by column inside
        a group, so consecutive programs share B columns and a band of A rows in L2."""
        per_group = GROUP_M * num_n
        first_m = (tile // per_group) * GROUP_M
        rows = gl.minimum(num_m - first_m, GROUP_M)
        r = tile % per_group
        return first_m + r % rows, r // rows

    @gluon.jit
    def _producer(a_desc, b_desc, a_ring, b_ring, ready, empty, M, N, K,
                  BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr,
                  STAGES: gl.constexpr, GROUP_M: gl.constexpr, A_MMAJOR: gl.constexpr, B_KMAJOR: gl.constexpr):
        """Worker partition (1 warp): TMA loads of every K-step of every tile of this program."""
        num_m = gl.cdiv(M, BLOCK_M)
        num_n = gl.cdiv(N, BLOCK_N)
        k_steps = gl.cdiv(K, BLOCK_K)
        step_bytes: gl.constexpr = a_desc.block_type.nbytes + b_desc.block_type.nbytes
        it = 0
        for tile in range(gl.program_id(0), num_m * num_n, gl.num_programs(0)):
            pid_m, pid_n = _tile_mn(tile, num_m, num_n, GROUP_M)
            off_m = pid_m * BLOCK_M
            off_n = pid_n * BLOCK_N
            for ks in range(k_steps):
                s = it % STAGES
                # inverted parity: the first pass over the ring finds every slot free
                mbarrier.wait(empty.index(s), ((it // STAGES) & 1) ^ 1)
                bar = ready.index(s)
                mbarrier.expect(bar, step_bytes)
                off_k = ks * BLOCK_K
                if A_MMAJOR:
                    _tma_load(a_desc, [off_k, off_m], bar, a_ring.index(s))
                else:
                    _tma_load(a_desc, [off_m, off_k], bar, a_ring.index(s))
                if B_KMAJOR:
                    _tma_load(b_desc, [off_n, off_k], bar, b_ring.index(s))
                else:
                    _tma_load(b_desc, [off_k, off_n], bar, b_ring.index(s))
                it += 1

    @gluon.jit
    def _consumer(c_desc, bias_ptr, sa_ptr, sb_ptr, a_ring, b_ring, ready, empty, c_smem, M, N, K,
                  BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr,
                  STAGES: gl.constexpr, GROUP_M: gl.constexpr, A_MMAJOR: gl.constexpr, B_KMAJOR: gl.constexpr,
                  HAS_BIAS: gl.constexpr, SCALE: gl.constexpr, MAX_IMPRECISE: gl.constexpr,
                  num_warps: gl.constexpr):
        """Default partition (num_warps warps): wgmma over the ring, then the TMA-store epilogue:
        the fp32 accumulator times the scales (SCALE 1: one scalar each, 2: ``sa[m]`` and ``sb[n]``,
        torch._scaled_mm's tensor- and row-wise recipes), plus ``bias[n]`` (HAS_BIAS), then the
        conversion. MAX_IMPRECISE (fp8): the wgmma's reduced-precision sum is promoted into the fp32
        accumulator every that many K (0: never, torch's use_fast_accum=True; 0 for bf16/fp16)."""
        # warps stacked along M: warpgroup g owns rows [64 g, 64 g + 64) of the tile; one wgmma
        # instruction covers 16 rows per warp and the whole BLOCK_N
        # the wgmma instruction's K: 32 bytes of input per row (16 for bf16/fp16, 32 for fp8)
        INSTR_K: gl.constexpr = 256 // a_ring.dtype.primitive_bitwidth
        acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                             instr_shape=[16, BLOCK_N, INSTR_K])
        num_m = gl.cdiv(M, BLOCK_M)
        num_n = gl.cdiv(N, BLOCK_N)
        k_steps = gl.cdiv(K, BLOCK_K)
        acc = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, acc_layout)
        it = 0
        for tile in range(gl.program_id(0), num_m * num_n, gl.num_programs(0)):
            pid_m, pid_n = _tile_mn(tile, num_m, num_n, GROUP_M)
            if MAX_IMPRECISE != 0:
                # Triton 3.6 lowers a promoted wgmma as ``acc += partial`` whatever ``use_acc`` says (the
                # partial restarts at zero, the accumulator never does): without this reset a program's
                # second tile started from its first tile's sum (H200, 2026-12-01: relative error 1.2-3.1
                # on every fp8 shape with more tiles than programs; the sm_90 PTX shows the unguarded add)
                acc = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, acc_layout)
            for ks in range(k_steps):
                s = it % STAGES
                mbarrier.wait(ready.index(s), (it // STAGES) & 1)
                if B_KMAJOR:
                    b_op = b_ring.index(s).permute((1, 0))
                else:
                    b_op = b_ring.index(s)
                if A_MMAJOR:
                    a_op = a_ring.index(s).permute((1, 0))
                else:
                    a_op = a_ring.index(s)
                if MAX_IMPRECISE == 0:  # bf16/fp16, or fp8 with Triton's default (no promotion)
                    acc = warpgroup_mma(a_op, b_op, acc, use_acc=ks > 0, is_async=True)
                else:  # fp8: a partial accumulator, added into acc every MAX_IMPRECISE of K
                    acc = warpgroup_mma(a_op, b_op, acc, use_acc=True, max_num_imprecise_acc=MAX_IMPRECISE,
                                        is_async=True)
                # <= 1 in flight: the previous step's wgmma (this warpgroup's) has retired
                acc = warpgroup_mma_wait(num_outstanding=1, deps=(acc, ))
                # the arrive below is one thread's: first make sure both warpgroups got here
                _cta_barrier()
                mbarrier.arrive(empty.index((it + STAGES - 1) % STAGES), pred=ks > 0)
                it += 1
            acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc, ))
            _cta_barrier()
            mbarrier.arrive(empty.index((it + STAGES - 1) % STAGES))

            # epilogue, while the producer fills the ring for the next tile
            val = acc
            if SCALE == 1:
                val = val * (gl.load(sa_ptr) * gl.load(sb_ptr))
            if SCALE == 2:
                offs_m = pid_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, acc_layout))
                offs_sn = pid_n * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, acc_layout))
                sa = gl.load(sa_ptr + offs_m, mask=offs_m < M, other=0.0)
                sb = gl.load(sb_ptr + offs_sn, mask=offs_sn < N, other=0.0)
                val = val * gl.expand_dims(sa, 1) * gl.expand_dims(sb, 0)
            if HAS_BIAS:
                offs_n = pid_n * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, acc_layout))
                bias = gl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0).to(gl.float32)
                val = val + gl.expand_dims(bias, 0)
            out = val.to(c_desc.dtype)
            tma.store_wait(pendings=0)  # the previous tile's store has read c_smem
            _cta_barrier()
            c_smem.store(out)
            fence_async_shared()
            _cta_barrier()
            _tma_store(c_desc, [pid_m * BLOCK_M, pid_n * BLOCK_N], c_smem)
        tma.store_wait(pendings=0)

    @gluon.jit
    def gluon_gemm_ws_kernel(a_desc, b_desc, c_desc, bias_ptr, sa_ptr, sb_ptr, M, N, K,
                             BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr,
                             STAGES: gl.constexpr, GROUP_M: gl.constexpr, A_MMAJOR: gl.constexpr,
                             B_KMAJOR: gl.constexpr, HAS_BIAS: gl.constexpr, SCALE: gl.constexpr,
                             MAX_IMPRECISE: gl.constexpr, PRODUCER_REGS: gl.constexpr, num_warps: gl.constexpr):
        """C = A @ B (+ bias over N), persistent over tiles, TMA producer warp + two consumer warpgroups.

        a_desc: (M, K) row-major, box [BLOCK_M, BLOCK_K], or (A_MMAJOR) Aᵀ as (K, M) row-major, box
        [BLOCK_K, BLOCK_M], read by the wgmma through a transposed view; b_desc: (K, N) row-major, box
        [BLOCK_K, BLOCK_N], or (B_KMAJOR) Bᵀ as (N, K) row-major, box [BLOCK_N, BLOCK_K];
        c_desc: (M, N) row-major, box [BLOCK_M, BLOCK_N]. bias_ptr: N contiguous elements (bf16, fp16
        or fp32) read only with HAS_BIAS (any pointer otherwise)."""
        dtype: gl.constexpr = a_desc.dtype
        a_ring = gl.allocate_shared_memory(dtype, [STAGES] + a_desc.block_type.shape, a_desc.layout)
        b_ring = gl.allocate_shared_memory(dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
        c_smem = gl.allocate_shared_memory(c_desc.dtype, c_desc.block_type.shape, c_desc.layout)
        ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        for i in gl.static_range(STAGES):
            mbarrier.init(ready.index(i), count=1)
            mbarrier.init(empty.index(i), count=1)
        fence_async_shared()  # the initialised barriers are visible to the TMA unit

        gl.warp_specialize([
            (_consumer, (c_desc, bias_ptr, sa_ptr, sb_ptr, a_ring, b_ring, ready, empty, c_smem, M, N, K, BLOCK_M,
                         BLOCK_N, BLOCK_K, STAGES, GROUP_M, A_MMAJOR, B_KMAJOR, HAS_BIAS, SCALE, MAX_IMPRECISE,
                         num_warps)),
            (_producer, (a_desc, b_desc, a_ring, b_ring, ready, empty, M, N, K, BLOCK_M, BLOCK_N, BLOCK_K,
                         STAGES, GROUP_M, A_MMAJOR, B_KMAJOR)),
        ], [1], [PRODUCER_REGS])

        for i in gl.static_range(STAGES):
            mbarrier.invalidate(ready.index(i))
            mbarrier.invalidate(empty.index(i))


# --- host side -----------------------------------------------------------------------------------
def _row_major_ok(strides, elem_bytes: int) -> bool:
    """Unit stride in the last dimension and a positive, 16-byte-aligned row stride (TMA's
    requirement; a broadcast's stride 0 is refused, as ``tritonblas.plan._tma_ok`` does)."""
    return strides[1] == 1 and strides[0] > 0 and (strides[0] * elem_bytes) % 16 == 0


def a_is_mmajor(a_strides) -> bool | None:
    """A (M, K) as stored: False row-major, True column-major (Aᵀ (K, M) row-major: a weight
    gradient's ``grad.T``), None neither. Row-major wins when the strides allow both."""
    if a_strides[1] == 1:
        return False
    if a_strides[0] == 1:
        return True
    return None


def b_is_kmajor(b_strides) -> bool | None:
    """B (K, N) as stored: False row-major (K, N), True column-major (Bᵀ (N, K) row-major, "NT"),
    None neither. A (K, 1) or (1, N) B counts as row-major when its strides say so."""
    if b_strides[1] == 1:
        return False
    if b_strides[0] == 1:
        return True
    return None


def supports(m: int, n: int, k: int, dtype, a_strides, b_strides, c_strides, out_dtype=None) -> str | None:
    """Why this kernel cannot compute C (m, n) = A (m, k) @ B (k, n) with these strides (elements),
    or None if it can. Needs bf16/fp16 (or fp8) inputs, a bf16/fp16 row-major C, A and B each row-major or column-major, each
    with a 16-byte-aligned leading stride, and C's rows a whole number of 16-byte chunks
    (``origami.problem.tma_store_exact``); the base pointers must also be 16-byte aligned (the
    wrapper checks those)."""
    if not HAS_GLUON:
        return "this Triton has no Gluon (triton.experimental.gluon)"
    fp8 = dtype in FP8_DTYPES
    if dtype not in DTYPES and not fp8:
        return f"dtype {dtype} is not bf16, fp16 or fp8"
    out_dtype = dtype if out_dtype is None else out_dtype
    if out_dtype not in DTYPES:  # the epilogue rounds the fp32 accumulator once, to either
        return f"C dtype {out_dtype}: needs bf16 or fp16"
    if min(m, n, k) < 1:
        return f"empty problem (m, n, k) = ({m}, {n}, {k})"
    es = 1 if fp8 else 2
    # one message per operand, so the wrappers name the one at fault (they read the "A "/"B " prefix)
    if fp8 and a_is_mmajor(a_strides) is not False:
        return (f"A strides {tuple(a_strides)}: an fp8 wgmma reads both operands K-major (A row-major, as "
                "torch._scaled_mm requires)")
    if fp8 and b_is_kmajor(b_strides) is not True:
        return (f"B strides {tuple(b_strides)}: an fp8 wgmma reads both operands K-major (B column-major, as "
                "torch._scaled_mm requires)")
    mmajor = a_is_mmajor(a_strides)
    if mmajor is None:
        return f"A strides {tuple(a_strides)}: need (lda, 1) or (1, lda)"
    a_lead = a_strides[1] if mmajor else a_strides[0]
    if a_lead <= 0 or (a_lead * es) % 16:
        return f"A strides {tuple(a_strides)}: the leading stride must be positive, times {es} bytes a multiple of 16"
    kmajor = b_is_kmajor(b_strides)
    if kmajor is None:
        return f"B strides {tuple(b_strides)}: need (ldb, 1) or (1, ldb)"
    lead = b_strides[1] if kmajor else b_strides[0]
    if lead <= 0 or (lead * es) % 16:
        return (f"B strides {tuple(b_strides)}: the leading stride {lead} must be positive, times {es} bytes a "
                "multiple of 16")
    ces = 2
    if not _row_major_ok(c_strides, ces):
        return f"C strides {tuple(c_strides)}: need (ldc, 1) with ldc * {ces} bytes a multiple of 16"
    if not tma_store_exact(n, ces):
        return (f"C has N = {n}: {n * ces} bytes per row is not a multiple of 16, and the TMA store "
                f"would write past the row end")
    return None


def _check_config(block_m, block_n, block_k, stages, group_m, elem_bytes: int = 2):
    if block_m != 128:
        raise ValueError(f"block_m={block_m}: only 128 (two warpgroups of 64 rows) is implemented")
    if block_n not in (64, 128, 256):
        raise ValueError(f"block_n={block_n}: must be 64, 128 or 256")
    if elem_bytes == 2 and block_k not in (32, 64):
        raise ValueError(f"block_k={block_k}: must be 32 or 64 (128-byte swizzled bf16/fp16 rows)")
    if elem_bytes == 1 and block_k not in (64, 128):
        raise ValueError(f"block_k={block_k}: must be 64 or 128 (128-byte swizzled fp8 rows)")
    if stages < 2:
        raise ValueError(f"stages={stages}: must be at least 2")
    if group_m < 1:
        raise ValueError(f"group_m={group_m}: must be at least 1")
    need = smem_bytes(block_m, block_n, block_k, stages, elem_bytes, 2)["total"]
    if need > MAX_SMEM:
        raise ValueError(f"stages={stages}: {block_m}x{block_n}x{block_k} with {stages} stages needs {need} bytes "
                         f"of shared memory, more than {MAX_SMEM}")


def _gl_dtype(dtype):
    return {torch.bfloat16: gl.bfloat16, torch.float16: gl.float16, torch.float8_e4m3fn: gl.float8e4nv,
            torch.float8_e5m2: gl.float8e5}[dtype]


def _row_major_desc(t, block, gdt):
    """A host TMA descriptor over the row-major 2-D ``t``, box ``block``, the default swizzled layout."""
    return TensorDescriptor(t, list(t.shape), list(t.stride()), block, gl.NVMMASharedLayout.get_default_for(block, gdt))


def make_descriptors(a, b, out, block_m, block_n, block_k):
    """Host TMA descriptors (a, b, c), whether A is M-major and whether B is K-major; inputs already
    validated."""
    gdt = _gl_dtype(a.dtype)
    mmajor = a_is_mmajor(a.stride())
    kmajor = b_is_kmajor(b.stride())
    # each operand as a row-major tensor (a column-major one through its transpose), box in that order
    a_desc = _row_major_desc(a.t(), [block_k, block_m], gdt) if mmajor else _row_major_desc(a, [block_m, block_k], gdt)
    b_desc = _row_major_desc(b.t(), [block_n, block_k], gdt) if kmajor else _row_major_desc(b, [block_k, block_n], gdt)
    c_desc = _row_major_desc(out, [block_m, block_n], _gl_dtype(out.dtype))
    return a_desc, b_desc, c_desc, mmajor, kmajor


def gluon_matmul(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None, *, bias: torch.Tensor | None = None,
                 block_m: int = 128, block_n: int = 256, block_k: int = 64, stages: int = 3, group_m: int = 8,
                 num_sms: int | None = None) -> torch.Tensor:
    """C = a @ b (+ bias) with the warp-specialised Gluon kernel (Hopper only). ``a`` (M, K) and ``b``
    (K, N) each row-major or column-major, ``out`` (M, N) row-major, bf16 or fp16 (a's dtype when allocated, None),
    ``bias`` N contiguous bf16/fp16/fp32 elements added in fp32 before the output rounding (F.linear's).
    Raises ValueError naming the offending argument when the kernel cannot run on these inputs."""
    if not HAS_GLUON:
        raise ValueError("a: this Triton has no Gluon (triton.experimental.gluon); the kernel cannot run")
    for name, t in (("a", a), ("b", b)):
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
        if t.dim() != 2:
            raise ValueError(f"{name}: expected a 2-D tensor, got shape {tuple(t.shape)}")
    if a.dtype not in DTYPES:
        raise ValueError(f"a: dtype {a.dtype} is not bf16 or fp16")
    if b.dtype != a.dtype:
        raise ValueError(f"b: dtype {b.dtype} differs from a's {a.dtype}")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"b: shape {tuple(b.shape)} does not match a {tuple(a.shape)} (inner dimensions)")
    if a.device != b.device:
        raise ValueError(f"b: on {b.device}, a on {a.device}")
    m, k = a.shape
    n = b.shape[1]
    if out is None:
        out = torch.empty((m, n), dtype=a.dtype, device=a.device)
    else:
        if not isinstance(out, torch.Tensor) or tuple(out.shape) != (m, n):
            raise ValueError(f"out: expected a ({m}, {n}) tensor")
        if out.dtype not in DTYPES:
            raise ValueError(f"out: dtype {out.dtype} is not bf16 or fp16")
        if out.device != a.device:
            raise ValueError(f"out: on {out.device}, a on {a.device}")
    if bias is not None and isinstance(bias, torch.Tensor) and bias.dim() > 1 and bias.shape[-1] != n:
        raise ValueError(f"bias: expected {n} elements (one per output column)")
    bias = _checked_bias(bias, n, a.device)
    _check_config(block_m, block_n, block_k, stages, group_m)
    if m == 0 or n == 0:
        return out
    if k == 0:
        return out.zero_() if bias is None else out.copy_(bias.expand(m, n))
    _check_launchable(a, b, out, out.dtype)
    return _launch(a, b, out, bias, None, None, 0, 0, block_m, block_n, block_k, stages, group_m, num_sms)


BIAS_DTYPES = (*DTYPES, torch.float32)  # what the epilogue reads a bias as


def _checked_bias(bias, n: int, device):
    """``bias`` as the N contiguous elements the epilogue reads (None stays None); ValueError naming
    ``bias`` when it has another element count, dtype (:data:`BIAS_DTYPES`) or device, or strides."""
    if bias is None:
        return None
    if not isinstance(bias, torch.Tensor) or bias.numel() != n:
        raise ValueError(f"bias: expected {n} elements (one per output column)")
    if bias.dtype not in BIAS_DTYPES or bias.device != device:
        raise ValueError(f"bias: needs bf16, fp16 or fp32 on {device}, got {bias.dtype} on {bias.device}")
    bias = bias.reshape(n)
    if bias.stride(0) != 1:
        raise ValueError("bias: must be contiguous")
    return bias


def _check_launchable(a, b, out, out_dtype=None) -> None:
    """The wrappers' last checks before a launch: :func:`supports` (its reason names the operand),
    16-byte-aligned base pointers (TMA) and a CUDA device; ValueError naming the argument."""
    (m, k), n = a.shape, b.shape[1]
    reason = supports(m, n, k, a.dtype, a.stride(), b.stride(), out.stride(), out_dtype)
    if reason is not None:
        name = "a" if reason.startswith("A ") else "b" if reason.startswith("B ") else \
            "out" if reason.startswith("C ") else "a"
        raise ValueError(f"{name}: {reason}")
    for name, t in (("a", a), ("b", b), ("out", out)):
        if t.data_ptr() % 16:
            raise ValueError(f"{name}: data pointer is not 16-byte aligned (TMA needs it)")
    if a.device.type != "cuda":
        raise ValueError(f"a: on {a.device}; the Gluon kernel needs a CUDA (sm_90) device")


def gluon_scaled_mm(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor, *,
                    out_dtype=torch.bfloat16, bias: torch.Tensor | None = None, use_fast_accum: bool = False,
                    out: torch.Tensor | None = None, block_n: int | None = None, block_k: int = 128,
                    stages: int | None = None, group_m: int = 8, num_sms: int | None = None) -> torch.Tensor:
    """torch._scaled_mm on the Gluon kernel: ``(a @ b) · scale_a · scale_b (+ bias)`` for fp8 ``a``
    (M, K) row-major and ``b`` (K, N) column-major (both K-major, as an fp8 wgmma reads them) into
    bf16/fp16, with tensor-wise (one fp32 element each) or row-wise (``scale_a`` (M, 1), ``scale_b``
    (1, N), contiguous fp32) scales. Without ``use_fast_accum`` the wgmma's reduced-precision sum is
    promoted into the fp32 accumulator once per K-step (every ``block_k`` = 128 of K, the interval
    CUTLASS's fp8 kernels use); with it, never. Tiles (:data:`FP8_VARIANTS`): 128x256x128 with 3
    stages with fast accumulation, else 128x128x128 with 5 (the promotion's second accumulator does
    not fit beside a 128x256 one: 380 bytes of spills in the sm_90 compile). Raises ValueError
    naming the argument otherwise."""
    if block_n is None:
        block_n = 256 if use_fast_accum else 128
    if stages is None:
        stages = 3 if block_n == 256 else 5
    if block_n == 256 and not use_fast_accum:
        raise ValueError("block_n: 256 needs use_fast_accum=True (the promotion's partial accumulator spills)")
    if not HAS_GLUON:
        raise ValueError("a: this Triton has no Gluon (triton.experimental.gluon); the kernel cannot run")
    for name, t in (("a", a), ("b", b)):
        if not isinstance(t, torch.Tensor) or t.dim() != 2 or t.dtype not in FP8_DTYPES:
            raise ValueError(f"{name}: expected a 2-D float8_e4m3fn / float8_e5m2 tensor")
    if b.dtype != a.dtype:  # one ring dtype for both operands (torch also allows e4m3 x e5m2)
        raise ValueError(f"b: dtype {b.dtype} differs from a's {a.dtype}; the kernel takes one fp8 format")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"b: shape {tuple(b.shape)} does not match a {tuple(a.shape)} (inner dimensions)")
    if out_dtype not in DTYPES:
        raise ValueError(f"out_dtype: {out_dtype} is not bf16 or fp16")
    m, k = a.shape
    n = b.shape[1]
    for name, t in (("b", b), ("scale_a", scale_a), ("scale_b", scale_b)):
        if not isinstance(t, torch.Tensor) or t.device != a.device:
            raise ValueError(f"{name}: expected a tensor on {a.device}")
    if scale_a.dtype != torch.float32 or scale_b.dtype != torch.float32:
        raise ValueError("scale_a: scales must be float32")
    if scale_a.numel() == 1 and scale_b.numel() == 1:
        scale, sa, sb = 1, scale_a.reshape(1), scale_b.reshape(1)
    elif tuple(scale_a.shape) == (m, 1) and tuple(scale_b.shape) == (1, n):
        if not (scale_a.is_contiguous() and scale_b.is_contiguous()):
            raise ValueError("scale_a: row-wise scales must be contiguous")
        scale, sa, sb = 2, scale_a.reshape(m), scale_b.reshape(n)
    else:
        raise ValueError(f"scale_a: shapes {tuple(scale_a.shape)} and {tuple(scale_b.shape)} are neither "
                         f"tensor-wise (one element each) nor row-wise (({m}, 1) and (1, {n}))")
    if out is None:
        out = torch.empty((m, n), dtype=out_dtype, device=a.device)
    elif not isinstance(out, torch.Tensor) or tuple(out.shape) != (m, n) or out.dtype != out_dtype \
            or out.device != a.device:
        raise ValueError(f"out: expected a ({m}, {n}) {out_dtype} tensor on {a.device}")
    bias = _checked_bias(bias, n, a.device)
    _check_config(128, block_n, block_k, stages, group_m, elem_bytes=1)
    if m == 0 or n == 0:
        return out
    if k == 0:
        return out.zero_() if bias is None else out.copy_(bias.expand(m, n))
    _check_launchable(a, b, out, out_dtype)
    return _launch(a, b, out, bias, sa, sb, scale, 0 if use_fast_accum else block_k, 128, block_n, block_k,
                   stages, group_m, num_sms)


def _warm_key(a, b, out, bias, sa, sb, scale: int, max_imprecise: int, block_m, block_n, block_k, stages, group_m,
              num_sms) -> tuple:
    """What fixes a warm launch but the operands' addresses: shapes, strides, dtypes, tile, the
    epilogue and the 16-byte alignment class of the bias and scale pointers."""
    m, k = a.shape
    n = b.shape[1]
    return (a.device.index, a.dtype, b.dtype, out.dtype, m, n, k, a.stride(), b.stride(), out.stride(), block_m, block_n,
            block_k, stages, group_m, num_sms, None if bias is None else bias.dtype, scale, max_imprecise,
            # Triton specialises bias_ptr / sa_ptr / sb_ptr on 16-byte alignment: a kernel compiled for an
            # aligned bias may vector-load it, so an unaligned one must not reuse its warm key
            *(None if t is None else t.data_ptr() & 15 for t in (bias, sa, sb)))


def bound_launch(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, bias: torch.Tensor | None = None, *,
                 block_n: int = 256, stages: int = 3, block_k: int = 64, group_m: int = 8, block_m: int = 128,
                 num_sms: int | None = None):
    """The warm launch :func:`gluon_matmul` bound for a call with these operands and tile (after its
    first launch), as :func:`raw_launch` takes it; None when none is bound (not launched yet, or this
    Triton's launcher is not the one :mod:`tritonblas._fastlaunch` knows)."""
    return _WARM.get(_warm_key(a, b, out, bias, None, None, 0, 0, block_m, block_n, block_k, stages, group_m, num_sms))


def raw_launch(warm: tuple, stream: int, pa: int, pb: int, po: int, m: int, n: int, k: int, pbias: int | None = None,
               psa: int | None = None, psb: int | None = None) -> None:
    """Launch a :func:`bound_launch` on ``stream`` over base addresses (A, B, C, bias, scales) of
    operands with the key's shapes, strides and alignment classes: nothing is checked here."""
    raw, grid0, tail = warm
    raw(grid0, stream, (*raw.expand(0, pa), *raw.expand(1, pb), *raw.expand(2, po), po if pbias is None else pbias,
                        po if psa is None else psa, po if psb is None else psb, m, n, k, *tail))


def _launch(a, b, out, bias, sa, sb, scale: int, max_imprecise: int, block_m, block_n, block_k, stages, group_m,
            num_sms) -> torch.Tensor:
    """Launch on checked inputs: the raw launch of a warm key, else Triton's (binding the key)."""
    m, k = a.shape
    n = b.shape[1]
    key = _warm_key(a, b, out, bias, sa, sb, scale, max_imprecise, block_m, block_n, block_k, stages, group_m, num_sms)
    warm = _WARM.get(key)
    if warm is not None and not _launch_hooks_on():
        raw_launch(warm, _current_stream(a.device.index), a.data_ptr(), b.data_ptr(), out.data_ptr(), m, n, k,
                   None if bias is None else bias.data_ptr(), None if sa is None else sa.data_ptr(),
                   None if sb is None else sb.data_ptr())
        return out
    a_desc, b_desc, c_desc, mmajor, kmajor = make_descriptors(a, b, out, block_m, block_n, block_k)
    sms = num_sms if num_sms is not None else torch.cuda.get_device_properties(a.device).multi_processor_count
    tiles = ((m + block_m - 1) // block_m) * ((n + block_n - 1) // block_n)
    grid = (max(1, min(sms, tiles)),)
    consts = dict(BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, STAGES=stages, GROUP_M=group_m,
                  A_MMAJOR=mmajor, B_KMAJOR=kmajor, HAS_BIAS=bias is not None, SCALE=scale,
                  MAX_IMPRECISE=max_imprecise, PRODUCER_REGS=PRODUCER_REGS)
    compiled = gluon_gemm_ws_kernel[grid](a_desc, b_desc, c_desc, out if bias is None else bias,
                                          out if sa is None else sa, out if sb is None else sb, m, n, k, **consts,
                                          **launch_options())
    _bind_warm(key, compiled, (a_desc, b_desc, c_desc), grid[0], consts)
    return out


# Warm launches: key (device, dtype, m, n, k, strides, tile config, num_sms) -> (RawLauncher, grid,
# constexpr tail). Triton's own launch of this kernel costs ~140 us of host time per call on the
# H200 host (Triton 3.6; benchmarks/results/gluon_probe_h200_*.csv: 0.14-0.15 ms for shapes whose GPU
# time is a few tens of us): it builds three TensorDescriptor objects, binds and specialises every
# argument and encodes three CUtensorMaps. A warm key instead reuses tritonblas._fastlaunch's raw
# launcher (maps cached per base address); the key fixes shapes and strides, so only the addresses vary.
_WARM: dict = {}
_WARM_MAX = 256


def _bind_warm(key: tuple, compiled, descs: tuple, grid0: int, consts: dict) -> None:
    from tritonblas import _fastlaunch

    params = getattr(gluon_gemm_ws_kernel, "params", None)
    if params is None or compiled is None or not hasattr(compiled, "packed_metadata"):
        return
    names = [p.name for p in params]
    consts = {**consts, "num_warps": launch_options()["num_warps"]}  # a parameter of the kernel too
    if names[:9] != ["a_desc", "b_desc", "c_desc", "bias_ptr", "sa_ptr", "sb_ptr", "M", "N", "K"] or \
            set(names[9:]) != set(consts):
        return
    raw = _fastlaunch.bind(compiled, dict(enumerate(descs)))
    if raw is None:
        return
    if len(_WARM) >= _WARM_MAX:
        _WARM.pop(next(iter(_WARM)))
    _WARM[key] = (raw, grid0, tuple(consts[name] for name in names[9:]))


def _current_stream(index: int) -> int:
    """The current CUDA stream of device ``index`` as the handle Triton's launcher takes."""
    get = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # what Triton's driver reads
    return get(index) if get is not None else torch.cuda.current_stream(index).cuda_stream


def _launch_hooks_on() -> bool:
    """Whether a Triton launch hook (a profiler's) is installed: then every launch goes through
    Triton so the hook sees it (``tritonblas._fastlaunch.launch_hooks_on``)."""
    from tritonblas import _fastlaunch

    try:
        return _fastlaunch.launch_hooks_on()
    except (ImportError, AttributeError):  # pragma: no cover - depends on the installed Triton
        return True
