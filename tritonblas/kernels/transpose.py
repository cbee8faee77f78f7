"""Transposing copy for operand staging (``tritonblas.plan.staging_for``): ``Dst[b, c, r] = Src[b, r, c]``.

Both views are contiguous along their last dim, so a BLOCK_R × BLOCK_C tile is read row-coalesced
from Src, transposed in registers/shared memory (``tl.trans``) and written row-coalesced to Dst.
torch's ``copy_`` into a transposed layout moved only 1.15 TB/s (fp32) and 0.34 TB/s (fp8) on the
H200; a prototype of this kernel (64 × 64 tiles, 4 warps) moved 3.5-4.0 and 3.0-3.4 TB/s (measured
2026-11-30, Triton 3.6; the integrated kernel is not yet measured). Tiles are flattened over the
batch on grid axis 0; offsets are 64-bit. Under ``TRITON_INTERPRET=1`` it runs on CPU tensors.
"""

import triton
import triton.language as tl

__all__ = ["transpose_copy_kernel"]


@triton.jit
def transpose_copy_kernel(Src, Dst, R, C, stride_sb, stride_sr, stride_db, stride_dc,
                          BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    tiles_r = tl.cdiv(R, BLOCK_R)
    tiles_c = tl.cdiv(C, BLOCK_C)
    pid = tl.program_id(0)
    per_batch = tiles_r * tiles_c
    bid = (pid // per_batch).to(tl.int64)
    t = pid % per_batch
    r = (t // tiles_c) * BLOCK_R + tl.arange(0, BLOCK_R)
    c = (t % tiles_c) * BLOCK_C + tl.arange(0, BLOCK_C)
    mask = (r[:, None] < R) & (c[None, :] < C)
    src = Src + bid * stride_sb + r[:, None].to(tl.int64) * stride_sr + c[None, :]
    tile = tl.load(src, mask=mask)
    dst = Dst + bid * stride_db + c[:, None].to(tl.int64) * stride_dc + r[None, :]
    tl.store(dst, tl.trans(tile), mask=tl.trans(mask))
